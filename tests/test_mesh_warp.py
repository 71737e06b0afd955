"""The embedded swapper's drawing: mesh triangles in depth order, folded ones left out, and nothing of
the source photo but its face reaching the target (turned heads in t1 used to get grey and white smears
from the source's hair and background)."""

from __future__ import annotations

import dataclasses
import itertools

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import FaceMesh
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.eye_lids import (
    LOOK_CLOSER,
    SHUT,
    chroma,
    lid_band,
    median_of,
    median_of_counts,
    opening_ratio,
    percentile_of_counts,
    value_counts,
)
from facefusion_ui.processors.mesh_warp import (
    FACE_OVAL,
    FEATURES,
    LIP_SHARE,
    LIPS,
    MOUTH_CORNERS,
    SHAPE_WEIGHT,
    TURNED_SOURCE,
    TURNED_TARGET,
    WarpSource,
    closing_triangles,
    colour_channels,
    face_outline,
    fan,
    far_side,
    mesh_triangles,
    mesh_warp_swap,
    morph_toward_source,
    opening_contours,
    openings_to_draw,
    oval_mask,
    region_of,
    render_maps,
    source_trust,
    transfer_colour,
    triangle_affines,
    wide_blur,
    with_iris_discs,
)
from facefusion_ui.processors.side_light import MESH_POINTS, mirror_index, summed_at, with_lifted_shadows
from facefusion_ui.processors.source_detail import FLAT_DETAIL, sharpened
from facefusion_ui.state_manager import Settings
from tests.support import media

SETTINGS = Settings()
GREEN = (0, 255, 0)
MOUTH_INNER_UPPER, MOUTH_INNER_LOWER = 13, 14
"""The middle of the inner upper and lower lip."""


@pytest.fixture(scope="module")
def astronaut_mesh(shared_runtime: ModelRuntime) -> FaceMesh:
    face = FaceAnalyser(shared_runtime).analyse(media.astronaut(), SETTINGS, embeddings=False, mesh=True)[0]
    assert face.mesh is not None
    return face.mesh


@pytest.fixture(scope="module")
def t1_meshes(shared_runtime: ModelRuntime) -> list[FaceMesh]:
    faces = FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS, embeddings=False, mesh=True)
    meshes = [face.mesh for face in faces if face.mesh is not None]
    assert len(meshes) == 6
    return meshes


def test_the_mesh_has_its_triangles() -> None:
    triangles = mesh_triangles()
    assert triangles.shape[1] == 3 and 800 < len(triangles) < 900
    assert triangles.min() == 0 and triangles.max() == 467
    assert len({tuple(row) for row in triangles}) == len(triangles)


def test_nearer_triangle_wins_and_folded_ones_are_not_drawn() -> None:
    triangles = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=np.int32)
    source = np.array(
        [[0, 0], [40, 0], [0, 40], [100, 0], [140, 0], [100, 40], [0, 60], [40, 60], [0, 100]], dtype=np.float32
    )
    # in the target the second triangle lies over the first, shifted by 5 px; the third is mirrored
    target = np.array(
        [[0, 0], [40, 0], [0, 40], [5, 5], [45, 5], [5, 45], [0, 60], [0, 100], [40, 60]], dtype=np.float32
    )
    region = (0, 0, 60, 110)
    first_nearer = np.array([0, 0, 0, 9, 9, 9, 0, 0, 0], dtype=np.float32)
    map_x, map_y, covered = render_maps(target, first_nearer, source, region, triangles)
    assert covered[10, 10] and (map_x[10, 10], map_y[10, 10]) == pytest.approx((10, 10), abs=1e-3)
    second_nearer = np.array([9, 9, 9, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    map_x, map_y, covered = render_maps(target, second_nearer, source, region, triangles)
    assert covered[10, 10] and (map_x[10, 10], map_y[10, 10]) == pytest.approx((105, 5), abs=1e-3)
    assert not covered[70:95, 2:30].any(), "the mirrored triangle was drawn"


def test_a_triangles_affine_map_takes_its_corners_onto_the_sources() -> None:
    rng = np.random.default_rng(2)
    target, source = rng.uniform(0, 300, (500, 3, 2)), rng.uniform(0, 300, (500, 3, 2))
    corners = np.concatenate([target, np.ones((500, 3, 1))], axis=2)
    affine = triangle_affines(target, source)
    assert affine.shape == (500, 3, 2)
    np.testing.assert_allclose(affine, np.linalg.solve(corners, source), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(corners @ affine, source, atol=1e-8)


def test_what_the_swap_reads_of_the_topology_and_the_source_is_made_once(astronaut_mesh: FaceMesh) -> None:
    for index in range(len(opening_contours())):
        assert closing_triangles(index, False) is closing_triangles(index, False)
        assert not closing_triangles(index, False).flags.writeable
    assert np.array_equal(closing_triangles(0, False), fan(opening_contours()[0]))
    # an eye closed round its iris: its disc fanned from the centre, then the ring out to the contour
    assert len(closing_triangles(0, True)) == 3 * len(opening_contours()[0])
    image = np.zeros((8, 8, 3), dtype=np.uint8)
    source = WarpSource(image, astronaut_mesh, np.zeros((8, 8), dtype=np.float32))
    assert source.disc_points is source.disc_points
    assert np.array_equal(source.disc_points, with_iris_discs(astronaut_mesh.points))


def test_trust_keeps_the_features_and_skin_but_not_hair(astronaut_mesh: FaceMesh) -> None:
    image = media.astronaut().copy()
    points = astronaut_mesh.points
    features = cv2.convexHull(points[list(FEATURES)]).astype(np.float32)
    # the cheeks between the features and the outline (toward the ears, points 234 and 454)
    cheeks = [(0.4 * points[234] + 0.6 * points[50]).astype(int), (0.4 * points[454] + 0.6 * points[280]).astype(int)]
    for cheek in cheeks:
        assert cv2.pointPolygonTest(features, (float(cheek[0]), float(cheek[1])), False) < 0
    left_eye = points[[33, 133]].mean(axis=0).astype(int)
    hair = (40, 52, 78)  # dark brown, BGR
    radius = int((points[:, 0].max() - points[:, 0].min()) * 0.08)
    cv2.circle(image, (int(cheeks[0][0]), int(cheeks[0][1])), radius, hair, -1)
    cv2.circle(image, (int(left_eye[0]), int(left_eye[1])), radius // 2, hair, -1)
    trust = source_trust(image, points)
    assert trust[cheeks[0][1], cheeks[0][0]] < 0.2, "hair over a cheek was taken as the face"
    assert trust[cheeks[1][1], cheeks[1][0]] > 0.8, "the other cheek's skin was not taken"
    assert trust[left_eye[1], left_eye[0]] > 0.8, "a feature was dropped for its colour"
    inside = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(inside, features.astype(np.int32), 1)
    assert trust[inside.astype(bool)].mean() > 0.9
    outline = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(outline, cv2.convexHull(face_outline(points)).astype(np.int32), 1)
    assert trust[outline == 0].max() == 0.0, "trust reaches outside the face outline"


def test_nothing_outside_the_source_face_reaches_the_target(
    astronaut_mesh: FaceMesh, t1_meshes: list[FaceMesh]
) -> None:
    """The source's background and hair beside its face outline painted green: the swaps onto every
    face of t1 (two of them turned well away) come out the same."""
    image = media.astronaut()
    outline = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(outline, cv2.convexHull(face_outline(astronaut_mesh.points)).astype(np.int32), 1)
    painted = image.copy()
    painted[outline == 0] = GREEN
    plain, green = WarpSource.of(image, astronaut_mesh), WarpSource.of(painted, astronaut_mesh)
    target = media.t1()
    for mesh in t1_meshes:
        first = mesh_warp_swap(target, mesh, plain, SETTINGS.face_mask_blur)
        second = mesh_warp_swap(target, mesh, green, SETTINGS.face_mask_blur)
        assert first.mask.max() > 0.9, "the face was not swapped"
        x1, y1, x2, y2 = first.region
        assert first.mask.shape == target.shape[:2] and np.array_equal(first.mask[y1:y2, x1:x2], first.weight)
        assert np.count_nonzero(first.mask) == np.count_nonzero(first.weight), "0 outside its region"
        assert np.all(first.frame[first.mask == 0] == target[first.mask == 0]), "a pixel outside the blend changed"
        difference = np.abs(first.frame.astype(int) - second.frame.astype(int))
        assert difference.max() <= 2, f"{int((difference > 2).sum())} pixels took colour from outside the source face"


def test_openings_take_the_source_eyes_and_teeth_only_where_it_is_open(astronaut_mesh: FaceMesh) -> None:
    """The mesh leaves the eyes and the mouth open; they are closed with the source's own eyes and
    teeth, except where the source is shut and the target open: there the target keeps its own."""
    contours = opening_contours()
    assert [len(contour) for contour in contours] == [16, 16, 20]  # the two eyes, the inner lips
    assert [len(fan) for fan in openings_to_draw(astronaut_mesh.points, astronaut_mesh.points)] == [14, 14, 18]
    mouth = contours[2]
    shut = astronaut_mesh.points.copy()
    shut[mouth] = shut[mouth].mean(axis=0)  # the same face with its lips pressed together
    assert [len(fan) for fan in openings_to_draw(astronaut_mesh.points, shut)] == [14, 14]
    image = media.astronaut()  # smiling, teeth showing: the target
    inside_mouth = astronaut_mesh.points[mouth].mean(axis=0).astype(int)
    shut_source = WarpSource(image, FaceMesh(shut, astronaut_mesh.depth), np.ones(image.shape[:2], np.float32))
    kept = mesh_warp_swap(image, astronaut_mesh, shut_source, SETTINGS.face_mask_blur)
    assert kept.mask[inside_mouth[1], inside_mouth[0]] == 0.0, "a shut mouth was stretched over an open one"
    open_source = WarpSource.of(image, astronaut_mesh)
    drawn = mesh_warp_swap(image, astronaut_mesh, open_source, SETTINGS.face_mask_blur)
    assert drawn.mask[inside_mouth[1], inside_mouth[0]] > 0.5


def test_a_face_cut_by_the_photo_edge_is_trusted_only_inside_the_photo(astronaut_mesh: FaceMesh) -> None:
    """What lies beyond the photo is unknown: trust falls to 0 at its edge as at the face's outline."""
    middle = int(astronaut_mesh.points[:, 0].mean())
    half = np.ascontiguousarray(media.astronaut()[:, middle:])
    points = (astronaut_mesh.points - np.array([middle, 0], dtype=np.float32)).astype(np.float32)
    trust = source_trust(half, points)
    assert trust[:, 0].max() == 0.0 and trust[:, 1].max() < 0.5
    assert trust.max() == pytest.approx(1.0)


@pytest.mark.parametrize("kernel", [31, 61, 135])
def test_a_wide_blur_at_half_size_matches_the_full_size_blur(kernel: int) -> None:
    oval = np.zeros((700, 600), dtype=np.float32)
    cv2.ellipse(oval, (300, 350), (220, 300), 0, 0, 360, 1.0, -1)
    full = cv2.GaussianBlur(oval, (kernel, kernel), 0)
    wide = wide_blur(oval, kernel)
    assert wide.shape == oval.shape and wide.dtype == np.float32
    assert float(np.abs(wide - full).max()) < 0.02
    # far from the outline it stays exactly what the mask is: nothing leaks out, the inside stays whole
    assert float(wide[:10, :10].max()) == 0.0 and abs(float(wide[350, 300]) - 1.0) < 1e-5


def test_colour_channels_are_the_a_and_b_planes_in_one_contiguous_array() -> None:
    lab = np.random.default_rng(0).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    colour = colour_channels(lab)
    assert colour.flags.c_contiguous and colour.dtype == np.uint8
    assert np.array_equal(colour, lab[..., 1:])


def test_the_eye_tests_figures_are_numpys_median_and_percentile_to_the_bit() -> None:
    rng = np.random.default_rng(1)
    for count in [1, 2, 3, 4, 5, 11, 12, 97, 1000, 4097]:
        for low, high in ((0, 256), (40, 60), (100, 102)):
            plane = rng.integers(low, high, (1, count), dtype=np.uint8)
            parts = rng.integers(0, 3, (1, count), dtype=np.uint8)
            parts[0, 0] = 2
            counts = value_counts(plane, parts, 3)[2]
            inside = plane[parts == 2].astype(np.float32)
            assert median_of_counts(counts) == float(np.median(inside))
            for percent in (1, 10, 33, 50, 90, 99):
                assert percentile_of_counts(counts, percent) == float(np.percentile(inside, percent))
            colour = chroma(rng.integers(0, 256, (count, 3), dtype=np.uint8))
            assert median_of(colour) == float(np.median(colour))


def eye_contour(centre: tuple[float, float], width: float, height: float) -> np.ndarray:
    """16 points round an ellipse ``width`` wide and ``height`` high (an eye's contour)."""
    angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    return np.stack([centre[0] + width / 2 * np.cos(angles), centre[1] + height / 2 * np.sin(angles)], axis=1)


def test_a_narrow_eye_is_kept_whole_and_an_open_one_not_at_all() -> None:
    """The lid band is 1 over a narrow eye's opening and round its lids, fading outward; an open eye keeps
    nothing of the target (its lids and opening are the source's)."""
    narrow = eye_contour((40, 50), 40, 0.1 * 40)
    wide = eye_contour((120, 50), 40, 0.4 * 40)
    assert opening_ratio(narrow) < SHUT <= opening_ratio(wide)
    points = np.vstack([narrow, wide]).astype(np.float32)
    contours = (np.arange(16), np.arange(16, 32))
    band = lid_band(points, contours, (0, 0, 160, 100))
    inside = np.zeros(band.shape, np.uint8)
    cv2.fillPoly(inside, [np.round(narrow).astype(np.int32)], 1)
    assert band[inside > 0].min() == 1.0, "the narrow eye's opening is the target's"
    assert band[50, 40 + 20 + 4] > 0.5 and band[50, 40 + 20 + 30] < 0.05, "its lids kept, fading outward"
    assert band[:, 85:].max() < 1e-3, "the open eye keeps nothing"


def test_the_source_lightness_spread_is_never_narrowed_to_a_flatter_target() -> None:
    """A grey source with strong shading onto a flat target: the lightness takes the target's mean but keeps
    the source's spread (its shading is who it is); onto a more contrasted target the spread widens."""
    rng = np.random.default_rng(3)
    shading = cv2.GaussianBlur(rng.normal(0, 1, (120, 120)).astype(np.float32), (0, 0), 4)
    shading = shading / shading.std()
    source = np.clip(128 + 30 * shading, 0, 255).astype(np.uint8)
    weight = np.ones((120, 120), np.float32)

    def lightness(image: np.ndarray) -> np.ndarray:
        return cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)

    for target_spread in (5.0, 50.0):
        target = np.clip(150 + target_spread * np.roll(shading, 30, axis=1), 0, 255).astype(np.uint8)
        moved = lightness(transfer_colour(cv2.merge([source] * 3), cv2.merge([target] * 3), weight))
        source_l, target_l = lightness(cv2.merge([source] * 3)), lightness(cv2.merge([target] * 3))
        assert abs(moved.mean() - target_l.mean()) < 3.0
        assert moved.std() >= 0.95 * source_l.std(), (target_spread, moved.std(), source_l.std())
        if target_spread > 30:
            assert moved.std() > 1.3 * source_l.std(), "widened toward the more contrasted target"


def test_the_source_face_is_drawn_at_full_weight_over_most_of_the_outline(astronaut_mesh: FaceMesh) -> None:
    """At the default mask blur the blend reaches 0.9 over at least two thirds of the face's outline (its
    cheeks and jaw are the source's; a wider fade let the target's show through, costing likeness)."""
    points = astronaut_mesh.points
    region = region_of(points, media.astronaut().shape)
    weight = oval_mask(points, region, SETTINGS.face_mask_blur)
    hull = np.zeros_like(weight)
    outline = face_outline(points) - np.array(region[:2], dtype=np.float32)
    cv2.fillConvexPoly(hull, cv2.convexHull(outline).astype(np.int32), 1.0)
    assert (weight[hull > 0] > 0.9).mean() >= 0.67


def test_the_lips_take_the_sources_width_but_keep_the_targets_opening(astronaut_mesh: FaceMesh) -> None:
    """A source whose mouth is wider and more open: the morphed lips widen part of the way toward it and
    keep the target's opening (the inner lips as far apart as before)."""
    target = astronaut_mesh.points[:468].astype(np.float32)
    lips = list(LIPS)
    centre = target[lips].mean(axis=0)
    source = target.copy()
    source[lips, 0] = centre[0] + (target[lips, 0] - centre[0]) * 1.3
    source[MOUTH_INNER_LOWER, 1] += 10.0
    morphed = morph_toward_source(target, source)

    def width(points: np.ndarray) -> float:
        return float(np.linalg.norm(points[MOUTH_CORNERS[1]] - points[MOUTH_CORNERS[0]]))

    def opening(points: np.ndarray) -> float:
        return float(points[MOUTH_INNER_LOWER, 1] - points[MOUTH_INNER_UPPER, 1])

    share = (width(morphed) - width(target)) / (width(source) - width(target))
    assert 0.5 * SHAPE_WEIGHT * LIP_SHARE < share < 1.5 * SHAPE_WEIGHT * LIP_SHARE, share
    assert abs(opening(morphed) - opening(target)) < 0.5, (opening(morphed), opening(target))


def eye_picture(open_eye: bool) -> tuple[np.ndarray, np.ndarray]:
    """A skin-coloured picture with one eye 0.29 as open as wide (between ``SHUT`` and ``LOOK_CLOSER``): an
    open one (a white, a dark iris) or a cast-down one (lid skin, lashes along its lower edge); and the
    points: the eye's contour (16), then its iris (centre, four round it)."""
    contour = eye_contour((60, 50), 40, 0.29 * 40)
    iris = np.array([[60, 50], [66, 50], [60, 44], [54, 50], [60, 56]], dtype=np.float64)
    image = np.zeros((100, 120, 3), dtype=np.uint8)
    image[:] = (120, 150, 205)  # skin (BGR)
    opening = np.round(contour).astype(np.int32)
    if open_eye:
        cv2.fillPoly(image, [opening], (225, 228, 232))
        cv2.circle(image, (60, 50), 6, (60, 70, 90), -1)
        cv2.circle(image, (60, 50), 2, (20, 20, 25), -1)
    else:
        cv2.fillPoly(image, [opening], (110, 140, 200))
        cv2.polylines(image, [opening[:9]], False, (40, 50, 70), 2)  # lashes along the lower lid
    return image, np.vstack([contour, iris]).astype(np.float32)


@pytest.mark.parametrize("open_eye", [True, False])
def test_a_cast_down_eye_is_told_by_its_picture_not_its_contour(open_eye: bool) -> None:
    """Two eyes whose mesh contours are the same, 0.29 open: the open one (a white and a dark iris show)
    is the source's, the cast-down one (only lid skin and lashes between its lids) is kept whole."""
    image, points = eye_picture(open_eye)
    contour, iris = np.arange(16), (16, 17, 18, 19, 20)
    assert SHUT <= opening_ratio(points[contour]) < LOOK_CLOSER
    band = lid_band(points, (contour,), (0, 0, 120, 100), image, (iris,))
    inside = np.zeros(band.shape, np.uint8)
    cv2.fillPoly(inside, [np.round(points[contour]).astype(np.int32)], 1)
    if open_eye:
        assert band.max() < 1e-3, "the open eye keeps nothing of the target"
    else:
        assert band[inside > 0].min() == 1.0, "the cast-down eye's opening and lids are the target's"
    # without the picture, the contour alone counts both as open
    assert lid_band(points, (contour,), (0, 0, 120, 100)).max() < 1e-3


def test_the_mirror_pairs_map_the_mesh_onto_itself_across_its_midline() -> None:
    """Each point has one mirror and is its mirror's mirror; the two eyes' contours map onto each other and
    the face's outline onto itself, and no point of an eye stays on its own side."""
    mirror = mirror_index()
    assert sorted(mirror.tolist()) == list(range(MESH_POINTS))
    assert (mirror[mirror] == np.arange(MESH_POINTS)).all()
    left_eye, right_eye = (set(contour.tolist()) for contour in opening_contours()[:2])
    assert {int(mirror[point]) for point in left_eye} == right_eye
    assert {int(mirror[point]) for point in FACE_OVAL} == set(FACE_OVAL)
    assert all(int(mirror[point]) != point for point in left_eye)


def test_summed_at_gives_np_add_at_s_sums_bit_for_bit() -> None:
    """Values (float64, as the side light's bilinear shares are) summed into float32 rows, many landing on
    the same rows in any order: the same float32 sums as ``np.add.at``, which adds them one by one."""
    rng = np.random.default_rng(7)
    index = rng.integers(0, 40, 500)
    values = rng.normal(0.0, 1.0, (500, 3)) * 10.0 ** rng.integers(-6, 4, (500, 1))
    expected = np.zeros((50, 3), dtype=np.float32)
    np.add.at(expected, index, values)
    summed = summed_at(index, values, 50)
    assert summed.dtype == np.float32
    assert np.array_equal(summed, expected)
    assert not summed[40:].any()
    assert not summed_at(np.zeros(0, dtype=int), np.zeros((0, 3)), 4).any()


def test_a_larger_source_is_averaged_down_to_the_target_face_not_sampled(astronaut_mesh: FaceMesh) -> None:
    """A source face four times the target's, with a one-pixel dark line across its cheek: drawn onto the
    target, the line is averaged over the pixels it falls in (a faint line), not sampled by the bilinear
    read, where the rows it was hit in showed it near full depth (a hard, broken crack)."""
    image = media.astronaut()
    large = np.asarray(cv2.resize(image, None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC), dtype=np.uint8)
    mesh = FaceMesh(((astronaut_mesh.points + 0.5) * 4 - 0.5).astype(np.float32), astronaut_mesh.depth)
    line = np.zeros(large.shape[:2], np.uint8)
    cheek = mesh.points[205].astype(int)  # below the left eye, on the cheek
    cv2.line(line, (int(cheek[0]) - 40, int(cheek[1])), (int(cheek[0]) + 40, int(cheek[1]) + 8), 1, 1)
    lined = large.copy()
    lined[line > 0] = 0
    plain, with_line = WarpSource.of(large, mesh), WarpSource.of(lined, mesh)
    assert with_line.at_size(float(np.ptp(astronaut_mesh.points, axis=0).max())).image.shape[0] < large.shape[0] / 2
    assert plain.at_size(float(np.ptp(mesh.points, axis=0).max())) is plain, "a source not larger is kept as it is"
    first = mesh_warp_swap(image, astronaut_mesh, plain, SETTINGS.face_mask_blur).frame
    second = mesh_warp_swap(image, astronaut_mesh, with_line, SETTINGS.face_mask_blur).frame
    darkened = first.astype(int).mean(axis=2) - second.astype(int).mean(axis=2)
    line_depth = float(large.astype(int).mean(axis=2)[line > 0].mean())
    assert darkened.max() > 0.1 * line_depth, "the line did not come across"
    assert darkened.max() < 0.5 * line_depth, f"the line came across {darkened.max():.0f} deep of {line_depth:.0f}"


def yawed(mesh: FaceMesh, degrees: float) -> FaceMesh:
    """The mesh of the same head turned ``degrees`` about the vertical through its centre."""
    points = np.column_stack([mesh.points, mesh.depth]).astype(np.float64)
    centre = points.mean(axis=0)
    a = np.radians(degrees)
    rotation = np.array([[np.cos(a), 0, -np.sin(a)], [0, 1, 0], [np.sin(a), 0, np.cos(a)]])
    moved = (points - centre) @ rotation.T + centre
    return FaceMesh(moved[:, :2].astype(np.float32), moved[:, 2].astype(np.float32))


def test_a_turned_source_is_drawn_from_its_mirror_image_on_a_target_turned_the_other_way(
    astronaut_mesh: FaceMesh,
) -> None:
    """The astronaut's mesh turned 35 degrees is a turned source (one half shows under ``TURNED_SOURCE`` of
    the other's area), her frontal mesh is not. A turned source's mirror image is drawn on a target turned
    the other way, the source itself on one turned its way or near frontal; a frontal source has none."""
    image = media.astronaut()
    left, right = yawed(astronaut_mesh, 35.0), yawed(astronaut_mesh, -35.0)
    assert far_side(astronaut_mesh.points, TURNED_SOURCE) == 0
    assert far_side(left.points, TURNED_SOURCE) == -far_side(right.points, TURNED_SOURCE) != 0
    frontal = WarpSource.of(image, astronaut_mesh)
    assert not frontal.turned and frontal.mirror_weight(right.points) == 0.0
    source = WarpSource.of(image, left)
    assert source.turned
    source = dataclasses.replace(source, mirror=source.flipped())
    assert source.mirror_weight(right.points) == 1.0
    assert source.mirror_weight(left.points) == 0.0
    assert far_side(yawed(astronaut_mesh, -5.0).points, TURNED_TARGET) == 0
    assert source.mirror_weight(yawed(astronaut_mesh, -5.0).points) == 0.0, "a near frontal target takes it as it is"
    assert source.mirror is not None and far_side(source.mirror.mesh.points, TURNED_SOURCE) == far_side(
        right.points, TURNED_SOURCE
    )


def test_a_head_turning_through_the_band_changes_smoothly(astronaut_mesh: FaceMesh) -> None:
    """A target turning a degree at a time from frontal to well turned the other way from a turned source:
    the mirror image's weight rises from 0 to 1 without a jump, and the swapped face changes by small
    steps, none far larger than the others (drawn from one or the other alone, the face switched at
    ``TURNED_TARGET``: a pop, and a flicker where a head hovered there)."""
    image = media.astronaut()
    source = WarpSource.of(image, yawed(astronaut_mesh, 35.0))
    source = dataclasses.replace(source, mirror=source.flipped())
    turns = [yawed(astronaut_mesh, -float(degrees)) for degrees in range(0, 41)]
    weights = [source.mirror_weight(turn.points) for turn in turns]
    assert weights[0] == 0.0 and weights[-1] == 1.0
    assert all(0.0 <= b - a <= 0.5 for a, b in itertools.pairwise(weights))
    assert sum(0.0 < weight < 1.0 for weight in weights) >= 2, "some turns mix the two"
    faces = [mesh_warp_swap(image, turn, source, SETTINGS.face_mask_blur).frame.astype(np.float32) for turn in turns]
    steps = np.array([np.abs(b - a).mean() for a, b in itertools.pairwise(faces)])
    # drawn from one or the other alone, the step at the switch is some 20 times the median on this head
    assert steps.max() < 6.0 * np.median(steps), f"a jump while turning: {np.round(steps, 3).tolist()}"


def test_the_mirror_image_keeps_each_points_meaning(astronaut_mesh: FaceMesh) -> None:
    """Flipped, the photo's pixels and the mesh go left to right together, each point taking its twin's
    place (the left eye's corner is still the left eye's, on the flipped photo's left eye); flipped twice,
    the source is as it was."""
    source = WarpSource.of(media.astronaut(), astronaut_mesh)
    flipped = source.flipped()
    width = source.image.shape[1]
    assert np.array_equal(flipped.image, source.image[:, ::-1])
    twins = source.mesh.points[mirror_index()]
    assert np.allclose(flipped.mesh.points[:MESH_POINTS, 0], width - 1 - twins[:, 0])
    assert np.allclose(flipped.mesh.points[:MESH_POINTS, 1], twins[:, 1])
    again = flipped.flipped()
    assert np.array_equal(again.image, source.image)
    assert np.allclose(again.mesh.points, source.mesh.points) and np.allclose(again.mesh.depth, source.mesh.depth)


def test_a_turned_sources_cheek_shadow_is_lifted_to_the_targets_not_its_features() -> None:
    """A warped face with a broad dark band on one cheek, on an evenly lit target: the band is lifted,
    the features (the middle) keep their shading, and a brighter patch is never darkened."""
    lightness = np.full((120, 120), 150, np.uint8)
    lightness[20:100, 90:115] = 100  # the shaded cheek
    lightness[20:100, 5:25] = 190  # a brighter cheek
    lightness[50:70, 50:70] = 90  # a feature's own shading
    target = np.full((120, 120), 160, np.uint8)
    face = np.zeros((120, 120), np.float32)
    face[10:110, 0:120] = 1.0
    features = np.zeros((120, 120), np.float32)
    features[40:80, 40:80] = 1.0
    lifted = with_lifted_shadows(lightness, target, face, features)
    assert lifted[60, 105] > lightness[60, 105] + 20, "the shaded cheek was not lifted"
    assert lifted[60, 60] <= lightness[60, 60] + 3, "the feature lost its shading"
    assert (lifted.astype(int) >= lightness.astype(int)).all(), "something was darkened"


def test_faint_detail_on_the_skin_is_not_sharpened_but_the_features_detail_is() -> None:
    """A soft source sharpened: grain fainter than ``FLAT_DETAIL`` on its cheek is not lifted (it came across
    as grey speckle); the same grain inside the features is, as before."""
    rng = np.random.default_rng(3)
    grey = np.full((100, 100), 128.0) + cv2.GaussianBlur(rng.normal(0.0, 6.0, (100, 100)), (0, 0), 1.2)
    image = np.asarray(cv2.merge([np.clip(grey, 0, 255).astype(np.uint8)] * 3), dtype=np.uint8)
    inside = np.ones((100, 100), np.float32)
    features = np.zeros((100, 100), np.float32)
    features[30:70, 30:70] = 1.0
    plain = sharpened(image, inside, 100.0, 1.0).astype(float)
    cored = sharpened(image, inside, 100.0, 1.0, features).astype(float)
    change = np.abs(cored - image.astype(float))[..., 0]
    assert np.abs(grey - grey.mean()).max() > FLAT_DETAIL / 2
    assert change[40:60, 40:60].mean() == pytest.approx(np.abs(plain - image)[40:60, 40:60, 0].mean(), rel=0.05)
    assert change[:15, :15].mean() < 0.5 * np.abs(plain - image)[:15, :15, 0].mean()

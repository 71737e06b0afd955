"""How the embedded swapper's results look on sources it was not tuned on: no colour streaks from an
older source's wrinkles, a greyscale source takes the target's colour, shut eyes stay shut, a cast-down
eye keeps its lid, a source lit from one side takes the target's lighting, and a source's glasses are
painted out without leaving rims."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from benchmarks.swap_looks import cheeks, creases, eye_band, eye_openings, lab_streaks, with_eyes_shut
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.mesh_parts import face_size
from facefusion_ui.processors.eye_lids import LOOK_CLOSER, SHUT, opening_ratio
from facefusion_ui.processors.mesh_warp import (
    FACE_OVAL,
    IRISES,
    WarpSource,
    face_parts,
    glasses_painted_out,
    opening_contours,
    skin_likeness,
    toward_target_colour_at_edge,
)
from facefusion_ui.processors.mesh_warp_swapper import MeshWarpSwapper
from facefusion_ui.processors.side_light import with_lifted_shadows
from facefusion_ui.processors.source_detail import DETAIL_SCALE, MOST_SHARPENING, quieted, sharpened, sharpening
from facefusion_ui.processors.source_glasses import (
    dark_lines,
    edge_remnants,
    frame_lines,
    kept_eyes,
    lens_glints,
    lens_insides,
    lens_rings,
    painted_out,
    wears_glasses,
    with_target_detail,
)
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media

SETTINGS = Settings()


@pytest.fixture(scope="module")
def swapper(shared_runtime: ModelRuntime) -> MeshWarpSwapper:
    return MeshWarpSwapper(SETTINGS, shared_runtime)


def analysed(runtime: ModelRuntime, image: Frame) -> list[Face]:
    return FaceAnalyser(runtime).analyse(image, SETTINGS, embeddings=False, mesh=True)


def prepared(swapper: MeshWarpSwapper, runtime: ModelRuntime, image: Frame) -> WarpSource:
    face = analysed(runtime, image)[0]
    mesh = swapper.warp_mesh(image, face)
    assert mesh is not None
    return WarpSource.of(image, mesh)


def swapped_all(swapper: MeshWarpSwapper, target: Frame, faces: list[Face], source: WarpSource) -> Frame:
    result = target
    for face in faces:
        swapped = swapper.swap_face(result, face, source, SETTINGS)
        result = result if swapped is None else swapped
    return result


def box_of(face: Face) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (int(value) for value in face.bbox)
    return max(x1, 0), max(y1, 0), x2, y2


def test_an_older_source_brings_no_colour_streaks(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    target = media.t1()
    faces = analysed(shared_runtime, target)
    result = swapped_all(swapper, target, faces, prepared(swapper, shared_runtime, media.grace_hopper()))
    ratios = [lab_streaks(result, box_of(face)) / lab_streaks(target, box_of(face)) for face in faces]
    assert len(ratios) == 6
    assert max(ratios) <= 1.05, ratios
    # the faces did change: brightness detail came across
    assert all(
        np.abs(result[y1:y2, x1:x2].astype(int) - target[y1:y2, x1:x2]).mean() > 3
        for x1, y1, x2, y2 in map(box_of, faces)
    )


def test_a_greyscale_source_takes_the_targets_colour(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    hanks = media.read(media.tom_hanks_path())
    source_lab = cv2.cvtColor(hanks, cv2.COLOR_BGR2LAB).astype(np.float32)
    assert np.abs(source_lab[..., 1:] - 128).mean() < 2  # the photo is grey
    target = media.t1()
    faces = analysed(shared_runtime, target)
    result = swapped_all(swapper, target, faces, prepared(swapper, shared_runtime, hanks))
    for face in faces:
        x1, y1, x2, y2 = box_of(face)
        before = cv2.cvtColor(target[y1:y2, x1:x2], cv2.COLOR_BGR2LAB).astype(np.float32)
        after = cv2.cvtColor(result[y1:y2, x1:x2], cv2.COLOR_BGR2LAB).astype(np.float32)
        chroma_before = np.hypot(before[..., 1] - 128, before[..., 2] - 128).mean()
        chroma_after = np.hypot(after[..., 1] - 128, after[..., 2] - 128).mean()
        # no pale grey patch: the face keeps most of its colour
        assert chroma_after >= 0.8 * chroma_before, (face.bbox, chroma_before, chroma_after)


def test_shut_eyes_stay_shut(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    astronaut = media.astronaut()
    face = analysed(shared_runtime, astronaut)[0]
    assert face.mesh is not None
    shut = with_eyes_shut(astronaut, face.mesh.points)
    shut_face = analysed(shared_runtime, shut)[0]
    assert shut_face.mesh is not None
    before = eye_openings(shut_face.mesh.points)
    # the generated target's eyes are narrowed to lids the mesh reads under a quarter as high as wide
    open_before = eye_openings(face.mesh.points)
    assert all(opening < 0.7 * first for (opening, _), (first, _) in zip(before, open_before, strict=True))
    assert all(opening < 0.25 * width for opening, width in before)
    result = swapped_all(swapper, shut, [shut_face], prepared(swapper, shared_runtime, media.grace_hopper()))
    after_face = analysed(shared_runtime, result)[0]
    assert after_face.mesh is not None
    after = eye_openings(after_face.mesh.points)
    for (opening, _), (after_opening, _) in zip(before, after, strict=True):
        assert abs(after_opening - opening) <= 2.0, (before, after)


def test_glasses_are_painted_out_without_rims(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    grace = media.grace_hopper()
    face = analysed(shared_runtime, grace)[0]
    mesh = swapper.warp_mesh(grace, face)
    assert mesh is not None
    source = WarpSource.of(grace, mesh)
    points = source.mesh.points
    x1, y1 = int(mesh.points[:, 0].min()) - 4, int(mesh.points[:, 1].min()) - 4
    original = np.ascontiguousarray(grace[max(y1, 0) :, max(x1, 0) :][: source.image.shape[0], : source.image.shape[1]])
    assert wears_glasses(original, points)
    assert source.painted is not None and source.painted.max() > 0.9
    shape = source.image.shape[:2]
    rims = (lens_rings(points, shape) > 0) & (kept_eyes(points, shape) == 0)
    lines_before = dark_lines(original, points)[rims].mean()
    lines_after = dark_lines(source.image, points)[rims].mean()
    own_skin = dark_lines(source.image, points)[cheeks(points, source.image.shape)].mean()
    assert lines_before > 0.15
    # what is left along the lenses' edges is her own skin's texture (lent by the skin beside it), not a
    # rim: well under the share of lines on her bare cheeks, and under half of what the frames drew
    assert lines_after < 0.6 * own_skin, (own_skin, lines_after)
    assert lines_after < 0.5 * lines_before, (lines_before, lines_after)
    assert not wears_glasses(source.image, points)
    # kept, they stay
    assert WarpSource.of(grace, mesh, keep_glasses=True).painted is None


def test_the_painted_band_has_her_skins_texture_and_the_lenses_skin_is_kept(
    swapper: MeshWarpSwapper, shared_runtime: ModelRuntime
) -> None:
    """Painted out, the frames leave no flat, pale band round the eyes: the fill takes the fine detail of her
    own skin beside it (under half her cheeks' before), and the skin seen through the lenses is the photo's."""
    grace = media.grace_hopper()
    mesh = swapper.warp_mesh(grace, analysed(shared_runtime, grace)[0])
    assert mesh is not None
    source, kept = WarpSource.of(grace, mesh), WarpSource.of(grace, mesh, keep_glasses=True)
    assert source.painted is not None
    points, shape = source.mesh.points, source.image.shape[:2]
    grey = cv2.cvtColor(source.image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    fine = np.abs(grey - cv2.GaussianBlur(grey, (0, 0), 1.5))
    band = (source.painted > 0.9) & (kept_eyes(points, shape) == 0)
    assert fine[band].mean() > 0.45 * fine[cheeks(points, source.image.shape)].mean()
    through = lens_insides(points, shape) > 0
    same = np.abs(source.image.astype(np.int16) - kept.image.astype(np.int16)).max(axis=2) <= 2
    assert same[through].mean() > 0.3


def test_the_eye_band_measure_sees_a_flat_pale_band(shared_runtime: ModelRuntime) -> None:
    """``eye_band``: a face against itself reads 1 and 0; with the band round its eyes smoothed and lightened
    (a flat, pale fill), under 1 and above 0."""
    grace = media.grace_hopper()
    mesh = analysed(shared_runtime, grace)[0].mesh
    assert mesh is not None
    points = mesh.points
    assert eye_band(grace, grace, points) == pytest.approx((1.0, 0.0), abs=1e-6)
    band = (lens_rings(points, grace.shape[:2]) > 0) & (kept_eyes(points, grace.shape[:2]) == 0)
    flat = grace.copy()
    smooth = cv2.GaussianBlur(grace, (0, 0), 4.0).astype(np.int16) + 20
    flat[band] = np.clip(smooth[band], 0, 255).astype(np.uint8)
    detail, paler = eye_band(flat, grace, points)
    assert detail < 0.6 and paler > 10.0, (detail, paler)


def test_the_creases_measure_reads_darker_lines_as_more(shared_runtime: ModelRuntime) -> None:
    """``creases``: a face against itself at its own size reads alike; at half the size about alike (the
    photo is resized first); with its thin dark lines darkened, more."""
    grace = media.grace_hopper()
    mesh = analysed(shared_runtime, grace)[0].mesh
    assert mesh is not None
    points = mesh.points
    own = creases(grace, points)
    half = np.asarray(cv2.resize(grace, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA), dtype=np.uint8)
    assert creases(half, points * 0.5) == pytest.approx(creases(grace, points, face_size(points) / 2), rel=0.05)
    darker = grace.astype(np.float32) - 0.8 * cv2.merge([(dark_lines(grace, points) * 25.0).astype(np.float32)] * 3)
    assert creases(np.clip(darker, 0, 255).astype(np.uint8), points) > 1.2 * own


def test_a_lens_glint_is_found_and_the_skin_round_it_is_not() -> None:
    skin = np.full((100, 100, 3), 150, np.uint8)
    skin[30:70, 30:70] = 175  # a lighter patch of skin, wider than a glint
    cv2.circle(skin, (20, 80), 2, (250, 250, 250), -1)
    points = np.array([[0.0, 0.0], [300.0, 300.0]], dtype=np.float32)  # a face 300 px across
    glints = lens_glints(skin, points)
    assert glints[80, 20] == 1.0
    assert glints[30:70, 30:70].max() == 0.0


def test_no_arc_of_a_lower_rim_is_left_past_the_painting(
    swapper: MeshWarpSwapper, shared_runtime: ModelRuntime
) -> None:
    grace = media.grace_hopper()
    mesh = swapper.warp_mesh(grace, analysed(shared_runtime, grace)[0])
    assert mesh is not None
    crop, points = (source := WarpSource.of(grace, mesh, keep_glasses=True)).image, source.mesh.points
    outline, features = face_parts(crop, points)
    skin = skin_likeness(crop, points, outline, features)
    assert skin is not None
    lines, kept = frame_lines(crop, points, skin), kept_eyes(points, crop.shape[:2])
    # the frames painted over alone: the far edge of each lower rim and its shadow stay as long thin lines
    before = edge_remnants(painted_out(crop, points, lines, skin), points, lines, kept)
    after = edge_remnants(glasses_painted_out(crop, points)[0], points, lines, kept)
    assert before.sum() > 0
    assert after.sum() < 0.2 * before.sum(), (before.sum(), after.sum())


def test_a_bare_face_is_not_painted(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    astronaut = media.astronaut()
    face = analysed(shared_runtime, astronaut)[0]
    mesh = swapper.warp_mesh(astronaut, face)
    assert mesh is not None
    source = WarpSource.of(astronaut, mesh)
    assert source.painted is None
    outline, features = face_parts(source.image, source.mesh.points)
    assert skin_likeness(source.image, source.mesh.points, outline, features) is not None
    image, painted = glasses_painted_out(source.image, source.mesh.points)
    assert painted is None and image is source.image


def test_the_painted_area_takes_the_targets_fine_detail() -> None:
    rng = np.random.default_rng(3)
    warped = np.full((80, 80, 3), 150, np.uint8)  # a flat fill
    target = np.clip(120 + rng.normal(0, 12, (80, 80, 1)), 0, 255).astype(np.uint8).repeat(3, axis=2)
    painted = np.zeros((80, 80), np.float32)
    painted[20:60, 20:60] = 1.0
    result = with_target_detail(warped, target, painted, face_width=80.0)
    inside = result[25:55, 25:55].astype(np.float32)
    assert inside.std() > 5  # textured, not flat
    assert abs(inside.mean() - 150) < 3  # the fill's brightness stays
    assert (result[:15] == 150).all() and (result[:, :15] == 150).all()  # nothing outside changes
    # the detail is the target's own
    target_detail = target[25:55, 25:55, 0].astype(np.float32) - target[25:55, 25:55, 0].mean()
    assert np.corrcoef(target_detail.ravel(), (inside[..., 0] - 150).ravel())[0, 1] > 0.8


def test_a_soft_source_is_sharpened_up_to_the_floor_and_a_sharp_one_left() -> None:
    rng = np.random.default_rng(5)
    sharp = np.clip(128 + rng.normal(0, 40, (120, 120, 1)), 0, 255).astype(np.uint8).repeat(3, axis=2)
    soft = np.asarray(cv2.GaussianBlur(sharp, (0, 0), 2.0), dtype=np.uint8)
    inside = np.zeros((120, 120), np.float32)
    inside[20:100, 20:100] = 1.0
    assert sharpening(sharp, inside, 100.0) == 0.0
    assert sharpened(sharp, inside, 100.0, sharpening(sharp, inside, 100.0)) is sharp
    amount = sharpening(soft, inside, 100.0)
    assert 0.0 < amount <= MOST_SHARPENING
    result = sharpened(soft, inside, 100.0, amount)
    sigma = DETAIL_SCALE * 100.0

    def detail(image: Frame) -> float:
        grey = image[..., 0].astype(np.float32)
        return float(np.abs(grey - cv2.GaussianBlur(grey, (0, 0), sigma))[30:90, 30:90].mean())

    assert detail(result) > 1.5 * detail(soft)
    assert (result[:20] == soft[:20]).all() and (result[:, :20] == soft[:, :20]).all()  # outside the face: as it was
    assert np.abs(result[..., 0].astype(int) - result[..., 2]).max() == 0  # lightness only, no colour


def test_the_sharpening_lifts_the_features_edges_not_the_photos_grain() -> None:
    """A soft edge (a feature) under one-pixel grain: sharpened, the edge grows steeper, the grain (pixel to
    pixel) grows far less than the amount asks (it doubled with it before)."""
    rng = np.random.default_rng(3)
    edge = np.full((120, 120), 100.0, np.float32)
    edge[:, 60:] = 160.0
    soft = np.asarray(cv2.GaussianBlur(edge, (0, 0), 3.0), dtype=np.float32)
    grain = rng.normal(0, 4, soft.shape).astype(np.float32)
    image = np.clip(soft + grain + 0.5, 0, 255).astype(np.uint8)[..., None].repeat(3, axis=2)
    inside = np.zeros((120, 120), np.float32)
    inside[10:110, 10:110] = 1.0
    result = sharpened(image, inside, 100.0, 1.0)[..., 0].astype(np.float32)
    rows = slice(30, 90)

    def steepest(values: np.ndarray) -> float:  # the edge's slope, the rows averaged (their grain with them)
        return float(np.diff(values[rows].mean(axis=0)[45:75]).max())

    assert steepest(result) > 1.1 * steepest(image[..., 0].astype(np.float32)), "the edge was not lifted"

    def pixel_noise(values: np.ndarray) -> float:
        flat = values[rows, 20:45]  # away from the edge: grain only
        return float(np.abs(np.diff(flat, axis=1)).mean())

    before, after = pixel_noise(image[..., 0].astype(np.float32)), pixel_noise(result)
    assert after < 1.4 * before, f"the grain was lifted from {before:.1f} to {after:.1f}"


def test_a_cast_down_eye_keeps_its_lid(swapper: MeshWarpSwapper, shared_runtime: ModelRuntime) -> None:
    """The woman second from the left of t1.jpg looks down: the mesh reads her eyes 0.29 open (as open as
    an open eye), but no iris shows between her lids, so the source's open blue eyes are not drawn there:
    each eye's opening stays as it was."""
    target = media.t1()
    faces = analysed(shared_runtime, target)
    looking_down = swapper.warp_mesh(target, faces[1])
    assert looking_down is not None
    result = swapped_all(swapper, target, faces, prepared(swapper, shared_runtime, media.grace_hopper()))
    for contour in opening_contours()[: len(IRISES)]:
        assert SHUT <= opening_ratio(looking_down.points[contour]) < LOOK_CLOSER
        eye = np.zeros(target.shape[:2], dtype=np.uint8)
        cv2.fillPoly(eye, [np.round(looking_down.points[contour]).astype(np.int32)], 1)
        change = np.abs(result[eye > 0].astype(int) - target[eye > 0]).mean()
        assert change < 4.0, change


def half_difference(image: Frame, face: Face) -> float:
    """The mean lightness of the face's one half (its outline split by the line from forehead to chin)
    less the other's."""
    assert face.mesh is not None
    points = face.mesh.points
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
    inside = np.zeros(image.shape[:2], dtype=np.uint8)
    cv2.fillConvexPoly(inside, cv2.convexHull(points[list(FACE_OVAL)]).astype(np.int32), 1)
    top, down = points[10], points[152] - points[10]
    ys, xs = np.mgrid[0 : image.shape[0], 0 : image.shape[1]]
    side = (xs - top[0]) * down[1] - (ys - top[1]) * down[0]
    return float(lightness[(inside > 0) & (side > 0)].mean() - lightness[(inside > 0) & (side < 0)].mean())


def test_a_source_lit_from_one_side_takes_the_targets_lighting(
    swapper: MeshWarpSwapper, shared_runtime: ModelRuntime
) -> None:
    """Tom Hanks's photo is lit from one side: on t1's faces his dark half-face is not carried across, each
    face's two halves differ in lightness on average within 13 grey levels of how the target's do (17
    when the source's side lighting came across whole)."""
    target = media.t1()
    faces = analysed(shared_runtime, target)
    result = swapped_all(swapper, target, faces, prepared(swapper, shared_runtime, media.read(media.tom_hanks_path())))
    changes = [abs(half_difference(result, face) - half_difference(target, face)) for face in faces]
    assert len(changes) == 6
    assert float(np.mean(changes)) < 13.0, changes


def test_a_turned_sources_shadow_is_lifted_over_the_faces_fading_edge_too() -> None:
    # the inner face (weight over 0.5) from 16 to 80; the blend still shows the source a little past it
    face = np.zeros((96, 96), np.float32)
    face[16:80, 16:80] = 1
    target = np.full((96, 96), 180, np.uint8)
    source = np.full((96, 96), 180, np.uint8)
    source[:, :40] = 120  # the near cheek in shadow, out to the face's edge
    lifted = with_lifted_shadows(source, target, face, np.zeros_like(face))
    assert lifted[48, 24] > 150
    # past the inner face's edge as well: no dark rim of the source's shadow where the blend fades
    assert lifted[48, 8] > 150, lifted[48, :20]
    # never darkened, and what matches the target is left
    assert (lifted.astype(int) >= source).all() and lifted[48, 60] == 180


def test_a_small_photos_grain_is_quieted_and_its_lines_kept() -> None:
    rng = np.random.default_rng(5)
    grain = rng.normal(0.0, 2.0, (80, 80))
    image = np.clip(150.0 + grain, 0, 255).astype(np.uint8)
    image[40:42, 10:70] -= 40  # a wrinkle: far stronger than the grain
    photo = np.asarray(cv2.merge([image, image, image]), dtype=np.uint8)
    inside = np.zeros((80, 80), np.float32)
    inside[4:76, 4:76] = 1.0
    quiet = quieted(photo, inside, np.zeros_like(inside), 80.0)
    fine_before, fine_after = (
        np.abs(grey - cv2.GaussianBlur(grey, (0, 0), 1.0))[10:30, 10:70].mean()
        for grey in (photo[..., 0].astype(np.float32), quiet[..., 0].astype(np.float32))
    )
    assert fine_after < 0.7 * fine_before, (fine_before, fine_after)
    # the wrinkle keeps its depth against the skin round it; no colour comes in
    depth = float(quiet[20:30, 10:70, 0].mean()) - float(quiet[40:42, 20:60, 0].mean())
    assert depth > 0.8 * 40, depth
    assert (quiet[..., 0] == quiet[..., 1]).all() and (quiet[..., 1] == quiet[..., 2]).all()


def test_the_colour_at_the_faces_edge_is_the_targets_own() -> None:
    weight = np.zeros((120, 120), np.float32)  # the blend weight: the face from 10 to 110
    weight[10:110, 10:110] = 1.0
    moved = np.full((120, 120, 2), 140, np.uint8)  # the source's colour moved to the target's mean
    target = np.zeros((120, 120, 3), np.uint8)
    target[..., 0], target[..., 1], target[..., 2] = 180, 150, 160  # warmer at the neck and ears
    target[40:80, 40:80, 1:] = 140  # the middle of the face as pale as the moved colour
    colour = toward_target_colour_at_edge(moved, target, weight, 3.0)
    # at the face's edge, near the target's own (the neck's); the moved colour is 10 and 20 levels off
    assert abs(int(colour[60, 11, 0]) - 150) <= 3 and abs(int(colour[60, 11, 1]) - 160) <= 5
    assert (colour[60, 60] == 140).all()  # deep inside, the source's own (moved) colour
    assert int(colour[60, 20, 1]) > 140  # a smooth slope between, no edge of its own

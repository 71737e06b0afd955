"""The embedded swapper's hard cases: turned heads (left as they were past the limit, and counted),
expressions (the target's narrow eyes and open mouth stay), gaze (the source's iris lands where the
target's is) and the source's glasses (left out unless kept)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.cli.process import summary_line
from facefusion_ui.core import process
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.landmarker import face_mesh
from facefusion_ui.faces.mesh_pose import mesh_pose
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import load_sources
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.masks.mesh_parts import face_size, region_polygon_mask
from facefusion_ui.processors import mesh_warp
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.eye_lids import SHUT, opening_ratio
from facefusion_ui.processors.face_swapper import FaceSwapper
from facefusion_ui.processors.mesh_warp import (
    IRISES,
    TURNED_SOURCE,
    WarpSource,
    far_side,
    iris_inside,
    mesh_warp_swap,
    opening_contours,
    with_irises,
)
from facefusion_ui.processors.mesh_warp_swapper import MeshWarpSwapper
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.processors.source_glasses import EYE_CORNERS, eye_frame, wears_glasses
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.ui.processor_options import processor_settings
from tests.support import media

SETTINGS = Settings()
GREEN = (0, 255, 0)


def analysed(runtime: ModelRuntime, frame: Frame) -> Face:
    face = FaceAnalyser(runtime).analyse(frame, SETTINGS, embeddings=False, mesh=True)[0]
    assert face.mesh is not None
    return face


@pytest.fixture(scope="module")
def astronaut_face(shared_runtime: ModelRuntime) -> Face:
    """The astronaut's face with the mesh the embedded swapper draws with (478 points: with the irises)."""
    face = analysed(shared_runtime, media.astronaut())
    with shared_runtime.using("mesh_warp") as model:
        refined = face_mesh(media.astronaut(), face.bbox, model)
    assert face.mesh is not None and refined is not None and len(refined.points) == 478
    return dataclasses.replace(face, mesh=with_irises(face.mesh, refined))


@pytest.fixture(scope="module")
def large_astronaut(astronaut_face: Face) -> tuple[Frame, FaceMesh]:
    """The astronaut at three times the size, with her mesh: the eye openings are some 20 px high there."""
    assert astronaut_face.mesh is not None
    image = cv2.resize(media.astronaut(), None, fx=3, fy=3, interpolation=cv2.INTER_CUBIC)
    mesh = FaceMesh(astronaut_face.mesh.points * 3, astronaut_face.mesh.depth * 3)
    return np.asarray(image, dtype=np.uint8), mesh


def turned(mesh: FaceMesh, yaw: float, pitch: float = 0.0) -> FaceMesh:
    """The mesh of the same head turned ``yaw`` degrees (toward the image's right) and tilted ``pitch``
    (down) about its centre."""
    points = np.column_stack([mesh.points, mesh.depth]).astype(np.float64)
    centre = points.mean(axis=0)
    a, b = np.radians(yaw), np.radians(pitch)
    about_vertical = np.array([[np.cos(a), 0, -np.sin(a)], [0, 1, 0], [np.sin(a), 0, np.cos(a)]])
    about_across = np.array([[1, 0, 0], [0, np.cos(b), -np.sin(b)], [0, np.sin(b), np.cos(b)]])
    moved = (points - centre) @ (about_across @ about_vertical).T + centre
    return FaceMesh(moved[:, :2].astype(np.float32), moved[:, 2].astype(np.float32))


def middle_height(inside: np.ndarray, contour: np.ndarray) -> float:
    """How high ``inside`` (a mask) is over the middle third of an opening (``contour``: its outline),
    the median over those columns: the opening's height where it is widest open, not from its corners."""
    (x1, y1), (x2, y2) = contour.min(axis=0), contour.max(axis=0)
    reach, third = y2 - y1 + 4, (x2 - x1) / 3
    columns = inside[int(y1 - reach) : int(y2 + reach) + 1, int(x1 + third) : int(x2 - third) + 1]
    return float(np.median(columns.sum(axis=0)))


def green_height(image: Frame, contour: np.ndarray) -> float:
    """The height of the green drawn in an opening (``contour``: its outline in ``image``)."""
    pixels = image.astype(int)
    green = (pixels[..., 1] > pixels[..., 2] + 60) & (pixels[..., 1] > pixels[..., 0] + 60)
    return middle_height(green, contour)


def opening_height(contour: np.ndarray, shape: tuple[int, ...]) -> float:
    inside = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(inside, [np.round(contour).astype(np.int32)], 1)
    return middle_height(inside > 0, contour)


# pose -------------------------------------------------------------------------------------------------


def test_the_pose_read_from_the_mesh_follows_a_turned_head(shared_runtime: ModelRuntime, astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    yaw, pitch = mesh_pose(astronaut_face.mesh)
    assert abs(yaw) < 5 and abs(pitch) < 8, "the astronaut looks at the camera"
    for turn, tilt in ((30, 0), (-30, 0), (60, 0), (0, 30), (0, -30)):
        turned_yaw, turned_pitch = mesh_pose(turned(astronaut_face.mesh, turn, tilt))
        assert turned_yaw - yaw == pytest.approx(turn, abs=5) and turned_pitch - pitch == pytest.approx(tilt, abs=5)
    faces = FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS, embeddings=False, mesh=True)
    yaws = sorted(abs(mesh_pose(face.mesh)[0]) for face in faces if face.mesh is not None)
    assert len(yaws) == 6 and yaws[-2] > 30 and yaws[0] < 10, yaws  # two of t1's six are turned well away


def test_a_turned_source_photo_brings_its_mirror_image_mapped_anew(shared_runtime: ModelRuntime) -> None:
    """Tom Hanks's photo (turned about 20 degrees) is prepared with its mirror image: the photo flipped and
    its face mapped there, turned the other way; the frontal astronaut's photo is prepared alone."""
    swapper = MeshWarpSwapper(SETTINGS, shared_runtime)
    photo = media.read(media.tom_hanks_path())
    prepared = swapper.prepare_face(photo, analysed(shared_runtime, photo))
    assert prepared is not None and prepared.turned and prepared.mirror is not None
    side = far_side(prepared.mesh.points, TURNED_SOURCE)
    assert far_side(prepared.mirror.mesh.points, TURNED_SOURCE) == -side
    flipped = prepared.flipped().image  # the same crop flipped, give or take a pixel of the new mesh's box
    height, width = flipped.shape[:2]
    mirror = cv2.resize(prepared.mirror.image, (width, height), interpolation=cv2.INTER_AREA)
    assert np.abs(mirror.astype(int) - flipped.astype(int)).mean() < 12, "not the same photo flipped"
    frontal = swapper.prepare_face(media.astronaut(), analysed(shared_runtime, media.astronaut()))
    assert frontal is not None and frontal.mirror is None


def test_a_face_turned_too_far_is_left_as_it_was_and_counted(
    shared_runtime: ModelRuntime, astronaut_face: Face
) -> None:
    assert astronaut_face.mesh is not None
    swapper = FaceSwapper(SETTINGS, shared_runtime)
    sources = load_sources([media.grace_hopper_path()], FaceAnalyser(shared_runtime), SETTINGS)
    frame = media.astronaut()
    for yaw, pitch in ((70, 0), (-70, 0), (0, 55)):
        away = dataclasses.replace(astronaut_face, mesh=turned(astronaut_face.mesh, yaw, pitch))
        context = FrameContext(0, 0.0, SETTINGS, faces=[away], sources=sources)
        assert np.array_equal(swapper.process_frame(frame, context), frame), (yaw, pitch)
    assert swapper.counts() == {"faces_swapped": 0, "faces_skipped_pose": 3}
    slightly = dataclasses.replace(astronaut_face, mesh=turned(astronaut_face.mesh, 25, 0))
    for face in (astronaut_face, slightly):
        swapped = swapper.process_frame(frame, FrameContext(0, 0.0, SETTINGS, faces=[face], sources=sources))
        assert np.abs(swapped.astype(int) - frame.astype(int)).max() > 40, "the face was not swapped"
    assert swapper.counts() == {"faces_swapped": 2, "faces_skipped_pose": 3}


def test_the_run_summary_says_how_many_faces_were_left_for_their_pose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the yaw limit lowered to 30 degrees, t1's two most turned faces are left; the JSON stats and
    the plain summary say so."""
    monkeypatch.setattr(mesh_warp, "TURN_LIMITS", (30.0, 40.0))
    source, target, output = tmp_path / "astronaut.png", media.t1_path(), tmp_path / "out.png"
    cv2.imwrite(str(source), media.astronaut())
    result = process(SwapJob.of(SETTINGS, [source], target, output), RunContext())
    assert result.stats["faces_skipped_pose"] == 2 and result.stats["faces_swapped"] == 4, result.stats
    line = summary_line(str(output), 1.0, result.stats)
    assert line.splitlines()[1] == "2 faces left as they were: turned too far for the embedded swapper"
    assert "\n" not in summary_line(str(output), 1.0, {**result.stats, "faces_skipped_pose": 0})


# expression and gaze ------------------------------------------------------------------------------------


@pytest.mark.parametrize("squash", [0.35, 0.7])
def test_a_squinting_laughing_target_keeps_its_narrow_eyes_and_open_mouth(
    large_astronaut: tuple[Frame, FaceMesh], squash: float
) -> None:
    """The target's eye contours squashed (to 0.35 or 0.7 of their height) and its mouth opened further: the
    source's openings (painted green) are drawn as high as the target's, not half-way to the source's; an
    eye squashed under ``eye_lids.SHUT`` (shut, cast down) is the target's own, none of the source's drawn."""
    image, mesh = large_astronaut
    shape = image.shape[:2]
    painted = image.copy()
    for opening in ("left-eye", "right-eye", "mouth"):
        painted[region_polygon_mask(mesh.points, opening, shape) > 0] = GREEN
    source = WarpSource.of(painted, mesh)
    target = mesh.points.copy()
    eyes, mouth = opening_contours()[:2], opening_contours()[2]
    for contour, iris in zip(eyes, IRISES, strict=True):
        group = [*contour, *iris]
        middle = target[contour, 1].mean()
        target[group, 1] = middle + (target[group, 1] - middle) * squash
    # the jaw dropped: what lies below the mouth's corners moves down, gradually (nothing folds over)
    level, lowest = target[mouth, 1].mean(), target[mouth, 1].max()
    below = np.clip((target[:, 1] - level) / (3 * (lowest - level)), 0.0, 1.0)
    target[:, 1] += below * (lowest - target[mouth, 1].min())
    result = mesh_warp_swap(image, FaceMesh(target, mesh.depth), source, SETTINGS.face_mask_blur)
    for contour in (*eyes, mouth):
        target_height = opening_height(target[contour], shape)
        source_height = opening_height(mesh.points[contour], shape)
        drawn = green_height(result.frame, target[contour])
        if contour is not mouth and opening_ratio(target[contour]) < SHUT:
            inside = np.zeros(shape, np.uint8)
            cv2.fillPoly(inside, [np.round(target[contour]).astype(np.int32)], 1)
            assert drawn == 0.0, (squash, drawn)
            assert np.abs(result.frame[inside > 0].astype(int) - image[inside > 0]).max() <= 1
            continue
        # half-way to the source's would be (target_height + source_height) / 2
        assert abs(drawn - target_height) <= 2.5, (squash, drawn, target_height, source_height)
    narrow = [opening_ratio(target[contour]) < SHUT for contour in eyes]
    assert all(narrow) if squash < 0.5 else not any(narrow), "the test squashes across the threshold"


def test_the_irises_are_carried_into_the_plain_mesh_eyes(astronaut_face: Face) -> None:
    """The refined model's irises go where its eyes are in the plain mesh: moved with them."""
    assert astronaut_face.mesh is not None
    mesh = astronaut_face.mesh
    for contour, iris in zip(opening_contours()[:2], IRISES, strict=True):
        assert iris_inside(mesh.points, iris[0], contour)
    offset = np.array([6, -4], dtype=np.float32)
    plain = FaceMesh(mesh.points[:468] + offset, mesh.depth[:468])
    carried = with_irises(plain, mesh)
    assert carried.points.shape == (478, 2) and carried.depth.shape == (478,)
    np.testing.assert_allclose(carried.points[468:], mesh.points[468:] + offset, atol=0.05)
    np.testing.assert_array_equal(carried.points[:468], plain.points)


def test_the_source_iris_is_drawn_where_the_target_looks(large_astronaut: tuple[Frame, FaceMesh]) -> None:
    """The target's irises moved sideways inside their eyes: the source's iris (found in the output by
    matching its patch) is drawn where the target's iris centre now is."""
    image, mesh = large_astronaut
    assert len(mesh.points) == 478, "the mesh model gives the irises"
    source = WarpSource.of(image, mesh)
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0]
    for shift in (0.0, 0.15):
        target = mesh.points.copy()
        for contour, iris in zip(opening_contours()[:2], IRISES, strict=True):
            target[list(iris), 0] += shift * float(np.ptp(target[contour, 0]))
        result = mesh_warp_swap(image, FaceMesh(target, mesh.depth), source, SETTINGS.face_mask_blur)
        drawn = cv2.cvtColor(result.frame, cv2.COLOR_BGR2LAB)[..., 0]
        for contour, iris in zip(opening_contours()[:2], IRISES, strict=True):
            radius = round(
                float(np.linalg.norm(mesh.points[list(iris[1:])] - mesh.points[iris[0]], axis=1).mean()) * 0.7
            )
            x, y = np.round(mesh.points[iris[0]]).astype(int)
            patch = lightness[y - radius : y + radius + 1, x - radius : x + radius + 1]
            (x1, y1), (x2, y2) = (
                mesh.points[contour].min(axis=0).astype(int),
                mesh.points[contour].max(axis=0).astype(int),
            )
            area = drawn[y1 - radius : y2 + radius + 1, x1 - radius : x2 + radius + 1]
            _, _, _, best = cv2.minMaxLoc(cv2.matchTemplate(area, patch, cv2.TM_CCOEFF_NORMED))
            found = np.array([x1 + best[0], y1 + best[1]], dtype=np.float32)
            assert np.abs(found - target[iris[0]]).max() <= 2.0, (shift, found, target[iris[0]])


# glasses ------------------------------------------------------------------------------------------------


def drawn_glasses(image: Frame, points: np.ndarray) -> tuple[Frame, np.ndarray]:
    """``image`` with dark glasses drawn round the eyes (rims and a bridge), and the drawing's pixels."""
    drawing = np.zeros(image.shape[:2], np.uint8)
    thickness = max(2, int(face_size(points) * 0.02))
    inner_ends = []
    for corners, side in zip(EYE_CORNERS, (-1, 1), strict=True):
        centre, axis, width = eye_frame(points, corners)
        angle = round(float(np.degrees(np.arctan2(axis[1], axis[0]))))
        axes = (round(0.75 * width), round(0.5 * width))
        cv2.ellipse(drawing, (round(centre[0]), round(centre[1])), axes, angle, 0, 360, 1, thickness)
        inner_ends.append(np.round(centre + side * axis * 0.75 * width).astype(int))
    cv2.line(drawing, tuple(map(int, inner_ends[0])), tuple(map(int, inner_ends[1])), 1, thickness)
    worn = image.copy()
    worn[drawing > 0] = (25, 25, 25)
    return worn, drawing > 0


def test_glasses_are_told_from_a_bare_face(shared_runtime: ModelRuntime, astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    bare = media.astronaut()
    assert not wears_glasses(bare, astronaut_face.mesh.points)
    assert wears_glasses(drawn_glasses(bare, astronaut_face.mesh.points)[0], astronaut_face.mesh.points)
    grace = media.grace_hopper()
    grace_face = analysed(shared_runtime, grace)
    assert grace_face.mesh is not None and wears_glasses(grace, grace_face.mesh.points)
    for face in FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS, embeddings=False, mesh=True):
        assert face.mesh is not None and not wears_glasses(media.t1(), face.mesh.points)


def test_the_source_glasses_are_left_out_unless_kept(large_astronaut: tuple[Frame, FaceMesh]) -> None:
    """A source wearing dark glasses swapped onto the same face bare: by default the frames' places show
    the target's skin, with ``keep_glasses`` they are dark."""
    image, mesh = large_astronaut
    worn, frames = drawn_glasses(image, mesh.points)
    eyes = sum(region_polygon_mask(mesh.points, eye, image.shape[:2]) for eye in ("left-eye", "right-eye"))
    frames &= cv2.dilate(np.asarray(eyes, np.uint8), np.ones((15, 15), np.uint8)) == 0
    lightness = {}
    for keep in (False, True):
        result = mesh_warp_swap(image, mesh, WarpSource.of(worn, mesh, keep), SETTINGS.face_mask_blur)
        lightness[keep] = cv2.cvtColor(result.frame, cv2.COLOR_BGR2LAB)[..., 0][frames].astype(float).mean()
    bare = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0][frames].astype(float).mean()
    assert lightness[False] > bare - 15, (lightness, bare)
    assert lightness[True] < bare - 50, (lightness, bare)


def test_keep_source_glasses_is_a_setting_a_flag_and_a_page_control() -> None:
    import argparse

    assert Settings().keep_source_glasses is False
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, processor_names=["face_swapper"], processor_options={})
    assert settings_from_args(parser.parse_args(["--keep-source-glasses"])).keep_source_glasses is True
    assert "keep_source_glasses" in processor_settings(ProcessorRegistry.discover(), "face_swapper")


def test_a_mirror_image_not_found_anew_is_the_photo_flipped_with_its_smaller_copies(
    shared_runtime: ModelRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the flipped photo's face is not found, the mirror image is the source flipped pixel for pixel,
    with smaller copies as the source has (a small target face reads one, not the large photo sampled)."""
    swapper = MeshWarpSwapper(SETTINGS, shared_runtime)
    monkeypatch.setattr(swapper, "mirror_source", lambda image, face: None)
    enlarged = cv2.resize(media.read(media.tom_hanks_path()), None, fx=3, fy=3, interpolation=cv2.INTER_CUBIC)
    photo = np.asarray(enlarged, dtype=np.uint8)
    prepared = swapper.prepare_face(photo, analysed(shared_runtime, photo))
    assert prepared is not None and prepared.mirror is not None and prepared.smaller
    assert np.array_equal(prepared.mirror.image, prepared.image[:, ::-1])
    assert len(prepared.mirror.smaller) == len(prepared.smaller)

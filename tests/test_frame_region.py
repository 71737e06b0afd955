"""A video frame's processors run on the rectangle they read and write (``RegionalProcessor``): the crop
converts to the same BGR as that part of the whole frame, the faces move into it, the swap there puts
the same face in, and nothing outside the rectangle is touched."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.frame_analysis import FrameAnalysis
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceIdentity, load_sources
from facefusion_ui.processors.base import FrameContext, RegionalProcessor
from facefusion_ui.processors.crop import even_union, moved_analysis, moved_face
from facefusion_ui.processors.mesh_warp_swapper import MeshWarpSwapper
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.stream import apply_to
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame, region_to_bgr, yuv_to_bgr
from tests.support import media

SETTINGS = Settings()


@pytest.mark.parametrize("size", [(1280, 720), (642, 362), (64, 48)])
def test_a_region_converts_to_the_same_pixels_as_the_whole_frame(size: tuple[int, int]) -> None:
    width, height = size
    rng = np.random.default_rng(width)
    data = rng.integers(0, 256, (height * 3 // 2, width), dtype=np.uint8)
    frame = YuvFrame(data, width, height, ColourMatrix("bt709"))
    whole = yuv_to_bgr(*frame.planes(), frame.matrix)
    regions = [(0, 0, width, height), (0, 0, 2, 2), (width - 2, height - 2, width, height)]
    for _ in range(60):
        x1, y1 = 2 * int(rng.integers(0, width // 2)), 2 * int(rng.integers(0, height // 2))
        x2, y2 = x1 + 2 * int(rng.integers(1, 40)), y1 + 2 * int(rng.integers(1, 40))
        regions.append((x1, y1, min(width, x2), min(height, y2)))
    for x1, y1, x2, y2 in regions:
        assert np.array_equal(region_to_bgr(*frame.planes(), (x1, y1, x2, y2), frame.matrix), whole[y1:y2, x1:x2])
        assert np.array_equal(frame.bgr_region((x1, y1, x2, y2)), whole[y1:y2, x1:x2])


def test_a_crop_stored_back_writes_only_its_changed_pixels_where_it_lies() -> None:
    matrix = ColourMatrix("bt709")
    image = np.ascontiguousarray(media.astronaut()[:240, :320])
    frame = YuvFrame.from_bgr(image, matrix)
    decoded = frame.data.copy()
    region = (100, 60, 220, 180)
    crop = frame.bgr_region(region)
    changed = crop.copy()
    changed[40:50, 30:42] = (0, 255, 0)
    assert frame.store(changed, crop, (100, 60))
    expected = YuvFrame(decoded.copy(), 320, 240, matrix)
    whole = expected.bgr().copy()
    whole[100:110, 130:142] = (0, 255, 0)
    assert expected.store(whole, expected.bgr())
    assert np.array_equal(frame.data, expected.data)
    assert not frame.store(crop, crop, (100, 60))


def test_the_union_of_regions_has_even_sides_inside_the_frame() -> None:
    assert even_union([(3, 5, 11, 9), (7, 1, 15, 4)], 20, 12) == (2, 0, 16, 10)
    assert even_union([(0, 0, 31, 17)], 30, 16) == (0, 0, 30, 16)


def test_faces_move_with_their_points_and_the_selected_stay_the_same_objects() -> None:
    mesh_points = np.arange(956, dtype=np.float32).reshape(478, 2)
    face = Face(
        bbox=np.array([10, 20, 110, 140], dtype=np.float32),
        score=0.9,
        kps=np.full((5, 2), 50, dtype=np.float32),
        detector="dlib_hog",
        landmarks_68=np.full((68, 2), 60, dtype=np.float32),
        mesh=FaceMesh(mesh_points, np.zeros(478, np.float32)),
    )
    other = dataclasses.replace(face, bbox=face.bbox + 200)
    moved = moved_analysis(FrameAnalysis([face, other], [other]), -10, -4)
    assert moved.selected[0] is moved.faces[1]
    assert np.array_equal(moved.faces[0].bbox, [0, 16, 100, 136])
    shifted = moved_face(face, -10, -4)
    assert shifted.mesh is not None and np.array_equal(shifted.mesh.points, mesh_points - [10, 4])
    assert np.array_equal(shifted.kps, face.kps - [10, 4]) and shifted.landmarks_68 is not None
    assert np.array_equal(shifted.landmarks_68, np.tile(np.array([50, 56], dtype=np.float32), (68, 1)))


@pytest.fixture(scope="module")
def t1_faces(shared_runtime: ModelRuntime) -> list[Face]:
    return FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS, embeddings=False, mesh=True)


@pytest.fixture(scope="module")
def grace(shared_runtime: ModelRuntime) -> SourceIdentity:
    return load_sources([media.grace_hopper_path()], FaceAnalyser(shared_runtime), SETTINGS)


def test_the_swap_in_its_region_puts_the_same_face_in_and_touches_nothing_else(
    shared_runtime: ModelRuntime, t1_faces: list[Face], grace: SourceIdentity
) -> None:
    swapper = MeshWarpSwapper(SETTINGS, shared_runtime)
    assert isinstance(swapper, RegionalProcessor)
    frame = media.t1()
    height, width = frame.shape[:2]
    for face in t1_faces:
        region = swapper.frame_region(face, width, height)
        assert region is not None
        x1, y1, x2, y2 = even_union([region], width, height)
        whole = swapper.process_frame(frame.copy(), FrameContext(0, 0.0, SETTINGS, faces=[face], sources=grace))
        outside = whole.copy()
        outside[y1:y2, x1:x2] = frame[y1:y2, x1:x2]
        assert np.array_equal(outside, frame), "the swap wrote outside its region"
        assert not np.array_equal(whole[y1:y2, x1:x2], frame[y1:y2, x1:x2])
        crop = np.ascontiguousarray(frame[y1:y2, x1:x2])
        context = FrameContext(0, 0.0, SETTINGS, faces=[moved_face(face, -x1, -y1)], sources=grace)
        within = swapper.process_frame(crop.copy(), context)
        # the iris read rounds its input square's corners differently at shifted coordinates: a few pixels
        difference = np.abs(within.astype(int) - whole[y1:y2, x1:x2]).max(axis=2)
        assert np.count_nonzero(difference) <= 0.01 * difference.size and difference.max() <= 12


def test_a_face_without_its_mesh_or_a_mask_that_reads_further_has_no_region(
    shared_runtime: ModelRuntime, t1_faces: list[Face]
) -> None:
    face = t1_faces[0]
    meshless = dataclasses.replace(face, mesh=None)
    assert MeshWarpSwapper(SETTINGS, shared_runtime).frame_region(meshless, 1000, 800) is None
    occluding = Settings(face_mask_types=("box", "occlusion"))
    assert MeshWarpSwapper(occluding, shared_runtime).frame_region(face, 1000, 800) is None


class PaintingStages:
    """Stages that paint a square round the point the analysis gives, saying the region they touch."""

    def __init__(self, region: tuple[int, int, int, int] | None) -> None:
        self.region = region
        self.whole_frames = 0

    def frame_region(self, analysis: tuple[int, int], width: int, height: int) -> tuple[int, int, int, int] | None:
        return self.region

    def apply_within(
        self, crop: np.ndarray, analysis: tuple[int, int], origin: tuple[int, int], index: int, timestamp: float
    ) -> np.ndarray:
        return self.paint(crop, (analysis[0] - origin[0], analysis[1] - origin[1]))

    def apply(self, frame: np.ndarray, analysis: tuple[int, int], index: int, timestamp: float) -> np.ndarray:
        self.whole_frames += 1
        return self.paint(frame, analysis)

    @staticmethod
    def paint(frame: np.ndarray, at: tuple[int, int]) -> np.ndarray:
        x, y = at
        frame[y - 5 : y + 5, x - 7 : x + 7] = (20, 200, 90)
        return frame


@pytest.mark.parametrize("region", [(40, 30, 120, 100), None])
def test_a_frame_worker_converts_only_the_region_the_stages_name(region: tuple[int, int, int, int] | None) -> None:
    matrix = ColourMatrix("bt601")
    image = np.ascontiguousarray(media.astronaut()[:160, :200])
    stages = PaintingStages(region)
    frame = YuvFrame.from_bgr(image, matrix)
    done, changed = apply_to(stages, frame, (70, 60), 0, 0.0)  # type: ignore[arg-type]
    assert done is frame and changed
    assert stages.whole_frames == (region is None)
    expected = YuvFrame.from_bgr(image, matrix)
    assert expected.store(PaintingStages.paint(expected.bgr().copy(), (70, 60)), expected.bgr())
    assert np.array_equal(frame.data, expected.data)

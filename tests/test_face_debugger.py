"""The face debugger on the six-person photo: one annotation per detected face, drawn at its box, with the
reason a face was skipped; after an upscaler the annotations follow the larger frame; a frame without any
face passes through."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.pipeline import NO_FACES, FrameAnalysis, FramePipeline
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.face_debugger import SELECTED, SKIPPED, frame_annotations
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media
from tests.support.onnx_models import build_upscaler


@pytest.fixture(scope="module")
def source_photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("source") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def debugged(runtime: ModelRuntime, source: Path, **values: object) -> tuple[Frame, list[Face], FramePipeline]:
    settings = Settings(**{"processors": ("face_debugger",), **values})  # type: ignore[arg-type]
    pipeline = FramePipeline.build(settings, runtime, [source])
    frame = media.t1()
    analysis = pipeline.analyse(frame)
    return pipeline.apply(frame, analysis), analysis.faces, pipeline


def colour_near(frame: Frame, x: float, y: float, colour: tuple[int, int, int]) -> bool:
    """Some pixel within 2 px of (x, y) has ``colour`` (give or take antialiasing)."""
    patch = frame[max(round(y) - 2, 0) : round(y) + 3, max(round(x) - 2, 0) : round(x) + 3].astype(int)
    return bool((np.abs(patch - np.array(colour)).max(axis=2) <= 40).any())


def test_one_annotation_per_face_at_its_box(shared_runtime: ModelRuntime, source_photo: Path) -> None:
    result, faces, pipeline = debugged(shared_runtime, source_photo)
    assert len(faces) == 6
    assert pipeline.summary()["faces_annotated"] == 6
    for face in faces:
        x1, y1, x2, y2 = face.bbox
        middle = (y1 + y2) / 2
        assert colour_near(result, x1, middle, SELECTED) and colour_near(result, x2, middle, SELECTED)
    untouched = media.t1()
    assert np.array_equal(result[-5:], untouched[-5:])  # nothing drawn far from the faces


def test_skipped_faces_say_why(shared_runtime: ModelRuntime, source_photo: Path) -> None:
    result, faces, pipeline = debugged(shared_runtime, source_photo, face_selector_mode="one")
    analysis = pipeline.analyse(media.t1())
    context = FrameContext(0, 0.0, pipeline.settings, analysis.selected, report=pipeline.report(analysis))
    notes = frame_annotations(context)
    assert len(notes) == 6
    assert sum(note.selected for note in notes) == 1
    assert all("skipped: not chosen (mode one)" in note.lines for note in notes if not note.selected)
    assert all(any(line.startswith("score ") for line in note.lines) for note in notes)
    skipped = [face for face in faces if face.area < max(other.area for other in faces)]
    for face in skipped:
        assert colour_near(result, face.bbox[0], (face.bbox[1] + face.bbox[3]) / 2, SKIPPED)


def test_after_an_upscaler_the_boxes_follow(tmp_path: Path, source_photo: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    build_upscaler(folder / "real_esrgan_x2.onnx", 2)
    runtime = ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))
    settings = Settings(processors=("frame_enhancer", "face_debugger"))
    pipeline = FramePipeline.build(settings, runtime, [source_photo])
    frame = media.t1()
    analysis = pipeline.analyse(frame)
    result = pipeline.apply(frame, analysis)
    assert result.shape[:2] == (frame.shape[0] * 2, frame.shape[1] * 2)
    for face in analysis.faces:
        x1, y1, _, y2 = face.bbox * 2
        assert colour_near(result, x1, (y1 + y2) / 2, SELECTED)
    summary = pipeline.summary()
    assert summary["faces_annotated"] == 6 and summary["frames_enhanced"] == 1


def test_a_frame_without_any_face_passes_through_and_skipped_faces_do_not(
    shared_runtime: ModelRuntime, source_photo: Path
) -> None:
    """The debugger changes a frame exactly when the analysis found a face, selected or not: a faceless
    frame passes through untouched (no colour conversion; its GOP can be copied), a frame whose faces
    were all skipped is drawn on, where the swapper alone would pass it through."""
    _, faces, debugger = debugged(shared_runtime, source_photo)
    swapper = FramePipeline.build(Settings(processors=("face_swapper",)), shared_runtime, [source_photo])
    skipped_all = FrameAnalysis(list(faces), [])
    assert not debugger.changes(NO_FACES)
    assert debugger.changes(skipped_all) and not swapper.changes(skipped_all)
    assert debugger.changes(FrameAnalysis(list(faces), list(faces[:1])))
    blank = np.full((240, 320, 3), 128, np.uint8)
    assert not debugger.changes(debugger.analyse(blank))
    drawn = debugger.apply(media.t1(), skipped_all)
    assert not np.array_equal(drawn, media.t1())

"""The age modifier's two contracts on stand-in models (``tests/support/face_edit_models.py``): the
model's mark lands on the face's own left eye, in red, as strong and in the sense the direction asks; a
wrong template moves it; the face's age comes from the classifier when the analysis has none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.age_families import drawn_in, fran_direction, styleganex_direction
from facefusion_ui.processors.age_modifier import AgeModifier
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support.face_edit_models import build_fran, build_styleganex_age
from tests.support.onnx_models import build_fairface

FFHQ = np.array([(0.377, 0.469), (0.623, 0.469), (0.501, 0.613), (0.393, 0.725), (0.612, 0.725)], np.float32)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_fran(folder / "fran.onnx")
    build_styleganex_age(folder / "styleganex_age.onnx")
    build_fairface(folder / "fairface.onnx")
    return folder


def tilted_face(angle: float = 12.0) -> Face:
    """A face whose 5 points sit in a 260 px square at (120, 90), turned by ``angle`` degrees."""
    theta = np.radians(angle)
    rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]], np.float32)
    kps = (FFHQ - 0.5) * 260 @ rotation.T + (250, 220)
    return Face(np.array([120, 90, 380, 350], np.float32), 0.9, kps.astype(np.float32), "test", age=range(20, 29))


def grey() -> Frame:
    return np.full((480, 500, 3), 128, np.uint8)


def modifier(folder: Path, model: str, direction: int) -> AgeModifier:
    settings = Settings(processors=("age_modifier",), age_modifier_model=model, age_modifier_direction=direction)  # type: ignore[arg-type]
    return AgeModifier(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def run(processor: AgeModifier, face: Face) -> Frame:
    return processor.process_frame(grey(), FrameContext(0, 0.0, processor.settings, faces=(face,)))


def redness(frame: Frame, point: np.ndarray, half: int = 3) -> float:
    x, y = point.round().astype(int)
    patch = frame[y - half : y + half + 1, x - half : x + half + 1].astype(np.float32)
    return float(patch[..., 2].mean() - patch[..., 0].mean())


@pytest.mark.parametrize("model", ["fran", "styleganex_age"])
def test_older_marks_the_faces_own_left_eye_in_red(models: Path, model: str) -> None:
    face = tilted_face()
    result = run(modifier(models, model, 60), face)
    # styleganex_age aligns the points drawn in round the nose: its template's eye is where they put it
    points = face.kps if model == "fran" else drawn_in(face.kps)
    assert redness(result, points[0]) > 60, model  # red (BGR channel 2) on the left eye
    assert abs(redness(result, points[1])) < 5 and abs(redness(result, points[3])) < 5


def test_younger_goes_the_other_way_and_zero_leaves_the_frame(models: Path) -> None:
    face = tilted_face()
    assert redness(run(modifier(models, "fran", -60), face), face.kps[0]) < -30
    assert np.array_equal(run(modifier(models, "fran", 0), face), grey())


@pytest.mark.parametrize("model, wrong", [("fran", "arcface_128"), ("styleganex_age", "ffhq_512")])
def test_a_wrong_template_moves_the_mark(models: Path, model: str, wrong: str) -> None:
    face, processor = tilted_face(), modifier(models, model, 60)
    if model == "fran":
        processor.contract = dataclasses.replace(processor.contract, template=wrong)  # type: ignore[arg-type]
    else:
        processor.contract = dataclasses.replace(processor.contract, extend_template=wrong)  # type: ignore[arg-type]
    points = face.kps if model == "fran" else drawn_in(face.kps)
    assert redness(run(processor, face), points[0]) < 20


def test_directions_follow_facefusion() -> None:
    assert np.allclose(fran_direction(range(20, 29), 30), [0.24, 0.54])
    assert np.allclose(fran_direction(range(70, 100), 60), [0.845, 1.0])
    assert float(styleganex_direction(-100)) == 2.5 and float(styleganex_direction(100)) == -2.5


def test_fran_asks_the_classifier_when_the_face_has_no_age(models: Path) -> None:
    processor = modifier(models, "fran", 60)
    assert "fairface" in processor.required_models()
    assert "fairface" not in modifier(models, "styleganex_age", 60).required_models()
    face = dataclasses.replace(tilted_face(), age=None)
    age = processor.age_of(grey(), face)
    assert isinstance(age, range)
    assert redness(run(processor, face), face.kps[0]) > 20 or age.start >= 70

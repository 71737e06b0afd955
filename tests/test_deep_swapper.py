"""The deep swapper on a stand-in DeepFaceLive model (``tests/support/face_edit_models.py``) imported with
``models import``: its face lands on the dfl_whole_face crop (the model's red mark on the face's own left
eye, in red: NHWC BGR), as strong as the morph; the model's masks limit the paste-back; without a model
a job stops with one line saying how to add one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import import_model, load_manifest
from facefusion_ui.processors import deep_swapper
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.deep_swapper import DeepSwapper
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support.face_edit_models import build_deep_swapper

DFL = np.array([(0.353, 0.393), (0.628, 0.393), (0.487, 0.540), (0.388, 0.688), (0.598, 0.688)], np.float32)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    spec = import_model(build_deep_swapper(tmp_path / "my_person_224.onnx"), "my_person_224", folder=folder)
    assert spec.role == "deep_swapper"
    return folder


def face() -> Face:
    kps = ((DFL - 0.5) * 220 + (260, 240)).astype(np.float32)
    return Face(np.array([150, 130, 370, 350], np.float32), 0.9, kps, "test")


def swapper(folder: Path, model: str | None = "my_person_224", morph: int = 100) -> DeepSwapper:
    settings = Settings(processors=("deep_swapper",), deep_swapper_model=model, deep_swapper_morph=morph)
    return DeepSwapper(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def run(processor: DeepSwapper) -> Frame:
    frame = np.full((480, 520, 3), 128, np.uint8)
    return processor.process_frame(frame, FrameContext(0, 0.0, Settings(), faces=(face(),)))


def red_centre(frame: Frame) -> np.ndarray:
    red = frame[..., 2].astype(np.int16) - frame[..., 0].astype(np.int16)
    ys, xs = np.nonzero(red > 15)
    return np.array([xs.mean(), ys.mean()])


def redness(frame: Frame, point: np.ndarray) -> float:
    x, y = point.round().astype(int)
    patch = frame[y - 2 : y + 3, x - 2 : x + 3].astype(np.float32)
    return float(patch[..., 2].mean() - patch[..., 0].mean())


def test_the_models_face_lands_on_the_crop_in_red(models: Path) -> None:
    processor = swapper(models)
    assert processor.pre_check() == []
    result = run(processor)
    assert redness(result, face().kps[0]) > 30 and abs(redness(result, face().kps[1])) < 5
    assert np.linalg.norm(red_centre(result) - face().kps[0]) < 3
    assert redness(run(swapper(models, morph=0)), face().kps[0]) < 5
    assert 10 < redness(run(swapper(models, morph=50)), face().kps[0]) < 0.7 * redness(result, face().kps[0])


def test_a_wrong_template_moves_the_face(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deep_swapper, "TEMPLATE", "ffhq_512")
    assert np.linalg.norm(red_centre(run(swapper(models))) - face().kps[0]) > 10


def test_the_models_masks_join_the_paste_back(models: Path) -> None:
    source, target = np.ones((224, 224, 1), np.float32), np.ones((224, 224, 1), np.float32)
    source[168:] = 0
    mask = deep_swapper.model_mask(source, target, 224)
    assert mask[40:120, 40:180].min() > 0.95 and mask[200:, :].max() < 0.05


def test_without_a_model_the_job_says_how_to_add_one(models: Path) -> None:
    problems = swapper(models, model=None).pre_check()
    assert len(problems) == 1 and "models import" in problems[0] and "--deep-swapper-model" in problems[0]
    with pytest.raises(ModelError, match="unknown model 'someone_else'"):
        swapper(models, model="someone_else").pre_check()


def test_a_model_without_a_morph_input_runs_at_its_own_morph(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    import_model(build_deep_swapper(tmp_path / "plain_224.onnx", morph=False), "plain_224", folder=folder)
    assert redness(run(swapper(folder, model="plain_224", morph=0)), face().kps[0]) > 30

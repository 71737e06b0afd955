"""The frame colorizer's two families on stand-in models (``tests/support/colorizer_models.py``): the
colour lands where the model put it, in the right channels, over the frame's own lightness; the blend
and the size option; no face analysis for a chain of whole-frame processors."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.pipeline import reads_faces
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.frame_colorizer import FrameColorizer
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, FrameColorizerModel, choices
from tests.support.colorizer_models import build_ddcolor, build_deoldify


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_ddcolor(folder / "ddcolor.onnx")
    build_deoldify(folder / "deoldify.onnx")
    return folder


def halves() -> Frame:
    """Black and white: a light left half, a dark right half."""
    frame = np.full((180, 320, 3), 60, np.uint8)
    frame[:, :160] = 190
    return frame


def colorizer(folder: Path, model: str, **values: object) -> FrameColorizer:
    settings = Settings(processors=("frame_colorizer",), frame_colorizer_model=model, **values)  # type: ignore[arg-type]
    return FrameColorizer(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def run(processor: FrameColorizer, frame: Frame) -> Frame:
    return processor.process_frame(frame, FrameContext(0, 0.0, Settings()))


def mean_bgr(frame: Frame, columns: slice) -> np.ndarray:
    return np.asarray(frame[20:160, columns].reshape(-1, 3).mean(axis=0))


def test_ddcolor_puts_its_a_and_b_where_they_were_and_keeps_the_lightness(models: Path) -> None:
    frame = halves()
    result = run(colorizer(models, "ddcolor"), frame)
    left, right = mean_bgr(result, slice(20, 140)), mean_bgr(result, slice(180, 300))
    assert left[2] > left[1] + 20  # light half: a > 0, red
    assert right[1] > right[2] + 20 and right[1] > right[0] + 20  # dark half: a < 0 with b > 0, green
    lightness = cv2.cvtColor(result, cv2.COLOR_BGR2LAB)[..., 0].astype(int)
    expected = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[..., 0].astype(int)
    assert np.abs(lightness[20:160, 20:140] - expected[20:160, 20:140]).mean() < 6


def test_deoldify_reads_its_output_as_rgb(models: Path) -> None:
    result = run(colorizer(models, "deoldify"), halves())
    for columns in (slice(20, 140), slice(180, 300)):
        blue, _, red = mean_bgr(result, columns)
        assert red > blue + 20  # warm, as the model made it


def test_blend_and_size(models: Path) -> None:
    frame = halves()
    assert np.array_equal(run(colorizer(models, "ddcolor", frame_colorizer_blend=0), frame), frame)
    half = run(colorizer(models, "ddcolor", frame_colorizer_blend=50), frame).astype(int)
    full = run(colorizer(models, "ddcolor"), frame).astype(int)
    assert np.abs(half - (full + frame.astype(int)) / 2).max() <= 1
    small = run(colorizer(models, "ddcolor", frame_colorizer_size="192x192"), frame)
    assert small.shape == frame.shape and np.abs(small.astype(int) - full).mean() < 3


def test_models_in_the_catalog_and_no_face_analysis(models: Path) -> None:
    manifest = load_manifest()
    for name in choices(FrameColorizerModel):
        assert manifest[name].role == "frame_colorizer" and manifest[name].family in ("ddcolor", "deoldify")
        assert "Apache-2.0" in manifest[name].description or "MIT" in manifest[name].description
    assert not reads_faces([colorizer(models, "ddcolor")])

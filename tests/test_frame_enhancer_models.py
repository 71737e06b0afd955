"""The frame enhancer models added from FaceFusion's list: each in the catalog with its scale, tile and
licence, and an x8 model (stand-in) run through the same tiles to an eight times larger frame."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.frame_enhancer import FrameEnhancer
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FrameEnhancerModel, choices
from tests.support import media
from tests.support.onnx_models import build_upscaler

ADDED = {
    "face_dat_x4": (4, 128, "CC-BY-4.0"),
    "real_esrgan_x8": (8, 256, "BSD-3-Clause"),
    "real_esrgan_x8_fp16": (8, 256, "BSD-3-Clause"),
    "real_web_photo_x4": (4, 64, "CC-BY-4.0"),
    "realistic_rescaler_x4": (4, 128, "WTFPL"),
    "swin2_sr_x4": (4, 128, "Apache-2.0"),
    "tghq_face_x8": (8, 128, "GPL-3.0"),
    "ultra_sharp_2_x4": (4, 1024, "non-commercial"),
}
"""FaceFusion's ``frame_enhancer/core.py``: scale, tile (``size[0]``) and licence of each."""


def test_every_frame_enhancer_is_in_the_catalog_with_facefusions_scale_and_tile() -> None:
    manifest = load_manifest()
    for name in choices(FrameEnhancerModel):
        spec = manifest[name]
        assert spec.role == "frame_enhancer" and spec.scale and spec.input_size, name
    for name, (scale, tile, licence) in ADDED.items():
        spec = manifest[name]
        assert (spec.scale, spec.input_size, licence in spec.description) == (scale, (tile, tile), True), name
    assert manifest["real_esrgan_x8"].fp16_variant == "real_esrgan_x8_fp16"


def test_an_x8_model_makes_a_frame_eight_times_larger(tmp_path: Path) -> None:
    build_upscaler(tmp_path / "tghq_face_x8.onnx", 8)
    settings = Settings(processors=("frame_enhancer",), processor_options={"frame_enhancer": {"model": "tghq_face_x8"}})
    runtime = ModelRuntime(load_manifest(folder=tmp_path), tmp_path, SessionPool(("cpu",)))
    enhancer = FrameEnhancer(settings, runtime)
    frame = np.ascontiguousarray(
        cv2.resize(media.astronaut(), (150, 100), interpolation=cv2.INTER_AREA), dtype=np.uint8
    )
    assert enhancer.output_size(150, 100) == (1200, 800) and enhancer.tile == 128
    result = enhancer.enhance(frame, 1.0)
    assert result.shape == (800, 1200, 3)
    # the stand-in: each pixel's 3x3 mean, copied into its 8x8 block at a gain of 0.9..1.0
    blurred = cv2.blur(frame.astype(np.float32), (3, 3), borderType=cv2.BORDER_CONSTANT)
    plain = cv2.resize(blurred, (1200, 800), interpolation=cv2.INTER_NEAREST) * 0.95
    assert np.abs(result.astype(np.float32) - plain)[16:-16, 16:-16].mean() < 8


def test_models_list_shows_a_licence_for_every_model_added() -> None:
    from facefusion_ui.cli.models import licence_note

    roles = {"background_remover", "age_modifier", "frame_colorizer", "expression_restorer", "face_editor"}
    added = [spec for spec in load_manifest().values() if spec.role in roles or spec.name in ADDED]
    assert len(added) == 36  # 15 background, 2 age, 5 colour, 6 LivePortrait, 8 upscalers
    for spec in added:
        assert licence_note(spec.description) != "-", spec.name
    assert licence_note("StyleGANEX (williamyang1991, S-Lab 1.0, non-commercial)") == "non-commercial"
    assert licence_note("a detector, 2 anchors") == "-"

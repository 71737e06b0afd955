"""The background remover's model contracts on stand-in ONNX models (a wrong channel order, normalisation
or size changes the result or fails), the fill and alpha arithmetic, the colour setting, and the alpha a
pipeline keeps aside for the processors after the remover."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from facefusion_ui.errors import SettingsError
from facefusion_ui.models import load_manifest
from facefusion_ui.pipeline import split_alpha
from facefusion_ui.processors.background_families import MATTE_CONTRACTS, MatteContract, run_matte
from facefusion_ui.processors.background_remover import FillPlane, default_color, fill_background, with_alpha
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import BackgroundRemoverModel, Frame, choices
from tests.support.matte_models import build_for

RED, BLUE, GREY = (0, 0, 255), (255, 0, 0), (128, 128, 128)


def striped_frame(width: int = 200, height: int = 120, ground: tuple[int, int, int] = GREY) -> Frame:
    """Grey (or ``ground``) with a wide red bar top left and a blue block bottom right (BGR)."""
    frame = np.full((height, width, 3), ground, np.uint8)
    frame[10:40, 10:130] = RED
    frame[70:110, 140:190] = BLUE
    return frame


def session(tmp_path: Path, contract: MatteContract) -> onnxruntime.InferenceSession:
    path = build_for(tmp_path / f"{contract.family}.onnx", contract)
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_every_remover_model_has_a_contract_and_a_catalog_entry_with_its_licence() -> None:
    manifest = load_manifest()
    for name in choices(BackgroundRemoverModel):
        spec = manifest[name]
        if name == "mediapipe_selfie_segmentation":
            assert spec.kind == "embedded" and spec.package == "mediapipe"
            continue
        contract = MATTE_CONTRACTS[name]
        assert spec.role == "background_remover" and spec.family == contract.family
        assert spec.input_size == (contract.size, contract.size)
        assert any(licence in spec.description for licence in ("MIT", "Apache-2.0", "non-commercial"))
    assert set(MATTE_CONTRACTS) == set(choices(BackgroundRemoverModel)) - {"mediapipe_selfie_segmentation"}


@pytest.mark.parametrize("model", ["modnet", "rmbg_2.0", "isnet_general", "silueta"])
def test_matte_reads_the_person_where_the_contract_puts_it(tmp_path: Path, model: str) -> None:
    contract = MATTE_CONTRACTS[model]
    frame = striped_frame()
    matte, colours = run_matte(session(tmp_path, contract), contract, frame)
    assert matte.shape == (120, 200) and colours is frame
    assert matte[15:35, 20:120].min() > 0.95  # the red bar
    assert matte[75:105, 145:185].max() < 0.05  # the blue block
    assert abs(float(np.median(matte[50:60, 20:60])) - 128 / 255) < 0.02  # grey: its red level


@pytest.mark.parametrize(
    "wrong",
    [
        {"mean": (0.0, 0.0, 0.0)},
        {"std": (1.0, 1.0, 1.0)},
    ],
)
def test_a_wrong_normalisation_changes_the_matte(tmp_path: Path, wrong: dict[str, object]) -> None:
    contract = MATTE_CONTRACTS["rmbg_2.0"]
    model = session(tmp_path, contract)
    frame = striped_frame()
    right, _ = run_matte(model, contract, frame)
    bad, _ = run_matte(model, dataclasses.replace(contract, **wrong), frame)  # type: ignore[arg-type]
    assert float(np.abs(right - bad).max()) > 0.1


def test_channel_order_and_size_are_part_of_the_contract(tmp_path: Path) -> None:
    contract = MATTE_CONTRACTS["modnet"]
    model = session(tmp_path, contract)
    swapped, _ = run_matte(model, contract, np.ascontiguousarray(striped_frame()[:, :, ::-1]))
    assert swapped[15:35, 20:120].max() < 0.05 and swapped[75:105, 145:185].min() > 0.95
    with pytest.raises(Exception, match=r"(?i)dimension|shape|invalid"):
        run_matte(model, dataclasses.replace(contract, size=256), striped_frame())


def test_u2net_cloth_keeps_the_argmax_clothing_classes(tmp_path: Path) -> None:
    contract = MATTE_CONTRACTS["u2net_cloth"]
    matte, _ = run_matte(session(tmp_path, contract), contract, striped_frame())
    assert matte[15:35, 20:120].min() == 1.0
    assert matte[75:105, 145:185].max() == 0.0 and matte[50:60, 20:60].max() == 0.0


def test_corridor_key_takes_the_coarse_green_matte_and_returns_the_foreground(tmp_path: Path) -> None:
    contract = MATTE_CONTRACTS["corridor_key_1024"]
    contract = dataclasses.replace(contract, size=256)  # the stand-in at a small size: same contract
    frame = striped_frame(ground=(0, 255, 0))
    matte, colours = run_matte(session(tmp_path, contract), contract, frame)
    assert matte[15:35, 20:120].min() > 0.95 and matte[75:105, 145:185].min() > 0.95  # not green
    assert matte[50:60, 20:60].max() < 0.05  # the green screen
    assert colours is not frame
    assert np.abs(colours[15:35, 20:120].astype(int) - RED).max() <= 2  # red stays red (RGB back to BGR)


def test_fill_follows_facefusion_and_alpha_keeps_the_person() -> None:
    frame = striped_frame()
    matte = np.zeros((120, 200), np.float32)
    matte[10:40, 10:130] = 1.0
    green = fill_background(frame, matte, FillPlane((0, 255, 0, 255)))
    assert (green[15:35, 20:120] == RED).all() and (green[60:70, 0:10] == (0, 255, 0)).all()
    half = fill_background(frame, matte, FillPlane((0, 255, 0, 128)))
    assert np.abs(half[60, 5].astype(int) - (64, 192, 64)).max() <= 1
    assert (fill_background(frame, matte, FillPlane((0, 255, 0, 0))) == frame).all()
    bgra = with_alpha(frame, matte, FillPlane(default_color(True)))
    assert bgra.shape == (120, 200, 4)
    assert (bgra[15:35, 20:120, 3] == 255).all() and (bgra[60:70, 0:10, 3] == 0).all()
    assert (bgra[15:35, 20:120, :3] == RED).all()
    assert (with_alpha(frame, matte, FillPlane((0, 0, 255, 255)))[..., 3] == 255).all()


def test_default_colour_is_transparent_only_where_alpha_is_kept() -> None:
    assert default_color(True) == (0, 0, 0, 0)
    assert default_color(False) == (0, 255, 0, 255)


def test_colour_setting_takes_rgb_or_rgba() -> None:
    given: list[object] = [(10, 20, 30), [1, 2, 3, 4]]
    assert [Settings.from_dict({"background_remover_color": value}).background_remover_color for value in given] == [
        (10, 20, 30, 255),
        (1, 2, 3, 4),
    ]
    assert Settings().background_remover_color is None
    for bad in ((1, 2), (0, 0, 0, 256), "green", (1.5, 2, 3)):
        with pytest.raises(SettingsError, match="background_remover_color"):
            Settings.from_dict({"background_remover_color": bad})


def test_the_alpha_is_kept_aside_and_follows_a_resize() -> None:
    bgra = np.zeros((20, 30, 4), np.uint8)
    bgra[..., 3] = 200
    frame, alpha = split_alpha(bgra, None)
    assert frame.shape == (20, 30, 3) and alpha is not None and (alpha == 200).all()
    upscaled, scaled = split_alpha(np.zeros((40, 60, 3), np.uint8), alpha)
    assert upscaled.shape == (40, 60, 3) and scaled is not None and scaled.shape == (40, 60)
    assert split_alpha(frame, None)[1] is None

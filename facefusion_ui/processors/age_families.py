"""FaceFusion's age modifier models: each one's contract as data, and the code that runs one face.

From FaceFusion's ``processors/modules/age_modifier/core.py`` (``modify_age``, ``forward``,
``prepare_vision_frame``, ``normalize_vision_frame``, ``normalize_extend_frame``):

- ``fran``: the face aligned on ``ffhq_512`` into 1024 px, RGB, ``pixel / 255`` (mean 0, std 1), fed as
  ``target``; ``direction`` is ``[age, age + direction] / 100`` clipped to 0..1, ``age`` the middle of the
  face classifier's bracket. The output (1x3x1024x1024, same range) is pasted back through the crop.
- ``styleganex_age``: the face on ``ffhq_512`` at 256 px as ``target``, and the face with its
  surroundings, the 5 points drawn in by 0.875 round the nose and aligned on ``styleganex_384`` at 384 px,
  as ``target_with_background``; both RGB ``(pixel / 255 - 0.5) / 0.5``. ``direction`` is the slider read
  from -100..100 onto 2.5..-2.5. The output (four times the 256 px side's scale, in [-1, 1]) is made
  8-bit, resized to 1024 px (area), its colours matched to the 384 px input's (``match_frame_color``),
  and pasted back through the 384 px crop's matrix scaled by 1024 / 384.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.warp_templates import WarpTemplate
from facefusion_ui.types import Frame, Points

EXTEND_SCALE = 0.875
"""styleganex_age: the 5 points drawn in round the nose tip before the wider crop (``scale_face_landmark_5``)."""
OUTPUT_SCALE = 4
"""styleganex_age: the pasted face is four times the 256 px crop's side."""


@dataclass(frozen=True)
class AgeContract:
    family: str
    template: WarpTemplate
    size: int
    mean: float
    std: float
    """On the [0, 1] RGB scale, the same for the three channels."""
    extend_template: WarpTemplate | None = None
    extend_size: int = 0


AGE_CONTRACTS: Mapping[str, AgeContract] = {
    "fran": AgeContract("fran", "ffhq_512", 1024, 0.0, 1.0),
    "styleganex_age": AgeContract("styleganex", "ffhq_512", 256, 0.5, 0.5, "styleganex_384", 384),
}


def age_contract(model: str) -> AgeContract:
    try:
        return AGE_CONTRACTS[model]
    except KeyError:
        raise ModelError(f"'{model}' is not an age modifier model: choose one of {', '.join(AGE_CONTRACTS)}") from None


def drawn_in(kps: Points) -> Points:
    """The 5 points scaled by ``EXTEND_SCALE`` round the nose tip (the third point)."""
    nose = kps[2]
    return np.asarray((kps - nose) * EXTEND_SCALE + nose, dtype=np.float32)


def age_blob(crop: Frame, contract: AgeContract) -> np.ndarray:
    rgb = crop[:, :, ::-1].astype(np.float32) / 255.0
    return np.ascontiguousarray(((rgb - contract.mean) / contract.std).transpose(2, 0, 1)[None], dtype=np.float32)


def fran_direction(age: range, direction: int) -> np.ndarray:
    """``[age, age + direction] / 100``, clipped: where the face is and where it should go."""
    middle = float(np.mean(list(age))) if len(age) else float(age.start)
    return np.clip(np.array([middle, middle + direction], dtype=np.float32) / 100, 0, 1)


def styleganex_direction(direction: int) -> np.ndarray:
    return np.array(np.interp(direction, [-100, 100], [2.5, -2.5]), dtype=np.float32)


def run_age(session: Any, target: np.ndarray, extended: np.ndarray | None, direction: np.ndarray) -> np.ndarray:
    """The model on its inputs, fed by name as FaceFusion's ``forward`` does; the first image out (CxHxW)."""
    feed: dict[str, np.ndarray] = {}
    for model_input in session.get_inputs():
        if model_input.name == "target":
            feed["target"] = target
        elif model_input.name == "target_with_background" and extended is not None:
            feed["target_with_background"] = extended
        elif model_input.name == "direction":
            feed["direction"] = direction
    return np.asarray(session.run(None, feed)[0][0], dtype=np.float32)


def fran_face(output: np.ndarray, contract: AgeContract) -> Frame:
    """``normalize_vision_frame``: the output back to a BGR crop."""
    rgb = np.clip(output.transpose(1, 2, 0) * contract.std + contract.mean, 0, 1)
    return np.ascontiguousarray((rgb[:, :, ::-1] * 255.0 + 0.5).astype(np.uint8))


def styleganex_face(output: np.ndarray, extended_raw: Frame, contract: AgeContract) -> Frame:
    """``normalize_extend_frame`` then ``match_frame_color``: the output as a BGR crop of four times the
    256 px side, its colours matched to the wider crop it was made from."""
    rgb = (np.clip(output, -1, 1) + 1) / 2
    pixels = (rgb.transpose(1, 2, 0) * 255.0).astype(np.uint8)[:, :, ::-1]
    side = contract.size * OUTPUT_SCALE
    face = np.asarray(cv2.resize(pixels, (side, side), interpolation=cv2.INTER_AREA), dtype=np.uint8)
    return match_frame_color(extended_raw, face)


def match_frame_color(source: Frame, target: Frame) -> Frame:
    """FaceFusion's ``match_frame_color``: ``target`` shifted towards ``source``'s colours, coarse to fine."""
    for side in np.linspace(16, target.shape[0], 3, endpoint=False):
        even = round(side / 2) * 2
        source = equalize_frame_color(source, target, (even, even))
    return equalize_frame_color(source, target, (target.shape[1], target.shape[0]))


def equalize_frame_color(source: Frame, target: Frame, size: tuple[int, int]) -> Frame:
    small_source = cv2.resize(source, size, interpolation=cv2.INTER_AREA).astype(np.float32)
    small_target = cv2.resize(target, size, interpolation=cv2.INTER_AREA).astype(np.float32)
    difference = cv2.resize(
        small_source - small_target, (target.shape[1], target.shape[0]), interpolation=cv2.INTER_CUBIC
    )
    return np.asarray(np.clip(target + difference, 0, 255), dtype=np.uint8)

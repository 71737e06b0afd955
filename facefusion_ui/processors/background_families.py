"""FaceFusion's background remover models: each family's contract as data, and the code that runs one frame.

From FaceFusion's ``processors/modules/background_remover/core.py``: the whole frame is resized to the
model's square ``size`` (bilinear), RGB, ``(pixel / 255 - mean) / std`` per channel, 1x3xSxS float32 fed
as ``input``. The first output is the matte (1x1xSxS in [0, 1]), squeezed, clipped, made 8-bit (truncated)
and resized back to the frame. Two families differ:

- ``u2net_cloth`` returns four class maps (1x4xSxS): the matte is their argmax, any clothing class (1..3)
  being foreground;
- ``corridor_key`` takes a fourth input channel, a coarse green-screen matte of the frame
  (``1 - clip(2 * (green - max(red, blue)), 0, 1)``, resized to the model's size), and returns the matte
  and the foreground's colours (1x3xSxS RGB in [0, 1]), which replace the frame's (the green spill gone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.types import Frame, Mask

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
ZERO = (0.0, 0.0, 0.0)
ONE = (1.0, 1.0, 1.0)
HALF = (0.5, 0.5, 0.5)


@dataclass(frozen=True)
class MatteContract:
    family: str
    """FaceFusion's model ``type``: ``corridor_key`` and ``u2net_cloth`` differ from the rest (module doc)."""
    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    """On the [0, 1] RGB scale, per channel (red, green, blue)."""
    input_name: str = "input"


MATTE_CONTRACTS: Mapping[str, MatteContract] = {
    "ben_2": MatteContract("ben", 1024, ZERO, ONE),
    "birefnet_general": MatteContract("birefnet", 1024, ZERO, ONE),
    "birefnet_portrait": MatteContract("birefnet", 1024, ZERO, ONE),
    "corridor_key_1024": MatteContract("corridor_key", 1024, IMAGENET_MEAN, IMAGENET_STD),
    "corridor_key_2048": MatteContract("corridor_key", 2048, IMAGENET_MEAN, IMAGENET_STD),
    "isnet_general": MatteContract("isnet", 1024, HALF, ONE),
    "modnet": MatteContract("modnet", 512, HALF, HALF),
    "ormbg": MatteContract("ormbg", 1024, ZERO, ONE),
    "rmbg_1.4": MatteContract("rmbg", 1024, HALF, ONE),
    "rmbg_2.0": MatteContract("rmbg", 1024, IMAGENET_MEAN, IMAGENET_STD),
    "silueta": MatteContract("silueta", 320, IMAGENET_MEAN, IMAGENET_STD),
    "u2net_cloth": MatteContract("u2net_cloth", 768, IMAGENET_MEAN, IMAGENET_STD),
    "u2net_general": MatteContract("u2net", 320, IMAGENET_MEAN, IMAGENET_STD),
    "u2net_human": MatteContract("u2net", 320, IMAGENET_MEAN, IMAGENET_STD),
    "u2netp": MatteContract("u2netp", 320, IMAGENET_MEAN, IMAGENET_STD),
}


def matte_contract(model: str) -> MatteContract:
    try:
        return MATTE_CONTRACTS[model]
    except KeyError:
        known = ", ".join(MATTE_CONTRACTS)
        raise ModelError(f"'{model}' is not a background remover model: choose one of {known}") from None


def coarse_matte(frame: Frame, size: int) -> Mask:
    """corridor_key's fourth channel: where the frame is not green screen (1) or is (0), at the model's size."""
    rgb = frame[:, :, ::-1].astype(np.float32) / 255.0
    bias = rgb[:, :, 1] - np.maximum(rgb[:, :, 0], rgb[:, :, 2])
    return np.asarray(cv2.resize(1.0 - np.clip(bias * 2.0, 0, 1), (size, size)), dtype=np.float32)


def matte_blob(frame: Frame, contract: MatteContract) -> np.ndarray:
    """The model's input (1xCxSxS float32) for a BGR frame."""
    size = contract.size
    rgb = cv2.resize(frame, (size, size))[:, :, ::-1].astype(np.float32) / 255.0
    normal = (rgb - np.array(contract.mean, dtype=np.float32)) / np.array(contract.std, dtype=np.float32)
    if contract.family == "corridor_key":
        normal = np.concatenate([normal, coarse_matte(frame, size)[:, :, None]], axis=2)
    return np.ascontiguousarray(normal.transpose(2, 0, 1)[None], dtype=np.float32)


def eight_bit(matte: np.ndarray, width: int, height: int) -> Mask:
    """FaceFusion's ``normalize_vision_mask`` and resize: clipped, truncated to 8 bits, at the frame's size;
    returned in [0, 1]."""
    levels = (np.clip(np.squeeze(matte), 0, 1) * 255).astype(np.uint8)
    return np.asarray(cv2.resize(levels, (width, height)), dtype=np.float32) / 255.0


def run_matte(session: Any, contract: MatteContract, frame: Frame) -> tuple[Mask, Frame]:
    """The person's matte (HxW float32, 1 = foreground) of a BGR frame, and the frame's colours to keep
    (``frame`` itself, or corridor_key's unspilled foreground)."""
    height, width = frame.shape[:2]
    outputs = session.run(None, {contract.input_name: matte_blob(frame, contract)})
    matte = np.asarray(outputs[0], dtype=np.float32)
    if contract.family == "u2net_cloth":
        matte = np.argmax(matte, axis=1).astype(np.float32)
    if contract.family == "corridor_key":
        colours = np.clip(np.squeeze(np.asarray(outputs[1], dtype=np.float32)).transpose(1, 2, 0) * 255, 0, 255)
        frame = np.asarray(cv2.resize(colours.astype(np.uint8)[:, :, ::-1], (width, height)), dtype=np.uint8)
    return eight_bit(matte, width, height), frame

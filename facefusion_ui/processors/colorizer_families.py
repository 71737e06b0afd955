"""FaceFusion's frame colorizer models: DDColor and DeOldify, each family's input and merge as FaceFusion's
``processors/modules/frame_colorizer/core.py`` has them (``prepare_temp_frame``, ``forward``,
``merge_color_frame``, ``blend_color_frame``).

The whole frame, made grey, is resized to ``--frame-colorizer-size`` (192..512 px square) and fed as
``input``; the model's colour comes back at that size and is resized to the frame, while the lightness
stays the frame's own at full resolution. So the colour is one consistent guess for the whole picture
(no tiles: the chroma is smooth and its resolution is not what shows).

- ``ddcolor``: input the grey frame's CIELAB lightness with zero a/b, back to RGB, in [0, 1] (1x3xSxS);
  output the a and b channels (1x2xSxS), joined to the frame's own lightness and turned to BGR.
- ``deoldify``: input the grey frame as RGB 0..255 (1x3xSxS); output an RGB picture 0..255 whose 8-bit
  LAB a and b channels are joined to the frame's first (blue) channel as lightness, as FaceFusion does
  (meant for black-and-white footage, where the three channels are equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.types import Frame

COLORIZER_FAMILIES: Mapping[str, str] = {
    "ddcolor": "ddcolor",
    "ddcolor_artistic": "ddcolor",
    "deoldify": "deoldify",
    "deoldify_artistic": "deoldify",
    "deoldify_stable": "deoldify",
}


def colorizer_family(model: str) -> str:
    try:
        return COLORIZER_FAMILIES[model]
    except KeyError:
        known = ", ".join(COLORIZER_FAMILIES)
        raise ModelError(f"'{model}' is not a frame colorizer model: choose one of {known}") from None


def colorizer_blob(frame: Frame, family: str, size: int) -> np.ndarray:
    grey = cv2.cvtColor(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2RGB)
    if family == "ddcolor":
        lightness = cv2.cvtColor((grey / 255.0).astype(np.float32), cv2.COLOR_RGB2LAB)[:, :, :1]
        lab = np.concatenate((lightness, np.zeros_like(lightness), np.zeros_like(lightness)), axis=-1)
        grey = cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
    resized = cv2.resize(grey, (size, size))
    return np.ascontiguousarray(resized.transpose(2, 0, 1)[None], dtype=np.float32)


def merge_colour(frame: Frame, colour: np.ndarray, family: str) -> Frame:
    """The model's colour (CxSxS) at the frame's size, joined to the frame's lightness: a BGR frame."""
    height, width = frame.shape[:2]
    resized = cv2.resize(colour.transpose(1, 2, 0), (width, height))
    if family == "ddcolor":
        lightness = cv2.cvtColor((frame / 255.0).astype(np.float32), cv2.COLOR_BGR2LAB)[:, :, :1]
        lab = np.concatenate((lightness, resized.astype(np.float32)), axis=-1)
        bgr = cv2.cvtColor(lab, cv2.COLOR_LAB2BGR)
        return np.asarray(np.clip((bgr * 255.0).round(), 0, 255), dtype=np.uint8)
    blue = frame[:, :, 0]
    picture = cv2.cvtColor(np.clip(resized, 0, 255).astype(np.uint8), cv2.COLOR_BGR2RGB)  # its RGB as BGR
    _, a, b = cv2.split(cv2.cvtColor(picture, cv2.COLOR_BGR2LAB))
    return np.asarray(cv2.cvtColor(cv2.merge((blue, a, b)), cv2.COLOR_LAB2BGR), dtype=np.uint8)


def colorize(session: Any, frame: Frame, family: str, size: int, blend: int) -> Frame:
    """The colorized frame, ``blend`` percent of it over the frame (FaceFusion's ``blend_frame``)."""
    colour = np.asarray(session.run(None, {"input": colorizer_blob(frame, family, size)})[0][0], dtype=np.float32)
    merged = merge_colour(frame, colour, family)
    factor = blend / 100
    return np.asarray(cv2.addWeighted(frame, 1 - factor, merged, factor, 0), dtype=np.uint8)

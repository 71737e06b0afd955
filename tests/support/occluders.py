"""Objects from scikit-image's sample photos, cut out to be held in front of a face: the coffee cup of
``data.coffee()`` and coins of ``data.coins()``, each as a BGR picture with its 0/1 cut-out mask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from facefusion_ui.types import Frame, Points

CUP_OUTLINE = np.array(
    [
        [176, 95],
        [190, 45],
        [240, 20],
        [300, 16],
        [360, 25],
        [400, 55],
        [410, 110],
        [398, 185],
        [372, 240],
        [330, 275],
        [285, 285],
        [245, 275],
        [212, 245],
        [188, 195],
    ],
    dtype=np.int32,
)
"""The cup's body and rim in ``data.coffee()`` (the handle, saucer and spoon left out)."""


@dataclass(frozen=True)
class Occluder:
    image: Frame
    mask: np.ndarray
    """(h, w) bool: the object's pixels."""


def cup() -> Occluder:
    from skimage import data

    rgb: Any = data.coffee()  # type: ignore[no-untyped-call]
    image = np.ascontiguousarray(rgb[:, :, ::-1], dtype=np.uint8)
    mask = np.zeros(image.shape[:2], dtype=np.uint8)
    cv2.fillPoly(mask, [CUP_OUTLINE], 1)
    x, y, width, height = cv2.boundingRect(CUP_OUTLINE)
    return Occluder(image[y : y + height, x : x + width].copy(), mask[y : y + height, x : x + width] > 0)


def coins() -> Occluder:
    """Four coins of the photo's top row, grey on their own."""
    from skimage import data

    grey: Any = data.coins()  # type: ignore[no-untyped-call]
    patch = np.ascontiguousarray(grey[10:95, 40:280], dtype=np.uint8)
    mask = cv2.morphologyEx((patch > 110).astype(np.uint8), cv2.MORPH_CLOSE, np.ones((7, 7), np.uint8))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    return Occluder(np.asarray(cv2.cvtColor(patch, cv2.COLOR_GRAY2BGR), dtype=np.uint8), mask > 0)


def held_over(frame: Frame, occluder: Occluder, centre: Points, width: float) -> tuple[Frame, np.ndarray]:
    """``frame`` with ``occluder`` scaled to ``width`` px and centred on ``centre``, and the (h, w) bool
    mask of the frame pixels it covers."""
    scale = width / occluder.image.shape[1]
    size = (max(1, round(occluder.image.shape[1] * scale)), max(1, round(occluder.image.shape[0] * scale)))
    image = cv2.resize(occluder.image, size, interpolation=cv2.INTER_AREA)
    mask = cv2.resize(occluder.mask.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST) > 0
    x = round(float(centre[0]) - size[0] / 2)
    y = round(float(centre[1]) - size[1] / 2)
    height, width_px = frame.shape[:2]
    x1, y1, x2, y2 = max(x, 0), max(y, 0), min(x + size[0], width_px), min(y + size[1], height)
    covered = np.zeros(frame.shape[:2], dtype=bool)
    covered[y1:y2, x1:x2] = mask[y1 - y : y2 - y, x1 - x : x2 - x]
    result = frame.copy()
    result[covered] = image[y1 - y : y2 - y, x1 - x : x2 - x][covered[y1:y2, x1:x2]]
    return result, covered

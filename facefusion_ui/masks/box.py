"""The box mask: the paste-back rectangle, trimmed by the padding and feathered by the blur."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.types import Mask

CROP_BORDER = 0.02
"""What every side of an aligned crop loses at least, as a share of its side: the crop's own edge (the
replicated border of the warp) never shows."""


def box_mask(
    shape: tuple[int, int], padding: tuple[int, int, int, int], blur: float, border: float = CROP_BORDER
) -> Mask:
    """1 inside, 0 on the trimmed sides, faded by a Gaussian.

    ``padding``: top, right, bottom, left in percent; each side loses at least ``border`` of its length
    and half the fade where ``border`` is above 0 (a crop). ``blur`` (0..1) sets the fade's width as a
    share of half the smaller side. A side trimmed by nothing is not faded (the swapper's own outline
    fades there)."""
    height, width = shape
    fade = max(1, int(min(height, width) * 0.5 * max(blur, 0.05)))
    # a crop's sides lose at least half the fade too, so a wide blur never lifts the crop's edge
    least = max(1, int(min(height, width) * border), fade // 2) if border > 0 else 0
    top, right, bottom, left = (
        max(int(side * percent / 100), least)
        for side, percent in zip((height, width, height, width), padding, strict=True)
    )
    mask = np.ones(shape, dtype=np.float32)
    mask[:top, :] = 0
    mask[height - bottom :, :] = 0
    mask[:, :left] = 0
    mask[:, width - right :] = 0
    kernel = fade * 2 + 1
    return np.asarray(cv2.GaussianBlur(mask, (kernel, kernel), 0), dtype=np.float32)

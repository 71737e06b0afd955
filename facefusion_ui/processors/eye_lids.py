"""The target's eyelids, for the embedded swapper: each narrow eye of the target is kept whole (its
opening, lids and lashes, from the mesh's eye contour), so that a shut, winking or cast-down eye keeps its
lid and no source iris is drawn into it.

An eye whose opening (lid to lid) is under ``SHUT`` of its width is narrow, shut or cast down: it is kept
with its lids ``SHUT_REACH`` of the eye's width round its contour. An open eye is the source's, lids and
lashes (a band there would cost likeness, and its edge would cross the lashes). The kept area is feathered
outward only, so no line shows where the source's skin starts. (Before, only the band round a narrow eye
was kept and its opening was the source's: a few pixels of the source's iris and white between the
target's lids moved the opening the mesh reads after the swap by up to 1.8 px on t1.jpg.)
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.types import Mask, Points

SHUT = 0.18
"""An eye whose opening (its contour's area over its width squared, times 4/pi: the lid-to-lid height
of an ellipse, as a share of its width) is under this counts as narrow, shut or cast down."""
SHUT_REACH = 0.25
"""How far out of a shut eye's contour the target's lids and lashes are kept."""
FEATHER = 0.12
"""The band's fade (a share of the eye's width, the Gaussian's sigma)."""


def opening_ratio(contour: Points) -> float:
    """The eye's lid-to-lid height over its width, from its contour (as an ellipse of the same area)."""
    width = float(np.ptp(contour[:, 0])) or 1.0
    area = float(abs(cv2.contourArea(contour.astype(np.float32))))
    return 4.0 * area / (np.pi * width * width)


def lid_band(points: Points, contours: tuple[np.ndarray, ...], region: tuple[int, int, int, int]) -> Mask:
    """0..1 over ``region`` (x1, y1, x2, y2): 1 where the target's own eye region is kept (``points``: the
    mesh the face is drawn with; ``contours``: the point indices of each eye's contour)."""
    x1, y1, x2, y2 = region
    band = np.zeros((y2 - y1, x2 - x1), dtype=np.float32)
    offset = np.array([x1, y1], dtype=np.float32)
    for contour in contours:
        outline = points[contour].astype(np.float32) - offset
        width = float(np.linalg.norm(outline.max(axis=0) - outline.min(axis=0))) or 1.0
        if opening_ratio(outline) >= SHUT:
            continue
        reach = max(1, round(SHUT_REACH * width))
        eye = np.zeros_like(band)
        cv2.fillPoly(eye, [np.round(outline).astype(np.int32)], 1.0)
        grown = cv2.dilate(eye, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1)))
        # feathered outward only: the opening itself is wholly the target's
        kept = np.maximum(cv2.GaussianBlur(grown, (0, 0), max(1.0, FEATHER * width)), eye)
        band = np.maximum(band, kept)
    return band

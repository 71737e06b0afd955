"""The lip syncer's paste-back mask: the lower face (jaw line up to the nose) in the aligned crop.

Kept behind ``mouth_mask`` so a mask stage with other masks (occlusion, regions) can take its place.
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.types import Mask, Points

LOWER_FACE = (*range(2, 15), 35, 34, 33, 32, 31)
"""68-point indices (iBUG layout) around the lower face: jaw from below the ears to the chin and back up,
then the base of the nose."""
TEMPLATE_MOUTH = ((0.5, 0.77), (0.24, 0.17))
"""Without landmarks: an ellipse (centre, half axes) around the mouth of the FFHQ-aligned crop, in
crop sizes."""


def mouth_mask(size: int, landmarks: Points | None, blur: float) -> Mask:
    """A ``size`` x ``size`` mask of the lower face: ``landmarks`` (68 points in the crop's pixels) or the
    template's mouth area, feathered by ``blur`` (0..1, the share of the mask's size)."""
    mask = np.zeros((size, size), dtype=np.float32)
    if landmarks is not None and len(landmarks) >= 68:
        polygon = np.round(np.asarray(landmarks, dtype=np.float32)[list(LOWER_FACE)]).astype(np.int32)
        cv2.fillConvexPoly(mask, cv2.convexHull(polygon), 1.0)
    else:
        (cx, cy), (ax, ay) = TEMPLATE_MOUTH
        centre, axes = (round(cx * size), round(cy * size)), (round(ax * size), round(ay * size))
        cv2.ellipse(mask, centre, axes, 0, 0, 360, 1.0, -1)
    # shrink a little before feathering so the fade stays inside the area the model repainted
    fade = max(1, int(size * 0.05 * max(blur, 0.1)))
    mask = np.asarray(cv2.erode(mask, np.ones((fade, fade), np.uint8)), dtype=np.float32)
    kernel = fade * 2 + 1
    return np.asarray(cv2.GaussianBlur(mask, (kernel, kernel), 0), dtype=np.float32)

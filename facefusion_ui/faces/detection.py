"""What a detector returns, and the helpers all detectors share (scaling, non-maximum suppression)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_ui.types import Frame, Points


@dataclass(frozen=True)
class Detection:
    bbox: Points
    score: float
    kps: Points | None = None
    """ArcFace-order 5 points when the detector gives them (SCRFD); else the landmarker adds them."""


def fit_within(frame: Frame, max_side: int) -> tuple[Frame, float]:
    """``frame`` scaled down (never up) so its longer side is at most ``max_side``, and the scale used."""
    height, width = frame.shape[:2]
    scale = min(1.0, max_side / float(max(height, width)))
    if scale >= 1.0:
        return frame, 1.0
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    resized = cv2.resize(frame, size, interpolation=shrink_interpolation(frame, size))
    return np.asarray(resized, dtype=np.uint8), scale


def shrink_interpolation(frame: Frame, size: tuple[int, int]) -> int:
    """How to scale ``frame`` down to ``size`` for a detector: area averaging where the factor is a whole
    number (OpenCV's fast path) or large (where sampling would alias), bilinear below 2x, where it is
    about ten times faster than area averaging at an uneven factor and a detector sees no difference."""
    height, width = frame.shape[:2]
    factors = (width / size[0], height / size[1])
    if all(abs(factor - round(factor)) < 1e-9 for factor in factors) or max(factors) >= 2.0:
        return cv2.INTER_AREA
    return cv2.INTER_LINEAR


def non_max_suppression(boxes: Points, scores: Points, threshold: float = 0.4, pixel_edges: bool = False) -> list[int]:
    """The indices kept, best score first: each box in turn, unless it overlaps (intersection over union
    above ``threshold``) one kept before it.

    ``pixel_edges``: a box's corners are the first and last pixel it covers, so its width is x2 - x1 + 1
    (and so for the intersection): insightface's convention in the SCRFD and RetinaFace decoders
    (``model_zoo/retinaface.py``, ``nms``), which the authors' code of those two families uses. Without
    it, widths are x2 - x1, as OpenCV's ``NMSBoxes`` (FaceFusion's, and YuNet's own) and YOLO's NMS.
    """
    if len(boxes) == 0:
        return []
    corners = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    edge = 1.0 if pixel_edges else 0.0
    areas = (corners[:, 2] - corners[:, 0] + edge) * (corners[:, 3] - corners[:, 1] + edge)
    order = list(np.argsort(-np.asarray(scores, dtype=np.float64).reshape(-1), kind="stable"))
    kept: list[int] = []
    while order:
        best, rest = order[0], np.array(order[1:], dtype=int)
        kept.append(int(best))
        width = np.minimum(corners[best, 2], corners[rest, 2]) - np.maximum(corners[best, 0], corners[rest, 0])
        height = np.minimum(corners[best, 3], corners[rest, 3]) - np.maximum(corners[best, 1], corners[rest, 1])
        overlap = np.maximum(0.0, width + edge) * np.maximum(0.0, height + edge)
        union = areas[best] + areas[rest] - overlap
        order = [int(i) for i in rest[overlap <= threshold * np.maximum(union, 1e-12)]]
    return kept


def sigmoid(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-value)))


def to_frame(detection: Detection, scale: float, x0: float = 0.0, y0: float = 0.0) -> Detection:
    """A detection made on a crop at (``x0``, ``y0``) scaled by ``scale``, in the frame's coordinates."""
    offset = np.array([x0, y0], dtype=np.float32)
    bbox = (np.asarray(detection.bbox, dtype=np.float32).reshape(2, 2) / scale + offset).reshape(4)
    kps = None if detection.kps is None else np.asarray(detection.kps, dtype=np.float32) / scale + offset
    return Detection(bbox=bbox, score=detection.score, kps=kps)

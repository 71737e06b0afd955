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


def non_max_suppression(boxes: Points, scores: Points, threshold: float = 0.4) -> list[int]:
    if len(boxes) == 0:
        return []
    rects = [[float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])] for b in boxes]
    kept = cv2.dnn.NMSBoxes(rects, [float(s) for s in scores], 0.0, threshold)
    return [int(i) for i in np.asarray(kept).reshape(-1)]


def sigmoid(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-value)))


def to_frame(detection: Detection, scale: float, x0: float = 0.0, y0: float = 0.0) -> Detection:
    """A detection made on a crop at (``x0``, ``y0``) scaled by ``scale``, in the frame's coordinates."""
    offset = np.array([x0, y0], dtype=np.float32)
    bbox = (np.asarray(detection.bbox, dtype=np.float32).reshape(2, 2) / scale + offset).reshape(4)
    kps = None if detection.kps is None else np.asarray(detection.kps, dtype=np.float32) / scale + offset
    return Detection(bbox=bbox, score=detection.score, kps=kps)

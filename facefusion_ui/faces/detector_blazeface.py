"""mediapipe's BlazeFace full-range detector (embedded TFLite model, fast on video frames)."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.detection import Detection, fit_within
from facefusion_ui.types import Frame


def detect_blazeface(frame: Frame, detector: Any, max_side: int, score_threshold: float) -> list[Detection]:
    """BlazeFace boxes (its 6 keypoints lack mouth corners, so the landmarker supplies the 5 points).

    Boxes are enlarged to the proportions of dlib's, which the 68-point landmarker is trained on."""
    small, scale = fit_within(frame, max_side)
    height, width = small.shape[:2]
    result = detector.process(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
    found = []
    for detection in result.detections or []:
        score = float(detection.score[0])
        if score < score_threshold:
            continue
        box = detection.location_data.relative_bounding_box
        x1, y1 = box.xmin * width, box.ymin * height
        x2, y2 = x1 + box.width * width, y1 + box.height * height
        # BlazeFace boxes start at the eyebrows; dlib's reach the forehead: move the top up a little.
        y1 -= 0.05 * (y2 - y1)
        bbox = np.array([max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)], dtype=np.float32) / scale
        found.append(Detection(bbox=bbox, score=score))
    return found

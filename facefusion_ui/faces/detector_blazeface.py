"""mediapipe's BlazeFace full-range detector (embedded TFLite model, fast on video frames).

On a whole frame BlazeFace sees a small face in few pixels, and takes some small shapes for faces (a
rocket's nose cone, a galaxy: scores 0.61-0.74). A face small against the frame is therefore searched
again in a crop of ``CONFIRM_CROP`` times its box, which the detector sees enlarged: a real face is found
there again (0.82-0.94 on the faces of t1, astronaut and grace_hopper), the shapes are not found at all.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.detection import Detection, fit_within
from facefusion_ui.types import Frame

CONFIRM_CROP = 3.0
"""The side of the crop a small face is confirmed in, in box sizes (enough context for the detector)."""
CONFIRM_BELOW = 0.8
"""A face is confirmed only when that crop is smaller than this share of the image's longer side (else
the crop is about the image itself, and the second search would only repeat the first)."""

Box = tuple[float, float, float, float]
"""x1, y1, x2, y2 in an image's pixels."""


def detect_blazeface(frame: Frame, detector: Any, max_side: int, score_threshold: float) -> list[Detection]:
    """BlazeFace boxes (its 6 keypoints lack mouth corners, so the landmarker supplies the 5 points).

    Boxes are enlarged to the proportions of dlib's, which the 68-point landmarker is trained on."""
    small, scale = fit_within(frame, max_side)
    height, width = small.shape[:2]
    confirm_below = CONFIRM_BELOW * max(height, width)
    found = []
    for box, score in blazeface_boxes(small, detector, score_threshold):
        if _crop_side(box) < confirm_below and not _confirmed(small, box, detector, score_threshold):
            continue
        x1, y1, x2, y2 = box
        # BlazeFace boxes start at the eyebrows; dlib's reach the forehead: move the top up a little.
        y1 -= 0.05 * (y2 - y1)
        bbox = np.array([max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)], dtype=np.float32) / scale
        found.append(Detection(bbox=bbox, score=score))
    return found


def blazeface_boxes(image: Frame, detector: Any, score_threshold: float) -> list[tuple[Box, float]]:
    """(x1, y1, x2, y2) in ``image``'s pixels and the score of each face at or above the threshold."""
    height, width = image.shape[:2]
    result = detector.process(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
    boxes: list[tuple[Box, float]] = []
    for detection in result.detections or []:
        score = float(detection.score[0])
        if score < score_threshold:
            continue
        box = detection.location_data.relative_bounding_box
        x1, y1 = box.xmin * width, box.ymin * height
        boxes.append(((x1, y1, x1 + box.width * width, y1 + box.height * height), score))
    return boxes


def _crop_side(box: Box) -> float:
    """The side of the square a face in ``box`` is confirmed in."""
    return CONFIRM_CROP * max(box[2] - box[0], box[3] - box[1])


def _crop_around(box: Box, image: Frame) -> tuple[int, int, int, int]:
    """The square of ``_crop_side`` centred on ``box``, clipped to ``image``."""
    height, width = image.shape[:2]
    side = _crop_side(box)
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    x0, y0 = max(0, int(cx - side / 2)), max(0, int(cy - side / 2))
    return x0, y0, min(width, int(cx + side / 2)), min(height, int(cy + side / 2))


def _confirmed(image: Frame, box: Box, detector: Any, score_threshold: float) -> bool:
    """Whether the detector finds a face again, centred inside ``box``, in the crop around it."""
    x0, y0, x1, y1 = _crop_around(box, image)
    crop = np.ascontiguousarray(image[y0:y1, x0:x1])
    for again, _ in blazeface_boxes(crop, detector, score_threshold):
        cx, cy = x0 + (again[0] + again[2]) / 2, y0 + (again[1] + again[3]) / 2
        if box[0] <= cx <= box[2] and box[1] <= cy <= box[3]:
            return True
    return False

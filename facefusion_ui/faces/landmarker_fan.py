"""ONNX landmarkers: 2DFAN4 (68 points from a crop around the face box) and the 5-to-68 companion.

- ``2dfan4``: the box is scaled so its longer side is 195 px and centred in a 256 px crop, turned upright
  by the face's angle (a quarter turn) and, when dark, its contrast equalised; input ``input``
  1x3x256x256, BGR in [0, 1]; the first output is 1x68x3: x, y on the 64 px heatmap grid and a score, the
  second the 68 heatmaps (1x68x64x64), whose peaks make the face's landmark score. Points map back
  through the rotation's and the crop's inverse transforms.
- ``fan_68_5``: input ``input`` 1x5x2, the 5 keypoints in the unit FFHQ frame (the similarity that takes
  them onto the FFHQ template scaled to 1 px); output 1x68x2 in the same frame, mapped back.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.warp_templates import template_matrix
from facefusion_ui.types import Frame, Matrix, Points

FAN_SIZE = 256
FAN_BOX_PX = 195.0
FAN_GRID = 64


def fan_crop_matrix(bbox: Points) -> Matrix:
    """Scale and shift taking the face box into the middle of the 256 px crop, longest side 195 px."""
    box = np.asarray(bbox, dtype=np.float64)
    scale = FAN_BOX_PX / max(float(np.max(box[2:] - box[:2])), 1.0)
    shift = (FAN_SIZE - (box[2:] + box[:2]) * scale) * 0.5
    return np.array([[scale, 0.0, shift[0]], [0.0, scale, shift[1]]], dtype=np.float64)


def face_angle(kps: Points | None) -> int:
    """The face's roll snapped to a quarter turn: 0, 90, 180 or 270, the degrees the crop is turned by
    (counter-clockwise, as OpenCV's ``getRotationMatrix2D``) to stand the face upright.

    FaceFusion's ``estimate_face_angle`` takes the direction from the jaw's first to its last point
    (68-point layout, 0 to 16) of ``fan_68_5``'s estimate; here it is the line from the image-left eye to
    the image-right eye of the detector's 5 points, which runs the same way on a face, so that no second
    model runs. No points: 0."""
    if kps is None:
        return 0
    points = np.asarray(kps, dtype=np.float64)
    direction = points[1] - points[0]
    theta = float(np.degrees(np.arctan2(direction[1], direction[0]))) % 360.0
    quarters = np.array([0.0, 90.0, 180.0, 270.0, 360.0])
    return int(quarters[int(np.argmin(np.abs(quarters - theta)))] % 360)


def rotation_and_size(angle: float, size: int) -> tuple[Matrix, tuple[int, int]]:
    """FaceFusion's ``create_rotation_matrix_and_size``: the crop turned by ``angle`` degrees about its
    centre (OpenCV's ``getRotationMatrix2D``), shifted so the turned square fits whole, and that size."""
    matrix = np.asarray(cv2.getRotationMatrix2D((size / 2, size / 2), angle, 1.0), dtype=np.float64)
    turned = np.abs(matrix[:, :2]) @ np.array([size, size], dtype=np.float64)
    matrix[:, 2] = matrix[:, 2] + (turned - size) * 0.5
    return matrix, (int(turned[0]), int(turned[1]))


DARK_LIGHTNESS = 30
"""A crop whose mean L (OpenCV's 8-bit Lab) is under this is a dark face: its contrast is equalised."""
CLAHE_CLIP_LIMIT = 2.0


def optimise_contrast(crop: Frame) -> Frame:
    """FaceFusion's ``conditional_optimize_contrast``: to Lab, and on a dark crop (mean L under 30) CLAHE
    with a clip limit of 2 (OpenCV's default 8 x 8 tiles) on L, then back. FaceFusion converts its BGR
    frame with ``COLOR_RGB2Lab`` and back with ``COLOR_Lab2RGB``; the same conversions here give the
    model the very pixels it gets there (the pair is a round trip, so only the L weights see the order)."""
    lab = cv2.cvtColor(crop, cv2.COLOR_RGB2Lab)
    if float(np.mean(lab[:, :, 0])) < DARK_LIGHTNESS:
        lab[:, :, 0] = cv2.createCLAHE(clipLimit=CLAHE_CLIP_LIMIT).apply(lab[:, :, 0])
    return np.asarray(cv2.cvtColor(lab, cv2.COLOR_Lab2RGB), dtype=np.uint8)


def heatmap_score(heatmaps: np.ndarray) -> float:
    """FaceFusion's 2DFAN4 score: each point's heatmap peak, averaged over the 68, read from [0, 0.9] onto
    [0, 1] (0.9 and above: 1)."""
    peaks = np.asarray(heatmaps, dtype=np.float32).reshape(68, -1).max(axis=1)
    return float(np.interp(float(peaks.mean()), [0.0, 0.9], [0.0, 1.0]))


def landmarks_2dfan4(frame: Frame, bbox: Points, session: Any, angle: float = 0.0) -> tuple[Points, float]:
    """The 68 points of the face in ``bbox`` (frame coordinates) and the model's score (0..1), as
    FaceFusion 3.x runs 2DFAN4 (``face_landmarker.py``, ``detect_with_2dfan4``,
    https://github.com/facefusion/facefusion/blob/master/facefusion/face_landmarker.py): the box's crop
    turned upright by the face's ``angle`` (``face_angle``), its contrast raised when dark, the points
    read on the 64 px grid, 4 crop pixels each, and turned and moved back."""
    matrix = fan_crop_matrix(bbox)
    rotation, turned_size = rotation_and_size(angle, FAN_SIZE)
    crop = np.asarray(
        cv2.warpAffine(cv2.warpAffine(frame, matrix, (FAN_SIZE, FAN_SIZE)), rotation, turned_size), dtype=np.uint8
    )
    blob = np.ascontiguousarray(optimise_contrast(crop).transpose(2, 0, 1)[None], dtype=np.float32) / 255.0
    outputs = session.run(None, {session.get_inputs()[0].name: blob})
    points = np.asarray(outputs[0], dtype=np.float32).reshape(68, -1)[:, :2] * (FAN_SIZE / FAN_GRID)
    upright = cv2.transform(points[None], cv2.invertAffineTransform(rotation))
    in_frame = np.asarray(cv2.transform(upright, cv2.invertAffineTransform(matrix))[0], dtype=np.float32)
    return in_frame, heatmap_score(outputs[1]) if len(outputs) > 1 else 1.0


def landmarks_68_from_5(kps: Points, session: Any) -> Points:
    """68 points estimated from the 5 keypoints by the ``fan_68_5`` model, in frame coordinates."""
    matrix = template_matrix(kps, "ffhq_512", 1)
    unit = cv2.transform(np.asarray(kps, dtype=np.float32)[None], matrix)[0].astype(np.float32)
    output = session.run(None, {session.get_inputs()[0].name: unit[None]})[0]
    points = np.asarray(output, dtype=np.float32).reshape(68, 2)
    return np.asarray(cv2.transform(points[None], cv2.invertAffineTransform(matrix))[0], dtype=np.float32)

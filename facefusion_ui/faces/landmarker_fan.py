"""ONNX landmarkers: 2DFAN4 (68 points from a crop around the face box) and the 5-to-68 companion.

- ``2dfan4``: the box is scaled so its longer side is 195 px and centred in a 256 px crop; input
  ``input`` 1x3x256x256, BGR in [0, 1]; the first output is 1x68x3: x, y on the 64 px heatmap grid and a
  score. Points map back through the crop's inverse transform.
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


def landmarks_2dfan4(frame: Frame, bbox: Points, session: Any) -> Points:
    """The 68 points of the face in ``bbox``, in frame coordinates."""
    matrix = fan_crop_matrix(bbox)
    crop = cv2.warpAffine(frame, matrix, (FAN_SIZE, FAN_SIZE))
    blob = np.ascontiguousarray(crop.transpose(2, 0, 1)[None], dtype=np.float32) / 255.0
    output = np.asarray(session.run(None, {session.get_inputs()[0].name: blob})[0], dtype=np.float32)
    points = output.reshape(68, -1)[:, :2] * (FAN_SIZE / FAN_GRID)
    inverse = cv2.invertAffineTransform(matrix)
    return np.asarray(cv2.transform(points[None], inverse)[0], dtype=np.float32)


def landmarks_68_from_5(kps: Points, session: Any) -> Points:
    """68 points estimated from the 5 keypoints by the ``fan_68_5`` model, in frame coordinates."""
    matrix = template_matrix(kps, "ffhq_512", 1)
    unit = cv2.transform(np.asarray(kps, dtype=np.float32)[None], matrix)[0].astype(np.float32)
    output = session.run(None, {session.get_inputs()[0].name: unit[None]})[0]
    points = np.asarray(output, dtype=np.float32).reshape(68, 2)
    return np.asarray(cv2.transform(points[None], cv2.invertAffineTransform(matrix))[0], dtype=np.float32)

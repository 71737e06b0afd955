"""The ONNX detector families beyond SCRFD: YOLOv8-face and YuNet, and the dispatch by family.

Contracts (FaceFusion's exports, input named ``input``, the frame letterboxed at the top left):

- ``scrfd`` / ``retinaface``: see ``detector_scrfd`` (same output layout);
- ``yolo_face``: BGR in [0, 1], 1x3xSxS -> 1x20xN: centre x, centre y, width, height, score, then five
  keypoints as (x, y, visibility), all in input pixels;
- ``yunet``: BGR 0..255, 1x3xSxS -> 12 outputs: class, objectness, box and keypoints for strides
  8/16/32 (one anchor per cell); score = class x objectness; box centre = offset x stride + cell,
  box size = exp(log size) x stride; keypoints = offset x stride + cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from facefusion_ui.faces.detection import Detection, non_max_suppression
from facefusion_ui.faces.detector_scrfd import decode_scrfd, grid_centers, grid_side, letterbox
from facefusion_ui.types import Frame

DetectorFamily = Literal["scrfd", "retinaface", "yolo_face", "yunet"]
YUNET_STRIDES = (8, 16, 32)
PIXEL_EDGE_FAMILIES: tuple[DetectorFamily, ...] = ("scrfd", "retinaface")
"""The families whose reference NMS counts a box's edge pixels (``non_max_suppression``'s ``pixel_edges``)."""


@dataclass(frozen=True)
class DetectorContract:
    family: DetectorFamily
    channels: Literal["rgb", "bgr"]
    mean: float
    std: float
    """input = (pixel - mean) / std."""


DETECTOR_CONTRACTS: Mapping[str, DetectorContract] = {
    "det_10g": DetectorContract("scrfd", "rgb", 127.5, 128.0),  # InsightFace's own export
    "scrfd_2.5g": DetectorContract("scrfd", "bgr", 127.5, 128.0),
    "retinaface_10g": DetectorContract("retinaface", "bgr", 127.5, 128.0),
    "yoloface_8n": DetectorContract("yolo_face", "bgr", 0.0, 255.0),
    "yunet_2023_mar": DetectorContract("yunet", "bgr", 0.0, 1.0),
}


def detector_blob(canvas: Frame, contract: DetectorContract) -> np.ndarray:
    pixels = canvas[:, :, ::-1] if contract.channels == "rgb" else canvas
    normalised = (pixels.astype(np.float32) - contract.mean) / contract.std
    return np.ascontiguousarray(normalised.transpose(2, 0, 1)[None], dtype=np.float32)


def decode_yolo_face(output: np.ndarray, score_threshold: float) -> list[Detection]:
    rows = np.asarray(output, dtype=np.float32).reshape(-1, np.shape(output)[-1]).T  # N x 20
    keep = np.where(rows[:, 4] >= score_threshold)[0]
    if keep.size == 0:
        return []
    rows = rows[keep]
    centre, half = rows[:, 0:2], rows[:, 2:4] / 2
    boxes = np.concatenate([centre - half, centre + half], axis=1)
    points = rows[:, 5:20].reshape(-1, 5, 3)[:, :, :2]
    return _detections(boxes, rows[:, 4], points)


def decode_yunet(outputs: list[Any], score_threshold: float) -> list[Detection]:
    """Boxes, scores and keypoints in input pixels; each level's cells on the grid its outputs have."""
    boxes, scores, points = [], [], []
    for index, stride in enumerate(YUNET_STRIDES):
        level = (np.asarray(outputs[index]) * np.asarray(outputs[index + 3])).reshape(-1)
        keep = np.where(level >= score_threshold)[0]
        if keep.size == 0:
            continue
        cells = grid_centers(grid_side(level.size, 1, stride), stride, 1)[keep]
        raw_box = np.asarray(outputs[index + 6], dtype=np.float32).reshape(-1, 4)[keep]
        raw_kps = np.asarray(outputs[index + 9], dtype=np.float32).reshape(-1, 5, 2)[keep]
        centre = raw_box[:, :2] * stride + cells
        half = np.exp(raw_box[:, 2:4]) * stride / 2
        boxes.append(np.concatenate([centre - half, centre + half], axis=1))
        scores.append(level[keep])
        points.append(raw_kps * stride + cells[:, None, :])
    if not boxes:
        return []
    return _detections(np.concatenate(boxes), np.concatenate(scores), np.concatenate(points))


def _detections(boxes: np.ndarray, scores: np.ndarray, points: np.ndarray) -> list[Detection]:
    boxes, scores, points = boxes.astype(np.float32), scores.astype(np.float32), points.astype(np.float32)
    return [Detection(boxes[i], float(scores[i]), points[i]) for i in range(len(boxes))]


def suppressed(found: list[Detection], family: DetectorFamily) -> list[Detection]:
    """``found`` (frame coordinates) after non-maximum suppression at 0.4 by the family's reference: SCRFD
    and RetinaFace count a box's edge pixels (insightface's ``nms``, applied to the boxes already in the
    frame's coordinates, as here); YOLO and YuNet do not (their NMS, and OpenCV's ``NMSBoxes``)."""
    if not found:
        return []
    boxes = np.array([d.bbox for d in found], dtype=np.float32)
    scores = np.array([d.score for d in found], dtype=np.float32)
    kept = non_max_suppression(boxes, scores, 0.4, pixel_edges=family in PIXEL_EDGE_FAMILIES)
    return [found[i] for i in kept]


def detect_onnx(name: str, frame: Frame, session: Any, size: int, score_threshold: float) -> list[Detection]:
    """Faces in ``frame`` (its coordinates) with the ONNX detector ``name``."""
    contract = DETECTOR_CONTRACTS[name]
    canvas, scale = letterbox(frame, size)
    outputs = session.run(None, {session.get_inputs()[0].name: detector_blob(canvas, contract)})
    if contract.family == "yolo_face":
        found = decode_yolo_face(outputs[0], score_threshold)
    elif contract.family == "yunet":
        found = decode_yunet(outputs, score_threshold)
    else:
        if len(outputs) not in (6, 9):
            raise ValueError(f"an SCRFD-layout detector has 6 or 9 outputs, this one has {len(outputs)}")
        found = decode_scrfd(outputs, score_threshold)
    in_frame = [Detection(d.bbox / scale, d.score, d.kps / scale if d.kps is not None else None) for d in found]
    return suppressed(in_frame, contract.family)

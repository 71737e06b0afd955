"""SCRFD-class ONNX detectors (det_10g, scrfd_2.5g): our own decoding of their stride outputs.

Contract (the InsightFace export): one input 1x3xHxW, RGB, (pixel - 127.5) / 128; 6 or 9 outputs,
``[scores_8, scores_16, scores_32, boxes_8, boxes_16, boxes_32, (kps_8, kps_16, kps_32)]`` with two
anchors per grid cell; boxes are distances (left, top, right, bottom) and keypoints offsets, both in
stride units from the anchor centre.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.detection import Detection
from facefusion_ui.types import Frame, Points

STRIDES = (8, 16, 32)
ANCHORS_PER_CELL = 2


def letterbox(frame: Frame, size: int) -> tuple[Frame, float]:
    """``frame`` scaled to fit ``size`` x ``size`` and padded at the right and bottom."""
    height, width = frame.shape[:2]
    scale = size / float(max(height, width))
    resized = cv2.resize(frame, (max(1, round(width * scale)), max(1, round(height * scale))))
    canvas = np.zeros((size, size, 3), dtype=np.uint8)
    canvas[: resized.shape[0], : resized.shape[1]] = resized
    return canvas, scale


def grid_side(count: int, anchors: int, stride: int) -> int:
    """The side of the square grid an output of ``count`` rows (``anchors`` per cell) has at ``stride``:
    read from the output itself, as the network made it (ceil(side / stride) for its padded
    convolutions, which ``side // stride`` misses on a side that is not a multiple of the stride)."""
    cells = math.isqrt(count // anchors)
    if cells * cells * anchors != count:
        raise ValueError(f"a stride-{stride} output of {count} rows is no square grid of {anchors} anchors per cell")
    return cells


def grid_centers(cells: int, stride: int, anchors: int) -> Points:
    """Each cell's top-left corner in input pixels, row by row, repeated for the cell's ``anchors``."""
    ys, xs = np.mgrid[:cells, :cells]
    centers = (np.stack([xs, ys], axis=-1).astype(np.float32) * stride).reshape(-1, 2)
    return np.repeat(centers, anchors, axis=0)


def decode_scrfd(outputs: list[Any], score_threshold: float) -> list[Detection]:
    """Every box above ``score_threshold`` with its score and keypoints, in letterbox coordinates (before
    non-maximum suppression); each level's anchors on the grid its outputs have."""
    with_kps = len(outputs) == 9
    found: list[Detection] = []
    for index, stride in enumerate(STRIDES):
        level_scores = np.asarray(outputs[index], dtype=np.float32).reshape(-1)
        distances = np.asarray(outputs[index + 3], dtype=np.float32).reshape(-1, 4) * stride
        centers = grid_centers(grid_side(level_scores.size, ANCHORS_PER_CELL, stride), stride, ANCHORS_PER_CELL)
        keep = np.where(level_scores >= score_threshold)[0]
        c, d = centers[keep], distances[keep]
        boxes = np.stack([c[:, 0] - d[:, 0], c[:, 1] - d[:, 1], c[:, 0] + d[:, 2], c[:, 1] + d[:, 3]], axis=1)
        points = None
        if with_kps:
            offsets = np.asarray(outputs[index + 6], dtype=np.float32).reshape(-1, 10)[keep].reshape(-1, 5, 2)
            points = c[:, None, :] + offsets * stride
        found += [
            Detection(boxes[i], float(level_scores[k]), None if points is None else points[i])
            for i, k in enumerate(keep)
        ]
    return found

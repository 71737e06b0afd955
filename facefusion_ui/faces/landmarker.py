"""Landmarks: dlib's 68 and 5-point predictors on a face box, and mediapipe's face mesh on a crop
(468 points and 10 for the irises).

A new face's mesh is found on a crop around its box (``face_mesh``): on a whole group photo mediapipe
misses most faces (its own detector wants a face that fills the picture); on crops it finds them. A face
whose mesh is known (the frame before, or the plain mesh the irises are looked for round) is read at the
region that mesh gives (``face_mesh_at``): the landmark model alone, on a square turned with the eyes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.alignment import template_points
from facefusion_ui.faces.face import FaceMesh
from facefusion_ui.faces.mesh_model import MESH_INPUT_SIZE, MeshModel, landmark_array
from facefusion_ui.frames import FrameImage
from facefusion_ui.types import Frame, Points

NOSE_TIP_FROM_BASE = 0.78
"""Nose tip (68-point index 30) along the line from the eyes to the nose base (index 33): mean of
0.62-0.87 measured on the faces of t1, astronaut and grace_hopper."""
MESH_CROP_SCALE = 1.7
MESH_CROP_SIZE = 256
# ArcFace-order points on the mediapipe mesh: eye contours (image-left eye first), nose tip, mouth corners.
MESH_LEFT_EYE = (33, 133, 159, 145)
MESH_RIGHT_EYE = (362, 263, 386, 374)
MESH_NOSE_TIP = 1
MESH_MOUTH = (61, 291)
MESH_ROI_EYES = (33, 263)
"""The outer eye corners: the line between them sets how the region a known mesh is read in is turned."""
MESH_ROI_SCALE = 1.5
"""That region's side, in the longer side of the mesh's bounding box (mediapipe's own video mode)."""


def dlib_rectangle(bbox: Points) -> Any:
    import dlib

    return dlib.rectangle(int(bbox[0]), int(bbox[1]), int(bbox[2]), int(bbox[3]))


def dlib_landmarks(image: Frame, predictor: Any, bbox: Points) -> Points:
    """dlib's 68 or 5 points in ``image``, BGR or RGB alike: its shape predictors read a pixel as the mean
    of its three channels, so the order does not matter (and a video frame needs no RGB copy)."""
    shape = predictor(image, dlib_rectangle(bbox))
    return np.array([[p.x, p.y] for p in shape.parts()], dtype=np.float32)


def kps_from_dlib_5(points: Points) -> Points:
    """ArcFace 5 points from dlib's 5 (two corners per eye, nose base): the mouth corners come from the
    template, placed by the similarity transform that fits the eyes and nose."""
    right_eye = points[0:2].mean(axis=0)  # dlib lists the image-right eye first
    left_eye = points[2:4].mean(axis=0)
    eye_mid = (left_eye + right_eye) / 2
    nose = eye_mid + NOSE_TIP_FROM_BASE * (points[4] - eye_mid)  # dlib's 5th point is the nose base
    template = template_points("arcface_112", 112)
    source = np.stack([template[0], template[1], template[2]])
    target = np.stack([left_eye, right_eye, nose]).astype(np.float32)
    matrix, _ = cv2.estimateAffinePartial2D(source, target)
    mouth = cv2.transform(template[3:5][None], matrix)[0]
    return np.vstack([left_eye, right_eye, nose, mouth]).astype(np.float32)


def mesh_crop_box(bbox: Points, scale: float = MESH_CROP_SCALE) -> tuple[float, float, float]:
    """(x, y, side) of the square crop centred on the face box."""
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    side = max(bbox[2] - bbox[0], bbox[3] - bbox[1]) * scale
    return float(cx - side / 2), float(cy - side / 2), float(side)


def face_mesh(frame: Frame, bbox: Points, mesh_model: MeshModel) -> FaceMesh | None:
    """The mesh in frame coordinates (468 points, or 478 from a model with refined landmarks: the irises),
    or None when mediapipe finds no face in the crop.

    The caller holds the model exclusively (``ModelRuntime.using``)."""
    x, y, side = mesh_crop_box(bbox)
    scale = MESH_CROP_SIZE / side
    matrix = np.array([[scale, 0, -x * scale], [0, scale, -y * scale]], dtype=np.float64)
    crop = cv2.warpAffine(frame, matrix, (MESH_CROP_SIZE, MESH_CROP_SIZE), borderMode=cv2.BORDER_REPLICATE)
    result = mesh_model.process(cv2.cvtColor(crop, cv2.COLOR_BGR2RGB))
    if not result.multi_face_landmarks:
        return None
    # mediapipe gives x, y as fractions of the crop and z on the same scale as x
    raw = landmark_array(result.multi_face_landmarks[0])
    pixels = raw * np.float32(MESH_CROP_SIZE / scale)
    points = (pixels[:, :2] + np.array([x, y], dtype=np.float32)).astype(np.float32)
    return FaceMesh(points, np.ascontiguousarray(pixels[:, 2]))


@dataclass(frozen=True)
class MeshRoi:
    """A square of the frame the landmark model reads: centre, side (pixels) and the angle (radians,
    clockwise in the image) it is turned by, so the eyes lie level in it."""

    centre: tuple[float, float]
    side: float
    angle: float


def mesh_roi(points: Points) -> MeshRoi:
    """The region to read a face in whose mesh ``points`` (frame pixels) are known: centred on the mesh's
    bounding box, ``MESH_ROI_SCALE`` times its longer side, turned with the line between the eyes."""
    low, high = points[:, :2].min(axis=0), points[:, :2].max(axis=0)
    left, right = points[MESH_ROI_EYES[0]], points[MESH_ROI_EYES[1]]
    angle = math.atan2(float(right[1] - left[1]), float(right[0] - left[0]))
    side = float(max(high - low)) * MESH_ROI_SCALE
    return MeshRoi((float(low[0] + high[0]) / 2, float(low[1] + high[1]) / 2), max(side, 1.0), angle)


def roi_matrix(roi: MeshRoi) -> np.ndarray:
    """The affine map (2 x 3) from frame pixels to the model's upright input square."""
    scale = MESH_INPUT_SIZE / roi.side
    cos, sin = math.cos(roi.angle) * scale, math.sin(roi.angle) * scale
    linear = np.array([[cos, sin], [-sin, cos]], dtype=np.float64)
    shift = MESH_INPUT_SIZE / 2 - linear @ np.array(roi.centre, dtype=np.float64)
    return np.hstack([linear, shift[:, None]])


def face_mesh_at(frame: Frame, roi: MeshRoi, mesh_model: MeshModel) -> FaceMesh | None:
    """The mesh read in ``roi`` of ``frame`` (BGR), in frame coordinates; None when the model sees no face
    there. The caller holds the model exclusively (``ModelRuntime.using``)."""
    matrix = roi_matrix(roi)
    size = (MESH_INPUT_SIZE, MESH_INPUT_SIZE)
    square = cv2.warpAffine(frame, matrix, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    raw = mesh_model.read(cv2.cvtColor(square, cv2.COLOR_BGR2RGB))
    if raw is None:
        return None
    square_points = raw[:, :2] * np.float32(MESH_INPUT_SIZE)
    back = cv2.invertAffineTransform(matrix)
    points = square_points @ back[:, :2].T.astype(np.float32) + back[:, 2].astype(np.float32)
    return FaceMesh(np.asarray(points, dtype=np.float32), np.ascontiguousarray(raw[:, 2] * np.float32(roi.side)))


ROI_SPARE = 3
"""Pixels added round a region's square: bilinear reads reach a pixel past it, and rounding."""


def roi_bounds(roi: MeshRoi, width: int, height: int) -> tuple[int, int, int, int]:
    """The rectangle (x1, y1, x2, y2, even corners inside the ``width`` x ``height`` frame) holding the
    square of ``roi``, turned (its corners reach furthest), and what a read of it touches."""
    reach = roi.side / 2 * (abs(math.cos(roi.angle)) + abs(math.sin(roi.angle))) + ROI_SPARE
    x1, y1 = (max(math.floor(value - reach), 0) for value in roi.centre)
    x2, y2 = min(math.ceil(roi.centre[0] + reach), width), min(math.ceil(roi.centre[1] + reach), height)
    return x1 - x1 % 2, y1 - y1 % 2, min(x2 + x2 % 2, width), min(y2 + y2 % 2, height)


def face_mesh_in(image: FrameImage, roi: MeshRoi, mesh_model: MeshModel) -> FaceMesh | None:
    """``face_mesh_at`` read from the crop of ``image`` that holds ``roi`` (``roi_bounds``): a video frame
    is converted there alone. The same mesh, but for rounding (the square is mapped from other origins)."""
    x1, y1, x2, y2 = roi_bounds(roi, image.width, image.height)
    moved = MeshRoi((roi.centre[0] - x1, roi.centre[1] - y1), roi.side, roi.angle)
    mesh = face_mesh_at(image.bgr_region((x1, y1, x2, y2)), moved, mesh_model)
    if mesh is None:
        return None
    return FaceMesh(mesh.points + np.array([x1, y1], dtype=np.float32), mesh.depth)


def kps_from_mesh(mesh: Points) -> Points:
    return np.stack(
        [
            mesh[list(MESH_LEFT_EYE)].mean(axis=0),
            mesh[list(MESH_RIGHT_EYE)].mean(axis=0),
            mesh[MESH_NOSE_TIP],
            mesh[MESH_MOUTH[0]],
            mesh[MESH_MOUTH[1]],
        ]
    ).astype(np.float32)

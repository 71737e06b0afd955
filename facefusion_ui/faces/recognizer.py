"""Recognizers: the embedded dlib ResNet (128-d, L2 scale) and ONNX ArcFace (512-d, cosine scale).

Each declares its metric and "same person" threshold in the manifest; callers compare faces in the
recognizer's own scale, never with a global constant.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.alignment import warp_face
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.landmarker import dlib_rectangle
from facefusion_ui.models import ModelSpec
from facefusion_ui.types import DistanceMetric, Embedding, Frame


@dataclass(frozen=True)
class RecognizerScale:
    name: str
    metric: DistanceMetric
    threshold: float

    @classmethod
    def of(cls, spec: ModelSpec) -> RecognizerScale:
        if spec.role != "recognizer" or spec.metric is None or spec.threshold is None:
            raise ValueError(f"'{spec.name}' is not a recognizer with a metric and a threshold")
        return cls(spec.name, spec.metric, float(spec.threshold))


def embed_dlib(rgb: Frame, face: Face, recognizer: Any, predictor_5: Callable[[], ContextManager[Any]]) -> Embedding:
    """dlib's descriptor from its own 150 px chip; the 68 landmarks are used when the face has them, else
    the 5 points of ``predictor_5`` (a context lending the predictor: a face with its 68 landmarks never
    loads it, 0.1 s before the first face's embedding)."""
    import dlib

    rectangle = dlib_rectangle(face.bbox)
    if face.landmarks_68 is not None:
        points = dlib.points([dlib.point(int(x), int(y)) for x, y in face.landmarks_68])
        shape = dlib.full_object_detection(rectangle, points)
    else:
        with predictor_5() as predictor:
            shape = predictor(rgb, rectangle)
    return np.asarray(recognizer.compute_face_descriptor(rgb, shape, 0), dtype=np.float32)


def embed_arcface(frame: Frame, face: Face, session: Any, spec: ModelSpec) -> Embedding:
    size = spec.input_size[0] if spec.input_size else 112
    crop, _ = warp_face(frame, face.kps, "arcface_112", size)
    blob = cv2.dnn.blobFromImage(crop, 1.0 / spec.std, (size, size), (spec.mean,) * 3, swapRB=True)
    output = session.run(None, {session.get_inputs()[0].name: blob})[0]
    return np.asarray(output, dtype=np.float32).reshape(-1)

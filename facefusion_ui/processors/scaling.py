"""Faces moved onto a frame of another size (after an upscaler earlier in the chain)."""

from __future__ import annotations

import dataclasses

import numpy as np

from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.types import Points


def _scaled(points: Points, sx: float, sy: float) -> Points:
    # pixel centres: x' = (x + 0.5) * s - 0.5
    factors = np.array([sx, sy], dtype=np.float32)
    shaped = np.asarray(points, dtype=np.float32).reshape(-1, 2)
    return ((shaped + 0.5) * factors - 0.5).reshape(np.shape(points)).astype(np.float32)


def scale_face(face: Face, sx: float, sy: float) -> Face:
    """``face`` with its box, keypoints, landmarks and mesh on a frame ``sx`` x ``sy`` times the size."""
    if sx == 1.0 and sy == 1.0:
        return face
    bbox = np.asarray(face.bbox, dtype=np.float32) * np.array([sx, sy, sx, sy], dtype=np.float32)
    mesh = face.mesh
    if mesh is not None:
        mesh = FaceMesh(_scaled(mesh.points, sx, sy), np.asarray(mesh.depth, dtype=np.float32) * sx)
    landmarks = None if face.landmarks_68 is None else _scaled(face.landmarks_68, sx, sy)
    return dataclasses.replace(face, bbox=bbox, kps=_scaled(face.kps, sx, sy), landmarks_68=landmarks, mesh=mesh)


def scale_context(context: FrameContext, sx: float, sy: float) -> FrameContext:
    """``context`` with every face it carries moved onto a frame ``sx`` x ``sy`` times the size (a face
    that is both in the report and selected stays one object)."""
    report = context.report
    moved = {id(face): scale_face(face, sx, sy) for face in (report.faces if report is not None else ())}

    def move(face: Face) -> Face:
        return moved.get(id(face)) or scale_face(face, sx, sy)

    if report is not None:
        report = dataclasses.replace(
            report, faces=[move(face) for face in report.faces], selected=[move(face) for face in report.selected]
        )
    return dataclasses.replace(context, faces=[move(face) for face in context.faces], report=report)

"""A frame's faces moved into a crop of it: the chain run on the rectangle its processors read and write
(``RegionalProcessor``) instead of the whole frame, with the same pixels coming out."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.frame_analysis import FrameAnalysis

Region = tuple[int, int, int, int]
"""x1, y1, x2, y2 in frame pixels (x2, y2 excluded)."""


def even_union(regions: Iterable[Region], width: int, height: int) -> Region:
    """The smallest rectangle holding every one of ``regions``, grown to even sides (4:2:0 frames: a
    crop's chroma then starts on a whole sample) and kept inside the ``width`` x ``height`` frame."""
    boxes = np.array(list(regions), dtype=np.int64).reshape(-1, 4)
    x1, y1 = boxes[:, :2].min(axis=0)
    x2, y2 = boxes[:, 2:].max(axis=0)
    x1, y1 = max(int(x1) - int(x1) % 2, 0), max(int(y1) - int(y1) % 2, 0)
    x2, y2 = min(int(x2) + int(x2) % 2, width), min(int(y2) + int(y2) % 2, height)
    return x1, y1, x2, y2


def moved_face(face: Face, dx: float, dy: float) -> Face:
    """``face`` with its box, keypoints, landmarks and mesh moved by (``dx``, ``dy``) pixels."""
    shift = np.array([dx, dy], dtype=np.float32)

    def moved(points: np.ndarray) -> np.ndarray:
        return (np.asarray(points, dtype=np.float32).reshape(-1, 2) + shift).reshape(np.shape(points))

    mesh = face.mesh
    if mesh is not None:
        mesh = FaceMesh(moved(mesh.points), mesh.depth)
    landmarks = None if face.landmarks_68 is None else moved(face.landmarks_68)
    return dataclasses.replace(face, bbox=moved(face.bbox), kps=moved(face.kps), landmarks_68=landmarks, mesh=mesh)


def moved_analysis(analysis: FrameAnalysis, dx: float, dy: float) -> FrameAnalysis:
    """``analysis`` with every face moved by (``dx``, ``dy``); a face both found and selected stays one
    object (the report tells the selected ones by identity)."""
    moved = {id(face): moved_face(face, dx, dy) for face in analysis.faces}

    def move(face: Face) -> Face:
        return moved.get(id(face)) or moved_face(face, dx, dy)

    return dataclasses.replace(
        analysis, faces=[move(face) for face in analysis.faces], selected=[move(face) for face in analysis.selected]
    )

"""Which target faces a frame's processors act on: every face, one face, or the reference person."""

from __future__ import annotations

from collections.abc import Sequence

from facefusion_ui.faces.face import Face, embedding_distance
from facefusion_ui.faces.recognizer import RecognizerScale
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, FaceSelectorOrder


def sort_faces(faces: Sequence[Face], order: FaceSelectorOrder) -> list[Face]:
    keys = {
        "large-small": lambda face: -face.area,
        "small-large": lambda face: face.area,
        "left-right": lambda face: face.bbox[0],
        "right-left": lambda face: -face.bbox[2],
        "top-bottom": lambda face: face.bbox[1],
        "best-worst": lambda face: -face.score,
    }
    return sorted(faces, key=keys[order])


def pick_face(faces: Sequence[Face], order: FaceSelectorOrder, position: int) -> Face | None:
    """The face at ``position`` in ``order`` (the last one when there are fewer faces)."""
    ordered = sort_faces(faces, order)
    if not ordered:
        return None
    return ordered[min(position, len(ordered) - 1)]


def reference_threshold(settings: Settings, scale: RecognizerScale) -> float:
    return settings.reference_face_distance if settings.reference_face_distance is not None else scale.threshold


def select_faces(
    faces: Sequence[Face], settings: Settings, reference: Embedding | None, scale: RecognizerScale
) -> list[Face]:
    """The faces to process. ``reference`` (an embedding in ``scale``'s recognizer) serves mode 'reference'."""
    mode = settings.face_selector_mode
    if mode == "many":
        return sort_faces(faces, settings.face_selector_order)
    if mode == "one":
        chosen = pick_face(faces, settings.face_selector_order, 0)
        return [chosen] if chosen is not None else []
    if reference is None:
        return []
    threshold = reference_threshold(settings, scale)
    return [
        face
        for face in faces
        if face.embedding is not None and embedding_distance(face.embedding, reference, scale.metric) < threshold
    ]

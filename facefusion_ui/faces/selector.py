"""Which target faces a frame's processors act on: every face, one face, or the reference person.

The faces are ordered and filtered as FaceFusion's ``sort_and_filter_faces`` does (``face_selector.py``):
by ``face_selector_order``, then kept by gender, race (``auto``: the source face's) and age window, which
the face classifier (``faces/classifier.py``, fairface) tells. With those filters at their defaults (none)
the classifier is never needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from facefusion_ui.faces.face import Face, embedding_distance
from facefusion_ui.faces.recognizer import RecognizerScale
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FACE_SELECTOR_AGE_RANGE, Embedding, FaceSelectorOrder, Gender, Race, choices

FILTER_SETTINGS = ("face_selector_gender", "face_selector_race", "face_selector_age_start", "face_selector_age_end")
"""The settings that keep faces by what the face classifier says of them."""


def sort_faces(faces: Sequence[Face], order: FaceSelectorOrder) -> list[Face]:
    keys = {
        "large-small": lambda face: -face.area,
        "small-large": lambda face: face.area,
        "left-right": lambda face: face.bbox[0],
        "right-left": lambda face: -face.bbox[2],
        "top-bottom": lambda face: face.bbox[1],
        "bottom-top": lambda face: -face.bbox[1],
        "best-worst": lambda face: -face.score,
        "worst-best": lambda face: face.score,
    }
    return sorted(faces, key=keys[order])


def age_window(settings: Settings) -> range | None:
    """The ages kept (``face_selector_age_start`` up to, not including, ``..._age_end``, as FaceFusion's
    ``range``); None when the window is the whole 0..100, which keeps every face."""
    low, high = FACE_SELECTOR_AGE_RANGE
    start = settings.face_selector_age_start if settings.face_selector_age_start is not None else low
    end = settings.face_selector_age_end if settings.face_selector_age_end is not None else high
    return None if (start, end) == (low, high) else range(start, end)


def filters_in_use(settings: Settings) -> tuple[str, ...]:
    """The filter settings that keep faces by their classes (empty: the classifier is not needed)."""
    used = [key for key in ("face_selector_gender", "face_selector_race") if getattr(settings, key) is not None]
    if age_window(settings) is not None:
        used.extend(key for key in FILTER_SETTINGS[2:] if getattr(settings, key) is not None)
    return tuple(used)


def classifies_targets(settings: Settings) -> bool:
    """Whether a frame's faces need the classifier: filters are in use, and they apply to the frame's faces
    (in mode 'reference' with a face of the target, they choose the reference face only)."""
    by_reference_frame = settings.face_selector_mode == "reference" and settings.reference_face_from == "frame"
    return bool(filters_in_use(settings)) and not by_reference_frame


def classifies_source(settings: Settings) -> bool:
    """Whether the source face needs the classifier: a gender or race filter is ``auto``."""
    return "auto" in (settings.face_selector_gender, settings.face_selector_race)


def _resolved(value: str | None, source_value: str | None) -> str | None:
    """``auto`` is the source face's class; without a source face it keeps nothing out (as FaceFusion)."""
    return source_value if value == "auto" else value


def _ages_overlap(age: range | None, window: range) -> bool:
    """Whether a face's age bracket and the window share an age (FaceFusion: ``set(age) & set(window)``)."""
    return age is not None and max(age.start, window.start) < min(age.stop, window.stop)


def _kept_by(faces: list[Face], attribute: str, wanted: Any) -> list[Face]:
    return [face for face in faces if getattr(face, attribute) == wanted]


def sort_and_filter_faces(faces: Sequence[Face], settings: Settings, source: Face | None = None) -> list[Face]:
    """``faces`` in ``face_selector_order``, kept by gender, race and age window when set; ``source``: the
    source face whose classes ``auto`` takes."""
    kept = sort_faces(faces, settings.face_selector_order)
    gender = _resolved(settings.face_selector_gender, source.gender if source else None)
    race = _resolved(settings.face_selector_race, source.race if source else None)
    if gender in choices(Gender):
        kept = _kept_by(kept, "gender", gender)
    if race in choices(Race):
        kept = _kept_by(kept, "race", race)
    window = age_window(settings)
    if window is not None:
        kept = [face for face in kept if _ages_overlap(face.age, window)]
    return kept


def pick_face(faces: Sequence[Face], settings: Settings, position: int, source: Face | None = None) -> Face | None:
    """The face at ``position`` among the sorted and filtered faces (the last one when there are fewer)."""
    ordered = sort_and_filter_faces(faces, settings, source)
    if not ordered:
        return None
    return ordered[min(position, len(ordered) - 1)]


def reference_threshold(settings: Settings, scale: RecognizerScale) -> float:
    return settings.reference_face_distance if settings.reference_face_distance is not None else scale.threshold


def select_faces(
    faces: Sequence[Face],
    settings: Settings,
    reference: Embedding | None,
    scale: RecognizerScale,
    source: Face | None = None,
) -> list[Face]:
    """The faces to process. ``reference`` (an embedding in ``scale``'s recognizer) serves mode 'reference':
    there the filters chose the reference face in its frame (FaceFusion), or, with the source person as the
    reference, keep the matching faces; ``source``: the source face ``auto`` filters take their class from."""
    mode = settings.face_selector_mode
    if mode == "many":
        return sort_and_filter_faces(faces, settings, source)
    if mode == "one":
        chosen = pick_face(faces, settings, 0, source)
        return [chosen] if chosen is not None else []
    if reference is None:
        return []
    threshold = reference_threshold(settings, scale)
    matches = [
        face
        for face in faces
        if face.embedding is not None and embedding_distance(face.embedding, reference, scale.metric) < threshold
    ]
    if settings.reference_face_from == "source" and filters_in_use(settings):
        return sort_and_filter_faces(matches, settings, source)
    return matches

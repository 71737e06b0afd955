"""What the analysis knew of one frame: its faces, the ones selected for the processors, their identities."""

from __future__ import annotations

from dataclasses import dataclass

from facefusion_ui.faces.face import Face


@dataclass(frozen=True)
class FrameAnalysis:
    faces: list[Face]
    selected: list[Face]
    track_ids: tuple[int | None, ...] = ()
    """The identity of each of ``faces`` when the identity cache is on."""
    persons: tuple[int, ...] = ()
    """With a face map: the person (``faces/people.py``) each of ``selected`` is, in the same order."""


NO_FACES = FrameAnalysis([], [])

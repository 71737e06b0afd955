"""The face debugger (embedded, no model): draws what the analysis knew of each face and why it was or was
not processed. Selected faces in green, the others in red, each with its box, detection score, 5 and 68
points, mesh, the paste-back mask's outline, track id, identity distance to the reference, and the reason
it was skipped. Alone it shows the analysis; after other processors it annotates their result."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_ui.faces.face import Face, embedding_distance
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.tracker import FRONTAL_YAW
from facefusion_ui.processors.base import FaceReport, FrameContext, ModelProcessor
from facefusion_ui.processors.mask_outlines import box_outline
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

SELECTED = (0, 220, 0)
SKIPPED = (0, 0, 230)
POINTS = (0, 215, 255)
MESH = (230, 160, 0)
MASK = (255, 0, 255)
SMALL_FACE_PX = 24.0
"""Narrower faces are noted as too small: alignment and the swap lose detail below this."""


@dataclass(frozen=True)
class Annotation:
    """What is written next to one face."""

    face: Face
    selected: bool
    lines: tuple[str, ...]


def skip_reason(face: Face, report: FaceReport, selected: bool) -> str | None:
    """Why ``face`` was not processed (None: it was), in the selector's terms."""
    if selected:
        return None
    if report.mode == "one":
        return "not chosen (mode one)"
    if report.mode != "reference":
        return "filtered out (face selector)"  # mode many drops a face for its gender, race or age alone
    if face.embedding is None:
        return "turned: no identity" if abs(face.yaw) > FRONTAL_YAW else "no identity"
    if report.reference is None:
        return "no reference"
    return "not the reference"


def describe(face: Face, report: FaceReport | None, position: int) -> Annotation:
    chosen = report is None or any(face is other for other in report.selected)
    lines = [f"score {face.score:.2f}"]
    if face.gender is not None and face.age is not None and face.race is not None:  # classified (fairface)
        lines.append(f"{face.gender}, {face.age.start}-{face.age.stop - 1}, {face.race}")
    if report is not None:
        track = report.track_ids[position] if position < len(report.track_ids) else None
        if track is not None:
            lines.append(f"track {track}")
        if report.reference is not None and face.embedding is not None:
            distance = embedding_distance(face.embedding, report.reference, report.metric)
            lines.append(f"distance {distance:.2f} / {report.threshold:.2f}")
        reason = skip_reason(face, report, chosen)
        if reason is not None:
            lines.append(f"skipped: {reason}")
    if face.width < SMALL_FACE_PX:
        lines.append("too small")
    if abs(face.yaw) > FRONTAL_YAW:
        lines.append(f"turned ({face.yaw:.0f} deg)")
    return Annotation(face, chosen, tuple(lines))


def frame_annotations(context: FrameContext) -> list[Annotation]:
    """One per face of the frame (every face the analysis found when it is known, else the selected)."""
    report = context.report
    faces = report.faces if report is not None else context.faces
    return [describe(face, report, position) for position, face in enumerate(faces)]


def mask_outline(face: Face, context: FrameContext) -> list[Points]:
    """The outline (frame pixels) of the paste-back mask of the chain's first processor that says where
    (``OutliningProcessor``); when none does, the box of the aligned face (512 px, FFHQ template)."""
    if context.mask_outline is not None:
        return context.mask_outline(face)
    return box_outline(face, "ffhq_512", 512, context.settings)


def _points(frame: Frame, points: Points, colour: tuple[int, int, int], radius: int) -> None:
    for x, y in np.asarray(points, dtype=np.float32).reshape(-1, 2):
        cv2.circle(frame, (round(float(x)), round(float(y))), radius, colour, -1, cv2.LINE_AA)


def draw(frame: Frame, note: Annotation, context: FrameContext) -> None:
    face = note.face
    colour = SELECTED if note.selected else SKIPPED
    thick = max(1, round(face.width / 100))
    x1, y1, x2, y2 = (round(float(value)) for value in face.bbox)
    cv2.rectangle(frame, (x1, y1), (x2, y2), colour, thick, cv2.LINE_AA)
    if face.mesh is not None:
        _points(frame, face.mesh.points, MESH, 1)
    if face.landmarks_68 is not None:
        _points(frame, face.landmarks_68, POINTS, max(1, thick))
    _points(frame, face.kps, colour, max(2, thick + 1))
    if note.selected:
        outlines = [np.round(outline).astype(np.int32) for outline in mask_outline(face, context)]
        cv2.polylines(frame, outlines, True, MASK, thick, cv2.LINE_AA)
    scale = max(0.35, min(face.width / 200, 1.2))
    step = round(22 * scale) + 2
    for row, line in enumerate(note.lines):
        origin = (x1, max(y1 - 6 - step * (len(note.lines) - 1 - row), step))
        cv2.putText(frame, line, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), thick + 2, cv2.LINE_AA)
        cv2.putText(frame, line, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, thick, cv2.LINE_AA)


class FaceDebugger(ModelProcessor):
    name = "face_debugger"
    summary = "draws the faces found (boxes and points), to check detection"
    needs_source_face = False
    needs_68_landmarks = True  # it draws them
    counted = ("faces_annotated",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.faces_annotated = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return ("face_debugger",)

    def released_models(self) -> tuple[str, ...]:
        return ()  # drawing only: nothing loaded

    def pre_check(self) -> list[str]:
        return []

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return True  # skipped faces are drawn too: the pipeline asks changes_frame_with, which knows of them

    def changes_frame_with(self, report: FaceReport) -> bool:
        return bool(report.faces)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        notes = frame_annotations(context)
        if not notes:
            return frame
        drawn: Frame = frame.copy()
        for note in notes:
            draw(drawn, note, context)
        with self._lock:
            self.faces_annotated += len(notes)
        return drawn

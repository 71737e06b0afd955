"""Which frames of a video get a full-frame face detection, the costliest step on a CPU.

Frames come in groups of ``face_detector_interval``. The last frame of a group is probed first (a
full-frame detection, or in a stretch without faces only the areas that changed: ``change_gate.py``) and
compared with the faces of the frame just before the group:

- no face before and none in the probe: the group holds no face and is skipped (no detection, and in
  the video pipeline no colour conversion either);
- every probed face continues a face from before: the frames in between are searched only around the
  faces being followed, in a crop a few times the face's size;
- a face appeared: it is followed back from the probe, frame by frame, in a crop around where it was
  found in the frame after (``DetectionSchedule.follow_back``), so a face that came in mid-group is
  found from its first frame without a full-frame detection of each frame. When faces were there before
  and after, and the group is longer than the interval (a face may only have crossed more than its
  width: someone walking), the group is split at its middle frame, which is detected in full, and each
  half is planned alone by the same rules (``DetectionSchedule.analyse_span``): a face that moved is
  followed in both halves; where a face joined others, the half it came in is detected in full.

While nothing new shows up the groups grow: each group skipped (no face) or tracked (the same faces)
doubles the next one, up to ``STRETCH_GROWTH`` times the interval, and a face that appears brings them
back to the interval. A face that comes and goes entirely between two probes (visible for fewer frames
than the group) is not seen; interval 1 detects on every frame.

Chunking must not change the result, so the schedule does not see chunks: groups never cross a multiple
of ``largest_group`` frames from the job's first frame, chunks are cut on those multiples
(``video/chunks.py``), and the state (faces followed, group growth, the last faceless frame) carries
from chunk to chunk; it is saved with each finished chunk so that a resumed run starts where the
interrupted one was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from facefusion_ui.json_arrays import array_from_json, array_to_json
from facefusion_ui.types import Points

GroupPlan = Literal["skip", "track", "full"]

FOLLOW_DISTANCE = 1.0
"""A probed face continues an earlier one when their centres are within this many face widths (a group
spans several frames of motion)."""
FOLLOW_SIZE_RATIO = 2.0
STRETCH_GROWTH = 4
"""How many intervals a group may span while nothing new shows up."""
FULL_PROBE_EVERY = 4
"""With HOG (the default detector), a probe of the whole frame searches it in full only every this many
times; the others search what changed since the last full search, or without upsampling, around the
faces followed and BlazeFace's candidates (``probe_whole``)."""
ROI_MARGIN = 0.75
"""The crop searched around a followed face: its box grown by this many box sizes on each side."""


@dataclass
class ScheduleStats:
    frames_full: int = 0
    """Frames with a full-frame detection (probes included)."""
    frames_tracked: int = 0
    """Frames searched only around the faces being followed."""
    frames_skipped: int = 0
    """Frames without any detection: their group had no face at either end."""
    probes_of_areas: int = 0
    """Probes that searched only the areas changed since a faceless frame, or with faces in view since the
    last full-frame detection, beside the faces followed (``change_gate.py``)."""
    probes_unchanged: int = 0
    """Probes without any detection: nothing had changed since a faceless frame."""
    faces_followed_by_mesh: int = 0
    """Faces of tracked frames read from their meshes alone, with no detection (the embedded swapper)."""
    probes_proposed: int = 0
    """Probes of the whole frame that searched only around the faces followed and BlazeFace's candidates."""
    faces_probed_by_mesh: int = 0
    """Faces a detection found that continue a followed face, made from its mesh with no landmarker."""

    def to_json(self) -> dict[str, int]:
        return {
            "full": self.frames_full,
            "proposed": self.probes_proposed,
            "areas": self.probes_of_areas,
            "unchanged": self.probes_unchanged,
            "tracked": self.frames_tracked,
            "skipped": self.frames_skipped,
            "followed_by_mesh": self.faces_followed_by_mesh,
            "probed_by_mesh": self.faces_probed_by_mesh,
        }


def largest_group(interval: int) -> int:
    """The most frames a group (held in memory while its last frame is probed) can have; groups never
    cross a multiple of it (counted from the job's first frame), and chunks are cut on those multiples."""
    return interval * STRETCH_GROWTH if interval > 1 else 1


def group_size_at(position: int, interval: int, stretch: int) -> int:
    """How many frames the group starting ``position`` frames after the job's first frame holds."""
    if interval <= 1:
        return 1
    grid = largest_group(interval)
    return min(interval * stretch, grid - position % grid)


@dataclass(frozen=True)
class ScheduleState:
    """What the schedule knows after a frame: carried across chunks, saved with each finished chunk."""

    followed: tuple[tuple[float, float, float, float], ...] | None = None
    """Face boxes of the last frame (None: nothing known, the next frame is detected in full)."""
    stretch: int = 1
    faceless: np.ndarray | None = None
    """The cells of the last frame a full-frame detection found empty (``change_gate.py``)."""
    proposed: int = 0
    """Whole-frame probes in a row that were not full searches (``FULL_PROBE_EVERY``)."""
    searched: np.ndarray | None = None
    """The cells of the last frame a full-frame detection searched, faces found or not (``change_gate.py``)."""

    def to_json(self) -> dict[str, Any]:
        followed = None if self.followed is None else [list(box) for box in self.followed]
        return {
            "followed": followed,
            "stretch": self.stretch,
            "faceless": cells_to_json(self.faceless),
            "proposed": self.proposed,
            "searched": cells_to_json(self.searched),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScheduleState:
        followed = data.get("followed")
        faceless, searched = cells_from_json(data.get("faceless")), cells_from_json(data.get("searched"))
        boxes = None if followed is None else tuple((float(a), float(b), float(c), float(d)) for a, b, c, d in followed)
        return cls(boxes, int(data.get("stretch", 1)), faceless, int(data.get("proposed", 0)), searched)


def cells_to_json(cells: np.ndarray | None) -> Any:
    return array_to_json(cells, np.uint8) if cells is not None else None


def cells_from_json(data: Any) -> np.ndarray | None:
    return array_from_json(data, np.uint8).astype(np.int16) if data is not None else None


def box_width(box: Points) -> float:
    return max(float(box[2] - box[0]), 1.0)


def continues(box: Points, earlier: Points) -> bool:
    """Whether the face in ``box`` can be the face that was in ``earlier`` a few frames before."""
    centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
    earlier_centre = np.array([(earlier[0] + earlier[2]) / 2, (earlier[1] + earlier[3]) / 2])
    width, earlier_width = box_width(box), box_width(earlier)
    near = float(np.linalg.norm(centre - earlier_centre)) <= FOLLOW_DISTANCE * max(width, earlier_width)
    ratio = max(width, earlier_width) / min(width, earlier_width)
    return near and ratio <= FOLLOW_SIZE_RATIO


def plan_group(previous: Sequence[Points] | None, probed: Sequence[Points]) -> GroupPlan:
    """``previous``: face boxes of the frame before the group (None: unknown, e.g. a chunk's start);
    ``probed``: face boxes found in the group's last frame."""
    if previous is None:
        return "full"
    if not previous and not probed:
        return "skip"
    if all(any(continues(box, earlier) for earlier in previous) for box in probed):
        return "track"
    return "full"


def roi_box(box: Points, width: int, height: int, margin: float = ROI_MARGIN) -> tuple[int, int, int, int]:
    """The crop (x0, y0, x1, y1) searched for a followed face, inside a ``width`` x ``height`` frame."""
    grow_x = margin * box_width(box)
    grow_y = margin * max(float(box[3] - box[1]), 1.0)
    x0 = max(0, int(np.floor(box[0] - grow_x)))
    y0 = max(0, int(np.floor(box[1] - grow_y)))
    x1 = min(width, int(np.ceil(box[2] + grow_x)))
    y1 = min(height, int(np.ceil(box[3] + grow_y)))
    return x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)

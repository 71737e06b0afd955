"""Temporal smoothing of the target faces' meshes in a video: each face's mesh points go through a One
Euro filter (``smoothing.py``) kept per face track, so a still face does not shimmer under sensor noise
while a moving one follows without lag.

A face continues a track when its box overlaps the box the track had in the frame just before (and the
identity tracker, when it runs, gives it the same id). A cut (``cuts.py``), a frame that is not the next
one (frames skipped without faces, another chunk), or a new face starts the filter again from the mesh
as found. Points are filtered in face widths (the track's first box), so one set of parameters suits
small and large faces; a continuing face's mesh is read in the region the track's smoothed mesh gives
(``MeshFinder.follow``), not around the detector's box, which jumps by a twentieth of the face from
frame to frame. Between the detection schedule's probes a followed face needs no detection at all: its
track (``followed_tracks``) says where to read its mesh, and the box it had is placed on that mesh. Only
the tracks of the frame just before are kept, at most ``MAX_TRACKS`` (the largest faces; smaller ones
beyond it go unsmoothed). The state is saved with the video pipeline's state after each chunk (rather
than reset at each chunk's start, a keyframe but not a cut, where a reset would make the face jump), so
a resumed run smooths exactly as the interrupted one would have.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from facefusion_ui.faces.cuts import cut_thumbnail, is_cut
from facefusion_ui.faces.face import Face, FaceMesh, box_iou
from facefusion_ui.faces.smoothing import OneEuroParameters, OneEuroState, one_euro_step
from facefusion_ui.frames import FrameImage
from facefusion_ui.json_arrays import array_from_json, array_to_json
from facefusion_ui.types import Points

MESH_SMOOTHING = OneEuroParameters(min_cutoff=0.15, beta=10.0, d_cutoff=1.0)
"""In face widths: a still face's points are low-passed at 0.15 Hz (mediapipe's points shimmer by a
few tenths of a pixel under sensor noise); on a face moving half its width per second the cutoff rises
to about 5 Hz (a lag under 2 % of its width)."""
MAX_TRACKS = 16
MATCH_IOU = 0.3
"""Box overlap with a track's box in the frame before for a face to continue it."""


FOLLOW_IOU = 0.9
"""Overlap of a followed box (a face of the frame before) with a track's box for the track to be the
face's (the boxes are the same, saved and loaded as float32)."""


class MeshFinder(Protocol):
    """Finds the meshes of the faces of the frame being smoothed."""

    def find(self, face: Face) -> FaceMesh | None:
        """A new face's mesh, found in the crop around its box."""

    def follow(self, points: Points) -> FaceMesh | None:
        """A continuing face's mesh, read in the region its smoothed mesh (``points``, frame pixels) gives."""


@dataclass(frozen=True)
class MeshTrack:
    points: OneEuroState
    anchor: Points
    """Where the face's box lay relative to its mesh's bounding box when the track started (x1, y1, x2,
    y2 in the mesh box's widths and heights): the next frame's mesh is found in the crop around the box
    placed so on the smoothed mesh, as mediapipe's own tracking does."""
    scale: float
    """Face width (pixels) when the track started: points and box are filtered divided by it."""
    bbox: Points
    """The face's box as detected in the track's last frame (what the next frame's faces are matched with)."""
    frame_index: int
    identity: int | None
    """The identity tracker's id of the face, when it runs."""
    score: float = 1.0
    """The face's detection score when the track started: a face followed without detection keeps it."""

    def smoothed_points(self) -> Points:
        """The smoothed mesh of the track's last frame, in frame pixels."""
        return np.asarray(self.points.value * self.scale, dtype=np.float32)

    def placed_box(self, points: Points) -> Points:
        """The face's box on the mesh ``points`` of the next frame, placed as it lay on the first mesh."""
        return placed_box(self.anchor, points)


class MeshSmoother:
    """Smooths the meshes of each frame's faces; frames must come in order."""

    def __init__(self, parameters: OneEuroParameters = MESH_SMOOTHING, limit: int = MAX_TRACKS) -> None:
        self.parameters = parameters
        self.limit = limit
        self.tracks: OrderedDict[int, MeshTrack] = OrderedDict()
        self.next_key = 0
        self.frame_index: int | None = None
        self.thumbnail: np.ndarray | None = None
        self._made: tuple[int, int, np.ndarray] | None = None
        """The last thumbnail made (frame index, the frame's id, thumbnail): a frame whose tracks were
        looked up (``followed_tracks``) is smoothed next, and its copy is made once."""

    def reset(self) -> None:
        self.tracks.clear()
        self.frame_index = None
        self.thumbnail = None
        self._made = None

    def smooth(
        self,
        image: FrameImage,
        index: int,
        timestamp: float,
        faces: Sequence[Face],
        identities: Sequence[int | None],
        mesh_of: MeshFinder | None = None,
    ) -> list[Face]:
        """``faces`` of frame ``index`` with their meshes smoothed; ``identities`` lines up with ``faces``
        (None where not known). A face without a mesh gets one from ``mesh_of``: a face that continues a
        track read in the region of the track's smoothed mesh (a detector's box of a still face moves by
        a twentieth of its width from frame to frame, and the mesh found in its crop with it), a new one
        in the crop around its box; without either it stays as it is."""
        thumbnail = self.thumbnail_of(image, index)
        if not self.continues_into(index, thumbnail):
            self.tracks.clear()
        self.frame_index, self.thumbnail = index, thumbnail
        previous = dict(self.tracks)
        self.tracks.clear()
        smoothed = []
        for face, identity in zip(faces, identities, strict=True):
            key = self.continued(face, identity, previous)
            track = previous.pop(key, None) if key is not None else None
            smoothed.append(self.filtered(face, identity, track, index, timestamp, mesh_of))
        return smoothed

    def thumbnail_of(self, image: FrameImage, index: int) -> np.ndarray:
        """``cut_thumbnail(image)``, made once per frame."""
        if self._made is not None and self._made[:2] == (index, id(image)):
            return self._made[2]
        thumbnail = cut_thumbnail(image)
        self._made = (index, id(image), thumbnail)
        return thumbnail

    def continues_into(self, index: int, thumbnail: np.ndarray) -> bool:
        """Whether the tracks (of the frame before) go on into frame ``index`` (its ``cut_thumbnail``):
        it is the next frame and not a cut."""
        if self.frame_index != index - 1 or self.thumbnail is None:
            return False
        return not is_cut(self.thumbnail, thumbnail)

    def followed_tracks(self, image: FrameImage, index: int, boxes: Sequence[Points]) -> list[MeshTrack | None]:
        """For each of ``boxes`` (faces of the frame before, followed into frame ``index``), the track
        that face has; None where it has none (a face not selected, or beyond ``MAX_TRACKS``), and for
        every box when frame ``index`` is not the next one or a cut."""
        if not self.tracks or not self.continues_into(index, self.thumbnail_of(image, index)):
            return [None] * len(boxes)
        found: list[MeshTrack | None] = []
        for box in boxes:
            overlaps = [(box_iou(track.bbox, box), track) for track in self.tracks.values()]
            best = max(overlaps, key=lambda pair: pair[0], default=(0.0, None))
            found.append(best[1] if best[0] >= FOLLOW_IOU else None)
        return found

    def detected_tracks(self, image: FrameImage, index: int, boxes: Sequence[Points]) -> list[MeshTrack | None]:
        """For each of ``boxes`` (faces detected in frame ``index``: a probe's), the track (of the frame
        before) it continues where that is beyond doubt: the box overlaps that track's box by ``MATCH_IOU``
        or more, and no other box or track does so with either of them. None elsewhere, and for every box
        when frame ``index`` is not the next one or a cut."""
        if not self.tracks or not self.continues_into(index, self.thumbnail_of(image, index)):
            return [None] * len(boxes)
        tracks = list(self.tracks.values())
        matches = np.array([[box_iou(track.bbox, box) >= MATCH_IOU for track in tracks] for box in boxes], dtype=bool)
        found: list[MeshTrack | None] = []
        for row in matches.reshape(len(boxes), len(tracks)):
            chosen = np.flatnonzero(row)
            unique = len(chosen) == 1 and int(matches[:, chosen[0]].sum()) == 1
            found.append(tracks[int(chosen[0])] if unique else None)
        return found

    def continued(self, face: Face, identity: int | None, previous: dict[int, MeshTrack]) -> int | None:
        """The key of the track (of the frame before) that ``face`` continues, if any."""
        best, best_iou = None, MATCH_IOU
        for key, track in previous.items():
            if identity is not None and track.identity is not None and identity != track.identity:
                continue
            overlap = box_iou(track.bbox, face.bbox)
            if overlap >= best_iou:
                best, best_iou = key, overlap
        return best

    def filtered(
        self,
        face: Face,
        identity: int | None,
        track: MeshTrack | None,
        index: int,
        timestamp: float,
        mesh_of: MeshFinder | None,
    ) -> Face:
        scale = track.scale if track is not None else max(face.width, 1.0)
        mesh = face.mesh
        if mesh is None and mesh_of is not None:
            mesh = mesh_of.find(face) if track is None else mesh_of.follow(track.smoothed_points())
        if mesh is None:
            return face
        values, points = one_euro_step(
            track.points if track is not None else None, mesh.points / scale, timestamp, self.parameters
        )
        anchor = track.anchor if track is not None else anchor_of(face.bbox, mesh.points)
        score = track.score if track is not None else face.score
        if len(self.tracks) < self.limit:
            self.tracks[self.next_key] = MeshTrack(points, anchor, scale, face.bbox.copy(), index, identity, score)
            self.next_key += 1
        if track is None:  # a new track: the mesh as found (exactly, not divided and multiplied back)
            return replace(face, mesh=mesh)
        return replace(face, mesh=FaceMesh(np.asarray(values * scale, dtype=np.float32), mesh.depth))

    def to_json(self) -> dict[str, Any]:
        tracks = [
            {
                "points": state_to_json(track.points),
                "anchor": array_to_json(track.anchor, np.float64),
                "scale": track.scale,
                "bbox": array_to_json(track.bbox, np.float32),
                "frame_index": track.frame_index,
                "identity": track.identity,
                "score": track.score,
            }
            for track in self.tracks.values()
        ]
        thumbnail = None if self.thumbnail is None else array_to_json(self.thumbnail, np.uint8)
        return {"frame_index": self.frame_index, "thumbnail": thumbnail, "tracks": tracks}

    def load_json(self, data: dict[str, Any]) -> None:
        """Back to what ``to_json`` saved."""
        self.reset()
        self.frame_index = data.get("frame_index")
        thumbnail = data.get("thumbnail")
        self.thumbnail = None if thumbnail is None else array_from_json(thumbnail, np.uint8)
        for entry in data.get("tracks", []):
            points, anchor = state_from_json(entry["points"]), array_from_json(entry["anchor"], np.float64)
            bbox = array_from_json(entry["bbox"], np.float32)
            identity, score = entry.get("identity"), float(entry.get("score", 1.0))
            track = MeshTrack(points, anchor, float(entry["scale"]), bbox, int(entry["frame_index"]), identity, score)
            self.tracks[self.next_key] = track
            self.next_key += 1


def state_to_json(state: OneEuroState) -> dict[str, Any]:
    return {
        "value": array_to_json(state.value, np.float64),
        "speed": array_to_json(state.speed, np.float64),
        "timestamp": state.timestamp,
    }


def state_from_json(data: dict[str, Any]) -> OneEuroState:
    return OneEuroState(
        array_from_json(data["value"], np.float64), array_from_json(data["speed"], np.float64), float(data["timestamp"])
    )


def mesh_box(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The top-left corner and the size of the points' bounding box."""
    low, high = points.min(axis=0), points.max(axis=0)
    return low, np.maximum(high - low, 1e-6)


def anchor_of(bbox: Points, points: Points) -> Points:
    low, size = mesh_box(np.asarray(points, dtype=np.float64))
    corners = (np.asarray(bbox, dtype=np.float64).reshape(2, 2) - low) / size
    return np.asarray(corners.reshape(4))


def placed_box(anchor: Points, points: np.ndarray) -> Points:
    """The box ``anchor`` places on the mesh ``points`` (frame pixels)."""
    low, size = mesh_box(np.asarray(points, dtype=np.float64))
    return np.asarray((anchor.reshape(2, 2) * size + low).reshape(4), dtype=np.float32)

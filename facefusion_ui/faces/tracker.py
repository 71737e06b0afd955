"""Face tracking between consecutive frames, and identity resolution through the cache.

A face that overlaps a face of the previous frame (box IoU) and whose keypoints moved little (relative
to its size) keeps that face's identity without running the recognizer. The recognizer runs for new
faces, for uncertain matches, and every ``verify_every`` frames of a track (re-verification). Only
near-frontal and half-profile faces create or refresh an identity; a profile face keeps its track's
identity instead of being matched on an unreliable embedding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from facefusion_ui.faces.face import Face, box_iou
from facefusion_ui.faces.identity_cache import Identity, IdentityCache
from facefusion_ui.json_arrays import array_from_json, array_to_json
from facefusion_ui.types import Embedding

MIN_IOU = 0.45
MAX_KPS_MOTION = 0.25
"""Mean keypoint motion between frames, in face widths, above which a track is uncertain."""
VERIFY_EVERY = 30
FRONTAL_YAW = 50.0
"""Faces turned more than this (degrees) are profiles: they never create or refresh an identity."""


@dataclass
class Track:
    identity_id: int
    face: Face
    frame_index: int
    since_verified: int = 0


@dataclass
class TrackerStats:
    tracked: int = 0
    recognized: int = 0
    verified: int = 0
    profiles_kept: int = 0


def keypoint_motion(a: Face, b: Face) -> float:
    width = max(a.width, b.width, 1.0)
    return float(np.linalg.norm(a.kps - b.kps, axis=1).mean() / width)


class IdentityTracker:
    """Gives every face of each frame an identity id and embedding; frames must come in order."""

    def __init__(self, cache: IdentityCache, verify_every: int = VERIFY_EVERY):
        self.cache = cache
        self.verify_every = verify_every
        self.tracks: list[Track] = []
        self.stats = TrackerStats()

    def reset(self) -> None:
        self.tracks = []

    def to_json(self) -> dict[str, Any]:
        """The cache and the faces being tracked (what matching a next frame's faces reads of them)."""
        tracks = [
            {
                "identity_id": t.identity_id,
                "frame_index": t.frame_index,
                "since_verified": t.since_verified,
                "bbox": array_to_json(t.face.bbox, np.float32),
                "kps": array_to_json(t.face.kps, np.float32),
                "score": t.face.score,
                "detector": t.face.detector,
                "yaw": t.face.yaw,
                "pitch": t.face.pitch,
                "recognizer": t.face.recognizer,
            }
            for t in self.tracks
        ]
        return {"cache": self.cache.to_json(), "tracks": tracks}

    def load_json(self, data: dict[str, Any]) -> None:
        """Back to what ``to_json`` saved: a resumed run identifies faces as the interrupted one would have."""
        self.cache.load_json(data.get("cache", {}))
        self.tracks = []
        for entry in data.get("tracks", []):
            identity = self.cache.get(int(entry["identity_id"]))
            if identity is None:
                continue
            face = Face(
                array_from_json(entry["bbox"], np.float32),
                float(entry["score"]),
                array_from_json(entry["kps"], np.float32),
                str(entry["detector"]),
                embedding=identity.embedding,
                recognizer=entry.get("recognizer"),
                yaw=float(entry["yaw"]),
                pitch=float(entry["pitch"]),
            )
            self.tracks.append(Track(identity.id, face, int(entry["frame_index"]), int(entry["since_verified"])))

    def match_track(self, face: Face, frame_index: int, taken: set[int]) -> Track | None:
        best, best_iou = None, MIN_IOU
        for position, track in enumerate(self.tracks):
            if position in taken or frame_index - track.frame_index > 1:
                continue
            iou = box_iou(track.face.bbox, face.bbox)
            if iou >= best_iou and keypoint_motion(track.face, face) <= MAX_KPS_MOTION:
                best, best_iou = track, iou
        if best is not None:
            taken.add(self.tracks.index(best))
        return best

    def resolve(
        self, faces: list[Face], frame_index: int, now: float, embed: Callable[[Face], Embedding]
    ) -> list[tuple[Face, Identity | None]]:
        """Each face with its embedding (the identity's) and identity, in the order given. ``embed``
        runs the recognizer on a face of this frame (only when needed)."""
        taken: set[int] = set()
        resolved: list[tuple[Face, Identity | None]] = []
        new_tracks: list[Track] = []
        for face in faces:
            track = self.match_track(face, frame_index, taken)
            identity = self.cache.get(track.identity_id) if track is not None else None
            frontal = abs(face.yaw) <= FRONTAL_YAW
            due = track is not None and track.since_verified + 1 >= self.verify_every
            if identity is not None and (not due or not frontal):
                self.stats.tracked += 1
                self.cache.stats.served_by_track()
                if not frontal:
                    self.stats.profiles_kept += 1
                self.cache.touch(identity, now)
                since = (track.since_verified + 1) if track is not None else 0
            else:
                identity = self.recognise(face, now, identity if due else None, embed)
                since = 0
            embedded = (
                face
                if identity is None
                else replace(face, embedding=identity.embedding, recognizer=face.recognizer or "cache")
            )
            if identity is not None:
                new_tracks.append(Track(identity.id, embedded, frame_index, since))
            resolved.append((embedded, identity))
        self.tracks = new_tracks
        return resolved

    def recognise(
        self, face: Face, now: float, verifying: Identity | None, embed: Callable[[Face], Embedding]
    ) -> Identity | None:
        embedding = embed(face)
        self.stats.recognized += 1
        frontal = abs(face.yaw) <= FRONTAL_YAW
        if verifying is not None:
            self.stats.verified += 1
        identity = self.cache.lookup(embedding, now)
        if identity is None:
            if not frontal:
                return None  # an untracked profile: no identity rather than a wrong one
            return self.cache.add(embedding, now, face.yaw, face.pitch)
        if frontal and abs(face.yaw) <= abs(identity.yaw):
            self.cache.refresh(identity, embedding, now, face.yaw, face.pitch)
        return identity

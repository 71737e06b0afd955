"""The distinct people of a target: who is in it, where each is first seen, and how to tell them apart.

A video's faces come out of the analysis with identities (the tracker and the identity cache); faces of
one person seen in different stretches (gone and back, after a cut, turned) may get several identities,
which are merged here by their embeddings: identity decides, never position. People are numbered 1..N in
order of first appearance, then left to right. ``PersonMatcher`` tells which person a face is (by its
embedding against every person's, within the recognizer's distance), so a job can give each person a
source of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.face import Face, embedding_distance
from facefusion_ui.faces.frame_analysis import FrameAnalysis
from facefusion_ui.json_arrays import array_from_json, array_to_json
from facefusion_ui.types import DistanceMetric, Embedding, Frame

THUMBNAIL_SIDE = 160
"""The longest side of a person's thumbnail, in pixels."""
THUMBNAIL_MARGIN = 0.25
"""The face box grown by this share of its size on each side for the thumbnail."""


@dataclass(frozen=True, eq=False)
class Person:
    id: int
    first_frame: int
    last_frame: int
    frames: int
    """The frames in which the person was seen (frames the detection schedule skipped count as unseen)."""
    box: tuple[int, int, int, int]
    """Where the person is at ``first_frame``."""
    embeddings: tuple[Embedding, ...]
    """What the person looks like to the recognizer (one per identity merged into them)."""
    thumbnail: Frame | None = None
    """The most frontal, then largest, view (BGR); None when not kept."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "first_frame": self.first_frame,
            "last_frame": self.last_frame,
            "frames": self.frames,
            "box": list(self.box),
            "embeddings": [array_to_json(embedding, np.float32) for embedding in self.embeddings],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], thumbnail: Frame | None = None) -> Person:
        box = tuple(int(value) for value in data["box"])
        return cls(
            int(data["id"]),
            int(data["first_frame"]),
            int(data["last_frame"]),
            int(data["frames"]),
            (box[0], box[1], box[2], box[3]),
            tuple(array_from_json(item, np.float32) for item in data["embeddings"]),
            thumbnail,
        )


@dataclass(frozen=True)
class PersonMatcher:
    """Which person a face is: the nearest person by embedding (the closest of each person's embeddings),
    when nearer than ``threshold`` in ``metric``; None: nobody known."""

    people: tuple[Person, ...]
    metric: DistanceMetric
    threshold: float

    def distances(self, embedding: Embedding) -> list[tuple[float, int]]:
        return sorted(
            (min(embedding_distance(known, embedding, self.metric) for known in person.embeddings), person.id)
            for person in self.people
            if person.embeddings
        )

    def person_of(self, embedding: Embedding | None) -> int | None:
        if embedding is None:
            return None
        nearest = self.distances(embedding)
        if not nearest or nearest[0][0] >= self.threshold:
            return None
        return nearest[0][1]


def face_box(face: Face) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (round(float(value)) for value in face.bbox[:4])
    return (x1, y1, x2, y2)


def face_thumbnail(frame: Frame, face: Face) -> Frame:
    """The face with a margin round it, at most ``THUMBNAIL_SIDE`` pixels on its longest side."""
    x1, y1, x2, y2 = (float(value) for value in face.bbox[:4])
    grow_x, grow_y = (x2 - x1) * THUMBNAIL_MARGIN, (y2 - y1) * THUMBNAIL_MARGIN
    height, width = frame.shape[:2]
    left, top = max(0, int(x1 - grow_x)), max(0, int(y1 - grow_y))
    right, bottom = min(width, int(x2 + grow_x) + 1), min(height, int(y2 + grow_y) + 1)
    crop = frame[top:bottom, left:right] if bottom > top and right > left else frame
    scale = min(1.0, THUMBNAIL_SIDE / max(crop.shape[:2]))
    if scale < 1.0:
        size = (max(1, int(crop.shape[1] * scale)), max(1, int(crop.shape[0] * scale)))
        return np.ascontiguousarray(cv2.resize(crop, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)
    return np.ascontiguousarray(crop, dtype=np.uint8)


def view_rank(face: Face) -> tuple[float, float]:
    """Smaller is a better view: the most frontal, then the largest."""
    return (abs(face.yaw) + abs(face.pitch) / 2, -face.area)


@dataclass
class Sighting:
    """What is known of one identity of the analysis over the frames seen so far."""

    first_frame: int
    first_x: float
    box: tuple[int, int, int, int]
    last_frame: int = 0
    frames: int = 0
    best: tuple[float, float] = (float("inf"), 0.0)
    best_embedding: Embedding | None = None
    latest_embedding: Embedding | None = None
    thumbnail: Frame | None = None


@dataclass
class PeopleCollector:
    """Gathers a video's people from its frames' analyses (any order), then ``people()`` merges the
    identities that are one person and numbers them."""

    metric: DistanceMetric
    threshold: float
    sightings: dict[int, Sighting] = field(default_factory=dict)

    def add(self, index: int, frame: Frame | None, analysis: FrameAnalysis) -> None:
        """One analysed frame (``frame``: its BGR image, for the thumbnails; None when it was not searched)."""
        seen: set[int] = set()
        for face, identity in zip(analysis.faces, analysis.track_ids, strict=False):
            if identity is None or identity in seen:
                continue
            seen.add(identity)
            sighting = self.sightings.get(identity)
            if sighting is None:
                sighting = Sighting(index, float(face.bbox[0]), face_box(face), index)
                self.sightings[identity] = sighting
            elif index < sighting.first_frame:  # frames may be analysed out of order (``PeopleScan``)
                sighting.first_frame, sighting.first_x, sighting.box = index, float(face.bbox[0]), face_box(face)
            sighting.last_frame = max(sighting.last_frame, index)
            sighting.frames += 1
            if face.embedding is not None:
                sighting.latest_embedding = np.asarray(face.embedding, dtype=np.float32)
            rank = view_rank(face)
            if rank < sighting.best:
                sighting.best = rank
                if face.embedding is not None:
                    sighting.best_embedding = np.asarray(face.embedding, dtype=np.float32)
                if frame is not None:
                    sighting.thumbnail = face_thumbnail(frame, face)

    def add_between(self, identities: set[int], frames: int) -> None:
        """``frames`` frames not analysed, between two analysed frames that both show ``identities``."""
        for identity in identities:
            if identity in self.sightings:
                self.sightings[identity].frames += frames

    def people(self) -> list[Person]:
        """The identities merged into people (embeddings nearer than the threshold), numbered 1..N by first
        appearance, then left to right."""
        ids = sorted(self.sightings, key=lambda identity: self._order(self.sightings[identity]))
        groups: list[list[int]] = []
        for identity in ids:
            target = next((group for group in groups if self._same_person(group, identity)), None)
            if target is None:
                groups.append([identity])
            else:
                target.append(identity)
        return [self._person(number, group) for number, group in enumerate(groups, start=1)]

    @staticmethod
    def _order(sighting: Sighting) -> tuple[int, float]:
        return (sighting.first_frame, sighting.first_x)

    def _embeddings(self, identity: int) -> list[Embedding]:
        sighting = self.sightings[identity]
        found = [sighting.best_embedding, sighting.latest_embedding]
        return [embedding for embedding in found if embedding is not None]

    def _same_person(self, group: Sequence[int], identity: int) -> bool:
        mine = self._embeddings(identity)
        return any(
            embedding_distance(known, embedding, self.metric) < self.threshold
            for other in group
            for known in self._embeddings(other)
            for embedding in mine
        )

    def _person(self, number: int, group: Sequence[int]) -> Person:
        sightings = [self.sightings[identity] for identity in group]
        first = sightings[0]  # the group's identities are in order of first appearance
        best = min(sightings, key=lambda sighting: sighting.best)
        embeddings = tuple(embedding for identity in group for embedding in self._embeddings(identity))
        return Person(
            number,
            first.first_frame,
            max(sighting.last_frame for sighting in sightings),
            sum(sighting.frames for sighting in sightings),
            first.box,
            embeddings,
            best.thumbnail,
        )


def people_of_image(frame: Frame, faces: Sequence[Face]) -> list[Person]:
    """The people of a single image: one per face (with its embedding), numbered left to right."""
    ordered = sorted(faces, key=lambda face: (float(face.bbox[0]), float(face.bbox[1])))
    return [
        Person(
            number,
            0,
            0,
            1,
            face_box(face),
            (np.asarray(face.embedding, dtype=np.float32),) if face.embedding is not None else (),
            face_thumbnail(frame, face),
        )
        for number, face in enumerate(ordered, start=1)
    ]

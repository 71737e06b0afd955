"""``--face-map WHO=SOURCE``: a source face of their own for each person of the target (or none).

WHO is a person's number (``run.py people TARGET``) or a photo of that person (one face, matched within
the reference distance); SOURCE is one photo or several of one person (``a.jpg,b.jpg``). Mapped people
change, everybody else is left as they are: a face is matched against every person of the target, so a
face nearer an unmapped person than a mapped one is never swapped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.errors import InputError, UsageError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.people import Person, PersonMatcher
from facefusion_ui.faces.source import SourceIdentity, load_sources, read_image
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import DistanceMetric


@dataclass(frozen=True)
class FaceMapEntry:
    """One ``WHO=SOURCE``: ``who`` is a person's number or a photo's absolute path."""

    who: str
    sources: tuple[Path, ...]

    @property
    def number(self) -> int | None:
        return int(self.who) if self.who.isdigit() else None

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "sources": [str(path) for path in self.sources]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaceMapEntry:
        return cls(str(data["who"]), tuple(Path(path) for path in data["sources"]))

    def label(self) -> str:
        return ",".join(path.name for path in self.sources)


def parse_face_map(text: str) -> FaceMapEntry:
    """``WHO=SOURCE[,SOURCE...]`` as given on the command line (paths made absolute: a queued job may run
    in another folder)."""
    who, separator, sources = text.partition("=")
    who, paths = who.strip(), [item.strip() for item in sources.split(",") if item.strip()]
    if not separator or not who or not paths:
        raise UsageError(
            f"--face-map {text!r}: write WHO=SOURCE, e.g. 1=tom.jpg or grace.jpg=tom.jpg,tom2.jpg "
            "(WHO: a person's number from 'run.py people TARGET' or a photo of them)"
        )
    if who.isdigit():
        if int(who) < 1:
            raise UsageError(f"--face-map {text!r}: people are numbered from 1")
        who = str(int(who))
    else:
        who = str(Path(who).expanduser().resolve())
    return FaceMapEntry(who, tuple(Path(path).expanduser().resolve() for path in paths))


def map_paths(entries: Sequence[FaceMapEntry]) -> list[Path]:
    """Every photo the map names (WHO photos and sources), each once."""
    paths: list[Path] = []
    for entry in entries:
        if entry.number is None:
            paths.append(Path(entry.who))
        paths.extend(entry.sources)
    return list(dict.fromkeys(paths))


@dataclass(frozen=True, eq=False)
class PeopleSwap:
    """The map resolved against a target's people: which person a face is, and each mapped person's source
    (a ``SourceIdentity`` of their own, its key naming the person: the swapper counts by it)."""

    matcher: PersonMatcher
    sources: dict[int, SourceIdentity]
    labels: dict[int, str]
    """What each mapped person gets, as the user wrote it (the source photos' names)."""

    def person_of(self, face: Face) -> int | None:
        """The mapped person ``face`` is, or None (nobody known, or a person left as they are)."""
        person = self.matcher.person_of(face.embedding)
        return person if person in self.sources else None

    @property
    def key(self) -> str:
        """The map's content: the people told apart and each one's source (part of a video's fingerprint)."""
        digest = hashlib.sha256()
        for person in self.matcher.people:
            digest.update(str(person.id).encode())
            for embedding in person.embeddings:
                digest.update(np.asarray(embedding, dtype=np.float32).tobytes())
        for person_id in sorted(self.sources):
            digest.update(f"{person_id}={self.sources[person_id].key}".encode())
        digest.update(f"{self.matcher.metric}:{self.matcher.threshold}".encode())
        return digest.hexdigest()

    def first_source(self) -> SourceIdentity:
        return self.sources[min(self.sources)]


def numbers_text(people: Sequence[Person]) -> str:
    if not people:
        return "it has none"
    return "its people are " + ", ".join(str(person.id) for person in people)


def one_face_photo(path: Path, analyser: FaceAnalyser, settings: Settings) -> Face:
    """The one face of a WHO photo (else an InputError: none, or several)."""
    image = read_image(path, "face-map photo")
    faces = analyser.analyse(image, settings, embeddings=True)
    if not faces:
        raise InputError(
            f"--face-map: no face found in {path}: give a photo where that person's face is visible",
            paths=(path,),
            page_problem=f"no face found in {path}: give a photo where that person's face is visible",
        )
    if len(faces) > 1:
        raise InputError(
            f"--face-map: {path} shows {len(faces)} faces: give a photo of that one person",
            paths=(path,),
            page_problem=f"{path} shows {len(faces)} faces: give a photo of that one person",
        )
    return faces[0]


def person_of_photo(
    entry: FaceMapEntry, people: Sequence[Person], analyser: FaceAnalyser, settings: Settings, matcher: PersonMatcher
) -> int:
    path = Path(entry.who)
    person = matcher.person_of(one_face_photo(path, analyser, settings).embedding)
    if person is None:
        raise InputError(
            f"--face-map: the face in {path} is none of the target's people (within --reference-face-distance "
            f"{matcher.threshold:g}): give a clearer photo or the person's number ({numbers_text(people)})"
        )
    return person


def resolve_face_map(
    entries: Sequence[FaceMapEntry],
    people: Sequence[Person],
    analyser: FaceAnalyser,
    settings: Settings,
    metric: DistanceMetric,
    threshold: float,
) -> PeopleSwap:
    """Each entry's person and source, checked: a number the target has, a WHO photo with one face that is
    one of its people, no person named twice, a face in every source (else one InputError naming it)."""
    matcher = PersonMatcher(tuple(people), metric, threshold)
    known = {person.id for person in people}
    chosen: dict[int, FaceMapEntry] = {}
    for entry in entries:
        number = entry.number
        if number is not None and number not in known:
            raise InputError(f"--face-map: the target has no person {number}: {numbers_text(people)}")
        person = number if number is not None else person_of_photo(entry, people, analyser, settings, matcher)
        if person in chosen:
            raise InputError(
                f"--face-map: {chosen[person].who} and {entry.who} both pick person {person}: map each person once"
            )
        chosen[person] = entry
    sources: dict[int, SourceIdentity] = {}
    for person, entry in chosen.items():
        identity = load_sources(list(entry.sources), analyser, settings)
        key = hashlib.sha256(f"{identity.key}:person {person}".encode()).hexdigest()
        sources[person] = SourceIdentity(identity.faces, key)
    return PeopleSwap(matcher, sources, {person: entry.label() for person, entry in chosen.items()})

"""The face map's and the people pass's pure parts: WHO=SOURCE parsing, merging identities into people
and numbering them, matching a face to a person, the page's choices into a map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefusion_ui.errors import UsageError
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.face_map import parse_face_map
from facefusion_ui.faces.frame_analysis import FrameAnalysis
from facefusion_ui.faces.people import PeopleCollector, PersonMatcher

A, B, C = (np.eye(8, dtype=np.float32)[i] for i in range(3))


def face(x: float, embedding: np.ndarray, yaw: float = 0.0) -> Face:
    box = np.array([x, 10, x + 50, 60], dtype=np.float32)
    return Face(box, 0.9, np.zeros((5, 2), np.float32), "test", embedding=embedding, yaw=yaw)


def test_face_map_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    entry = parse_face_map("02=a.jpg, b.jpg")
    assert (entry.who, entry.number, entry.sources) == ("2", 2, (tmp_path / "a.jpg", tmp_path / "b.jpg"))
    photo = parse_face_map("grace.jpg=tom.jpg")
    assert (photo.who, photo.number, photo.label()) == (str(tmp_path / "grace.jpg"), None, "tom.jpg")
    for bad in ("3", "=a.jpg", "3=", "0=a.jpg"):
        with pytest.raises(UsageError):
            parse_face_map(bad)


def test_identities_of_one_person_merge_and_people_are_numbered_by_first_appearance() -> None:
    collector = PeopleCollector("cosine", 0.5)
    collector.add(0, None, FrameAnalysis([face(300, A), face(100, B)], [], (1, 2)))
    collector.add(1, None, FrameAnalysis([face(300, A)], [], (1,)))
    collector.add_between({1}, 8)
    collector.add(10, None, FrameAnalysis([face(50, C), face(200, B)], [], (3, 4)))  # B again, a new identity
    collector.add(5, None, FrameAnalysis([face(150, C)], [], (3,)))  # analysed out of order: seen earlier
    people = collector.people()
    assert [(p.id, p.first_frame, p.last_frame, p.frames, p.box[0]) for p in people] == [
        (1, 0, 10, 2, 100),  # B: frames 0 and 10 (identities 2 and 4)
        (2, 0, 1, 10, 300),  # A: frames 0 and 1 and the 8 between
        (3, 5, 10, 2, 150),  # C: first seen at frame 5, where it was
    ]
    matcher = PersonMatcher(tuple(people), "cosine", 0.5)
    assert [matcher.person_of(e) for e in (A, B, C, np.eye(8, dtype=np.float32)[5], None)] == [2, 1, 3, None, None]

"""``--face-map WHO=SOURCE``: each mapped person gets their own source, everybody else is left bit-exact;
every bad map is one line and exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.face_map import parse_face_map
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.jobs.payload import job_of, make_payload
from facefusion_ui.state_manager import Settings
from tests.conftest import RunCli
from tests.support import media, videos

T1_BOXES = [(62, 282, 166, 386), (258, 168, 362, 272), (450, 298, 574, 422)]
T1_BOXES += [(732, 364, 834, 468), (892, 88, 996, 190), (1122, 294, 1226, 398)]
"""The six people of t1, left to right (``run.py people``)."""


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("photos")
    paths = {"t1": folder / "t1.jpg", "tom": folder / "tom.jpg", "grace": folder / "grace.jpg"}
    shutil.copy(media.t1_path(), paths["t1"])
    shutil.copy(media.tom_hanks_path(), paths["tom"])
    shutil.copy(media.grace_hopper_path(), paths["grace"])
    x1, y1, x2, y2 = T1_BOXES[1]
    person = media.t1()[y1 - 60 : y2 + 60, x1 - 60 : x2 + 60]
    paths["person2"] = folder / "person2.png"
    cv2.imwrite(str(paths["person2"]), cv2.resize(person, None, fx=2, fy=2))
    paths["blank"] = folder / "blank.png"
    cv2.imwrite(str(paths["blank"]), videos.background(320, 240))
    return paths


def changed_people(before_path: Path, after_path: Path, tolerance: int = 0) -> list[int]:
    """The people of t1 with a changed pixel near them; fails when a pixel changed away from every person
    (by more than ``tolerance``: a JPEG output is encoded again)."""
    before, after = media.read(before_path).astype(np.int16), media.read(after_path).astype(np.int16)
    changed = np.any(np.abs(before - after) > tolerance, axis=2)
    near = np.zeros_like(changed)
    people = []
    for number, (x1, y1, x2, y2) in enumerate(T1_BOXES, start=1):
        area = (slice(max(0, y1 - 60), y2 + 60), slice(max(0, x1 - 60), x2 + 60))
        near[area] = True
        if changed[area].any():
            people.append(number)
    assert not (changed & ~near).any()
    return people


def test_two_of_six_mapped_the_other_four_bit_exact(
    shared_runtime: ModelRuntime, photos: dict[str, Path], tmp_path: Path
) -> None:
    face_map = [f"2={photos['tom']}", f"5={photos['grace']},{photos['grace']}"]  # as the Python API takes it
    job = SwapJob.of(Settings(), [], photos["t1"], tmp_path / "out.png", face_map)
    result = process(job, RunContext(runtime=shared_runtime))
    assert changed_people(photos["t1"], tmp_path / "out.png") == [2, 5]
    assert result.stats["people"] == [
        {"id": 2, "source": "tom.jpg", "faces_swapped": 1, "frames": 1},
        {"id": 5, "source": "grace.jpg,grace.jpg", "faces_swapped": 1, "frames": 1},
    ]
    assert result.stats["faces_swapped"] == 2
    assert "recognizer_calls" in result.stats


def test_a_person_picked_by_a_photo_of_them(
    shared_runtime: ModelRuntime, photos: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.png"
    face_map = [parse_face_map(f"{photos['person2']}={photos['tom']}")]
    process(SwapJob.of(Settings(), [], photos["t1"], out, face_map), RunContext(runtime=shared_runtime))
    assert changed_people(photos["t1"], out) == [2]


def bad_maps(photos: dict[str, Path]) -> list[tuple[list[str], str]]:
    tom, t1 = photos["tom"], photos["t1"]
    return [
        (["--face-map", f"7={tom}"], "has no person 7: its people are 1, 2, 3, 4, 5, 6"),
        (["--face-map", f"{photos['blank']}={tom}"], "no face found in"),
        (["--face-map", f"{t1}={tom}"], "shows 6 faces"),
        (["--face-map", f"2={tom}", "--face-map", f"{photos['person2']}={tom}"], "both pick person 2"),
        (["--face-map", f"3={photos['blank']}"], "no face found in"),
        (["--face-map", f"3={tom}", "-s", str(tom)], "not both"),
        (["--face-map", "3"], "write WHO=SOURCE"),
        (["--face-map", f"3={tom}", "--face-selector-mode", "many"], "not both"),
    ]


def test_each_bad_map_is_one_line_and_exit_2(cli_here: RunCli, photos: dict[str, Path], tmp_path: Path) -> None:
    for extra, message in bad_maps(photos):
        done = cli_here(["process", "-t", str(photos["t1"]), "-o", str(tmp_path / "out.png"), *extra])
        assert done.returncode == 2, (extra, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (extra, done.stderr)
        assert not (tmp_path / "out.png").exists()


def test_process_help_says_the_map_replaces_the_source(cli_here: RunCli) -> None:
    done = cli_here(["process", "--help"])
    assert "--face-map WHO=SOURCE" in done.stdout and "Replaces -s" in " ".join(done.stdout.split())


def test_json_reports_each_person(cli_here: RunCli, photos: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    done = cli_here(["process", "-t", str(photos["t1"]), "-o", str(out), "--face-map", f"4={photos['tom']}", "--json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["people"] == [{"id": 4, "source": "tom.jpg", "faces_swapped": 1, "frames": 1}]


def test_a_batch_job_carries_the_map(cli_here: RunCli, photos: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    added = cli_here(
        ["batch", "add", "-t", str(photos["t1"]), "--output-dir", str(out), "--face-map", f"5={photos['tom']}"]
    )
    assert added.returncode == 0, added.stderr
    listing = tmp_path / "jobs.json"
    entry = {
        "target": str(photos["t1"]),
        "output": str(tmp_path / "imported.jpg"),
        "face_map": [f"3={photos['grace']}"],
    }
    bad = {**entry, "output": str(tmp_path / "bad.jpg"), "face_map": [f"9={photos['grace']}"]}
    listing.write_text(json.dumps([entry, bad]), encoding="utf-8")
    imported = cli_here(["batch", "import", str(listing)])
    assert imported.returncode == 2 and "has no person 9" in imported.stderr  # rejected when queued
    ran = cli_here(["batch", "run", "--until-empty"], timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert changed_people(photos["t1"], out / "t1_swapped.jpg", tolerance=12) == [5]
    assert changed_people(photos["t1"], tmp_path / "imported.jpg", tolerance=12) == [3]
    both = cli_here(
        [
            "batch",
            "add",
            "-t",
            str(photos["t1"]),
            "--output-dir",
            str(out),
            "-s",
            str(photos["tom"]),
            "--face-map",
            f"5={photos['tom']}",
        ]
    )
    assert both.returncode == 2 and "not both" in both.stderr


def test_the_payload_round_trips_the_map(photos: dict[str, Path], tmp_path: Path) -> None:
    face_map = [parse_face_map(f"2={photos['tom']}"), parse_face_map(f"{photos['person2']}={photos['grace']}")]
    payload = make_payload([], photos["t1"], tmp_path / "out.png", Settings(), face_map)
    job = job_of(json.loads(json.dumps(payload)))
    assert job.face_map == tuple(face_map) and job.sources == ()
    assert job.photos() == [photos["tom"], photos["person2"], photos["grace"]]

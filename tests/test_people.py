"""``run.py people``: the distinct people of an image and of a video made from package photos (two people
crossing, one leaving and coming back, a cut), numbered by first appearance then left to right, the
video's pass cached for the next run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.people_job import find_people
from facefusion_ui.state_manager import Settings
from tests.conftest import RunCli
from tests.support import media, videos

FRAMES = 60
"""The three-people clip: the crossing in frames 0-39, Grace Hopper away in 20-29, the cut at 40."""


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return videos.write_video(
        tmp_path_factory.mktemp("people") / "three.mp4", videos.three_people(400, 240, FRAMES), FRAMES
    )


@pytest.fixture(scope="module")
def t1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("t1") / "t1.jpg"
    shutil.copy(media.t1_path(), path)
    return path


def test_six_people_of_an_image_left_to_right(shared_runtime: ModelRuntime, t1: Path) -> None:
    result = find_people(t1, Settings(), shared_runtime)
    assert [person.id for person in result.people] == [1, 2, 3, 4, 5, 6]
    lefts = [person.box[0] for person in result.people]
    assert lefts == sorted(lefts)
    assert all(person.frames == 1 and person.first_frame == 0 for person in result.people)


def test_three_people_of_a_video_through_crossing_absence_and_cut(shared_runtime: ModelRuntime, clip: Path) -> None:
    result = find_people(clip, Settings(), shared_runtime)
    people = result.people
    assert len(people) == 3, [person.to_json() for person in people]
    assert [person.first_frame for person in people] == [0, 0, 0]
    assert [person.box[0] for person in people] == sorted(person.box[0] for person in people)
    assert all(person.last_frame == FRAMES - 1 for person in people)  # one person each, across the cut
    assert people[2].frames == FRAMES - 10  # Grace Hopper, away for ten frames
    assert people[0].frames == people[1].frames == FRAMES
    assert result.recognizer_calls < 0.5 * sum(person.frames for person in people)
    assert not result.reused
    again = find_people(clip, Settings(), shared_runtime)
    assert again.reused
    assert [person.to_json() for person in again.people] == [person.to_json() for person in people]


def test_people_command_json_and_thumbnails(
    cli_here: RunCli, clip: Path, tmp_path: Path, shared_runtime: ModelRuntime
) -> None:
    done = cli_here(["people", str(clip), "--json", "--thumbnails", str(tmp_path / "faces")])
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)["people"]
    assert [person["id"] for person in listed] == [1, 2, 3]
    for person in listed:
        assert set(person) == {"id", "first_frame", "last_frame", "frames", "box", "thumbnail"}
        image = cv2.imread(person["thumbnail"])
        assert image is not None and min(image.shape[:2]) > 40
    plain = cli_here(["people", str(clip)])
    assert plain.returncode == 0 and plain.stdout.startswith("3 people")


def test_people_of_a_missing_target_is_one_line(cli_here: RunCli, tmp_path: Path) -> None:
    done = cli_here(["people", str(tmp_path / "nobody.mp4")])
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "does not exist" in done.stderr

"""``run.py live`` end to end on clips made at test time (a packaged face photo moving over a
background), read at their own frame rate as a camera would deliver them: the report, the recording,
Ctrl-C; and the engine itself on frames handed to it one by one (faces followed by their meshes, the
face changed and the background not, a lost face found again)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.live.engine import LiveEngine
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.conftest import ROOT, RunCli
from tests.support import media, videos

if TYPE_CHECKING:
    from facefusion_ui.ui.services import UiServices

REPORT_KEYS = {"frames_in", "frames_shown", "frames_dropped", "latency_ms", "fps"}


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four seconds of Grace Hopper's head moving over a background, 640x480 at 25 fps."""
    path = tmp_path_factory.mktemp("live") / "camera.mp4"
    return videos.write_video(path, videos.moving_face(640, 480, 100), 100)


@pytest.fixture(scope="module")
def source_photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("live-source") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def decoded(path: Path) -> list[np.ndarray]:
    """Every frame of a video file as BGR (it is playable: ffmpeg decodes it to the end)."""
    ffmpeg = resolve_ffmpeg().path
    command = [ffmpeg, "-hide_banner", "-loglevel", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "bgr24"]
    completed = subprocess.run([*command, "pipe:1"], capture_output=True, check=True, timeout=120)
    frames = np.frombuffer(completed.stdout, dtype=np.uint8)
    return list(frames.reshape(-1, 480, 640, 3))


def face_and_background_change(
    before: np.ndarray, after: np.ndarray, face: tuple[int, int, int, int]
) -> tuple[float, float]:
    """Mean absolute change inside the face box and in the frame's left strip (background only)."""
    x0, y0, x1, y1 = face
    inside = np.abs(after[y0:y1, x0:x1].astype(np.int16) - before[y0:y1, x0:x1].astype(np.int16)).mean()
    strip = np.abs(after[:, :60].astype(np.int16) - before[:, :60].astype(np.int16)).mean()
    return float(inside), float(strip)


def test_live_swaps_a_clip_into_a_file_and_reports_what_it_measured(
    run_cli: RunCli, clip: Path, source_photo: Path, tmp_path: Path
) -> None:
    output = tmp_path / "live.mp4"
    result = run_cli(
        ["live", "-s", str(source_photo), "--input", str(clip), "--output", str(output), "--json"], timeout=600
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) >= REPORT_KEYS
    assert report["frames_in"] == 100  # the whole clip was read, at its own rate
    assert 0 < report["frames_shown"] <= 100
    assert report["frames_shown"] + report["frames_dropped"] == report["frames_in"]
    assert report["faces_swapped"] > 0 and report["faces_followed_by_mesh"] > 0
    latency = report["latency_ms"]
    assert 0 < latency["median"] <= latency["p95"] <= latency["max"]
    assert "live: swapping" in result.stderr
    frames = decoded(output)
    # held frames fill the dropped ones' time: the recording lasts as long as the clip (4 s at 30 fps)
    assert 100 <= len(frames) <= 130
    inputs = decoded(clip)  # the input as the recording's encoder saw its colours (one YUV round trip less)
    last = len(frames) - 5
    original = inputs[min(round(last * 25 / 30), len(inputs) - 1)]
    inside, strip = face_and_background_change(original, frames[last], (260, 140, 420, 330))
    assert inside > 8 and strip < 4, (inside, strip)


def test_ctrl_c_ends_a_live_run_with_its_report_and_a_playable_recording(
    clip: Path, source_photo: Path, tmp_path: Path
) -> None:
    output = tmp_path / "held.mp4"
    command = [sys.executable, str(ROOT / "run.py"), "live", "-s", str(source_photo), "--input", str(clip)]
    process = subprocess.Popen(
        [*command, "--loop", "--output", str(output), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        seen = list(wait_for_line(process.stderr, "live: swapping", deadline=300))
        assert any("live: swapping" in line for line in seen), seen
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    report = json.loads(out)
    assert report["frames_shown"] >= 1 and report["frames_in"] >= report["frames_shown"]
    assert "Traceback" not in err
    assert len(decoded(output)) >= 1


def wait_for_line(stream: object, text: str, deadline: float) -> Iterator[str]:
    """The lines of ``stream`` up to the first holding ``text`` (or its end, or ``deadline`` seconds)."""
    end = time.monotonic() + deadline
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        yield line
        if text in line or time.monotonic() > end:
            return


def test_a_missing_input_file_or_an_output_onto_the_input_is_one_line(
    run_cli: RunCli, clip: Path, source_photo: Path, tmp_path: Path
) -> None:
    result = run_cli(["live", "-s", str(source_photo), "--input", str(tmp_path / "none.mp4")])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --input ") and "no such file" in lines[0], lines
    onto = run_cli(["live", "-s", str(source_photo), "--input", str(clip), "--output", str(clip)])
    assert onto.returncode == 2 and onto.stderr.strip().splitlines() == [
        f"error: --output {clip} is the input: record into another file"
    ]
    assert len(decoded(clip)) == 100  # untouched


@pytest.fixture(scope="module")
def engine(source_photo: Path) -> Iterator[LiveEngine]:
    settings = Settings()
    built = LiveEngine.build(settings, ModelRuntime.create(settings), [source_photo])
    built.warm_up(built.pipeline.sources.best_frontal().image)
    yield built
    built.close()


def paced(engine: LiveEngine, frames: list[np.ndarray], fps: float = 25.0) -> list[np.ndarray]:
    """Each frame through the engine no sooner than a camera at ``fps`` would deliver it."""
    out = []
    start = time.perf_counter()
    for index, frame in enumerate(frames):
        wait = start + index / fps - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        out.append(engine.process(frame.copy()))
    return out


def wait_until_swapped(engine: LiveEngine, frame: np.ndarray, limit: float, fps: float = 25.0) -> int:
    """Frames handed to the engine, no faster than a camera at ``fps``, until one comes back changed;
    fails after ``limit`` seconds. (Unpaced, a faceless frame takes a fraction of a millisecond and the
    loop would starve the detector's thread of the interpreter.)"""
    start = time.monotonic()
    count = 0
    while time.monotonic() < start + limit:
        wait = start + count / fps - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        count += 1
        if not np.array_equal(engine.process(frame.copy()), frame):
            return count
    raise AssertionError(f"no swapped frame in {limit} s")


def test_the_engine_follows_a_face_by_its_mesh_and_finds_a_lost_one_again(engine: LiveEngine) -> None:
    make = videos.moving_face(640, 480, 60)
    frames = [make(index) for index in range(60)]
    wait_until_swapped(engine, frames[0], limit=60)
    followed = engine.pipeline.schedule.stats.faces_followed_by_mesh
    swapped = paced(engine, frames)
    assert engine.pipeline.schedule.stats.faces_followed_by_mesh - followed >= 50
    inside, strip = face_and_background_change(frames[30], swapped[30], (230, 130, 390, 330))
    assert inside > 8 and strip == 0, (inside, strip)
    empty = videos.blank(640, 480)
    paced(engine, [empty(index) for index in range(10)])
    assert engine.found == []
    frames_to_find = wait_until_swapped(engine, frames[10], limit=60)
    assert frames_to_find <= 50, frames_to_find  # 5-12 measured (a detection's time); 2 s for a busier machine


def test_a_face_map_swaps_the_person_of_its_photo_and_a_number_is_one_line(
    run_cli: RunCli, clip: Path, source_photo: Path, tmp_path: Path
) -> None:
    who = tmp_path / "grace.png"
    cv2.imwrite(str(who), media.grace_hopper())  # the person the clip shows
    mapped = run_cli(
        ["live", "--face-map", f"{who}={source_photo}", "--input", str(clip), "--duration", "2", "--json"], timeout=600
    )
    assert mapped.returncode == 0, mapped.stderr
    report = json.loads(mapped.stdout)
    assert report["faces_swapped"] > 0
    assert report["people"][0]["id"] == 1 and report["people"][0]["faces_swapped"] == report["faces_swapped"]
    numbered = run_cli(["live", "--face-map", f"1={source_photo}", "--input", str(clip)])
    assert numbered.returncode == 2
    lines = numbered.stderr.strip().splitlines()
    assert len(lines) == 1 and "give a photo of the person instead" in lines[0], lines


def test_frames_pushed_by_the_page_come_back_fitted_mirrored_swapped_and_recorded(
    engine: LiveEngine, tmp_path: Path
) -> None:
    from facefusion_ui.live.pushed import PushedStream

    make = videos.moving_face(1280, 720, 40)  # a 16:9 camera into 480p: bands above and below
    stream = PushedStream(engine, "480p", mirror=True)
    stream.start_recording(tmp_path / "pushed.mp4")
    shown = []
    for index in range(40):
        rgb = np.ascontiguousarray(make(index)[:, :, ::-1])
        back = stream.swap(rgb)
        assert back is not None and back.shape == (480, 640, 3)
        shown.append(back)
        time.sleep(0.04)
    recorded = stream.stop_recording()
    assert recorded is not None and len(decoded(recorded)) >= 10
    assert shown[-1][:60].max() == 0 and shown[-1][420:].max() == 0  # letterboxed, not stretched
    plain = cv2.resize(make(39), (640, 360))[:, ::-1, ::-1]  # mirrored, RGB
    strip = np.abs(shown[-1][60:420, :40].astype(np.int16) - plain[:, :40]).mean()  # background: as it was
    assert strip < 3, strip
    assert stream.frames_shown == 40 and stream.latency.total == 40
    assert "fps" in stream.readout() and stream.report()["frames_dropped"] == 0
    assert engine.frames_with_faces > 0


@pytest.mark.skipif(sys.platform != "linux", reason="a V4L2 device path")
def test_a_camera_that_is_not_there_is_one_line_with_ffmpegs_words(run_cli: RunCli, source_photo: Path) -> None:
    result = run_cli(["live", "-s", str(source_photo), "--input", "/dev/video99"], timeout=300)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: cannot read live input camera /dev/video99: ") and "/dev/video99" in lines[0]


def test_the_live_pages_start_takes_several_source_photos_as_one_person(services: UiServices, tmp_path: Path) -> None:
    from facefusion_ui.ui.live import run_start

    astronaut = tmp_path / "astronaut.png"
    cv2.imwrite(str(astronaut), media.astronaut())
    started = run_start(services, [str(astronaut), str(media.tom_hanks_path())], "480p", False, None)
    assert started.message.startswith("started: allow the camera"), started.message
    engine = started.stream.engine
    try:
        assert len(engine.pipeline.sources.faces) == 2 and engine.pipeline.people is None
    finally:
        started.stream.close()


def test_the_live_pages_people_rows_map_a_person_to_their_source_as_the_command_line_does(
    services: UiServices, tmp_path: Path
) -> None:
    from facefusion_ui.ui.live import run_start

    astronaut, grace = tmp_path / "astronaut.png", tmp_path / "grace.png"
    cv2.imwrite(str(astronaut), media.astronaut())
    cv2.imwrite(str(grace), media.grace_hopper())  # the person the frames show
    rows = [(str(grace), [str(astronaut)]), (None, None), (str(media.tom_hanks_path()), [str(grace)])]
    started = run_start(services, None, "480p", False, None, rows)
    assert started.message.startswith("started for 2 people of the People rows"), started.message
    engine = started.stream.engine
    try:
        assert engine.pipeline.people is not None
        make = videos.moving_face(640, 480, 30)
        wait_until_swapped(engine, make(0), limit=60)
        paced(engine, [make(index) for index in range(30)])
        people = engine.summary()["people"]
        assert [person["source"] for person in people] == ["astronaut.png", "grace.png"]
        assert people[0]["faces_swapped"] > 0 and people[1]["faces_swapped"] == 0  # Tom Hanks is not there
    finally:
        started.stream.close()


def test_the_live_pages_bad_people_rows_are_one_line(services: UiServices, tmp_path: Path) -> None:
    from facefusion_ui.ui.live import run_start

    astronaut, blank = tmp_path / "astronaut.png", tmp_path / "wall.png"
    cv2.imwrite(str(astronaut), media.astronaut())
    cv2.imwrite(str(blank), np.full((300, 300, 3), 128, np.uint8))
    only_source = run_start(services, None, "480p", False, None, [(None, None), (None, [str(astronaut)])])
    assert only_source.message == "⚠️ People row 2: add a photo of the person too, or clear the row"
    only_person = run_start(services, [str(astronaut)], "480p", False, None, [(str(astronaut), [])])
    assert only_person.message == "⚠️ People row 1: add their source photo too, or clear the row"
    faceless = run_start(services, None, "480p", False, None, [(str(blank), [str(astronaut)])])
    assert faceless.message == "⚠️ no face found in wall.png: give a photo where that person's face is visible"
    nothing = run_start(services, None, "480p", False, None, [(None, None)])
    assert nothing.message == "⚠️ choose a source face photo first (or fill in a People row)"

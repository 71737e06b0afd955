"""Crash-safe resume with real processes: SIGKILL in the middle of a chunk, run again, skip what was
finished, and end frame-exact; changed settings start over; Ctrl-C stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import psutil
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.presets import apply_preset
from facefusion_ui.state_manager import StateManager
from tests.conftest import ROOT
from tests.support import media, videos

FRAMES = 100  # 5 chunks: 1 s at 25 fps is cut on the detection groups' grid of 20 frames


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("resume")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    clip = videos.write_video(folder / "clip.mp4", videos.moving_face(320, 240, FRAMES, cut_at=60), FRAMES, audio=True)
    return {"face": face, "clip": clip, "folder": folder}


def command(job: dict[str, Path], output: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        str(ROOT / "run.py"),
        "process",
        "-s",
        str(job["face"]),
        "-t",
        str(job["clip"]),
        "-o",
        str(output),
        "--video-chunk-size",
        "1",
        "--output-video-quality",
        "100",
        "--json",
        *extra,
    ]


def start(job: dict[str, Path], output: Path, home: Path, *extra: str, hold: str = "") -> subprocess.Popen[str]:
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), **({"FACEFUSION_UI_INJECT_FAULT": hold} if hold else {})}
    return subprocess.Popen(
        command(job, output, *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )


def finished_chunks(home: Path) -> int:
    for manifest in home.glob("work/*/manifest.json"):
        try:
            return len(json.loads(manifest.read_text())["done"])
        except (ValueError, KeyError, OSError):
            return 0
    return 0


def rerun(job: dict[str, Path], output: Path, home: Path, *extra: str) -> tuple[dict[str, object], str]:
    completed = subprocess.run(
        command(job, output, *extra),
        capture_output=True,
        text=True,
        env={**os.environ, "FACEFUSION_UI_HOME": str(home)},
        cwd=ROOT,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout), completed.stderr


@pytest.fixture(scope="module")
def reference(job: dict[str, Path], shared_runtime: ModelRuntime) -> tuple[list[np.ndarray], dict[str, Any]]:
    """The same job run without interruption and in one chunk (otherwise the CLI's settings): the resumed
    run must equal it frame for frame, so the detection schedule's state was carried across the resume."""
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"video_chunk_size": 1000, "output_video_quality": 100})
    output = job["folder"] / "reference.mp4"
    result = process(
        SwapJob.of(state.snapshot(), [job["face"]], job["clip"], output),
        RunContext(runtime=shared_runtime, work_dir=job["folder"] / "reference-work"),
    )
    assert result.stats["manifest_reused"] is False, "a first run reuses nothing"
    return videos.decode_all(output), result.stats


def start_held(job: dict[str, Path], output: Path, home: Path, chunk: int) -> subprocess.Popen[str]:
    """A run held at the start of ``chunk`` (the chunks before are finished): interrupted there, never raced."""
    release = home.parent / "release"
    running = start(job, output, home, hold=f"hold:chunk={chunk},until={release}")
    deadline = time.monotonic() + 240
    while not release.with_name("release.held").exists():
        assert time.monotonic() < deadline and running.poll() is None, running.communicate()
        time.sleep(0.05)
    return running


def test_sigkill_in_the_middle_of_a_chunk_then_resume(
    job: dict[str, Path], reference: tuple[list[np.ndarray], dict[str, Any]], tmp_path: Path
) -> None:
    reference_frames, reference_stats = reference
    home, output = tmp_path / "home", tmp_path / "out.mp4"
    running = start_held(job, output, home, chunk=3)
    running.send_signal(signal.SIGKILL)
    running.wait()
    assert not output.exists()
    kept = finished_chunks(home)
    assert kept == 2
    summary, _ = rerun(job, output, home)
    assert summary["chunks_skipped"] == kept and summary["chunks_done"] == 5 - kept
    assert summary["manifest_reused"] is True
    assert summary["frames"] == FRAMES
    # the counts cover the whole output, the reused chunks included
    for key in ("faces_detected", "faces_selected", "faces_swapped"):
        assert summary[key] == reference_stats[key], key
    frames = videos.decode_all(output)
    assert len(frames) == len(reference_frames) == FRAMES
    for got, want in zip(frames, reference_frames, strict=True):
        assert np.array_equal(got, want)
    assert not list(home.glob("work/*")), "the work folder is removed after success"


def test_changed_settings_do_not_reuse_the_manifest(job: dict[str, Path], tmp_path: Path) -> None:
    home, output = tmp_path / "home", tmp_path / "out.mp4"
    running = start_held(job, output, home, chunk=2)
    running.send_signal(signal.SIGKILL)
    running.wait()
    summary, stderr = rerun(job, output, home, "--face-mask-blur", "0.6")
    assert summary["chunks_skipped"] == 0 and summary["manifest_reused"] is False
    assert "settings, sources or target changed" in stderr


@pytest.mark.parametrize(
    ("stop", "code", "line"),
    [
        (signal.SIGINT, 130, "interrupted: finished chunks are kept; run the same command again to resume"),
        (signal.SIGTERM, 143, "stopped by SIGTERM: finished chunks are kept; run the same command again to resume"),
    ],
)
def test_ctrl_c_and_sigterm_stop_cleanly_and_leave_nothing_running(
    job: dict[str, Path], tmp_path: Path, stop: signal.Signals, code: int, line: str
) -> None:
    home, output = tmp_path / "home", tmp_path / "out.mp4"
    running = start_held(job, output, home, chunk=2)
    children = psutil.Process(running.pid).children(recursive=True)
    assert any("ffmpeg" in child.name() for child in children)
    running.send_signal(stop)  # the hold lets go once the interrupt is under way
    _, stderr = running.communicate(timeout=120)
    assert running.returncode == code
    assert stderr.strip().splitlines()[-1] == line
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 60
    while [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]:
        assert time.monotonic() < deadline, "ffmpeg still runs after the interrupted run ended"
        time.sleep(0.05)
    assert not output.exists() and not list(tmp_path.glob(".*part*")), "no output and no part file"
    summary, _ = rerun(job, output, home)  # and the interrupted job resumes
    assert int(summary["chunks_skipped"]) == 1  # type: ignore[call-overload]

"""The background remover end to end with its embedded model (mediapipe's selfie segmentation, no
download): the person kept and the background gone on the astronaut photo and on freshly made composites
whose truth is known; PNG and WebP outputs keep the alpha, JPEG gets the green screen; a video is green
behind the person, chunked, and a run killed in the middle resumes to the same frames."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.background_remover import BackgroundRemover
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT, RunCli
from tests.support import matting, media, videos

BAND = 6
"""Pixels each side of the true outline left out of the measures (the hand-drawn mask's own precision)."""


@pytest.fixture(scope="module")
def remover() -> BackgroundRemover:
    settings = Settings(processors=("background_remover",))
    return BackgroundRemover(settings, ModelRuntime.create(settings))


def read_back(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert image is not None, path
    return np.asarray(image, dtype=np.uint8)


def alpha_of(remover: BackgroundRemover, frame: np.ndarray) -> np.ndarray:
    settings = Settings(processors=("background_remover",))
    result = remover.process_frame(frame, FrameContext(0, 0.0, settings, extras={"keep_alpha": True}))
    assert result.shape == (*frame.shape[:2], 4)
    return np.ascontiguousarray(result[:, :, 3])


def test_the_astronaut_is_kept_and_her_background_goes(remover: BackgroundRemover) -> None:
    measured = matting.scores(alpha_of(remover, media.astronaut()), matting.astronaut_person(), BAND)
    assert measured["person_opaque"] >= 0.95 and measured["background_clear"] >= 0.90, measured


def test_fresh_composites_whose_truth_is_known(remover: BackgroundRemover) -> None:
    seed = time.time_ns() % 2**32
    rng = np.random.default_rng(seed)
    runs = [matting.scores(alpha_of(remover, frame), truth, BAND) for frame, truth in (
        matting.composite(640, 480, rng) for _ in range(6)
    )]  # fmt: skip
    person = float(np.mean([run["person_opaque"] for run in runs]))
    background = float(np.mean([run["background_clear"] for run in runs]))
    assert person >= 0.95 and background >= 0.90, (seed, runs)


def test_png_and_webp_keep_the_alpha_and_jpeg_gets_the_green_screen(tmp_path: Path, run_cli: RunCli) -> None:
    target = tmp_path / "astronaut.png"
    cv2.imwrite(str(target), media.astronaut())
    truth = matting.astronaut_person()
    for suffix in ("png", "webp", "jpg"):
        output = tmp_path / f"out.{suffix}"
        args = ["process", "-s", str(media.grace_hopper_path()), "-t", str(target), "-o", str(output)]
        completed = run_cli([*args, "--processors", "background_remover"], timeout=300)
        assert completed.returncode == 0, completed.stderr
        written = read_back(output)
        if suffix == "jpg":
            assert written.shape == (512, 512, 3)
            assert np.abs(written[10:60, 440:500].astype(int) - (0, 255, 0)).mean() < 20  # top right: background
            continue
        assert written.shape == (512, 512, 4), suffix
        measured = matting.scores(written[:, :, 3], truth, BAND)
        assert measured["person_opaque"] >= 0.95 and measured["background_clear"] >= 0.90, (suffix, measured)


def test_a_colour_given_fills_an_image_opaquely(tmp_path: Path, run_cli: RunCli) -> None:
    target, output = tmp_path / "astronaut.png", tmp_path / "out.png"
    cv2.imwrite(str(target), media.astronaut())
    args = ["process", "-s", str(media.grace_hopper_path()), "-t", str(target), "-o", str(output)]
    colour = ["--background-remover-color", "0", "0", "255"]
    completed = run_cli([*args, "--processors", "background_remover", *colour, "--json"])
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["models_used"] == ["mediapipe_selfie_segmentation"]  # no face detector
    written = read_back(output)
    assert (written[:, :, 3] == 255).all()
    assert np.abs(written[10:60, 440:500, :3].astype(int) - (255, 0, 0)).mean() < 20  # blue (BGR)
    bad = run_cli([*args, "--processors", "background_remover", "--background-remover-color", "0", "300", "0"])
    assert bad.returncode != 0 and "background_remover_color" in bad.stderr and "Traceback" not in bad.stderr


FRAMES = 60


def composite_clip(folder: Path) -> tuple[Path, list[np.ndarray]]:
    """The astronaut gliding over a fixed random background; the truths of its frames."""
    rng = np.random.default_rng(7)
    ground = matting.random_background(320, 240, rng)
    person = cv2.resize(media.astronaut(), (200, 200))
    mask = cv2.resize(matting.astronaut_person(), (200, 200), interpolation=cv2.INTER_NEAREST)
    truths: list[np.ndarray] = []

    def make(index: int) -> np.ndarray:
        frame, truth, x = ground.copy(), np.zeros((240, 320), np.uint8), 10 + index
        frame[40:240, x : x + 200][mask > 0] = person[mask > 0]
        truth[40:240, x : x + 200] = mask
        if len(truths) <= index:
            truths.append(truth)
        return np.asarray(frame, dtype=np.uint8)

    return videos.write_video(folder / "clip.mp4", make, FRAMES, fps=Fraction(25)), truths


def video_command(clip: Path, output: Path) -> list[str]:
    source = str(media.grace_hopper_path())
    chunks = ["--video-chunk-size", "1", "--output-video-quality", "100", "--json"]
    return [sys.executable, str(ROOT / "run.py"), "process", "-s", source, "-t", str(clip), "-o", str(output), *chunks]


def held_run(clip: Path, output: Path, home: Path, chunk: int) -> subprocess.Popen[str]:
    """A run held at the start of ``chunk`` (the chunks before are finished)."""
    release = home.parent / "release"
    env = {
        **os.environ,
        "FACEFUSION_UI_HOME": str(home),
        "FACEFUSION_UI_INJECT_FAULT": f"hold:chunk={chunk},until={release}",
    }
    command = [*video_command(clip, output), "--processors", "background_remover"]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    deadline = time.monotonic() + 240
    while not release.with_name("release.held").exists():
        assert time.monotonic() < deadline and running.poll() is None, running.communicate()
        time.sleep(0.05)
    return running


@pytest.mark.slow
def test_a_video_gets_a_green_screen_and_resumes_after_a_kill(tmp_path: Path) -> None:
    clip, truths = composite_clip(tmp_path)
    home, output, whole = tmp_path / "home", tmp_path / "out.mp4", tmp_path / "whole.mp4"
    env = {**os.environ, "FACEFUSION_UI_HOME": str(tmp_path / "home-whole")}
    command = [*video_command(clip, whole), "--processors", "background_remover"]
    completed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert completed.returncode == 0, completed.stderr
    running = held_run(clip, output, home, chunk=2)
    running.send_signal(signal.SIGKILL)
    running.wait()
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home)}
    command = [*video_command(clip, output), "--processors", "background_remover"]
    resumed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["chunks_skipped"] == 1 and summary["manifest_reused"] is True, summary
    frames, reference = videos.decode_all(output), videos.decode_all(whole)
    assert len(frames) == len(reference) == FRAMES
    assert all(np.array_equal(got, want) for got, want in zip(frames, reference, strict=True))
    for frame, truth in zip(frames[::10], truths[::10], strict=True):
        green = (frame[:, :, 1] > 200) & (frame[:, :, 0] < 60) & (frame[:, :, 2] < 60)
        disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * BAND + 1, 2 * BAND + 1))
        background, person = (
            cv2.dilate(truth, disc) == 0,
            cv2.erode(np.where(truth == 255, 255, 0).astype(np.uint8), disc) > 0,
        )
        assert green[background].mean() >= 0.90 and green[person].mean() <= 0.05

"""Each processor added from FaceFusion's set as a batch job through the real queue (a ``batch run`` worker
process on a real SQLite file), on a tiny two-chunk clip: the worker is held at the start of the second
chunk and killed, a new worker resumes the job from its chunk manifest, and the output equals the same
job run once without interruption. Stand-in models where FaceFusion's need a download, in the folder the
catalog reads (``FACEFUSION_UI_MODELS``); the background remover's embedded model as it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.models import import_model, load_manifest
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT
from tests.support import media, videos
from tests.support.colorizer_models import build_ddcolor
from tests.support.face_edit_models import build_deep_swapper, build_face_editor_parts, build_fran
from tests.support.onnx_models import build_fairface

pytestmark = pytest.mark.slow

FRAMES = 40  # 1.6 s at 25 fps: two chunks of one second, cut on the detection groups' grid of 20 frames
DEADLINE_S = 600  # generous: the machine running the tests is often busy
CHUNKED = {"video_chunk_size": 1, "output_video_quality": 100, "output_video_preset": "ultrafast"}

PROCESSORS: Mapping[str, tuple[dict[str, Any], str]] = {
    "age_modifier": ({"age_modifier_direction": 60}, "faces_aged"),
    "background_remover": ({}, "frames_matted"),
    "frame_colorizer": ({"frame_colorizer_blend": 80}, "frames_colorized"),
    "expression_restorer": ({"expression_restorer_factor": 80}, "faces_restored"),
    "face_editor": ({"face_editor_mouth_smile": 0.8, "face_editor_head_yaw": -0.5}, "faces_edited"),
    "deep_swapper": ({"deep_swapper_model": "my_person_224", "deep_swapper_morph": 100}, "faces_swapped"),
}
"""Each processor: its settings in the job, and the count its result must show above 0."""

STAND_INS: Mapping[str, Callable[[Path], object]] = {
    "age_modifier": lambda folder: (build_fran(folder / "fran.onnx"), build_fairface(folder / "fairface.onnx")),
    "background_remover": lambda folder: None,  # embedded: nothing to download
    "frame_colorizer": lambda folder: build_ddcolor(folder / "ddcolor.onnx"),
    "expression_restorer": build_face_editor_parts,  # LivePortrait's parts, the restorer's three among them
    "face_editor": build_face_editor_parts,
    "deep_swapper": lambda folder: import_model(
        build_deep_swapper(folder.parent / "my_person_224.onnx"), "my_person_224", folder=folder
    ),
}


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("new-processors-clip")
    return videos.write_video(folder / "clip.mp4", videos.moving_face(200, 160, FRAMES), FRAMES)


def worker(home: Path, models: Path, *args: str, hold: str = "") -> subprocess.Popen[str]:
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), "FACEFUSION_UI_MODELS": str(models)}
    if hold:
        env["FACEFUSION_UI_INJECT_FAULT"] = hold
    command = [sys.executable, str(ROOT / "run.py"), "batch", "run", "--concurrency", "1", "--lease-seconds", "2"]
    return subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def held_then_killed(home: Path, models: Path, release: Path) -> None:
    """A worker held at the start of chunk 2 of the queued job (chunk 1 finished), then SIGKILLed."""
    running = worker(home, models, hold=f"hold:chunk=2,until={release}")
    deadline = time.monotonic() + DEADLINE_S
    while not release.with_name("release.held").exists():
        assert time.monotonic() < deadline and running.poll() is None, running.communicate()
        time.sleep(0.05)
    running.send_signal(signal.SIGKILL)
    running.wait()


@pytest.mark.parametrize("name", list(PROCESSORS))
def test_a_batch_job_killed_mid_video_resumes_to_the_same_output(name: str, clip: Path, tmp_path: Path) -> None:
    own, count = PROCESSORS[name]
    models, home = tmp_path / "models", tmp_path / "home"
    models.mkdir()
    STAND_INS[name](models)
    settings = Settings.from_dict({**CHUNKED, "processors": (name,), **own})
    face = tmp_path / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    store = JobStore(home / "jobs.db")
    output = tmp_path / "out.mp4"
    [job_id] = store.add_many([make_payload([face], clip, output, settings)])
    held_then_killed(home, models, tmp_path / "release")
    assert store.get(job_id).status == "running" and not output.exists()
    again = worker(home, models, "--until-empty")
    _, stderr = again.communicate(timeout=DEADLINE_S)
    assert again.returncode == 0, stderr
    job = store.get(job_id)
    assert job.status == "completed", job.last_error
    assert job.result is not None and job.result["chunks_skipped"] == 1 and job.result["frames"] == FRAMES
    assert job.result[count] > 0, job.result
    runtime = ModelRuntime(load_manifest(folder=models), models, SessionPool(("cpu",)))
    reference = tmp_path / "reference.mp4"
    process(SwapJob.of(settings, [face], clip, reference), RunContext(runtime=runtime, work_dir=tmp_path / "work"))
    got, want = videos.decode_all(output), videos.decode_all(reference)
    assert len(got) == len(want) == FRAMES
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), "the resumed output differs"
    original = videos.decode_all(clip)
    assert any(np.abs(a.astype(int) - b.astype(int)).max() > 20 for a, b in zip(got, original, strict=True))

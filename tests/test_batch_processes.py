"""The queue with real processes: a worker killed with SIGKILL mid-job resumes from its chunk manifest,
and four enqueuing processes race two workers over one SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.core import process
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT
from tests.support import media, videos
from tests.support.plugins import install_plugin

DEADLINE_S = 600  # generous: the machine running the tests is often busy
CHUNKED = Settings(video_chunk_size=1, output_video_quality=100, output_video_preset="ultrafast")


def run_py(*args: str, home: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), **(extra_env or {})}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_killed_worker_resumes_every_job_exactly_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    face = tmp_path / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    clips = [videos.write_video(tmp_path / f"clip{i}.mp4", videos.moving_face(240, 180, 50), 50) for i in range(2)]
    store = JobStore(home / "jobs.db")
    payloads = [make_payload([face], clip, tmp_path / f"out{i}.mp4", CHUNKED) for i, clip in enumerate(clips)]
    ids = store.add_many(payloads)
    release = tmp_path / "release"  # never created: the worker is held in chunk 2 of its first job, then killed
    hold = {"FACEFUSION_UI_INJECT_FAULT": f"hold:chunk=2,until={release}"}
    worker = run_py("batch", "run", "--concurrency", "1", "--lease-seconds", "2", home=home, extra_env=hold)
    deadline = time.monotonic() + DEADLINE_S
    while not release.with_name("release.held").exists():
        assert time.monotonic() < deadline and worker.poll() is None, worker.communicate()
        time.sleep(0.05)
    interrupted = ids[0]
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert store.get(interrupted).status == "running"  # its lease will expire: nobody renews it
    again = run_py("batch", "run", "--until-empty", "--concurrency", "1", "--lease-seconds", "2", home=home)
    _, stderr = again.communicate(timeout=DEADLINE_S * 2)
    assert again.returncode == 0, stderr
    for job_id in ids:
        job = store.get(job_id)
        assert job.status == "completed", (job_id, job.last_error)
        log = (home / "jobs" / str(job_id) / "job.log").read_text()
        assert log.count("completed in") == 1, log
    resumed = store.get(interrupted)
    # the killed worker cost the job no attempt: it is counted as an interruption
    assert resumed.attempts == 1 and resumed.interruptions == 1
    assert resumed.result is not None and resumed.result["chunks_skipped"] == 1
    reference = tmp_path / "reference.mp4"
    index = ids.index(interrupted)
    process(SwapJob.of(CHUNKED, [face], clips[index], reference), RunContext(work_dir=tmp_path / "reference-work"))
    for got, want in zip(videos.decode_all(tmp_path / f"out{index}.mp4"), videos.decode_all(reference), strict=True):
        assert np.array_equal(got, want)
    for i in range(2):
        assert len(videos.decode_all(tmp_path / f"out{i}.mp4")) == 50


ENQUEUE = textwrap.dedent(
    """
    import sys
    from facefusion_ui.jobs.store import JobStore
    from facefusion_ui.state_manager import Settings

    db, face, target, out_dir, tag = sys.argv[1:6]
    settings = Settings(processors=("invert",)).to_dict()
    store = JobStore(__import__("pathlib").Path(db))
    for index in range(50):
        store.add({"sources": [face], "target": target, "output": f"{out_dir}/{tag}_{index}.png",
                   "settings": settings})
    """
)


def test_four_enqueuers_and_two_workers_complete_200_jobs_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    site = install_plugin(tmp_path / "site")
    face, target, out_dir = tmp_path / "face.png", tmp_path / "tiny.png", tmp_path / "out"
    out_dir.mkdir()
    cv2.imwrite(str(face), media.astronaut())
    cv2.imwrite(str(target), np.full((32, 32, 3), 70, np.uint8))
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    store = JobStore(home / "jobs.db")
    workers = [run_py("batch", "run", "--concurrency", "1", home=home, extra_env=env) for _ in range(2)]
    enqueuers = [
        subprocess.Popen(
            [sys.executable, "-c", ENQUEUE, str(store.path), str(face), str(target), str(out_dir), f"p{i}"],
            env={**os.environ, **env},
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for enqueuer in enqueuers:
        _, stderr = enqueuer.communicate(timeout=DEADLINE_S)
        assert enqueuer.returncode == 0, stderr
    deadline = time.monotonic() + DEADLINE_S
    while store.counts().get("completed", 0) < 200:
        assert time.monotonic() < deadline, store.counts()
        assert all(worker.poll() is None for worker in workers)
        time.sleep(0.2)
    errors = []
    for worker in workers:
        worker.send_signal(signal.SIGINT)  # idle workers: they stop at once, whatever they were waiting on
        _, stderr = worker.communicate(timeout=DEADLINE_S)
        errors.append(stderr)
    jobs = store.jobs()
    assert len(jobs) == 200 and store.counts() == {"completed": 200}
    assert all(job.attempts == 1 for job in jobs), "a job ran twice"
    assert len({job.result["output"] for job in jobs if job.result}) == 200
    assert len(list(out_dir.glob("*.png"))) == 200
    owners = {json.dumps(job.result["output"]) for job in jobs if job.result}
    assert len(owners) == 200
    assert not any("locked" in stderr.lower() for stderr in errors), errors

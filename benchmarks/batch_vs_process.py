"""10 jobs of 3-second clips with one source face: one ``batch run`` vs 10 separate ``run.py process``
invocations, side by side; prints the ratio (goal: batch at least 2x faster) and the source-embedding
cache hit rate of the batch (goal: 9 of 10).

Run: ``.venv/bin/python benchmarks/batch_vs_process.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.jobs.worker import Worker, WorkerOptions
from facefusion_ui.presets import apply_preset
from facefusion_ui.state_manager import StateManager
from tests.support import media, videos

JOBS = 10


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ffui-batch-"))
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    clips = [videos.write_video(work / f"clip{i}.mp4", videos.moving_face(480, 360, 75), 75) for i in range(JOBS)]
    env = {**os.environ, "FACEFUSION_UI_HOME": str(work / "home-separate")}
    started = time.perf_counter()
    for index, clip in enumerate(clips):
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "run.py"),
                "process",
                "-s",
                str(face),
                "-t",
                str(clip),
                "-o",
                str(work / f"separate{index}.mp4"),
            ],
            check=True,
            env=env,
            capture_output=True,
        )
    separate = time.perf_counter() - started

    state = StateManager()
    apply_preset(state, "balanced")
    settings = state.snapshot()
    started = time.perf_counter()
    store = JobStore(work / "home-batch" / "jobs.db")
    store.add_many([make_payload([face], clip, work / f"batch{i}.mp4", settings) for i, clip in enumerate(clips)])
    runtime = ModelRuntime.create(settings)
    worker = Worker(
        store, runtime, WorkerOptions(concurrency=settings.max_concurrent_jobs, until_empty=True, poll_s=0.05)
    )
    worker.run()
    batch = time.perf_counter() - started
    assert store.counts() == {"completed": JOBS}, store.counts()
    cache = runtime.sources.stats.to_json()
    print(f"{JOBS} separate 'run.py process': {separate:6.1f} s")
    print(f"one batch run ({settings.max_concurrent_jobs} at once): {batch:6.1f} s")
    print(f"separate / batch = {separate / batch:.2f}")
    print(f"source-embedding cache: {json.dumps(cache)}")
    print(f"model loads in the batch: {dict(runtime.embedded.loads)}")


if __name__ == "__main__":
    main()

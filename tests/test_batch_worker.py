"""The batch worker in-process on real SQLite files: retries, input errors, warm models, priority,
cancel (queued and running), pause and the memory gate."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from benchmarks.reliability_faults import LOCKER
from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.faults import ChunkHold
from facefusion_ui.jobs.outputs import claim_output
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.sqlite_backend import SqliteBackend
from facefusion_ui.jobs.store import MAX_INTERRUPTIONS, JobStore
from facefusion_ui.jobs.worker import Worker, WorkerOptions, job_dir, read_log
from facefusion_ui.output_lock import OutputLock
from facefusion_ui.state_manager import Settings
from tests.support import media, videos
from tests.support.plugins import install_plugin, registry_with_plugins

FAST = WorkerOptions(concurrency=1, poll_s=0.05, backoff_s=0.05, heartbeat_s=0.2, lease_s=5, until_empty=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("batch")
    cv2.imwrite(str(folder / "face.png"), media.astronaut())
    cv2.imwrite(str(folder / "grace.png"), media.grace_hopper())
    cv2.imwrite(str(folder / "tiny.png"), np.full((48, 64, 3), 90, np.uint8))
    videos.write_video(folder / "clip.mp4", videos.moving_face(320, 240, 80), 80)
    return {name: folder / f"{name}.png" for name in ("face", "grace", "tiny")} | {"clip": folder / "clip.mp4"}


@pytest.fixture(autouse=True)
def plugin(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_plugin(tmp_path_factory.getbasetemp() / "plugin-site")
    monkeypatch.syspath_prepend(str(site))


def payload(files: dict[str, Path], out: Path, target: str = "tiny", **settings: Any) -> dict[str, Any]:
    return make_payload([files["face"]], files[target], out, Settings(**settings))


def worker(store: JobStore, runtimes: WarmRuntimes, **options: Any) -> tuple[Worker, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    chosen = WorkerOptions(**{**FAST.__dict__, **options})
    return Worker(store, runtimes, chosen, registry=registry_with_plugins(), on_event=events.append), events


def test_transient_errors_are_retried_until_success(files: dict[str, Path], tmp_path: Path) -> None:
    import ffui_test_plugin  # type: ignore[import-not-found]

    ffui_test_plugin.Flaky.failures_left = 2
    store = JobStore(tmp_path / "jobs.db")
    job_id = store.add(payload(files, tmp_path / "out.png", target="grace", processors=("flaky",)))
    run, events = worker(store, WarmRuntimes())
    run.run()
    job = store.get(job_id)
    assert job.status == "completed" and job.attempts == 3
    assert [event["event"] for event in events] == ["retrying", "retrying", "completed"]
    log = read_log(store, job_id)
    assert log.count("error (will retry): the encoder crashed (simulated)") == 2 and "completed in" in log


def test_input_errors_fail_on_the_first_attempt(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    gone = tmp_path / "gone.png"
    cv2.imwrite(str(gone), media.grace_hopper())
    job_id = store.add(make_payload([files["face"]], gone, tmp_path / "out.png", Settings()))
    gone.unlink()  # the target disappears after it was queued
    run, events = worker(store, WarmRuntimes())
    run.run()
    job = store.get(job_id)
    assert job.status == "failed" and job.attempts == 1
    assert job.last_error is not None and "does not exist" in job.last_error
    assert events[-1]["event"] == "failed"


def test_models_and_source_are_loaded_once_for_ten_jobs(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    targets = []
    for index in range(10):
        target = tmp_path / f"t{index}.png"
        cv2.imwrite(str(target), media.grace_hopper())
        targets.append(target)
    store.add_many(
        [make_payload([files["face"]], target, tmp_path / f"o{i}.png", Settings()) for i, target in enumerate(targets)]
    )
    runtime = WarmRuntimes()
    run, _ = worker(store, runtime, concurrency=2)
    run.run()
    assert store.counts() == {"completed": 10}
    assert all(count == 1 for count in runtime.embedded.loads.values()), runtime.embedded.loads
    assert set(runtime.embedded.loads) >= {"dlib_hog", "dlib_68", "mediapipe_face_mesh"}
    cache = runtime.sources.stats
    assert (cache.misses, cache.hits) == (1, 9)  # the source face was analysed once


def test_priority_order(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    low = store.add(payload(files, tmp_path / "low.png", processors=("invert",)), priority=0)
    high = store.add(payload(files, tmp_path / "high.png", processors=("invert",)), priority=5)
    middle = store.add(payload(files, tmp_path / "middle.png", processors=("invert",)), priority=1)
    second_low = store.add(payload(files, tmp_path / "low2.png", processors=("invert",)), priority=0)
    run, events = worker(store, WarmRuntimes())
    run.run()
    assert [event["job"] for event in events] == [high, middle, low, second_low]


def test_cancel_a_queued_and_a_running_job(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    running_id = store.add(payload(files, tmp_path / "long.mp4", target="clip"))
    queued_id = store.add(payload(files, tmp_path / "never.png"))
    assert store.cancel(queued_id) == "cancelled"
    hold = ChunkHold(chunk=0, until=tmp_path / "release", frames=5)  # held 5 frames in: the cancel cannot come late
    run, events = worker(store, WarmRuntimes(), hold=hold)
    thread = threading.Thread(target=run.run)
    thread.start()
    deadline = time.monotonic() + 120
    while not hold.marker.exists():
        assert time.monotonic() < deadline and thread.is_alive(), "the job never reached its fifth frame"
        time.sleep(0.05)
    assert store.cancel(running_id) == "running"
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert store.get(running_id).status == "cancelled" and store.get(queued_id).status == "cancelled"
    assert not (tmp_path / "long.mp4").exists() and not (tmp_path / "never.png").exists()
    assert not (job_dir(store, running_id) / "work").exists(), "a cancelled job cleans up its segments"
    assert [event["event"] for event in events] == ["cancelled"]


def test_pause_and_memory_gate_hold_new_jobs(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    job_id = store.add(payload(files, tmp_path / "out.png", processors=("invert",)))
    free = [100]
    run, _ = worker(store, WarmRuntimes(), until_empty=False, memory_threshold_mb=500, available_mb=lambda: free[0])
    store.set_paused(True)
    thread = threading.Thread(target=run.run)
    thread.start()
    time.sleep(0.5)
    assert store.get(job_id).status == "queued"
    store.set_paused(False)
    time.sleep(0.5)
    job = store.get(job_id)
    assert job.status == "queued" and job.status_line == "waiting for memory: 100 MB free, 500 MB needed"
    free[0] = 4000
    deadline = time.monotonic() + 60
    while store.get(job_id).status != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run.stop.set()
    thread.join(timeout=30)


def test_a_queue_from_before_interruptions_were_counted_is_migrated(tmp_path: Path) -> None:
    import sqlite3

    from facefusion_ui.jobs.store import MIGRATIONS

    path = tmp_path / "jobs.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(MIGRATIONS[0] + "; PRAGMA user_version=1;")
    old.execute(
        "INSERT INTO jobs (payload, created_at, updated_at, attempts) VALUES (?, 0, 0, 1)",
        ('{"sources": [], "target": "x", "output": "y", "settings": {}}',),
    )
    old.close()
    store = JobStore(path)
    assert store.schema_version() == 2
    (job,) = store.jobs()
    assert (job.attempts, job.interruptions) == (1, 0)


def test_store_basics(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    assert store.schema_version() == 2
    job_id = store.add({"sources": [], "target": "x", "output": "y", "settings": {}})
    claimed = store.claim("a", lease_s=60)
    assert claimed is not None and claimed.id == job_id and claimed.attempts == 1
    assert store.claim("b", lease_s=60) is None  # never two workers on one job
    store.remove(store.add({"sources": [], "target": "z", "output": "w", "settings": {}}))
    with pytest.raises(Exception, match="is running: cancel it first"):
        store.remove(job_id)
    assert store.fail(job_id, "a", "disk full", transient=True, backoff_s=60) == "queued"
    assert store.claim("b", lease_s=60) is None  # waiting for its backoff
    assert store.get(job_id).status_line == "retry 2/3 in 60 s"


def test_a_queue_locked_by_another_process_for_5_s_is_waited_for(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    store.set_paused(False)  # a settings row for the locker to write
    first = store.add(payload(files, tmp_path / "first.png", processors=("invert",)))
    locked = tmp_path / "locked"
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(store.path), str(locked)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not locked.exists():
        assert time.monotonic() < deadline and locker.poll() is None, locker.communicate()
        time.sleep(0.01)
    since = time.monotonic()
    run, _ = worker(store, WarmRuntimes())
    thread = threading.Thread(target=run.run)
    thread.start()  # its first claim waits for the lock
    job_id, output = claim_output(
        SqliteBackend(store), payload(files, tmp_path / "second.png", processors=("invert",)), made=True
    )
    assert time.monotonic() - since > 4, "the lock was held while adding"
    assert output == tmp_path / "second.png" and store.get(int(job_id)).status in ("queued", "running", "completed")
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert store.get(first).status == "completed", store.get(first).last_error
    assert locker.wait(timeout=60) == 0


def test_a_dead_worker_costs_no_attempt_and_endless_deaths_fail_the_job(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    job_id = store.add(payload(files, tmp_path / "out.png"))
    for claim in range(MAX_INTERRUPTIONS):  # each worker dies: its lease has run out at once
        claimed = store.claim(f"worker-{claim}", lease_s=-1)
        assert claimed is not None and claimed.id == job_id
        assert (claimed.attempts, claimed.interruptions) == (1, claim)
    assert store.claim("one-more", lease_s=60) is None  # the last worker's death was the limit
    job = store.get(job_id)
    assert job.status == "failed" and job.last_error == f"its worker stopped {MAX_INTERRUPTIONS} times while running it"


def test_an_output_another_run_holds_is_waited_for_at_no_attempts_cost(files: dict[str, Path], tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    output = tmp_path / "out.png"
    job_id = store.add(payload(files, output, target="grace"))
    run, events = worker(store, WarmRuntimes())
    holder = OutputLock(output)
    holder.acquire()  # another run (here a second open of the lock file) writes the same output
    thread = threading.Thread(target=run.run)
    thread.start()
    deadline = time.monotonic() + 300
    while sum(event["event"] == "waiting" for event in events) < 2:  # it waits as long as the other run writes
        assert time.monotonic() < deadline and thread.is_alive(), events
        time.sleep(0.02)
    holder.release()
    thread.join(timeout=300)
    job = store.get(job_id)
    assert job.status == "completed" and job.attempts == 1, job.last_error
    assert "another run" in read_log(store, job_id) and output.exists()

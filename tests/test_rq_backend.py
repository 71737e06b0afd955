"""The queue on a real redis-server (started here on a free loopback port) with real RQ worker
processes: jobs complete exactly once, a killed worker's job is finished by the other from its chunk
manifest, bad input fails without retries, and the same CLI commands see the same jobs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest
from redis import Redis
from rq import Worker as RqWorker

from facefusion_ui.errors import JobError
from facefusion_ui.jobs.outputs import claim_output
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.rq_backend import RqBackend, job_folder, resume_note
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT
from tests.support import media, videos

CHUNKED = Settings(video_chunk_size=1, output_video_preset="ultrafast")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis(port: int, folder: Path | None = None) -> subprocess.Popen[bytes]:
    """redis-server on ``port``, answering when this returns; with ``folder`` it saves its data there when
    stopped (SIGTERM) and loads it when started again, as a server with persistence does."""
    keep = ["--dir", str(folder), "--save", "3600 1"] if folder is not None else ["--save", ""]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", *keep, "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            Redis(port=port).ping()
            return server
        except Exception:
            assert time.monotonic() < deadline and server.poll() is None, "redis-server did not start"
            time.sleep(0.1)


def stop_redis(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    port = free_port()
    server = start_redis(port)
    yield f"redis://127.0.0.1:{port}/0"
    stop_redis(server)


@pytest.fixture
def backend(redis_url: str, private_home: Path) -> RqBackend:
    connected = RqBackend.connect(redis_url)
    connected.connection.flushdb()
    return connected


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rq") / "face.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def start_worker(url: str, home: Path, *extra: str, hold: str = "") -> subprocess.Popen[str]:
    """A worker process; its output goes to a file (a pipe nobody reads would block it once full);
    ``hold``: a ``FACEFUSION_UI_INJECT_FAULT`` hold for it."""
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), **({"FACEFUSION_UI_INJECT_FAULT": hold} if hold else {})}
    home.mkdir(parents=True, exist_ok=True)
    log = (home / f"worker-{time.monotonic_ns()}.log").open("w")
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "worker", "--backend", url, *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )


def wait_until(condition: object, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def test_two_workers_one_killed_every_job_completes_once(
    backend: RqBackend, redis_url: str, face: Path, tmp_path: Path, private_home: Path
) -> None:
    clips = [videos.write_video(tmp_path / f"clip{i}.mp4", videos.moving_face(240, 180, 50), 50) for i in range(6)]
    ids = [backend.add(make_payload([face], clip, tmp_path / f"out{i}.mp4", CHUNKED)) for i, clip in enumerate(clips)]
    # each worker is held once, in the second chunk of the first job that gets there (its first chunk is
    # finished): the kill lands at that known point, never raced
    release = tmp_path / "release"
    hold = f"hold:chunk=2,until={release}"
    workers = [start_worker(redis_url, private_home, hold=hold) for _ in range(2)]
    try:
        wait_until(release.with_name("release.held").exists, 240, "no job reached its second chunk")

        def held_job() -> str | None:
            for worker in RqWorker.all(connection=backend.connection):
                job_id = worker.get_current_job_id()
                manifest = job_folder(job_id) / "work" / "manifest.json" if job_id else None
                if manifest is not None and manifest.exists() and len(json.loads(manifest.read_text())["done"]) == 1:
                    return job_id
            return None

        wait_until(lambda: held_job() is not None, 60, "the held job is not listed as running")
        victim = held_job()
        assert victim is not None
        running = {w.get_current_job_id(): w.pid for w in RqWorker.all(connection=backend.connection)}
        killed = next(worker for worker in workers if worker.pid == running[victim])
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        release.touch()  # the other worker goes on (its own hold, if it fired, ends here)
        kept = len(json.loads((job_folder(victim) / "work" / "manifest.json").read_text())["done"])
        wait_until(
            lambda: all(backend.get(job_id).status == "completed" for job_id in ids), 300, "not every job completed"
        )
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGINT)
                worker.wait(timeout=60)
    for job_id in ids:
        assert backend.log(job_id).count("completed:") == 1, backend.log(job_id)
    assert "not on storage shared" not in backend.log(victim)  # they are: the resume found its chunk
    resumed = backend.get(victim)
    assert kept == 1 and resumed.attempts == 2
    assert resumed.result is not None and resumed.result["chunks_skipped"] == kept
    for index in range(6):
        assert len(videos.decode_all(tmp_path / f"out{index}.mp4")) == 50


def worker_log(home: Path) -> Path:
    (log,) = home.glob("worker-*.log")
    return log


def test_an_idle_worker_waits_for_redis_and_ctrl_c_ends_it_with_130(tmp_path: Path, private_home: Path) -> None:
    port = free_port()
    server = start_redis(port, tmp_path)
    connection = Redis(port=port)
    worker = start_worker(f"redis://127.0.0.1:{port}/0", private_home)
    lost = f"lost the connection to Redis at redis://127.0.0.1:{port}/0; retrying in "

    def said_lost(times: int) -> bool:
        return worker_log(private_home).read_text().count(lost) >= times

    try:
        idle = lambda: any(w.get_state() == "idle" for w in RqWorker.all(connection=connection))  # noqa: E731
        wait_until(idle, 120, "the worker did not start listening")
        stop_redis(server)
        wait_until(lambda: said_lost(1), 60, "the worker did not say Redis is away")
        server = start_redis(port, tmp_path)
        wait_until(idle, 120, "the worker did not listen again")
        said = worker_log(private_home).read_text().count(lost)
        stop_redis(server)  # away again, and Ctrl-C meanwhile
        wait_until(lambda: said_lost(said + 1), 60, "the worker did not say Redis is away again")
        worker.send_signal(signal.SIGINT)
        assert worker.wait(timeout=60) == 130
    finally:
        if worker.poll() is None:
            worker.kill()
        stop_redis(server)
    text = worker_log(private_home).read_text()
    assert "Traceback" not in text and "could not connect" not in text, text


def test_a_busy_worker_waits_for_redis_and_its_job_completes(face: Path, tmp_path: Path, private_home: Path) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = start_redis(port, tmp_path)
    backend = RqBackend.connect(url)
    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(160, 120, 50), 50)
    job_id = backend.add(make_payload([face], clip, tmp_path / "out.mp4", CHUNKED))
    release = tmp_path / "release"
    worker = start_worker(url, private_home, hold=f"hold:chunk=2,until={release}")
    try:
        wait_until(release.with_name("release.held").exists, 240, "the job did not reach its second chunk")
        stop_redis(server)  # under the busy worker, held in the job's second chunk
        lost = f"lost the connection to Redis at {url}; retrying in "
        wait_until(lambda: lost in worker_log(private_home).read_text(), 60, "the worker did not say Redis is away")
        server = start_redis(port, tmp_path)  # on the same port, with the data it saved
        release.touch()
        wait_until(lambda: backend.get(job_id).status == "completed", 300, "the job did not complete")
        target = tmp_path / "grace.png"
        cv2.imwrite(str(target), media.grace_hopper())
        later = backend.add(make_payload([face], target, tmp_path / "later.png", Settings()))
        wait_until(lambda: backend.get(later).status == "completed", 300, "no job was taken after Redis came back")
        assert backend.get(job_id).attempts == 1
    finally:
        worker.send_signal(signal.SIGINT)
        worker.wait(timeout=60)
        stop_redis(server)
    assert "Traceback" not in worker_log(private_home).read_text()
    assert len(videos.decode_all(tmp_path / "out.mp4")) == 50


def test_bad_input_fails_once_and_cli_lists_the_same_jobs(
    backend: RqBackend, redis_url: str, face: Path, tmp_path: Path, private_home: Path
) -> None:
    target = tmp_path / "grace.png"
    cv2.imwrite(str(target), media.grace_hopper())
    good = backend.add(make_payload([face], target, tmp_path / "good.png", Settings()), priority=1)
    gone = tmp_path / "gone.png"
    cv2.imwrite(str(gone), media.grace_hopper())
    bad = backend.add(make_payload([face], gone, tmp_path / "bad.png", Settings()))
    gone.unlink()
    later = backend.add(make_payload([face], target, tmp_path / "later.png", Settings()), priority=-1)
    assert backend.cancel(later) == "cancelled"
    worker = start_worker(redis_url, private_home, "--burst")
    assert worker.wait(timeout=300) == 0
    assert backend.get(good).status == "completed"
    failed = backend.get(bad)
    assert failed.status == "failed" and failed.attempts == 1
    assert failed.last_error is not None and "does not exist" in failed.last_error
    env = {**os.environ, "FACEFUSION_UI_HOME": str(private_home)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "run.py"), "batch", *args, "--backend", redis_url],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )

    listed = json.loads(cli("list", "--json").stdout)
    assert {job["id"]: job["status"] for job in listed} == {good: "completed", bad: "failed", later: "cancelled"}
    shown = cli("show", bad)
    assert shown.returncode == 0 and "failed:" in shown.stdout and "does not exist" in shown.stdout
    retried = cli("retry", later)
    assert retried.returncode == 0 and backend.get(later).status == "queued"
    assert cli("remove", good).returncode == 0
    assert good not in {job.id for job in backend.jobs()}
    missing = cli("show", "no-such-job")
    assert missing.returncode == 2 and "no job no-such-job" in missing.stderr


def test_unreachable_redis_is_one_clear_line(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), "batch", "list", "--backend", f"redis://127.0.0.1:{free_port()}/0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: cannot reach Redis at") and "start redis-server" in completed.stderr


def test_made_output_names_step_aside_in_redis_too(backend: RqBackend, face: Path, tmp_path: Path) -> None:
    target = tmp_path / "grace.png"
    cv2.imwrite(str(target), media.grace_hopper())
    payload = make_payload([face], target, tmp_path / "grace_swapped.png", Settings())
    outputs = [claim_output(backend, payload, made=True)[1].name for _ in range(2)]
    assert outputs == ["grace_swapped.png", "grace_swapped-2.png"]
    with pytest.raises(JobError, match="already the output of job"):
        claim_output(backend, payload)


def test_the_resume_note_blames_storage_only_without_an_earlier_log() -> None:
    assert resume_note(1, earlier_log=False) is None
    assert resume_note(2, earlier_log=True) is None  # a worker died before its first chunk: same storage
    note = resume_note(2, earlier_log=False)
    assert note is not None and "not on storage shared by the workers" in note


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc: Linux)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # ended while being read
            continue
        if any(line.split() == ["PPid:", str(pid)] for line in lines):
            found.append(int(status.parent.name))
    return found


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody has reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the scheduler's process in /proc")
def test_a_killed_workers_scheduler_ends_with_it(backend: RqBackend, redis_url: str, private_home: Path) -> None:
    """RQ runs the scheduler (it queues retries whose wait is over) in a process forked from the worker,
    which stops it on a normal exit; a worker killed outright (the OOM killer, kill -9) left it running for
    good, holding the scheduler's locks. It ends at its next turn once its worker is gone."""
    worker = start_worker(redis_url, private_home)
    try:
        wait_until(lambda: children_of(worker.pid), 120, "the worker started no scheduler process")
        schedulers = children_of(worker.pid)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        wait_until(lambda: all(ended(pid) for pid in schedulers), 60, "the scheduler outlived its killed worker")
    finally:
        if worker.poll() is None:
            worker.kill()

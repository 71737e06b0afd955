"""The queue's reliability with real processes: no two live jobs share an output (and the claim is atomic
across processes), ``--output-dir`` is created, a closed stdout is not an error, and Ctrl-C on
``batch run`` finishes (once) or stops and requeues (twice) the running job.

Interrupted runs are held at a known chunk (``FACEFUSION_UI_INJECT_FAULT=hold:...``), never raced."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import psutil
import pytest

from facefusion_ui.errors import JobError
from facefusion_ui.jobs.outputs import choose_output, claim_output
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.sqlite_backend import SqliteBackend
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT, RunCli
from tests.support import media, videos

CHUNKED = Settings(video_chunk_size=1, output_video_preset="ultrafast")
DEADLINE_S = 300


def wait_until(condition: Callable[[], bool], what: str, running: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert running is None or running.poll() is None, f"the process ended before {what}"
        time.sleep(0.05)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    face, target = tmp_path / "face.png", tmp_path / "grace.png"
    cv2.imwrite(str(face), media.astronaut())
    cv2.imwrite(str(target), media.grace_hopper())
    return {"face": face, "target": target}


# outputs ----------------------------------------------------------------------------------------------------------
def test_made_names_step_aside_and_chosen_ones_are_refused(files: dict[str, Path], tmp_path: Path) -> None:
    backend = SqliteBackend(JobStore(tmp_path / "jobs.db"))
    wanted = tmp_path / "out" / "grace_swapped.png"
    wanted.parent.mkdir()
    payload = make_payload([files["face"]], files["target"], wanted, Settings())
    first, second = (claim_output(backend, payload, made=True) for _ in range(2))
    assert first[1] == wanted and second[1] == wanted.with_name("grace_swapped-2.png")
    assert backend.get(second[0]).payload["output"] == str(second[1])
    with pytest.raises(JobError, match=f"already the output of job {first[0]} "):
        claim_output(backend, payload)
    assert claim_output(backend, payload, overwrite=True)[1] == wanted
    assert choose_output(wanted, {}, made=True, overwrite=False) == wanted
    wanted.write_bytes(b"an earlier run")
    assert choose_output(wanted, {}, made=True, overwrite=False) == wanted.with_name("grace_swapped-2.png")
    assert choose_output(wanted, {}, made=True, overwrite=True) == wanted
    with pytest.raises(JobError, match=r"exists \(from an earlier run\) and is not overwritten"):
        choose_output(wanted, {}, made=False, overwrite=False)


CLAIM = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from facefusion_ui.jobs.outputs import claim_output
    from facefusion_ui.jobs.sqlite_backend import SqliteBackend
    from facefusion_ui.jobs.store import JobStore

    db, output, ready, go = sys.argv[1:5]
    backend = SqliteBackend(JobStore(Path(db)))
    Path(ready).touch()
    while not Path(go).exists():
        pass
    for _ in range(25):
        claim_output(backend, {"sources": [], "target": "t.png", "output": output, "settings": {}}, made=True)
    """
)


def test_four_processes_claiming_at_once_never_get_the_same_name(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    output, go = tmp_path / "clip_swapped.mp4", tmp_path / "go"
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM, str(store.path), str(output), str(tmp_path / f"ready{i}"), str(go)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    wait_until(lambda: all((tmp_path / f"ready{i}").exists() for i in range(4)), "the claimers to start")
    go.touch()
    for claimer in claimers:
        _, stderr = claimer.communicate(timeout=DEADLINE_S)
        assert claimer.returncode == 0, stderr
    outputs = [job.payload["output"] for job in store.jobs()]
    assert len(outputs) == 100 and len(set(outputs)) == 100
    assert str(output) in outputs and str(tmp_path / "clip_swapped-100.mp4") in outputs


def test_batch_add_and_import_on_the_command_line(files: dict[str, Path], tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "new" / "nested"  # does not exist: batch add creates it
    add = ["batch", "add", "-s", str(files["face"]), "-t", str(files["target"]), "--output-dir", str(out)]
    first = run_cli(add)
    assert first.returncode == 0 and not first.stderr.strip(), first.stderr
    second = run_cli(add)
    assert second.returncode == 0 and "job 2 writes grace_swapped-2.png (grace_swapped.png is taken)" in second.stdout
    jobs = JobStore().jobs()
    assert [job.payload["output"] for job in jobs] == [str(out / "grace_swapped.png"), str(out / "grace_swapped-2.png")]
    entries = [
        {"sources": [str(files["face"])], "target": str(files["target"]), "output": str(out / "grace_swapped.png")}
    ]
    listing = tmp_path / "jobs.json"
    listing.write_text(json.dumps(entries))
    refused = run_cli(["batch", "import", str(listing)])
    assert refused.returncode == 2 and "already the output of job 1 " in refused.stderr
    assert "--overwrite" in refused.stderr and "Traceback" not in refused.stderr
    assert len(JobStore().jobs()) == 2
    assert run_cli(["batch", "import", str(listing), "--overwrite"]).returncode == 0
    assert len(JobStore().jobs()) == 3
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    rejected = run_cli([*add[:-1], str(blocker / "sub")])
    assert rejected.returncode == 2 and rejected.stderr.count("\n") == 1
    assert "choose another --output-dir" in rejected.stderr and " -o" not in rejected.stderr


def test_an_existing_file_is_kept_unless_overwrite(files: dict[str, Path], tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "grace_swapped.png").write_bytes(b"an earlier run")
    add = ["batch", "add", "-s", str(files["face"]), "-t", str(files["target"]), "--output-dir", str(out)]
    assert "writes grace_swapped-2.png" in run_cli(add).stdout
    entries = [
        {"sources": [str(files["face"])], "target": str(files["target"]), "output": str(out / "grace_swapped.png")}
    ]
    listing = tmp_path / "jobs.json"
    listing.write_text(json.dumps(entries))
    refused = run_cli(["batch", "import", str(listing)])
    assert refused.returncode == 2 and "exists (from an earlier run) and is not overwritten" in refused.stderr
    replaced = run_cli([*add, "--overwrite"])
    assert replaced.returncode == 0 and "writes" not in replaced.stdout
    assert JobStore().jobs()[-1].payload["output"] == str(out / "grace_swapped.png")


def test_a_file_that_appears_at_a_queued_job_s_output_is_kept(
    files: dict[str, Path], tmp_path: Path, run_cli: RunCli
) -> None:
    out = tmp_path / "out"
    made, chosen = out / "grace_swapped.png", out / "chosen.png"
    add = ["batch", "add", "-s", str(files["face"]), "-t", str(files["target"]), "--output-dir", str(out)]
    assert run_cli(add).returncode == 0
    listing = tmp_path / "jobs.json"
    listing.write_text(
        json.dumps([{"sources": [str(files["face"])], "target": str(files["target"]), "output": str(chosen)}])
    )
    assert run_cli(["batch", "import", str(listing)]).returncode == 0
    for path in (made, chosen):  # after batch add, before the jobs start
        path.write_bytes(b"a file of someone else's")
    worker = run_cli(["batch", "run", "--until-empty"], timeout=DEADLINE_S)
    assert worker.returncode == 0 and "Traceback" not in worker.stderr, worker.stderr
    assert made.read_bytes() == chosen.read_bytes() == b"a file of someone else's"
    store = JobStore()
    stepped, refused = store.jobs()
    assert stepped.status == "completed" and stepped.result is not None
    assert (
        stepped.result["output"] == str(out / "grace_swapped-2.png")
        and cv2.imread(stepped.result["output"]) is not None
    )
    log = (store.path.parent / "jobs" / str(stepped.id) / "job.log").read_text()
    assert "grace_swapped.png appeared after the job was queued and is kept: writing grace_swapped-2.png instead" in log
    assert refused.status == "failed" and refused.attempts == 1
    assert refused.last_error == (
        f"output {chosen} appeared after the job was queued and is kept: choose another output, "
        "or queue the job again with --overwrite to replace it"
    )


# a closed stdout ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("big", [False, True], ids=["small-output", "big-output"])
def test_a_closed_stdout_is_not_an_error(files: dict[str, Path], big: bool, private_home: Path) -> None:
    store = JobStore()
    job_id = store.add(make_payload([files["face"]], files["target"], files["target"].with_name("o.png"), Settings()))
    log = private_home / "jobs" / str(job_id) / "job.log"
    log.parent.mkdir(parents=True)
    log.write_text("a line of the log\n" * (20_000 if big else 1))
    reading, writing = os.pipe()
    os.close(reading)  # the reader is gone before the command writes a byte (as 'head -1' after its line)
    try:
        shown = subprocess.run(
            [sys.executable, str(ROOT / "run.py"), "batch", "show", str(job_id)],
            stdout=writing,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=DEADLINE_S,
        )
    finally:
        os.close(writing)
    assert shown.returncode == 0 and shown.stderr == ""


# Ctrl-C on batch run ------------------------------------------------------------------------------------------------
def start_worker(home: Path, release: Path, log: Path) -> subprocess.Popen[str]:
    """``batch run`` in its own process group, as a terminal runs it, held when its job reaches chunk 2."""
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), "FACEFUSION_UI_INJECT_FAULT": f"hold:chunk=2,until={release}"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "batch", "run", "--concurrency", "1"],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )


def ctrl_c(worker: subprocess.Popen[str]) -> None:
    os.killpg(worker.pid, signal.SIGINT)  # what a terminal sends: to the whole foreground group


@pytest.fixture
def clip_jobs(files: dict[str, Path], tmp_path: Path, private_home: Path) -> tuple[JobStore, list[int]]:
    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(160, 120, 60), 60)
    store = JobStore()
    payloads = [make_payload([files["face"]], clip, tmp_path / f"out{i}.mp4", CHUNKED) for i in range(2)]
    return store, store.add_many(payloads)


def test_one_ctrl_c_finishes_the_running_job_and_starts_no_other(
    clip_jobs: tuple[JobStore, list[int]], tmp_path: Path, private_home: Path
) -> None:
    store, (first, second) = clip_jobs
    release, log = tmp_path / "release", tmp_path / "stderr.txt"
    worker = start_worker(private_home, release, log)
    wait_until(release.with_name("release.held").exists, "the job to reach chunk 2", worker)
    ctrl_c(worker)
    wait_until(lambda: f"finishing job {first} (Ctrl-C again to stop it now)" in log.read_text(), "the notice", worker)
    release.touch()
    stdout, _ = worker.communicate(timeout=DEADLINE_S)
    assert worker.returncode == 130, log.read_text()
    assert "Traceback" not in log.read_text() and f"job {first} completed" in stdout
    assert store.get(first).status == "completed"
    untouched = store.get(second)
    assert untouched.status == "queued" and untouched.attempts == 0 and untouched.started_at is None


def test_two_ctrl_c_stop_the_job_now_and_it_resumes(
    clip_jobs: tuple[JobStore, list[int]], tmp_path: Path, private_home: Path
) -> None:
    store, (first, _) = clip_jobs
    release, log = tmp_path / "release", tmp_path / "stderr.txt"
    worker = start_worker(private_home, release, log)
    wait_until(release.with_name("release.held").exists, "the job to reach chunk 2", worker)
    children = psutil.Process(worker.pid).children(recursive=True)
    assert any("ffmpeg" in child.name() for child in children)
    ctrl_c(worker)
    wait_until(lambda: "Ctrl-C again" in log.read_text(), "the notice", worker)
    ctrl_c(worker)
    stdout, _ = worker.communicate(timeout=DEADLINE_S)
    stderr = log.read_text()
    assert worker.returncode == 130, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr
    assert stdout.strip().splitlines() == [
        f"job {first} stopped: queued again, the next 'batch run' resumes it from its finished chunks"
    ]
    wait_until(
        lambda: not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE], "ffmpeg to end"
    )
    job = store.get(first)
    assert job.status == "queued" and job.attempts == 0 and job.lease_owner is None
    manifest = private_home / "jobs" / str(first) / "work" / "manifest.json"
    kept = len(json.loads(manifest.read_text())["done"])
    assert kept >= 1  # chunk 1, and chunk 2 when its frames were all analysed before the stop
    again = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), "batch", "run", "--until-empty", "--concurrency", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "FACEFUSION_UI_HOME": str(private_home)},
        cwd=ROOT,
        timeout=DEADLINE_S * 2,
    )
    assert again.returncode == 0, again.stderr
    resumed = store.get(first)
    assert resumed.status == "completed" and resumed.result is not None and resumed.result["chunks_skipped"] == kept
    assert "stopped by Ctrl-C" in (private_home / "jobs" / str(first) / "job.log").read_text()

"""Faults against the SQLite batch queue, each on real processes, with a table of what happened.

- SIGKILL of the worker (``run.py batch run``) at 10 seeded points: each worker is held (a test hold, so
  the kill never races the work) once its job has done a seeded number of frames in that run, then
  killed there, and a new one started; after the last kill the queue is worked to the end. Every job
  must complete exactly once (one completion in its log, one output), with frames identical to an
  uninterrupted run, and no ffmpeg of the killed workers may be left running.
- ffmpeg killed mid-chunk: the worker is held at a known chunk, its encoder is killed, the hold released;
  the chunk fails, the job is retried and completes with the same frames.
- The SQLite file locked by another process for 5 s: a ``batch add`` and a worker started during the lock
  wait for it and go on.

Run: ``.venv/bin/python benchmarks/reliability_faults.py [--seed N] [--kills N]``; exit code 1 when a
fault loses, repeats or changes a job.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np
import psutil

from facefusion_ui.jobs.store import Job, JobStore
from tests.support import media, videos

FRAMES = 100
CHUNK_FRAMES = 20  # one second at 25 fps, cut on the detection groups' grid of 20 frames
SETTINGS = ("--video-chunk-size", "1", "--output-video-quality", "100")
LEASE_S = "3"
DEADLINE_S = 600.0
LOCKER = """
import sqlite3, sys, time, pathlib
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
connection.execute("UPDATE settings SET value = value")
pathlib.Path(sys.argv[2]).touch()
time.sleep(5)
connection.execute("COMMIT")
"""


@dataclass(frozen=True)
class Row:
    fault: str
    outcome: str
    ok: bool


@dataclass(frozen=True)
class Drill:
    """The inputs every fault works on: a face photo, clips, and their frames from an uninterrupted run."""

    folder: Path
    face: Path
    clips: tuple[Path, ...]
    reference: dict[str, list[np.ndarray]]


def wait_until(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.05)


def cli(args: Sequence[str], home: Path, **extra_env: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), **extra_env}
    command = [sys.executable, str(ROOT / "run.py"), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def finished(running: subprocess.Popen[str]) -> tuple[int, str]:
    _, stderr = running.communicate(timeout=DEADLINE_S)
    return running.returncode, stderr


def prepare(folder: Path, clips: int) -> Drill:
    face = folder / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    made = tuple(
        videos.write_video(folder / f"clip{i}.mp4", videos.moving_face(160, 120, FRAMES, cut_at=40 + 10 * i), FRAMES)
        for i in range(clips)
    )
    reference: dict[str, list[np.ndarray]] = {}
    for clip in made:
        output = folder / f"reference_{clip.stem}.mp4"
        args = ["process", "-s", str(face), "-t", str(clip), "-o", str(output), *SETTINGS]
        code, stderr = finished(cli(args, folder / "reference-home"))
        if code != 0:
            raise RuntimeError(f"the uninterrupted run of {clip.name} failed: {stderr}")
        reference[f"{clip.stem}_swapped.mp4"] = videos.decode_all(output)
    return Drill(folder, face, made, reference)


def add_jobs(drill: Drill, home: Path, out: Path, clips: Sequence[Path]) -> None:
    args = ["batch", "add", "-s", str(drill.face), "--output-dir", str(out), *SETTINGS]
    for clip in clips:
        args += ["-t", str(clip)]
    code, stderr = finished(cli(args, home))
    if code != 0:
        raise RuntimeError(f"batch add failed: {stderr}")


def worker(home: Path, lease_s: str = LEASE_S, **extra_env: str) -> subprocess.Popen[str]:
    """A worker; the drills that kill it use a short lease so the next one takes its job over soon."""
    return cli(["batch", "run", "--until-empty", "--lease-seconds", lease_s], home, **extra_env)  # jobs carry SETTINGS


def ffmpeg_of(home: Path) -> list[psutil.Process]:
    """ffmpeg processes working in ``home`` (the killed workers' children included)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if "ffmpeg" in (process.info["name"] or "") and str(home) in " ".join(process.info["cmdline"] or ()):
                found.append(process)
        except psutil.Error:
            continue
    return found


def kill_at(home: Path, frames: int, release: Path) -> bool:
    """Start a worker, hold it once its job has done ``frames`` frames in this run (a point inside a
    chunk, never raced), and SIGKILL it there. False when the worker ended first (the queue was done)."""
    running = worker(home, FACEFUSION_UI_INJECT_FAULT=f"hold:frames={frames},until={release}")
    marker = release.with_name(release.name + ".held")
    wait_until(lambda: marker.exists() or running.poll() is not None, f"the hold {frames} frames in")
    if not marker.exists():
        return False
    running.send_signal(signal.SIGKILL)
    running.wait()
    return True


def completions(home: Path, job: Job) -> int:
    log = home / "jobs" / str(job.id) / "job.log"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return sum(1 for line in text.splitlines() if "completed in" in line)


def same_frames(drill: Drill, output: Path) -> bool:
    want = drill.reference[output.name]
    got = videos.decode_all(output) if output.exists() else []
    return len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def sigkill_drill(drill: Drill, seed: int, kills: int) -> list[Row]:
    home, out = drill.folder / "sigkill-home", drill.folder / "sigkill-out"
    add_jobs(drill, home, out, drill.clips)
    store = JobStore(home / "jobs.db")
    rng = random.Random(seed)
    points = [rng.randint(2, 2 * CHUNK_FRAMES) for _ in range(kills)]  # frames into each worker's run
    done = sum(1 for k, frames in enumerate(points) if kill_at(home, frames, drill.folder / f"release-{k}"))
    code, stderr = finished(worker(home))
    jobs = store.jobs()
    once = all(job.status == "completed" and completions(home, job) == 1 for job in jobs)
    identical = all(same_frames(drill, Path(job.payload["output"])) for job in jobs)
    outputs = sorted(path.name for path in out.iterdir() if not path.name.startswith("."))
    try:
        wait_until(lambda: not ffmpeg_of(home), "the killed workers' ffmpeg to end", 60)
        orphans = 0
    except TimeoutError:
        orphans = len(ffmpeg_of(home))
    return [
        Row(f"SIGKILL of the worker at {done} seeded points (seed {seed})", f"{done} kills", done == kills),
        Row("  every job completed exactly once", f"{len(jobs)} jobs, outputs {outputs}", once and code == 0),
        Row("  output frame-identical to an uninterrupted run", "identical" if identical else "DIFFERENT", identical),
        Row("  no ffmpeg left from the killed workers", f"{orphans} left", orphans == 0),
    ] + ([Row("  last worker", stderr.strip()[-200:], False)] if code != 0 else [])


def encoder_of(running: subprocess.Popen[str]) -> psutil.Process:
    children = psutil.Process(running.pid).children(recursive=True)
    return next(child for child in children if "part_segment" in " ".join(child.cmdline()))


def ffmpeg_kill_drill(drill: Drill) -> list[Row]:
    home, out, release = drill.folder / "ffmpeg-home", drill.folder / "ffmpeg-out", drill.folder / "release"
    add_jobs(drill, home, out, drill.clips[:1])
    running = worker(home, FACEFUSION_UI_INJECT_FAULT=f"hold:chunk=2,until={release}")
    wait_until(lambda: release.with_name("release.held").exists() or running.poll() is not None, "the hold")
    encoder_of(running).kill()
    release.touch()
    code, stderr = finished(running)
    job = JobStore(home / "jobs.db").jobs()[0]
    log = (home / "jobs" / str(job.id) / "job.log").read_text(encoding="utf-8")
    retried = job.status == "completed" and job.attempts == 2 and "retry" in log
    identical = same_frames(drill, Path(job.payload["output"]))
    outcome = f"{job.status} after {job.attempts} attempts" + ("" if code == 0 else f"; {stderr.strip()[-200:]}")
    return [
        Row("ffmpeg's encoder killed mid-chunk", outcome, retried and code == 0),
        Row("  output frame-identical to an uninterrupted run", "identical" if identical else "DIFFERENT", identical),
    ]


def locked_queue_drill(drill: Drill) -> list[Row]:
    home, out, locked = drill.folder / "locked-home", drill.folder / "locked-out", drill.folder / "locked"
    add_jobs(drill, home, out, drill.clips[:1])
    store = JobStore(home / "jobs.db")
    store.set_paused(False)  # a settings row for the locker to write
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(store.path), str(locked)])
    wait_until(lambda: locked.exists() or locker.poll() is not None, "the lock")
    since = time.monotonic()
    adding = cli(["batch", "add", "-s", str(drill.face), "-t", str(drill.clips[1]), "--output-dir", str(out)], home)
    running = worker(home, lease_s="30")  # the default: a 5 s lock must not cost a running job its lease
    add_code, add_err = finished(adding)
    waited = time.monotonic() - since
    run_code, run_err = finished(running)
    completed = [job.status for job in store.jobs()] == ["completed", "completed"]
    outcome = f"batch add exit {add_code} after {waited:.1f} s; worker exit {run_code}; jobs {store.counts()}"
    detail = (add_err + run_err).strip()[-200:]
    ok = add_code == 0 and run_code == 0 and completed and locker.wait() == 0
    return [Row("SQLite file locked by another process for 5 s", outcome + ("" if ok else f"; {detail}"), ok)]


def run_faults(folder: Path, seed: int = 7, kills: int = 10, clips: int = 3) -> list[Row]:
    """Every drill; ``kills`` workers killed at seeded points over ``clips`` clips (at least 2)."""
    drill = prepare(folder, clips=max(2, clips))
    return [*sigkill_drill(drill, seed, kills), *ffmpeg_kill_drill(drill), *locked_queue_drill(drill)]


def print_rows(rows: Sequence[Row]) -> None:
    width = max(len(row.fault) for row in rows)
    for row in rows:
        print(f"{row.fault.ljust(width)}  {'ok ' if row.ok else 'BAD'}  {row.outcome}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ffui-faults-") as folder:
        rows = run_faults(Path(folder), args.seed, args.kills)
    print_rows(rows)
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

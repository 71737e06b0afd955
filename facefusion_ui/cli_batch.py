"""``run.py batch ...``: the persistent queue on the command line (SQLite by default)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from facefusion_ui.errors import FacefusionError, InputError, JobError, UsageError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.jobs.backend import JobView, QueueBackend, backend_for
from facefusion_ui.jobs.payload import make_payload, output_for, validate_job
from facefusion_ui.jobs.store import Job, JobStore
from facefusion_ui.jobs.worker import Worker, WorkerOptions
from facefusion_ui.state_manager import Settings

logger = logging.getLogger(__name__)


def targets_of(args: argparse.Namespace) -> list[Path]:
    targets = [Path(target) for target in (args.targets or [])]
    if args.targets_dir:
        folder = Path(args.targets_dir)
        if not folder.is_dir():
            raise InputError(f"--targets-dir {folder} is not a folder: check the path")
        targets.extend(sorted(path for path in folder.glob(args.pattern) if path.is_file()))
    if not targets:
        raise UsageError("batch add needs -t TARGET (repeatable) or --targets-dir DIR with matching files")
    return targets


def enqueue(
    backend: QueueBackend, runtime: ModelRuntime, payloads: list[dict[str, Any]], priority: int
) -> tuple[list[str], list[tuple[str, str]]]:
    """Queue the valid jobs; record the invalid ones as failed with their reason (never retried)."""
    queued, rejected = [], []
    for payload in payloads:
        try:
            validate_job(payload, runtime)
        except FacefusionError as error:
            rejected.append((backend.add_failed(payload, str(error), priority), str(error)))
            continue
        queued.append(backend.add(payload, priority))
    return queued, rejected


def report_enqueued(queued: list[str], rejected: list[tuple[str, str]]) -> int:
    if queued:
        print(f"queued {len(queued)} job(s): {', '.join(map(str, queued))}")
    for job_id, reason in rejected:
        print(f"error: job {job_id} rejected: {reason}", file=sys.stderr)
    return 2 if rejected else 0


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    backend = backend_for(args.backend)
    runtime = ModelRuntime.create(settings)
    output_dir = Path(args.output_dir)
    payloads = [
        make_payload([Path(s) for s in args.sources], target, output_for(target, output_dir), settings)
        for target in targets_of(args)
    ]
    return report_enqueued(*enqueue(backend, runtime, payloads, args.priority))


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    path = Path(args.file)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path} cannot be read as a JSON list of jobs ({error})") from error
    if not isinstance(entries, list):
        raise InputError(f"{path} must hold a JSON list of jobs ({{'sources': [...], 'target': ..., 'output': ...}})")
    backend = backend_for(args.backend)
    runtime = ModelRuntime.create(settings)
    queued: list[str] = []
    rejected: list[tuple[str, str]] = []
    for number, entry in enumerate(entries, start=1):
        try:
            job_settings = settings.with_items(**entry.get("settings", {}))
            payload = make_payload(
                [Path(s) for s in entry["sources"]], Path(entry["target"]), Path(entry["output"]), job_settings
            )
        except (KeyError, TypeError, FacefusionError) as error:
            raise InputError(f"{path}: job {number} is incomplete or invalid ({error})") from error
        done, failed = enqueue(backend, runtime, [payload], int(entry.get("priority", 0)))
        queued += done
        rejected += failed
    return report_enqueued(queued, rejected)


def progress_text(job: JobView) -> str:
    if job.frames_total:
        return f"{100 * job.frames_done / job.frames_total:5.1f}%"
    return "  -" if job.status != "completed" else " 100%"


def run_list(args: argparse.Namespace) -> int:
    jobs = backend_for(args.backend).jobs(args.status)
    if args.json:
        print(json.dumps([job.to_json() for job in jobs], indent=1))
        return 0
    header = ["id", "status", "prio", "progress", "fps", "eta_s", "tries", "target", "info"]
    rows = []
    for job in jobs:
        info = job.last_error if job.status == "failed" else (job.status_line or "")
        eta = f"{job.eta_s:.0f}" if job.eta_s is not None and job.status == "running" else "-"
        rows.append(
            [
                job.id,
                job.status,
                str(job.priority),
                progress_text(job),
                f"{job.fps:.1f}",
                eta,
                f"{job.attempts}/{job.max_attempts}",
                Path(job.target).name,
                info or "",
            ]
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def run_show(args: argparse.Namespace) -> int:
    backend = backend_for(args.backend)
    job = backend.get(args.id)
    print(json.dumps(job.to_json(), indent=1))
    log = backend.log(job.id)
    print("--- job log ---")
    print(log.rstrip() or "(no log yet)")
    return 0


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    store = JobStore()
    runtime = ModelRuntime.create(settings)
    options = WorkerOptions(
        concurrency=args.concurrency or settings.max_concurrent_jobs,
        until_empty=args.until_empty,
        memory_threshold_mb=settings.memory_threshold_mb,
        notify=args.notify,
        on_complete=args.on_complete,
        lease_s=args.lease_seconds,
        heartbeat_s=max(0.2, args.lease_seconds / 6),
    )
    bars: dict[int, Any] = {}
    overall = tqdm(total=len(store.jobs(["queued", "running"])), unit="job", desc="jobs", disable=None, position=0)

    def on_progress(job_id: int, state: dict[str, Any]) -> None:
        bar = bars.get(job_id)
        if bar is None:
            bar = bars[job_id] = tqdm(
                total=state["frames_total"],
                unit="frame",
                desc=f"job {job_id}",
                disable=None,
                leave=False,
                position=len(bars) + 1,
            )
        bar.update(state["frames_done"] - bar.n)

    def on_event(event: dict[str, Any]) -> None:
        bar = bars.pop(event["job"], None)
        if bar is not None:
            bar.close()
        if event["event"] in ("completed", "failed", "cancelled"):
            overall.update(1)
        overall.write(f"job {event['job']} {event['event']}" + (f": {event.get('error')}" if "error" in event else ""))

    worker = Worker(store, runtime, options, on_event=on_event, on_progress=on_progress)
    try:
        worker.run()
    except KeyboardInterrupt:
        worker.stop.set()
        for job_id in list(worker.running):
            store.release(job_id, worker.owner)
        raise
    finally:
        overall.close()
    counts = store.counts()
    print(
        f"done: {counts.get('completed', 0)} completed, {counts.get('failed', 0)} failed, "
        f"{counts.get('queued', 0)} queued"
    )
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    state = backend_for(args.backend).cancel(args.id)
    print(f"job {args.id} " + ("cancelled" if state == "cancelled" else "is stopping (cancel asked)"))
    return 0


def run_retry(args: argparse.Namespace) -> int:
    backend = backend_for(args.backend)
    if args.failed:
        ids = backend.retry_failed()
        print(f"requeued {len(ids)} failed job(s)")
        return 0
    if args.id is None:
        raise UsageError("batch retry needs a job ID or --failed")
    backend.retry(args.id)
    print(f"job {args.id} queued again")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    backend_for(args.backend).remove(args.id)
    print(f"job {args.id} removed")
    return 0


def run_pause(args: argparse.Namespace) -> int:
    paused = args.batch_command == "pause"
    JobStore().set_paused(paused)
    print("queue paused: no new job starts" if paused else "queue resumed")
    return 0


def wait_for(store: JobStore, job_id: int, timeout_s: float) -> Job:
    """Until the job ends (for callers that queue and wait, like the UI)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = store.get(job_id)
        if job.status in ("completed", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    raise JobError(f"job {job_id} did not finish within {timeout_s:.0f} s")


def run_rq_workers(args: argparse.Namespace, settings: Settings) -> int:
    """``run.py worker --backend redis://...``: ``--concurrency`` warm worker processes on this machine."""
    import multiprocessing

    from facefusion_ui.jobs.rq_backend import RqBackend

    RqBackend.connect(args.backend)  # a clear error now rather than in every worker
    if args.gpu_id is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu_id)
    count = max(1, args.concurrency)
    if count == 1:
        rq_worker_process(args.backend, settings.to_json(), args.burst)
        return 0
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=rq_worker_process, args=(args.backend, settings.to_json(), args.burst))
        for _ in range(count)
    ]
    for child in processes:
        child.start()
    try:
        for child in processes:
            child.join()
    except KeyboardInterrupt:
        for child in processes:
            child.terminate()
        raise
    return 0


def rq_worker_process(url: str, settings_json: str, burst: bool) -> None:
    from facefusion_ui.jobs.rq_backend import run_worker

    settings = Settings.from_json(settings_json)
    print(f"worker on {url}: models load on first use and stay warm", flush=True)
    run_worker(url, ModelRuntime.create(settings), burst=burst)

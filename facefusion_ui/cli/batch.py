"""``run.py batch ...``: the persistent queue on the command line (SQLite by default, or Redis + RQ)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.cli.process import add_face_map_argument, face_map_from_args, source_needed
from facefusion_ui.errors import FacefusionError, InputError, JobError, UsageError
from facefusion_ui.processors.options import OptionTable
from facefusion_ui.state_manager import Settings, worker_setting_keys
from facefusion_ui.types import JobStatus, choices

if TYPE_CHECKING:  # the queue and the face analysis are imported by the actions that use them
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.jobs.views import JobView, QueueBackend
    from facefusion_ui.jobs.worker import Worker

logger = logging.getLogger(__name__)


def backend_for(url: str | None) -> QueueBackend:
    """The queue named by ``--backend`` (SQLite or Redis + RQ), imported only when an action needs it."""
    from facefusion_ui.jobs.backend import backend_for as open_backend

    return open_backend(url)


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


@dataclass
class Enqueued:
    """What ``batch add`` / ``batch import`` did, for the report."""

    queued: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def enqueue(
    backend: QueueBackend,
    runtime: ModelRuntime,
    payload: dict[str, Any],
    priority: int,
    made: bool,
    overwrite: bool,
    done: Enqueued,
) -> None:
    """Queue a valid job under a free output (see ``jobs.outputs``); record an invalid one as failed with its
    reason (never retried); refuse one whose chosen output is taken."""
    from facefusion_ui.jobs.outputs import claim_output
    from facefusion_ui.jobs.payload import validate_job

    try:
        validate_job(payload, runtime)
    except FacefusionError as error:
        done.rejected.append((backend.add_failed(payload, str(error), priority), str(error)))
        return
    try:
        job_id, output = claim_output(backend, payload, priority, made, overwrite)
    except JobError as error:
        done.refused.append(f"{Path(payload['target']).name} not queued: {error}")
        return
    done.queued.append(job_id)
    if str(output) != payload["output"]:
        done.notes.append(f"job {job_id} writes {output.name} ({Path(payload['output']).name} is taken)")


def report_enqueued(done: Enqueued) -> int:
    if done.queued:
        print(f"queued {len(done.queued)} job(s): {', '.join(done.queued)}")
    for note in done.notes:
        print(note)
    for job_id, reason in done.rejected:
        print(f"error: job {job_id} rejected: {reason}", file=sys.stderr)
    for line in done.refused:
        print(f"error: {line}", file=sys.stderr)
    return 2 if done.rejected or done.refused else 0


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.jobs.outputs import prepare_output_dir
    from facefusion_ui.jobs.payload import make_payload, output_for

    backend = backend_for(args.backend)
    targets = targets_of(args)
    output_dir = Path(args.output_dir)
    prepare_output_dir(output_dir, "--output-dir")
    face_map = face_map_from_args(args)
    if not args.sources and not face_map and source_needed(settings):
        raise UsageError("batch add needs -s SOURCE or --face-map WHO=SOURCE (see 'run.py batch add --help')")
    runtime = ModelRuntime.create(settings)
    done = Enqueued()
    for target in targets:
        sources = [Path(s) for s in args.sources or ()]
        payload = make_payload(sources, target, output_for(target, output_dir), settings, face_map)
        enqueue(backend, runtime, payload, args.priority, True, args.overwrite, done)
    return report_enqueued(done)


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    from facefusion_ui.faces.face_map import parse_face_map
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.jobs.payload import make_payload

    path = Path(args.file)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path} cannot be read as a JSON list of jobs ({error})") from error
    if not isinstance(entries, list):
        raise InputError(f"{path} must hold a JSON list of jobs ({{'sources': [...], 'target': ..., 'output': ...}})")
    backend = backend_for(args.backend)
    runtime = ModelRuntime.create(settings)
    done = Enqueued()
    for number, entry in enumerate(entries, start=1):
        try:
            job_settings = settings.with_items(**entry.get("settings", {}))
            face_map = [parse_face_map(text) for text in entry.get("face_map", [])]
            sources = [Path(s) for s in entry.get("sources", [])]  # none: the job's processors put no face in
            if sources and face_map:
                raise UsageError("give either 'sources' or 'face_map', not both")
            payload = make_payload(sources, Path(entry["target"]), Path(entry["output"]), job_settings, face_map)
        except (KeyError, TypeError, AttributeError, FacefusionError) as error:
            raise InputError(f"{path}: job {number} is incomplete or invalid ({error})") from error
        enqueue(backend, runtime, payload, int(entry.get("priority", 0)), False, args.overwrite, done)
    return report_enqueued(done)


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


class WorkerDisplay:
    """Progress bars per job and one line per finished job (tqdm: bars only on a terminal)."""

    def __init__(self, jobs: int) -> None:
        from tqdm import tqdm

        self.tqdm = tqdm
        self.bars: dict[int, Any] = {}
        self.overall = self.tqdm(total=jobs, unit="job", desc="jobs", disable=None, position=0)

    def on_progress(self, job_id: int, state: dict[str, Any]) -> None:
        bar = self.bars.get(job_id)
        if bar is None:
            bar = self.bars[job_id] = self.tqdm(
                total=state["frames_total"],
                unit="frame",
                desc=f"job {job_id}",
                disable=None,
                leave=False,
                position=len(self.bars) + 1,
            )
        bar.update(state["frames_done"] - bar.n)

    def on_event(self, event: dict[str, Any]) -> None:
        bar = self.bars.pop(event["job"], None)
        if bar is not None:
            bar.close()
        if event["event"] in ("completed", "failed", "cancelled"):
            self.overall.update(1)
        if event["event"] == "interrupted":
            line = "stopped: queued again, the next 'batch run' resumes it from its finished chunks"
        else:
            line = event["event"] + (f": {event.get('error')}" if "error" in event else "")
        self.overall.write(f"job {event['job']} {line}")


class CtrlC:
    """SIGINT while the worker runs: the first finishes the running jobs and starts no new one, the second
    stops them now (each goes back to the queue, its finished chunks kept), a third is a plain Ctrl-C."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.presses = 0

    def __call__(self, signum: int, frame: Any) -> None:
        self.presses += 1
        if self.presses == 1:
            running = self.worker.drain()
            names = ", ".join(map(str, running))
            text = f"finishing job {names} (Ctrl-C again to stop it now)" if running else "stopping (no job running)"
            print(text, file=sys.stderr, flush=True)
        elif self.presses == 2:
            self.worker.interrupt()
        else:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """While the worker runs (only the main thread can take signals)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    from facefusion_ui.faces.warm_runtimes import WarmRuntimes
    from facefusion_ui.faults import injected_hold
    from facefusion_ui.jobs.store import JobStore
    from facefusion_ui.jobs.worker import Worker, WorkerOptions

    store = JobStore()
    runtimes = WarmRuntimes()
    runtimes.runtime(settings)  # the worker's own execution settings are the first warm pool
    options = WorkerOptions(
        concurrency=args.concurrency or settings.max_concurrent_jobs,
        until_empty=args.until_empty,
        memory_threshold_mb=settings.memory_threshold_mb,
        notify=args.notify,
        on_complete=args.on_complete,
        lease_s=args.lease_seconds,
        heartbeat_s=max(0.2, args.lease_seconds / 6),
        hold=injected_hold(os.environ.get("FACEFUSION_UI_INJECT_FAULT")),
    )
    display = WorkerDisplay(len(store.jobs(["queued", "running"])))
    worker = Worker(store, runtimes, options, on_event=display.on_event, on_progress=display.on_progress)
    ctrl_c = CtrlC(worker)
    try:
        with ctrl_c.installed():
            worker.run()
    except KeyboardInterrupt:
        worker.interrupt()
        for job_id in list(worker.running):
            store.release(job_id, worker.owner)
        raise
    finally:
        display.overall.close()
    if ctrl_c.presses >= 2:  # the stopped jobs said so, one line each
        return 130
    counts = store.counts()
    print(
        f"done: {counts.get('completed', 0)} completed, {counts.get('failed', 0)} failed, "
        f"{counts.get('queued', 0)} queued"
    )
    return 130 if ctrl_c.presses else 0


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
    from facefusion_ui.jobs.store import JobStore

    paused = args.batch_command == "pause"
    JobStore().set_paused(paused)
    print("queue paused: no new job starts" if paused else "queue resumed")
    return 0


def add_batch_parser(
    commands: Any, processor_names: Sequence[str], backend: argparse.ArgumentParser, processor_options: OptionTable
) -> None:
    batch = commands.add_parser("batch", help="the persistent job queue")
    actions = batch.add_subparsers(dest="batch_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="queue jobs: sources x targets", parents=[backend])
    add.add_argument("-s", "--source", dest="sources", action="append", metavar="SRC")
    add_face_map_argument(add)
    add.add_argument("-t", "--target", dest="targets", action="append", metavar="TARGET")
    add.add_argument("--targets-dir", metavar="DIR", help="queue every matching file of a folder")
    add.add_argument("--pattern", default="*.mp4", help="file pattern for --targets-dir (default *.mp4)")
    add.add_argument("--output-dir", required=True, metavar="OUT")
    add.add_argument("--priority", type=int, default=0, help="higher runs first")
    add.add_argument(
        "--overwrite", action="store_true", help="replace existing output files (default: a free name, NAME-2...)"
    )
    add_settings_arguments(add, processor_names=processor_names, processor_options=processor_options)
    add.set_defaults(handler=lambda args: run_add(args, settings_from_args(args)))
    importing = actions.add_parser("import", help="queue jobs from a JSON list", parents=[backend])
    importing.add_argument("file", metavar="JOBS.json")
    importing.add_argument(
        "--overwrite", action="store_true", help="write outputs that exist or that a queued job writes too"
    )
    add_settings_arguments(importing)
    importing.set_defaults(handler=lambda args: run_import(args, settings_from_args(args)))
    listing = actions.add_parser("list", help="jobs and their progress", parents=[backend])
    listing.add_argument("--status", choices=choices(JobStatus), action="append")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=run_list)
    show = actions.add_parser("show", help="one job with its log", parents=[backend])
    show.add_argument("id")
    show.set_defaults(handler=run_show)
    run = actions.add_parser("run", help="work through the queue")
    run.add_argument("--until-empty", action="store_true", help="stop when nothing is queued")
    run.add_argument("--concurrency", type=int, help="jobs at once (default: the preset's)")
    run.add_argument("--notify", action="store_true", help="desktop notification per finished job")
    run.add_argument("--on-complete", metavar="CMD", help="command run with the job's JSON on stdin")
    run.add_argument(
        "--lease-seconds",
        type=float,
        default=30.0,
        help="a job whose worker is silent this long goes back to the queue (default 30)",
    )
    add_settings_arguments(run, keys=worker_setting_keys())  # each job carries the others
    run.set_defaults(handler=lambda args: run_worker(args, settings_from_args(args)))
    cancel = actions.add_parser("cancel", help="cancel a job", parents=[backend])
    cancel.add_argument("id")
    cancel.set_defaults(handler=run_cancel)
    retry = actions.add_parser("retry", help="queue failed jobs again", parents=[backend])
    retry.add_argument("id", nargs="?")
    retry.add_argument("--failed", action="store_true", help="every failed job")
    retry.set_defaults(handler=run_retry)
    remove = actions.add_parser("remove", help="delete a job", parents=[backend])
    remove.add_argument("id")
    remove.set_defaults(handler=run_remove)
    for name, text in (("pause", "start no new job"), ("resume", "start jobs again")):
        actions.add_parser(name, help=text).set_defaults(handler=run_pause)

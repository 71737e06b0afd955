"""One job, whichever queue it came from: unpack the payload, check its output again (a file that
appeared at its name since it was queued is kept), log, watch for a stop, report progress, run
``core.process`` and sort the outcome (completed, stopped, failed for good, failed but worth a retry).

The backends keep only their own bookkeeping: the SQLite worker its lease and heartbeat, the RQ worker
its job meta. A backend's ``check`` (called every ``check_every_s`` while the job runs) says whether the
job must stop; ``stop`` lets the worker stop the job from outside (Ctrl-C).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from facefusion_ui.core import process
from facefusion_ui.errors import CancelledError, FacefusionError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.faults import ChunkHold
from facefusion_ui.job import RunContext
from facefusion_ui.jobs.log import JobLog
from facefusion_ui.jobs.outputs import output_at_start
from facefusion_ui.jobs.payload import job_of
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings

logger = logging.getLogger(__name__)
StopReason = Literal["cancelled", "lost", "interrupted"]
"""Cancelled by the user; the lease lost to another worker; the worker interrupted (Ctrl-C twice)."""
Outcome = Literal["completed", "stopped", "failed"]


class StopSignal:
    """Why a running job must stop; the first reason wins. ``event`` is what ``process`` watches."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason: StopReason | None = None
        self._lock = threading.Lock()

    def set(self, reason: StopReason) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
        self.event.set()


@dataclass(frozen=True)
class JobHooks:
    """The backend's side of a running job."""

    report: Callable[[dict[str, Any]], None]
    """Progress (frames_done, frames_total, fps, chunk, chunks_total, eta_s) for the backend's records."""
    check: Callable[[], StopReason | None]
    """Renew the claim on the job; a reason when the job must stop."""
    check_every_s: float


@dataclass(frozen=True)
class JobResult:
    outcome: Outcome
    seconds: float
    result: dict[str, Any] | None = None
    error: str | None = None
    transient: bool = False
    exception: BaseException | None = None
    stop_reason: StopReason | None = None


def execute_job(
    payload: dict[str, Any],
    folder: Path,
    log: JobLog,
    runtimes: WarmRuntimes,
    hooks: JobHooks,
    registry: ProcessorRegistry | None = None,
    stop: StopSignal | None = None,
    hold: ChunkHold | None = None,
) -> JobResult:
    """Run the job in ``payload`` on the execution settings it was queued with (a runtime leased from
    ``runtimes``), its segments under ``folder/work``; never raises for the job's own errors."""
    stop = stop or StopSignal()
    started = time.perf_counter()
    done = threading.Event()
    watcher = threading.Thread(target=watch, args=(hooks, stop, done), name="job-watch", daemon=True)
    watcher.start()
    try:
        job = job_of(payload)
        sources, target, settings = job.photos(), job.target, job.settings
        output, moved = output_at_start(payload)
        if moved is not None:
            log.write(moved)
        log.write(
            f"sources {', '.join(map(str, sources))}; target {target}; output {output}; "
            f"preset {settings.preset}; processors {', '.join(settings.processors)}"
        )
        if job.face_map:
            log.write("face map " + "; ".join(f"{entry.who}={entry.label()}" for entry in job.face_map))
        progress = logged_progress(log, hooks.report)
        with runtimes.lease(settings) as runtime:
            context = RunContext(
                runtime=runtime,
                registry=registry,
                progress=hold.around(progress, stop.event) if hold is not None else progress,
                work_dir=folder / "work",
                cancel=stop.event,
            )
            result = process(dataclasses.replace(job, output=output), context).to_json()
            log_execution(log, settings, runtime)
            if settings.release_models == "after_job":
                runtime.release_models()
    except CancelledError as error:
        return JobResult("stopped", time.perf_counter() - started, exception=error, stop_reason=stop.reason)
    except FacefusionError as error:
        if error.detail:
            log.write(f"detail: {error.detail}")
        return failed(started, str(error), error.transient, error)
    except OSError as error:
        return failed(started, f"{type(error).__name__}: {error}", True, error)
    except Exception as error:  # an internal error: reported, retried like a transient one
        logger.exception("job in %s failed", folder)
        return failed(started, f"internal error {type(error).__name__}: {error}", True, error)
    finally:
        done.set()
        watcher.join()
    for note in result.get("recoveries", []):
        log.write(f"warning: {note}")
    return JobResult("completed", time.perf_counter() - started, result=result)


def log_execution(log: JobLog, settings: Settings, runtime: ModelRuntime) -> None:
    """What really ran against what the job asked for, and why they differ."""
    asked = ", ".join(settings.execution_providers)
    log.write(
        f"ran on {', '.join(runtime.providers_used())} at {runtime.precision()} "
        f"(asked: {asked}, device {settings.execution_device_id}, fp16 {settings.fp16})"
    )
    for message in runtime.provider_fallbacks():
        log.write(f"warning: {message}")


def failed(started: float, reason: str, transient: bool, error: BaseException) -> JobResult:
    return JobResult("failed", time.perf_counter() - started, error=reason, transient=transient, exception=error)


def watch(hooks: JobHooks, stop: StopSignal, done: threading.Event) -> None:
    while not done.wait(hooks.check_every_s):
        reason = hooks.check()
        if reason is not None:
            stop.set(reason)
            return


def logged_progress(log: JobLog, report: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """The progress callback: a log line when a chunk starts, every state to the backend."""
    last_chunk = [0]

    def progress(state: dict[str, Any]) -> None:
        if state["chunk"] != last_chunk[0]:
            log.write(f"chunk {state['chunk']}/{state['chunks_total']} at frame {state['frames_done']}")
            last_chunk[0] = state["chunk"]
        report(state)

    return progress

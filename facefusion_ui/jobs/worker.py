"""The batch worker: ``concurrency`` job threads in one process, sharing warm models and the source cache.

Each thread claims the next job (priority, then age), renews its lease while it works, reports progress,
and ends the job as completed, failed (input errors at once; transient errors after retries with
exponential backoff) or cancelled. A memory gate holds new jobs while free memory is under the preset's
threshold. Every job keeps a log in its work directory.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facefusion_ui.errors import FacefusionError, OutputBusyError
from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.faults import ChunkHold
from facefusion_ui.jobs.executor import JobHooks, JobResult, StopReason, StopSignal, execute_job
from facefusion_ui.jobs.log import JobLog
from facefusion_ui.jobs.store import TOO_LATE, Job, JobStore
from facefusion_ui.memory import system_memory
from facefusion_ui.processors.registry import ProcessorRegistry

logger = logging.getLogger(__name__)
Event = dict[str, Any]


@dataclass
class WorkerOptions:
    concurrency: int = 1
    lease_s: float = 30.0
    heartbeat_s: float = 5.0
    poll_s: float = 0.5
    backoff_s: float = 5.0
    until_empty: bool = False
    memory_threshold_mb: int = 0
    notify: bool = False
    on_complete: str | None = None
    hold: ChunkHold | None = None
    available_mb: Callable[[], int] = field(default=lambda: system_memory().available_mb)


def job_dir(store: JobStore, job_id: int) -> Path:
    return store.path.parent / "jobs" / str(job_id)


def read_log(store: JobStore, job_id: int) -> str:
    path = job_dir(store, job_id) / "job.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


class Worker:
    def __init__(
        self,
        store: JobStore,
        runtimes: WarmRuntimes,
        options: WorkerOptions,
        registry: ProcessorRegistry | None = None,
        on_event: Callable[[Event], None] | None = None,
        on_progress: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> None:
        self.store = store
        self.runtimes = runtimes
        """Warm models; each job leases a runtime on its own execution settings."""
        self.options = options
        self.registry = registry or ProcessorRegistry.discover()
        self.on_event = on_event
        self.on_progress = on_progress
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.stop = threading.Event()
        self.interrupted = threading.Event()
        self.running: dict[int, StopSignal] = {}
        self.completed: list[int] = []
        self.failure: FacefusionError | None = None
        """What stopped a job thread (e.g. the queue's disk is full), raised by ``run``."""
        self._lock = threading.Lock()

    # stopping ------------------------------------------------------------------------------------------------
    def drain(self) -> list[int]:
        """Start no new job; the running ones (returned) finish."""
        self.stop.set()
        with self._lock:
            return sorted(self.running)

    def interrupt(self) -> list[int]:
        """Stop the running jobs now (returned); each goes back to the queue and resumes from its chunks."""
        self.stop.set()
        self.interrupted.set()
        with self._lock:
            running = dict(self.running)
        for stop in running.values():
            stop.set("interrupted")
        return sorted(running)

    # the loop -----------------------------------------------------------------------------------------------
    def run(self) -> None:
        """Work until stopped (or, with ``until_empty``, until nothing is queued or running). An error that
        stops a job thread (the queue's disk is full) stops the others and is raised here."""
        threads = [
            threading.Thread(target=self._loop, name=f"job-{i}", daemon=True) for i in range(self.options.concurrency)
        ]
        for thread in threads:
            thread.start()
        try:
            while any(thread.is_alive() for thread in threads):
                for thread in threads:
                    thread.join(timeout=0.2)
        finally:
            self.stop.set()
            for thread in threads:
                thread.join()
        if self.failure is not None:
            raise self.failure

    def _loop(self) -> None:
        try:
            self._take_jobs()
        except FacefusionError as error:
            with self._lock:
                self.failure = self.failure or error
            self.stop.set()

    def _take_jobs(self) -> None:
        while not self.stop.is_set():
            if self.store.is_paused():
                self.stop.wait(self.options.poll_s)
                continue
            if not self._memory_allows():
                self.stop.wait(self.options.poll_s)
                continue
            job = self.store.claim(self.owner, self.options.lease_s)
            if job is None:
                if self.options.until_empty and not self.store.has_work():
                    return
                self.stop.wait(self.options.poll_s)
                continue
            if self.stop.is_set():  # stopped while claiming: the job stays for the next run
                self.store.release(job.id, self.owner)
                return
            self._run_job(job)

    def _memory_allows(self) -> bool:
        needed = self.options.memory_threshold_mb
        if needed <= 0:
            return True
        free = self.options.available_mb()
        if free >= needed:
            return True
        waiting = self.store.next_queued()
        if waiting is not None:
            self.store.set_status_line(waiting.id, f"waiting for memory: {free} MB free, {needed} MB needed")
        return False

    # one job -------------------------------------------------------------------------------------------------
    def _run_job(self, job: Job) -> None:
        folder = job_dir(self.store, job.id)
        log = JobLog(folder / "job.log")
        log.write(f"attempt {job.attempts}/{job.max_attempts} by {self.owner}")
        stop = StopSignal()
        with self._lock:
            self.running[job.id] = stop
        if self.interrupted.is_set():  # Ctrl-C came between the claim and here
            stop.set("interrupted")
        hooks = JobHooks(
            report=lambda state: self._report(job.id, state),
            check=lambda: self._heartbeat(job.id),
            check_every_s=self.options.heartbeat_s,
        )
        try:
            run = execute_job(
                job.payload, folder, log, self.runtimes, hooks, self.registry, stop=stop, hold=self.options.hold
            )
            self._record(job, folder, log, run)
        finally:
            with self._lock:
                self.running.pop(job.id, None)

    def _record(self, job: Job, folder: Path, log: JobLog, run: JobResult) -> None:
        if run.outcome == "completed":
            result = run.result or {}
            log.write(f"completed in {run.seconds:.1f} s: {json.dumps(result)}")
            if self.store.complete(job.id, self.owner, result):
                if self.store.get(job.id).status_line == TOO_LATE:
                    log.write("a cancel came after the last frames: too late, the output is kept")
                with self._lock:
                    self.completed.append(job.id)
                output = result.get("output", "")
                self._announce(
                    {"event": "completed", "job": job.id, "output": output, "seconds": run.seconds, "result": result}
                )
        elif run.outcome == "failed" and isinstance(run.exception, OutputBusyError):
            self.store.wait_for_output(job.id, self.owner, run.error or "", self.options.backoff_s)
            log.write(f"waiting: {run.error} (queued again; this costs no attempt)")
            self._announce({"event": "waiting", "job": job.id, "error": run.error or ""})
        elif run.outcome == "failed":
            self._failed(job, log, run.error or "", run.transient)
        elif run.stop_reason == "lost":
            log.write("stopped: another worker holds this job now (the lease expired)")
        elif run.stop_reason == "interrupted":
            self.store.release(job.id, self.owner)
            log.write("stopped by Ctrl-C: queued again, the next run resumes from its finished chunks")
            self._announce({"event": "interrupted", "job": job.id})
        else:
            shutil.rmtree(folder / "work", ignore_errors=True)
            self.store.mark_cancelled(job.id)
            log.write("cancelled")
            self._announce({"event": "cancelled", "job": job.id})

    def _report(self, job_id: int, state: dict[str, Any]) -> None:
        line = f"{state['frames_done']}/{state['frames_total']} frames, {state['fps']} fps"
        if state.get("stage") == "people":
            line = f"finding the people of the target: {line}"
        fields = {key: state[key] for key in ("frames_done", "frames_total", "fps", "chunks_total", "eta_s")}
        self.store.report(job_id, self.owner, chunk=state["chunk"], status_line=line, **fields)
        if self.on_progress is not None:
            self.on_progress(job_id, state)

    def _failed(self, job: Job, log: JobLog, reason: str, transient: bool) -> None:
        status = self.store.fail(job.id, self.owner, reason, transient, self.options.backoff_s)
        log.write(f"{'error (will retry)' if status == 'queued' else 'failed'}: {reason}")
        self._announce({"event": "retrying" if status == "queued" else "failed", "job": job.id, "error": reason})

    def _heartbeat(self, job_id: int) -> StopReason | None:
        """Renew the lease; why the job must stop when it cannot be renewed."""
        if self.store.heartbeat(job_id, self.owner, self.options.lease_s):
            return None
        return "lost" if self.store.get(job_id).lease_owner != self.owner else "cancelled"

    # notifications ----------------------------------------------------------------------------------------------
    def _announce(self, event: Event) -> None:
        text = {
            "completed": "completed",
            "failed": "failed",
            "retrying": "will be retried",
            "waiting": "waits for another run writing its output",
            "cancelled": "cancelled",
            "interrupted": "stopped and queued again",
        }[event["event"]]
        detail = event.get("output") or event.get("error") or ""
        logger.info("job %s %s%s", event["job"], text, f": {detail}" if detail else "")
        if self.on_event is not None:
            self.on_event(event)
        if self.options.notify and event["event"] in ("completed", "failed") and shutil.which("notify-send"):
            subprocess.run(
                ["notify-send", "facefusion_ui", f"job {event['job']} {text} {detail}"], check=False, timeout=10
            )
        if self.options.on_complete and event["event"] == "completed":
            job = self.store.get(event["job"])
            try:
                subprocess.run(
                    shlex.split(self.options.on_complete),
                    input=json.dumps(job.to_json()),
                    text=True,
                    check=False,
                    timeout=300,
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                logger.warning("--on-complete command failed for job %s: %s", event["job"], error)

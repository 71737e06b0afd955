"""The queue on Redis + RQ, for several machines: the same job payload, the same resume.

- Queues ``facefusion_ui-high``, ``-default`` and ``-low`` carry priorities; workers take them in that order.
- ``WarmWorker`` runs jobs in its own process (no fork per job), so models stay loaded across jobs; while
  a job runs it renews its heartbeat every few seconds. When a worker dies, RQ's registry cleanup (run
  by the other workers) finds the job abandoned and queues it again (``Retry``), and the next worker
  resumes it from the chunk manifest in ``FACEFUSION_UI_HOME/jobs/rq-ID/work`` - which must be on storage
  every worker shares (NFS, SMB...). Without shared storage the job starts again from its first chunk and
  its log says so.
- Bad input fails at once (no retry); transient errors (out of memory, ffmpeg, I/O) are retried 3 times
  with growing waits; cancel works for queued and running jobs.
- When Redis goes away a worker says so in one line and waits for it, each wait twice the last (up to
  30 s): an idle worker (and its scheduler) goes on listening once Redis is back, a busy one goes on with
  its job (progress reports wait for Redis) and records the outcome once Redis answers again.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from facefusion_ui.errors import DependencyError, JobError

try:
    from redis import Redis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from rq import Queue, Retry, SimpleWorker, get_current_job
    from rq.job import Job as RqJob
    from rq.job import JobStatus as RqStatus
    from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
    from rq.scheduler import RQScheduler
except ModuleNotFoundError as missing:  # the optional 'redis' extra is not installed
    raise DependencyError(
        f"the Redis backend needs the package '{missing.name}', which is not installed: "
        "install the redis extra with 'python -m facefusion_ui.installer --extras redis'"
    ) from missing

from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.faults import ChunkHold
from facefusion_ui.jobs.executor import JobHooks, JobResult, StopReason, execute_job
from facefusion_ui.jobs.log import JobLog
from facefusion_ui.jobs.outputs import OutputChooser
from facefusion_ui.jobs.views import JobView
from facefusion_ui.paths import home_dir
from facefusion_ui.types import JobStatus

logger = logging.getLogger(__name__)
QUEUE_NAMES = ("facefusion_ui-high", "facefusion_ui-default", "facefusion_ui-low")
RETRY_WAITS_S = [5, 15, 45]
KEEP_S = 7 * 24 * 3600
LOST = (RedisConnectionError, RedisTimeoutError)
"""What redis-py raises when the server is away."""
MAX_WAIT_S = 30.0
current_runtimes: contextvars.ContextVar[WarmRuntimes] = contextvars.ContextVar("facefusion_ui_runtimes")
"""The worker's warm models, visible to the job function it is running."""
current_hold: contextvars.ContextVar[ChunkHold | None] = contextvars.ContextVar("facefusion_ui_hold", default=None)
"""The worker's hold (tests, drills): it fires once per worker process, at its first job that gets there."""


def queue_for(priority: int) -> str:
    return QUEUE_NAMES[0] if priority > 0 else QUEUE_NAMES[2] if priority < 0 else QUEUE_NAMES[1]


def job_folder(job_id: str) -> Path:
    return home_dir() / "jobs" / f"rq-{job_id}"


def address_of(connection: Redis) -> str:
    """``redis://HOST:PORT/DB`` of a connection, without its password."""
    kwargs = connection.connection_pool.connection_kwargs
    return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def lost_line(connection: Redis, wait_s: float) -> str:
    return f"lost the connection to Redis at {address_of(connection)}; retrying in {wait_s:g} s"


def until_reachable(connection: Redis) -> None:
    """Return once Redis answers; while it does not, say so in one line and wait, each wait twice the
    last (up to ``MAX_WAIT_S``)."""
    wait = 1.0
    while True:
        try:
            connection.ping()
            return
        except LOST:
            print(lost_line(connection, wait), file=sys.stderr, flush=True)
            time.sleep(wait)
            wait = min(wait * 2, MAX_WAIT_S)


def save_meta(job: RqJob) -> None:
    """``job.save_meta()``, waiting for Redis when it is away."""
    while True:
        try:
            job.save_meta()
            return
        except LOST:
            until_reachable(job.connection)


def resume_note(attempt: int, earlier_log: bool) -> str | None:
    """What the job log says at the start of an attempt about the earlier ones' work: nothing on a first
    attempt or when an earlier attempt's log is here (its finished chunks, if any, are too)."""
    if attempt <= 1 or earlier_log:
        return None
    return (
        "no job folder from the earlier attempt here: starting from the first chunk "
        "(job folders are not on storage shared by the workers)"
    )


# The job function (runs inside a worker) ----------------------------------------------------------------------
def run_job(payload: dict[str, Any]) -> dict[str, Any] | None:
    job = get_current_job()
    assert job is not None
    folder = job_folder(job.id)
    earlier_log = (folder / "job.log").exists()
    log = JobLog(folder / "job.log")
    attempt = int(job.meta.get("attempts", 0)) + 1
    job.meta.update({"attempts": attempt, "status_line": "running", "last_error": None})
    save_meta(job)
    log.write(f"attempt {attempt} on {job.worker_name}")
    note = resume_note(attempt, earlier_log)
    if note is not None:
        log.write(note)

    def report(state: dict[str, Any]) -> None:
        job.meta.update(
            {key: state[key] for key in ("frames_done", "frames_total", "fps", "chunk", "chunks_total", "eta_s")}
        )
        job.meta["status_line"] = f"{state['frames_done']}/{state['frames_total']} frames, {state['fps']} fps"
        try:
            job.save_meta()
        except LOST:  # the job goes on; the next report after Redis is back carries the progress
            logger.debug("progress not saved: Redis is away", exc_info=True)

    def check() -> StopReason | None:
        try:
            return "cancelled" if job.get_meta(refresh=True).get("cancel_requested") else None
        except LOST:
            until_reachable(job.connection)  # the job goes on meanwhile
            return None

    hooks = JobHooks(report, check, check_every_s=1.0)
    runtimes = current_runtimes.get(None) or WarmRuntimes(limit=1)  # a plain RQ worker: models per job
    run = execute_job(payload, folder, log, runtimes, hooks, hold=current_hold.get())
    return record(job, log, run)


def record(job: RqJob, log: JobLog, run: JobResult) -> dict[str, Any] | None:
    """The outcome in the job's meta; a transient failure is raised again, so RQ retries it."""
    if run.outcome == "completed":
        log.write(f"completed: {(run.result or {}).get('output')}")
        job.meta.update({"outcome": "completed", "status_line": "completed"})
    elif run.outcome == "stopped":
        log.write("cancelled")
        job.meta.update({"outcome": "cancelled", "status_line": "cancelled"})
    elif run.transient and run.exception is not None:
        log.write(f"error (will retry): {run.error}")
        job.meta.update({"last_error": run.error, "status_line": "will retry"})
        save_meta(job)
        raise run.exception
    else:
        log.write(f"failed: {run.error}")
        job.meta.update({"outcome": "failed", "last_error": run.error, "status_line": "failed"})
    save_meta(job)
    return run.result


# The worker ---------------------------------------------------------------------------------------------------
class SteadyScheduler(RQScheduler):
    """RQ's scheduler (it queues the retries whose wait is over), waiting for Redis when it goes away
    instead of ending with a traceback (the worker says that Redis is away), and ending when its worker
    is gone. RQ runs it in a process forked from the worker, which stops it on a normal exit; a worker
    killed outright (the OOM killer, ``kill -9``) left it running for good."""

    _worker_pid: int | None = None

    def start(self) -> Any:
        self._worker_pid = os.getpid()  # before the fork: the worker this scheduler serves
        return super().start()

    def heartbeat(self) -> None:
        if self._worker_pid is not None and os.getppid() != self._worker_pid:
            self._stop_requested = True  # the worker is gone: the loop stops at its next turn
            return
        super().heartbeat()

    def work(self) -> None:
        wait = 1.0
        while True:
            try:
                super().work()
                return
            except LOST:
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline:
                    if self._stop_requested:  # stopped while Redis is away: its locks expire by themselves
                        return
                    time.sleep(0.1)
                wait = min(wait * 2, MAX_WAIT_S)


class RetryLines(logging.Filter):
    """RQ's own line when Redis is away (the worker's listening loop retries by itself) becomes ours."""

    def __init__(self, connection: Redis) -> None:
        super().__init__()
        self.connection = connection

    def filter(self, record: logging.LogRecord) -> bool:
        if "could not connect to Redis instance" not in str(record.msg):
            return True
        if threading.current_thread() is threading.main_thread():  # the listening loop, not its pubsub thread
            wait = record.args[-1] if isinstance(record.args, tuple) and record.args else 1
            print(lost_line(self.connection, float(wait)), file=sys.stderr, flush=True)  # type: ignore[arg-type]
        return False


class WarmWorker(SimpleWorker):
    """Runs jobs in this process (models stay loaded) and heartbeats while a job runs; waits for Redis
    when it goes away; ``signalled`` tells whether Ctrl-C (or SIGTERM) stopped it."""

    runtimes: WarmRuntimes | None = None
    hold: ChunkHold | None = None
    lease_grace_s = 10
    signalled = False

    def request_stop(self, signum: int, frame: Any) -> None:
        self.signalled = True
        super().request_stop(signum, frame)

    def check_for_suspension(self, burst: bool) -> None:
        until_reachable(self.connection)  # the start of each turn of RQ's loop: Redis is there
        super().check_for_suspension(burst)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        try:
            super().heartbeat(timeout, pipeline)
        except LOST:  # the next turn of the loop waits for Redis
            logger.debug("worker heartbeat missed: Redis is away", exc_info=True)

    def teardown(self) -> None:
        try:
            super().teardown()
        except LOST:  # stopped while Redis is away: its record of this worker expires by itself
            logger.debug("worker not unregistered: Redis is away", exc_info=True)

    def _start_scheduler(
        self, burst: bool = False, logging_level: str | None = "INFO", date_format: str = "", log_format: str = ""
    ) -> None:
        """RQ's own, with ``SteadyScheduler``."""
        self.scheduler = SteadyScheduler(
            self.queues,
            connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            date_format=date_format,
            log_format=log_format,
            serializer=self.serializer,
        )
        self.scheduler.acquire_locks()
        if not self.scheduler.acquired_locks:
            return
        if not burst:
            self.scheduler.start()
            return
        try:
            self.scheduler.register_birth()
            self.scheduler.enqueue_scheduled_jobs()
        finally:
            self.scheduler.release_locks()
            self.scheduler.register_death()

    def get_heartbeat_ttl(self, job: RqJob, working_time: float = 0.0) -> int:
        return int(self.job_monitoring_interval + self.lease_grace_s)

    def execute_job(self, job: RqJob, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        running = threading.Event()

        def beat() -> None:
            while not running.wait(self.job_monitoring_interval):
                try:
                    self.maintain_heartbeats(job, execution)
                except Exception:  # a missed beat is retried at the next interval
                    logger.debug("heartbeat failed", exc_info=True)

        heart = threading.Thread(target=beat, daemon=True)
        heart.start()
        token = current_runtimes.set(self.runtimes) if self.runtimes is not None else None
        hold_token = current_hold.set(self.hold)
        try:
            self.perform_job(job, queue, execution)
        finally:
            running.set()
            heart.join()
            if token is not None:
                current_runtimes.reset(token)
            current_hold.reset(hold_token)
        self.set_state("idle")


def run_worker(
    url: str,
    runtimes: WarmRuntimes,
    burst: bool = False,
    heartbeat_s: int = 5,
    maintenance_s: int = 10,
    hold: ChunkHold | None = None,
) -> bool:
    """One warm worker on ``url``: takes jobs from the three queues in priority order until stopped.
    Returns whether Ctrl-C (or SIGTERM) stopped it."""
    connection = Redis.from_url(url)
    queues = [Queue(name, connection=connection) for name in QUEUE_NAMES]
    # worker_ttl sets how long an idle worker blocks waiting for a job (ttl - 15 s) before it runs its
    # maintenance, which is what finds the jobs of dead workers: RQ's default (420 s) is far too slow.
    worker = WarmWorker(
        queues,
        connection=connection,
        job_monitoring_interval=heartbeat_s,
        maintenance_interval=maintenance_s,
        worker_ttl=maintenance_s + 20,
    )
    worker.runtimes = runtimes
    worker.hold = hold
    lines = RetryLines(connection)
    worker.log.addFilter(lines)
    try:
        worker.work(burst=burst, with_scheduler=True, logging_level="WARNING")
    except SystemExit:  # RQ's cold shutdown: a second Ctrl-C
        if not worker.signalled:
            raise
    finally:
        worker.log.removeFilter(lines)
    return worker.signalled


# The backend (what batch add/list/show/cancel/retry use) --------------------------------------------------------
class RqBackend:
    name = "redis"

    def __init__(self, connection: Redis) -> None:
        self.connection = connection
        self.queues = {name: Queue(name, connection=connection) for name in QUEUE_NAMES}

    @classmethod
    def connect(cls, url: str) -> RqBackend:
        connection = Redis.from_url(url)
        try:
            connection.ping()
        except Exception as error:  # redis raises ConnectionError and friends
            raise JobError(f"cannot reach Redis at {url} ({error}): start redis-server or fix --backend") from error
        return cls(connection)

    def add(self, payload: dict[str, Any], priority: int = 0) -> str:
        queue = self.queues[queue_for(priority)]
        job = queue.enqueue(
            run_job,
            payload,
            retry=Retry(max=len(RETRY_WAITS_S), interval=RETRY_WAITS_S),
            job_timeout=-1,
            result_ttl=KEEP_S,
            failure_ttl=KEEP_S,
            meta={"priority": priority, "status_line": "queued"},
        )
        return str(job.id)

    def add_claiming(self, payload: dict[str, Any], priority: int, choose: OutputChooser) -> tuple[str, str]:
        """As the SQLite queue does, but not atomic: two processes adding at the same moment may both
        get a name (Redis holds no transaction around the choice)."""
        live = {str(view.payload.get("output")): view.id for view in self.jobs(["queued", "running"])}
        output = choose(live)
        return self.add({**payload, "output": output}, priority), output

    def add_failed(self, payload: dict[str, Any], reason: str, priority: int = 0) -> str:
        meta = {"priority": priority, "outcome": "failed", "last_error": reason, "status_line": "rejected at enqueue"}
        job = RqJob.create(
            run_job, args=(payload,), connection=self.connection, result_ttl=KEEP_S, failure_ttl=KEEP_S, meta=meta
        )
        job.save()
        FailedJobRegistry(queue=self.queues[queue_for(priority)]).add(job, ttl=KEEP_S, exc_string=reason)
        return str(job.id)

    def _ids(self) -> list[str]:
        ids: list[str] = []
        for queue in self.queues.values():
            ids += queue.job_ids
            for registry in (StartedJobRegistry, FinishedJobRegistry, FailedJobRegistry):
                ids += registry(queue=queue).get_job_ids()
            ids += queue.scheduled_job_registry.get_job_ids() + queue.canceled_job_registry.get_job_ids()
            ids += queue.deferred_job_registry.get_job_ids()
        return list(dict.fromkeys(ids))

    def _fetch(self, job_id: str) -> RqJob:
        try:
            return RqJob.fetch(job_id, connection=self.connection)
        except Exception as error:  # NoSuchJobError, or a malformed id
            raise JobError(
                f"no job {job_id} in this Redis queue: 'run.py batch list --backend ...' shows them"
            ) from error

    def view(self, job: RqJob) -> JobView:
        meta = job.get_meta(refresh=False)
        status = self.status_of(job.get_status(refresh=True), meta)
        result = job.return_value() if status == "completed" else None
        last_error = meta.get("last_error")
        if status == "failed" and not last_error:
            latest = job.latest_result()
            last_error = (latest.exc_string or "").strip().splitlines()[-1] if latest and latest.exc_string else None
        numbers = {key: int(meta.get(key, 0)) for key in ("frames_done", "frames_total", "chunk", "chunks_total")}
        return JobView(
            id=str(job.id),
            status=status,
            priority=int(meta.get("priority", 0)),
            payload=dict(job.args[0]),
            attempts=int(meta.get("attempts", 0)),
            max_attempts=len(RETRY_WAITS_S) + 1,
            last_error=last_error,
            fps=float(meta.get("fps", 0.0)),
            eta_s=meta.get("eta_s"),
            status_line=meta.get("status_line"),
            result=result if isinstance(result, dict) else None,
            **numbers,
        )

    @staticmethod
    def status_of(status: RqStatus | None, meta: dict[str, Any]) -> JobStatus:
        outcome = meta.get("outcome")
        if outcome in ("completed", "failed", "cancelled"):
            return outcome  # type: ignore[no-any-return]
        if status == RqStatus.STARTED:
            return "running"
        if status == RqStatus.FAILED:
            return "failed"
        if status in (RqStatus.CANCELED, RqStatus.STOPPED):
            return "cancelled"
        if status == RqStatus.FINISHED:
            return "completed"
        return "queued"

    def jobs(self, statuses: Sequence[str] | None = None) -> list[JobView]:
        views = []
        for job in RqJob.fetch_many(self._ids(), connection=self.connection):
            if job is None:
                continue
            view = self.view(job)
            if not statuses or view.status in statuses:
                views.append(view)
        return sorted(views, key=lambda view: (view.payload.get("target", ""), view.id))

    def get(self, job_id: str) -> JobView:
        return self.view(self._fetch(job_id))

    def log(self, job_id: str) -> str:
        path = job_folder(job_id) / "job.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def cancel(self, job_id: str) -> str:
        job = self._fetch(job_id)
        view = self.view(job)
        if view.status in ("completed", "failed", "cancelled"):
            raise JobError(f"job {job_id} is already {view.status}: nothing to cancel")
        if view.status == "queued":
            job.cancel()
            job.meta.update({"outcome": "cancelled", "status_line": "cancelled"})
            job.save_meta()
            return "cancelled"
        job.meta["cancel_requested"] = True
        job.meta["status_line"] = "cancelling"
        job.save_meta()
        return "running"

    def retry(self, job_id: str) -> None:
        job = self._fetch(job_id)
        view = self.view(job)
        if view.status not in ("failed", "cancelled"):
            raise JobError(f"job {job_id} is {view.status}: only failed or cancelled jobs can be retried")
        for key in ("outcome", "cancel_requested", "last_error"):
            job.meta.pop(key, None)
        job.meta.update({"attempts": 0, "status_line": "queued (retry)"})
        job.save_meta()
        for registry in (FailedJobRegistry, FinishedJobRegistry):
            registry(queue=self.queues[queue_for(view.priority)]).remove(job)
        job.retries_left = len(RETRY_WAITS_S)
        self.queues[queue_for(view.priority)].enqueue_job(job)

    def retry_failed(self) -> list[str]:
        ids = [view.id for view in self.jobs(["failed"])]
        for job_id in ids:
            self.retry(job_id)
        return ids

    def remove(self, job_id: str) -> None:
        job = self._fetch(job_id)
        if self.view(job).status == "running":
            raise JobError(f"job {job_id} is running: cancel it first")
        job.delete()

"""One interface over the two queues: SQLite (embedded, default) and Redis + RQ (several machines).

The payload (sources, target, output, settings snapshot) is the same JSON in both; ``batch add/list/
show/cancel/retry/remove`` work against either through ``backend_for(url)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from facefusion_ui.errors import UsageError
from facefusion_ui.jobs.store import Job, JobStore
from facefusion_ui.jobs.worker import read_log
from facefusion_ui.types import JobStatus


@dataclass(frozen=True)
class JobView:
    """A job as the CLI and the UI show it, whatever the backend."""

    id: str
    status: JobStatus
    priority: int
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    last_error: str | None
    frames_done: int
    frames_total: int
    fps: float
    chunk: int
    chunks_total: int
    eta_s: float | None
    status_line: str | None
    result: dict[str, Any] | None

    @property
    def target(self) -> str:
        return str(self.payload.get("target", ""))

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class QueueBackend(Protocol):
    name: str

    def add(self, payload: dict[str, Any], priority: int = 0) -> str: ...

    def add_failed(self, payload: dict[str, Any], reason: str, priority: int = 0) -> str: ...

    def jobs(self, statuses: Sequence[str] | None = None) -> list[JobView]: ...

    def get(self, job_id: str) -> JobView: ...

    def log(self, job_id: str) -> str: ...

    def cancel(self, job_id: str) -> str: ...

    def retry(self, job_id: str) -> None: ...

    def retry_failed(self) -> list[str]: ...

    def remove(self, job_id: str) -> None: ...


def view_of(job: Job) -> JobView:
    return JobView(
        id=str(job.id),
        status=job.status,
        priority=job.priority,
        payload=job.payload,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        last_error=job.last_error,
        frames_done=job.frames_done,
        frames_total=job.frames_total,
        fps=job.fps,
        chunk=job.chunk,
        chunks_total=job.chunks_total,
        eta_s=job.eta_s,
        status_line=job.status_line,
        result=job.result,
    )


class SqliteBackend:
    name = "sqlite"

    def __init__(self, store: JobStore | None = None) -> None:
        self.store = store or JobStore()

    @staticmethod
    def _id(job_id: str) -> int:
        try:
            return int(job_id)
        except ValueError:
            raise UsageError(f"'{job_id}' is not a job id of the SQLite queue (they are numbers)") from None

    def add(self, payload: dict[str, Any], priority: int = 0) -> str:
        return str(self.store.add(payload, priority))

    def add_failed(self, payload: dict[str, Any], reason: str, priority: int = 0) -> str:
        return str(self.store.add_failed(payload, reason, priority))

    def jobs(self, statuses: Sequence[str] | None = None) -> list[JobView]:
        return [view_of(job) for job in self.store.jobs(statuses)]

    def get(self, job_id: str) -> JobView:
        return view_of(self.store.get(self._id(job_id)))

    def log(self, job_id: str) -> str:
        return read_log(self.store, self._id(job_id))

    def cancel(self, job_id: str) -> str:
        return self.store.cancel(self._id(job_id))

    def retry(self, job_id: str) -> None:
        self.store.retry(self._id(job_id))

    def retry_failed(self) -> list[str]:
        return [str(job_id) for job_id in self.store.retry_failed()]

    def remove(self, job_id: str) -> None:
        self.store.remove(self._id(job_id))


def is_redis_url(url: str) -> bool:
    return url.startswith(("redis://", "rediss://", "unix://"))


def backend_for(url: str | None) -> QueueBackend:
    """``sqlite`` (default; the file under FACEFUSION_UI_HOME) or ``redis://HOST:PORT/DB``."""
    if not url or url == "sqlite":
        return SqliteBackend()
    if is_redis_url(url):
        from facefusion_ui.jobs.rq_backend import RqBackend

        return RqBackend.connect(url)
    if url.startswith("sqlite:"):
        return SqliteBackend(JobStore(Path(url.removeprefix("sqlite:"))))
    raise UsageError(f"unknown backend '{url}': use sqlite or redis://HOST:PORT/DB")

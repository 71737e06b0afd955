"""The embedded queue behind the ``QueueBackend`` interface: the SQLite store under FACEFUSION_UI_HOME."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from facefusion_ui.errors import UsageError
from facefusion_ui.jobs.outputs import OutputChooser
from facefusion_ui.jobs.store import Job, JobStore
from facefusion_ui.jobs.views import JobView
from facefusion_ui.jobs.worker import read_log


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

    def add_claiming(self, payload: dict[str, Any], priority: int, choose: OutputChooser) -> tuple[str, str]:
        job_id, output = self.store.add_claiming(payload, priority, choose)
        return str(job_id), output

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

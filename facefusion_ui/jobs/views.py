"""What both queues (SQLite and Redis + RQ) show and do: ``JobView`` and the ``QueueBackend`` protocol.

The payload (sources, target, output, settings snapshot) is the same JSON in both; ``batch add/list/
show/cancel/retry/remove`` work against either (``backend.backend_for`` picks one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from facefusion_ui.jobs.outputs import OutputChooser
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

    def add_claiming(self, payload: dict[str, Any], priority: int, choose: OutputChooser) -> tuple[str, str]: ...

    def add_failed(self, payload: dict[str, Any], reason: str, priority: int = 0) -> str: ...

    def jobs(self, statuses: Sequence[str] | None = None) -> list[JobView]: ...

    def get(self, job_id: str) -> JobView: ...

    def log(self, job_id: str) -> str: ...

    def cancel(self, job_id: str) -> str: ...

    def retry(self, job_id: str) -> None: ...

    def retry_failed(self) -> list[str]: ...

    def remove(self, job_id: str) -> None: ...

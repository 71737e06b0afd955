"""The choice of queue, in one place: SQLite (embedded, default) or Redis + RQ (several machines)."""

from __future__ import annotations

from pathlib import Path

from facefusion_ui.errors import UsageError
from facefusion_ui.jobs.sqlite_backend import SqliteBackend
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.jobs.views import QueueBackend


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

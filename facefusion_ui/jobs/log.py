"""A job's log: append-only, timestamped lines in ``job.log`` of the job's folder (both queues)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from facefusion_ui.errors import disk_full_named


class JobLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        with disk_full_named(path.parent.parent):
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        """Append a line; a full disk is a DiskFullError naming the job's folder."""
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n"
        with self._lock, disk_full_named(self.path.parent), self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)

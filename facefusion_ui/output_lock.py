"""An exclusive OS lock per output path: two runs never write the same output or work folder.

The lock is taken on a small file under ``FACEFUSION_UI_HOME/locks`` named from the resolved output
path, with ``fcntl.flock`` (Linux, macOS) or ``msvcrt.locking`` (Windows). The operating system drops
it when the process ends, however it ends, so a run killed with SIGKILL leaves no stale lock and the
next run resumes as before. The holder writes its pid into the file so that a refused run can name it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import IO

from facefusion_ui.errors import OutputBusyError
from facefusion_ui.paths import home_dir


def lock_path_for(output: Path, home: Path | None = None) -> Path:
    key = hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:24]
    return (home or home_dir()) / "locks" / f"{key}.lock"


def _try_lock(handle: IO[str]) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _holder_pid(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


class OutputLock:
    """``with OutputLock(output, option="-o"):`` holds the output for this process, or raises OutputBusyError."""

    def __init__(self, output: Path, option: str = "-o", home: Path | None = None) -> None:
        self.output = output
        self.option = option
        self.path = lock_path_for(output, home)
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held until release)
        if not _try_lock(handle):
            handle.close()
            raise OutputBusyError(
                f"another run (pid {_holder_pid(self.path)}) is writing {self.output}: "
                f"wait for it or choose another {self.option}"
            )
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        handle.seek(0)
        handle.truncate()
        handle.close()  # closing the descriptor drops the lock

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()

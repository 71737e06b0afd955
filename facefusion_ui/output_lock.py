"""An exclusive OS lock per output path: two runs never write the same output or work folder.

The lock belongs to the output itself: a hidden file ``.NAME.lock`` beside it (beside the file a symlink
points to), locked with ``fcntl.flock`` (Linux, macOS) or ``msvcrt.locking`` (Windows), so every run on
that path sees it, whatever its ``FACEFUSION_UI_HOME``. The operating system drops the lock when the
process ends, however it ends, so a run killed with SIGKILL leaves no stale lock and the next run resumes
as before. The holder writes its pid into the file so that a refused run can name it, and removes the
file when it lets go (a killed run leaves the file behind, unlocked; the next run takes it over).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType
from typing import IO

from facefusion_ui.errors import OutputBusyError, Remedy


def lock_path_for(output: Path) -> Path:
    """``.NAME.lock`` in the folder of the resolved output (through symlinks)."""
    resolved = output.resolve()
    return resolved.with_name(f".{resolved.name}.lock")


def _try_lock(handle: IO[bytes]) -> bool:
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


def _still_named(path: Path, handle: IO[bytes]) -> bool:
    """Whether ``path`` still names the file ``handle`` locked: the holder before removes the file after
    letting go, so a lock taken on the old file in between holds nothing."""
    try:
        named, opened = path.stat(), os.fstat(handle.fileno())
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _holder_pid(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


class OutputLock:
    """``with OutputLock(output, option="-o"):`` holds the output for this process, or raises OutputBusyError."""

    def __init__(self, output: Path, option: str = "-o") -> None:
        self.output = output
        self.option = option
        self.path = lock_path_for(output)
        self._handle: IO[bytes] | None = None

    def acquire(self) -> None:
        while True:
            # held until release; unbuffered, so a pid that a full disk refused is not written again at close
            handle = open(self.path, "a+b", buffering=0)  # noqa: SIM115
            if not _try_lock(handle):
                handle.close()
                raise OutputBusyError(
                    f"another run (pid {_holder_pid(self.path)}) is writing {self.output}",
                    remedy=Remedy(f"wait for it or choose another {self.option}", "wait for it or give another name"),
                    paths=(self.output,),
                )
            if _still_named(self.path, handle):
                break
            handle.close()  # the file was removed by the run before: lock the new one
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()).encode())
        except OSError:  # a full disk: the lock holds all the same, a refused run names pid "?"
            pass
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            self.path.unlink()  # while still locked: a run waiting on this file sees it gone and retries
        except OSError:  # Windows cannot remove an open file; it stays empty
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

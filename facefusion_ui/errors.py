"""User-facing errors. Each message says what was wrong and what to do; the CLI prints it on one line.

``exit_code`` follows the CLI contract: 2 for a user mistake, 1 for an internal or environment failure.
``transient`` tells the job queue whether a retry can help.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Remedy:
    """What to do about a failure, as each front end says it, after the problem and ``sep``."""

    command: str
    """On the command line: the command to run, e.g. ``run 'python run.py models download NAME'``."""
    page: str
    """On the page: where to do it, e.g. ``download NAME on the Settings tab (Models)``; empty when the
    page has its own way (nothing is added)."""
    sep: str = ": "


class FacefusionError(Exception):
    """Base class: a failure with a message a person can act on. Its fields let each front end say it
    its way: the command line prints ``str(error)`` (the problem, then the remedy's command), the page
    ``for_page()`` (files by their names, the remedy's place on the page)."""

    exit_code = 1
    transient = False

    def __init__(
        self,
        message: str,
        detail: str | None = None,
        *,
        remedy: Remedy | None = None,
        paths: Sequence[str | os.PathLike[str]] = (),
        setting: str | None = None,
        page_problem: str | None = None,
    ) -> None:
        self.problem = message
        self.page_problem = page_problem
        """The problem in the page's words where they differ (a field by its label, not its option)."""
        """What went wrong, without the remedy."""
        self.remedy = remedy
        self.paths = tuple(os.fspath(path) for path in paths)
        """The files the problem names (as given, in full): the page names each by its file name."""
        self.setting = setting
        """The setting the problem is about (its key), where it is about one."""
        self.message = message + (remedy.sep + remedy.command if remedy else "")
        super().__init__(self.message)
        self.detail = detail
        """What a person debugging needs beyond the line (e.g. ffmpeg's stderr): job log and --verbose."""

    def __str__(self) -> str:
        return self.message

    def for_page(self) -> str:
        """The line as the page says it: each file by its name (an upload as the person picked it), and
        the remedy where the page offers it."""
        text = self.page_problem or self.problem
        for path in sorted(self.paths, key=len, reverse=True):  # longest first: a file's before its folder's
            text = text.replace(path, os.path.basename(path) or path)
        return text + (self.remedy.sep + self.remedy.page if self.remedy and self.remedy.page else "")


class UsageError(FacefusionError):
    """A bad command line: unknown option, bad value, missing argument."""

    exit_code = 2


class SettingsError(UsageError):
    """A setting with an unknown key or a value outside its allowed choices or range."""


class PresetError(UsageError):
    """A preset file that is missing, unreadable or holds an unknown key or a bad value."""


class InputError(UsageError):
    """A source, target or output the user gave that cannot be used (missing, unreadable, no face)."""


class OutputBusyError(InputError):
    """Another run holds the output's lock. Exit code 2 on the command line; in a queue the job is retried
    later (its worker may have lost the job's lease to a slow disk or a locked database, not failed)."""

    transient = True


class ModelError(FacefusionError):
    """A model that is missing, corrupt or cannot be loaded; the message names the command to fix it."""

    exit_code = 2


class DownloadError(FacefusionError):
    """A download that failed (network, server); running the same command again resumes it. ``why``:
    the cause in a clause (e.g. the server cannot be looked up); ``offline``: the server could not be
    reached at all; ``kept``: the bytes kept for a resume. Each front end says them its own way."""

    transient = True

    def __init__(
        self, message: str, *, why: str = "", offline: bool = False, kept: int = 0, remedy: Remedy | None = None
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.why = why
        self.offline = offline
        self.kept = kept


class DependencyError(FacefusionError):
    """A program or package the tool needs (ffmpeg, onnxruntime...) is missing or broken."""


class OptionalDependencyMissing(DependencyError):
    """An optional package or device a chosen option needs (``--virtual-camera``: pyvirtualcam and a
    virtual camera): the user chose the option, so it is their fix (exit 2)."""

    exit_code = 2


class PluginError(FacefusionError):
    """A processor plugin that cannot be loaded or does not follow the Processor protocol."""


class OutOfMemory(FacefusionError):
    """Memory ran out (GPU or CPU); retrying with a lighter preset or smaller chunks can help."""

    transient = True


class FfmpegError(FacefusionError):
    """ffmpeg failed; the message carries the last lines of its stderr."""

    transient = True


class DiskFullError(FfmpegError):
    """The disk of the output, work or data folder is full; the line names the folder and its free space."""

    exit_code = 2

    @classmethod
    def in_folder(cls, folder: Path, detail: str | None = None) -> DiskFullError:
        free = free_mib(folder)
        return cls(f"no space left in {folder} ({free} MiB free): free some space or choose another folder", detail)


def free_mib(folder: Path) -> int:
    """Free MiB on the disk of ``folder`` (0 when it cannot be asked)."""
    try:
        return shutil.disk_usage(folder).free // 2**20
    except OSError:
        return 0


def is_disk_full(error: BaseException) -> bool:
    """An OSError that says the disk (or the user's quota) is full."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def disk_full_named(folder: Path) -> Iterator[None]:
    """A full disk inside becomes a DiskFullError naming the folder of the file that could not be written
    (``folder`` when the error names no file)."""
    try:
        yield
    except OSError as error:
        if not is_disk_full(error):
            raise
        written = Path(error.filename).parent if isinstance(error.filename, str) else folder
        raise DiskFullError.in_folder(written, str(error)) from error


class JobError(FacefusionError):
    """A job cannot be queued, found or changed in its current state."""

    exit_code = 2


class CancelledError(FacefusionError):
    """The job was cancelled by the user."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM reached a run: a KeyboardInterrupt (every cleanup path applies) that carries the
    line to print and the exit code (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class DownloadCancelled(DownloadError):
    """A download stopped on request; its partial file is kept, so starting it again resumes."""

    transient = False


class NotEnoughSpace(DownloadError):
    """The models folder's disk cannot hold the file; the line names the folder, the need and the space."""

    exit_code = 2
    transient = False

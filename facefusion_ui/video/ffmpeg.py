"""Which ffmpeg to run: ``FACEFUSION_UI_FFMPEG``, else the system's, else imageio-ffmpeg's static binary."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from facefusion_ui.errors import DependencyError, DiskFullError, FfmpegError

FfmpegSource = Literal["environment", "system", "imageio-ffmpeg"]


@dataclass(frozen=True)
class FfmpegBinary:
    path: str
    source: FfmpegSource


def resolve_ffmpeg(search_path: str | None = None, override: str | None = None) -> FfmpegBinary:
    """Find ffmpeg. ``search_path`` defaults to ``PATH``; ``override`` to ``FACEFUSION_UI_FFMPEG``."""
    override = override if override is not None else os.environ.get("FACEFUSION_UI_FFMPEG")
    if override:
        if not os.access(override, os.X_OK):
            raise DependencyError(
                f"FACEFUSION_UI_FFMPEG points to {override}, which is not an executable file: fix or unset it"
            )
        return FfmpegBinary(override, "environment")
    system = shutil.which("ffmpeg", path=search_path if search_path is not None else os.environ.get("PATH"))
    if system:
        return FfmpegBinary(system, "system")
    try:
        import imageio_ffmpeg

        return FfmpegBinary(str(imageio_ffmpeg.get_ffmpeg_exe()), "imageio-ffmpeg")
    except (ImportError, RuntimeError) as error:
        raise DependencyError(
            "ffmpeg was not found: install it (apt-get install ffmpeg, brew install ffmpeg) "
            "or reinstall facefusion_ui so that imageio-ffmpeg provides one"
        ) from error


def ffmpeg_version(binary: FfmpegBinary) -> str:
    """The first line of ``ffmpeg -version`` (e.g. ``ffmpeg version 7.1 ...``)."""
    try:
        completed = subprocess.run(
            [binary.path, "-hide_banner", "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise DependencyError(f"ffmpeg at {binary.path} does not run ({error}): reinstall it") from error
    if completed.returncode != 0:
        raise DependencyError(f"ffmpeg at {binary.path} failed: {completed.stderr.strip()[-300:]}")
    first_line = completed.stdout.splitlines()[0] if completed.stdout else "unknown version"
    return first_line.split(" Copyright")[0]


def resolve_ffprobe(search_path: str | None = None) -> str | None:
    """The system's ffprobe, when there is one (imageio-ffmpeg ships none: then ffmpeg alone probes)."""
    return shutil.which("ffprobe", path=search_path if search_path is not None else os.environ.get("PATH"))


def run_tool(command: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run an ffmpeg/ffprobe command to completion, capturing both streams as text."""
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError as error:
        raise DependencyError(f"{command[0]} cannot be started ({error}): check the ffmpeg installation") from error


def stderr_tail(text: str, lines: int = 6) -> str:
    """The last meaningful lines of ffmpeg's stderr, joined on one line for an error message."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def ffmpeg_failure(what: str, stderr: str, folder: Path) -> FfmpegError:
    """The error for a failed ffmpeg run: a full disk becomes one plain line naming ``folder`` and its
    free space; ffmpeg's own words go into ``detail`` (job log, ``--verbose``) instead of the line."""
    detail = stderr_tail(stderr, 20)
    if "No space left on device" in stderr or "ENOSPC" in stderr:
        return DiskFullError.in_folder(folder, detail)
    return FfmpegError(f"{what}: {stderr_tail(stderr)}", detail)

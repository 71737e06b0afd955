"""Progress of a job in frames: rate, ETA and chunk position, reported through a callback (throttled)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ProgressCallback = Callable[[dict[str, Any]], None]
REPORT_EVERY_S = 0.25


def frames_state(done: int, total: int, processed: int, elapsed_s: float) -> dict[str, Any]:
    """Frames done of the total, the rate of those processed (skipped ones are not work) and the ETA."""
    fps = processed / max(elapsed_s, 1e-6)
    return {
        "frames_done": done,
        "frames_total": total,
        "fps": round(fps, 2),
        "eta_s": round((total - done) / fps, 1) if fps > 0 else None,
    }


def process_age_at(moment: float) -> float:
    """Seconds from this process's start to ``moment`` (a ``time.perf_counter()`` reading)."""
    return process_age() - (time.perf_counter() - moment)


def process_age() -> float:
    """Seconds since this process started. On Linux from the kernel's clock ticks since boot, exact to a
    tick (psutil's start time adds the boot time the kernel gives in whole seconds: up to a second off)."""
    stat = Path("/proc/self/stat")
    if hasattr(time, "CLOCK_BOOTTIME") and stat.is_file():
        # the command may hold spaces and parentheses: the fields after its closing parenthesis
        fields = stat.read_text().rpartition(")")[2].split()
        started_ticks = int(fields[19])  # field 22 of proc(5), the 20th after the command
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK")
    import psutil  # elsewhere; only when a job reports, the command line's start-up does not pay for it

    return time.time() - psutil.Process().create_time()


@dataclass
class FrameProgress:
    frames_total: int
    chunks_total: int
    callback: ProgressCallback | None = None
    frames_done: int = 0
    frames_skipped: int = 0
    chunk_index: int = 0
    started: float = field(default_factory=time.perf_counter)
    first_frame_at: float | None = None
    """``time.perf_counter()`` when the first frame was done (processed or copied); None before."""
    _last_report: float = 0.0
    _reported_chunk: int = -1
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def skip(self, frames: int) -> None:
        with self._lock:
            self.frames_done += frames
            self.frames_skipped += frames
        self.report(force=True)

    def rewind(self, frames: int) -> None:
        """Take back the frames of a chunk attempt that failed (it runs again)."""
        with self._lock:
            self.frames_done -= frames

    def advance(self) -> None:
        with self._lock:
            self.frames_done += 1
            if self.first_frame_at is None:
                self.first_frame_at = time.perf_counter()
        self.report()

    def first_frame_seconds(self) -> dict[str, float] | None:
        """How long the first frame took: from the job's start, and from its process's start (what a user
        of the command line waits, the interpreter's start and the imports included); None before it."""
        if self.first_frame_at is None:
            return None
        return {
            "since_job_start": round(self.first_frame_at - self.started, 3),
            "since_process_start": round(process_age_at(self.first_frame_at), 3),
        }

    def snapshot(self) -> dict[str, Any]:
        processed = self.frames_done - self.frames_skipped
        return {
            **frames_state(self.frames_done, self.frames_total, processed, time.perf_counter() - self.started),
            "chunk": self.chunk_index + 1,
            "chunks_total": self.chunks_total,
        }

    def report(self, force: bool = False) -> None:
        if self.callback is None:
            return
        now = time.perf_counter()
        new_chunk = self.chunk_index != self._reported_chunk  # reported at once: a chunk's start is a known point
        if (
            not (force or new_chunk)
            and now - self._last_report < REPORT_EVERY_S
            and self.frames_done < self.frames_total
        ):
            return
        self._last_report = now
        self._reported_chunk = self.chunk_index
        self.callback(self.snapshot())


@dataclass
class PeoplePassProgress:
    """A video's people pass run by a face-map job before its frames (no cached pass): the same state
    as ``FrameProgress`` reports, with ``"stage": "people"`` and chunk 0 (no chunk has started)."""

    callback: ProgressCallback
    started: float = field(default_factory=time.perf_counter)
    first_frame_at: float | None = None
    """``time.perf_counter()`` when the first frame was done (processed or copied); None before."""
    _last_report: float = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self._last_report < REPORT_EVERY_S and done < total:
            return
        self._last_report = now
        state = frames_state(done, total, done, now - self.started)
        self.callback({"stage": "people", **state, "chunk": 0, "chunks_total": 0})

"""The decoder: an ffmpeg process writing raw frames (``commands.decode_args``) to a pipe, read by its own thread."""

from __future__ import annotations

import collections
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from facefusion_ui.errors import FfmpegError
from facefusion_ui.types import Frame
from facefusion_ui.video.queues import BoundedQueue, InFlight, Stopped

STDERR_LINES = 40


@dataclass(frozen=True)
class FrameItem:
    index: int
    """Frame number in the source video."""
    frame: Frame
    """The raw frame: an I420 buffer of shape (height * 3 / 2, width); empty when not decoded (``sparse.py``)."""
    generation: int = 0
    """Which decoder run handed it on (``sparse.SparseReader.rewind``)."""


END = FrameItem(-1, np.zeros((0, 0), dtype=np.uint8))
"""Put once after the last frame."""


class StderrTail:
    """Drains a process's stderr on a thread, keeping only the last lines (bounded)."""

    def __init__(self, stream: object) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._thread = threading.Thread(target=self._drain, args=(stream,), name="ffmpeg-stderr", daemon=True)
        self._thread.start()

    def _drain(self, stream: object) -> None:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            self.lines.append(raw.decode("utf-8", "replace").rstrip())

    def join(self) -> None:
        self._thread.join(timeout=10)

    def text(self) -> str:
        return " | ".join(line for line in list(self.lines)[-6:] if line)


PIPE_BYTES = 1 << 20
"""Frame pipes are widened from Linux's 64 KiB to 1 MiB (the unprivileged maximum): fewer wake-ups per frame."""


def widen_pipe(stream: Any) -> None:
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or a lower system limit: the default size works, a little slower


def start_process(command: list[str], stdin: bool = False, stdout: bool = False) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a terminal's Ctrl-C reaches only us: we stop ffmpeg in order, chunks kept
    )
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            widen_pipe(stream)
    return process


def read_exactly(stream: Any, size: int) -> np.ndarray | None:
    """``size`` bytes read straight into a new array (no copy, and not zeroed first: a 720p frame every
    30 ms would otherwise be 40 MB/s of memset), None when the stream ends first."""
    buffer = np.empty(size, dtype=np.uint8)
    view = buffer.data
    got = 0
    while got < size:
        count = stream.readinto(view[got:])
        if not count:
            return None
        got += count
    return buffer


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


class FrameReader:
    """Runs ``command`` (see ``commands.decode_args``) and puts ``expected`` frames of ``shape`` on ``output``."""

    def __init__(
        self,
        command: list[str],
        shape: tuple[int, ...],
        first_index: int,
        expected: int,
        output: BoundedQueue[FrameItem],
        stop: threading.Event,
        slots: threading.Semaphore,
        in_flight: InFlight | None = None,
    ) -> None:
        self.in_flight = in_flight
        self.command = command
        self.shape = shape
        self.first_index = first_index
        self.expected = expected
        self.output = output
        self.stop = stop
        self.slots = slots
        self.error: BaseException | None = None
        self.frames_read = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._run, name="frame-reader", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        frame_bytes = int(np.prod(self.shape))
        try:
            self.process = start_process(self.command, stdout=True)
            tail = StderrTail(self.process.stderr)
            assert self.process.stdout is not None
            while self.frames_read < self.expected:
                while not self.slots.acquire(timeout=0.1):
                    if self.stop.is_set():
                        raise Stopped
                data = read_exactly(self.process.stdout, frame_bytes)
                if data is None:
                    self.slots.release()
                    break
                frame = data.reshape(self.shape)
                if self.in_flight is not None:
                    self.in_flight.add()
                self.output.put(FrameItem(self.first_index + self.frames_read, frame), self.stop)
                self.frames_read += 1
            code = self.process.wait()
            tail.join()
            if self.frames_read < self.expected:
                raise FfmpegError(
                    f"ffmpeg decoded {self.frames_read} of {self.expected} frames from frame {self.first_index} "
                    f"(exit code {code}): {tail.text() or 'the file ends early'}; the video may be truncated or corrupt"
                )
            self.output.put(END, self.stop)
        except Stopped:
            pass
        except BaseException as error:  # handed to the pipeline's owner
            self.error = error
            self.stop.set()
        finally:
            if self.process is not None:
                stop_process(self.process)

    def join(self) -> None:
        self.thread.join()

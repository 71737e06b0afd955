"""The live input: an ffmpeg process delivering raw BGR frames as they arrive (a camera's pace, or a
file's own frame rate), read on a thread into a one-slot hand-over. The reader never waits for the
swapper: a frame not taken before the next arrives is dropped (counted), so nothing queues up."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.live.commands import LiveInput, read_args
from facefusion_ui.live.mailbox import LatestSlot
from facefusion_ui.types import Frame
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.reader import StderrTail, read_exactly, start_process, stop_process


@dataclass(frozen=True)
class LiveFrame:
    index: int
    """The frame's number in the input (dropped frames keep theirs)."""
    image: Frame
    arrived: float
    """``time.perf_counter()`` when its last byte was read: latency counts from here."""


class FrameSource:
    """Reads ``source`` on a thread; ``frames`` holds the newest frame not yet taken."""

    def __init__(self, source: LiveInput, width: int, height: int) -> None:
        self.source = source
        self.width, self.height = width, height
        self.frames: LatestSlot[LiveFrame] = LatestSlot()
        self.frames_in = 0
        self.ended = threading.Event()
        """Set when the input ended (end of file, camera gone) or the source was stopped."""
        self.process = start_process(read_args(resolve_ffmpeg().path, source, width, height), stdout=True)
        self.stderr = StderrTail(self.process.stderr)
        self._stopping = threading.Event()
        self.ran_out = False
        """Whether the input ended by itself (end of file, camera gone, nothing to read), not by ``stop``."""
        self._thread = threading.Thread(target=self._read, name="live-source", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        size = self.width * self.height * 3
        try:
            while not self._stopping.is_set():
                buffer = read_exactly(self.process.stdout, size)
                if buffer is None:
                    break
                image = np.asarray(buffer.reshape(self.height, self.width, 3))
                self.frames.put(LiveFrame(self.frames_in, image, time.perf_counter()))
                self.frames_in += 1
        finally:
            self.ran_out = not self._stopping.is_set()
            self.ended.set()
            self.frames.close(keep_last=True)

    def failure(self) -> InputError | None:
        """Why the input gave no frame at all (ffmpeg's own words), once it ended; None otherwise."""
        if self.frames_in or not self.ended.is_set() or not self.ran_out:
            return None
        self.process.wait(timeout=30)
        self.stderr.join()
        said = self.stderr.text() or f"ffmpeg exited with {self.process.returncode}"
        return InputError(
            f"cannot read live input {self.source.label}: {said}; check the camera index or device, the file or the URL"
        )

    def stop(self) -> None:
        self._stopping.set()
        stop_process(self.process)
        self._thread.join(timeout=10)
        self.stderr.join()

"""The encoder: frames written in order into an ffmpeg process's stdin."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import numpy as np

from facefusion_ui.types import Frame
from facefusion_ui.video.ffmpeg import ffmpeg_failure
from facefusion_ui.video.reader import StderrTail, start_process, stop_process


class FrameWriter:
    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.process: subprocess.Popen[bytes] = start_process(command, stdin=True)
        self.tail = StderrTail(self.process.stderr)
        self.frames_written = 0
        self.folder = Path(command[-1]).parent
        """Where the segment goes: named when its disk is full."""

    def write(self, frame: Frame) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(np.ascontiguousarray(frame).data.cast("B"))
        except BrokenPipeError as error:
            self.process.wait()
            self.tail.join()
            what = f"the encoder stopped early (exit code {self.process.returncode})"
            raise ffmpeg_failure(what, self.tail.text(), self.folder) from error
        self.frames_written += 1

    def close(self) -> None:
        """Finish the file; an FfmpegError with ffmpeg's last lines if encoding failed."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        code = self.process.wait()
        self.tail.join()
        if code != 0:
            raise ffmpeg_failure(f"the encoder failed (exit code {code})", self.tail.text(), self.folder)

    def abort(self) -> None:
        stop_process(self.process)
        self.tail.join()

"""Where live frames go besides the screen: a video file (``--output``, the page's Record) through an
ffmpeg encoder fed on its own thread, and a virtual camera (``pyvirtualcam``). Each takes frames through
a one-slot hand-over, so a slow encoder drops frames (counted) instead of holding the swapper back."""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from facefusion_ui.errors import FfmpegError, OptionalDependencyMissing
from facefusion_ui.live.commands import record_args
from facefusion_ui.live.mailbox import LatestSlot
from facefusion_ui.types import Frame
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.reader import StderrTail, start_process

RECORD_FPS = 30.0
"""A recording's frame rate: each shown frame is held until the next one, by its time of arrival."""
VIRTUAL_CAMERA_HELP = (
    "--virtual-camera needs pyvirtualcam and a virtual camera: pip install pyvirtualcam, then on Linux "
    "v4l2loopback (sudo apt install v4l2loopback-dkms && sudo modprobe v4l2loopback), on Windows or macOS "
    "OBS Studio (its Virtual Camera)"
)


class FrameSink(Protocol):
    def put(self, frame: Frame, seconds: float) -> None:
        """``frame`` (BGR), shown ``seconds`` after the start. Never blocks for long."""
        ...

    def close(self) -> None:
        """Deliver what is left and free the sink; raises when it failed."""
        ...


class Recorder:
    """Encodes shown frames into ``path`` at ``RECORD_FPS``, each repeated until the next one's time."""

    def __init__(self, path: str, width: int, height: int, fps: float = RECORD_FPS) -> None:
        self.path, self.fps = path, fps
        self.process = start_process(record_args(resolve_ffmpeg().path, width, height, fps, path), stdin=True)
        self.stderr = StderrTail(self.process.stderr)
        self.slot: LatestSlot[tuple[Frame, float]] = LatestSlot()
        self.frames_written = 0
        self.failed = False
        self._thread = threading.Thread(target=self._write, name="live-recorder", daemon=True)
        self._thread.start()

    def put(self, frame: Frame, seconds: float) -> None:
        self.slot.put((frame, seconds))

    def _write(self) -> None:
        assert self.process.stdin is not None
        while True:
            item = self.slot.take(timeout=1.0)
            if item is None:
                if self.slot.closed:
                    return
                continue
            frame, seconds = item
            due = max(int(seconds * self.fps) + 1, self.frames_written + 1)  # frames up to this one's time
            data = np.ascontiguousarray(frame).tobytes()
            try:
                for _ in range(due - self.frames_written):
                    self.process.stdin.write(data)
            except (BrokenPipeError, OSError):
                self.failed = True
                return
            self.frames_written = due

    def close(self) -> None:
        self.slot.close(keep_last=True)
        self._thread.join(timeout=60)
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                self.failed = True
        code = self.process.wait(timeout=120)
        self.stderr.join()
        if code != 0 or self.failed:
            said = self.stderr.text() or f"ffmpeg exited with {code}"
            raise FfmpegError(f"recording {self.path} failed: {said}", paths=(self.path,))


class VirtualCamera:
    """Frames sent to a virtual camera (v4l2loopback, OBS Virtual Camera) through ``pyvirtualcam``."""

    def __init__(self, width: int, height: int, fps: float) -> None:
        self.camera = open_virtual_camera(width, height, fps)
        self.device = str(self.camera.device)
        self.slot: LatestSlot[Frame] = LatestSlot()
        self._thread = threading.Thread(target=self._send, name="live-virtual-camera", daemon=True)
        self._thread.start()

    def put(self, frame: Frame, seconds: float) -> None:
        self.slot.put(frame)

    def _send(self) -> None:
        while True:
            frame = self.slot.take(timeout=1.0)
            if frame is not None:
                self.camera.send(frame)
            elif self.slot.closed:
                return

    def close(self) -> None:
        self.slot.close(keep_last=True)
        self._thread.join(timeout=30)
        self.camera.close()


def open_virtual_camera(width: int, height: int, fps: float) -> Any:
    """pyvirtualcam's camera taking BGR frames, or an OptionalDependencyMissing saying what to install."""
    try:
        import pyvirtualcam
    except ImportError as error:
        raise OptionalDependencyMissing(VIRTUAL_CAMERA_HELP) from error
    try:
        return pyvirtualcam.Camera(width, height, fps, fmt=pyvirtualcam.PixelFormat.BGR)
    except RuntimeError as error:  # no backend: pyvirtualcam says which it tried
        raise OptionalDependencyMissing(f"{VIRTUAL_CAMERA_HELP} ({str(error).splitlines()[0]})") from error

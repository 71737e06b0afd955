"""Live frames pushed by a caller one at a time (the page's camera stream, which keeps at most one frame
in flight: a frame sent while the last is being swapped replaces any other waiting): fitted to the live
size, mirrored on request, swapped by a ``LiveEngine``, measured, and recorded on request."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.live.commands import LIVE_SIZES
from facefusion_ui.live.engine import LiveEngine
from facefusion_ui.live.latency import LatencyHistogram
from facefusion_ui.live.sinks import Recorder
from facefusion_ui.types import Frame, LiveSize

RATE_WINDOW_S = 2.0
"""Frames per second are counted over this last stretch of time."""


def fit_frame(frame: Frame, width: int, height: int) -> Frame:
    """``frame`` scaled into ``width`` x ``height`` keeping its aspect ratio, padded with black (as
    ``commands.fit_filter`` does for the command line's input)."""
    source_height, source_width = frame.shape[:2]
    if (source_width, source_height) == (width, height):
        return frame
    scale = min(width / source_width, height / source_height)
    size = (max(1, round(source_width * scale)), max(1, round(source_height * scale)))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    resized = cv2.resize(frame, size, interpolation=interpolation)
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    x, y = (width - size[0]) // 2, (height - size[1]) // 2
    canvas[y : y + size[1], x : x + size[0]] = resized
    return canvas


class PushedStream:
    """One viewer's live run. ``swap`` is called from one thread at a time (the page's stream event)."""

    def __init__(self, engine: LiveEngine, size: LiveSize, mirror: bool) -> None:
        self.engine = engine
        self.width, self.height = LIVE_SIZES[size]
        self.mirror = mirror
        self.latency = LatencyHistogram()
        self.frames_shown = 0
        self.started = time.perf_counter()
        self.recent: list[float] = []
        """When the frames of the last ``RATE_WINDOW_S`` seconds were ready (a few dozen at most)."""
        self.recorder: Recorder | None = None
        self.frames_dropped = 0
        """Frames that came while the one before was still being swapped (never queued)."""
        self._lock = threading.Lock()
        self._busy = threading.Lock()

    def swap(self, rgb: Frame) -> Frame | None:
        """An RGB frame from the camera, swapped (RGB, at the live size); None when the frame before is
        still being swapped (this one is dropped: at most one frame in flight)."""
        if not self._busy.acquire(blocking=False):
            self.frames_dropped += 1
            return None
        try:
            return self._swap(rgb)
        finally:
            self._busy.release()

    def _swap(self, rgb: Frame) -> Frame:
        arrived = time.perf_counter()
        bgr = fit_frame(np.ascontiguousarray(rgb[:, :, ::-1]), self.width, self.height)
        if self.mirror:
            bgr = np.ascontiguousarray(bgr[:, ::-1])
        swapped = self.engine.process(bgr, arrived)
        ready = time.perf_counter()
        self.latency.add(ready - arrived)
        self.frames_shown += 1
        self.recent = [stamp for stamp in self.recent if stamp > ready - RATE_WINDOW_S] + [ready]
        with self._lock:
            if self.recorder is not None:
                self.recorder.put(swapped, arrived - self.started)
        return np.ascontiguousarray(swapped[:, :, ::-1])

    def fps(self) -> float:
        """Frames swapped per second over the last ``RATE_WINDOW_S`` seconds."""
        if len(self.recent) < 2:
            return 0.0
        return (len(self.recent) - 1) / max(self.recent[-1] - self.recent[0], 1e-6)

    def readout(self) -> str:
        latency = self.latency.to_json()
        if latency["median"] is None:
            return "waiting for the camera's first frame"
        return (
            f"{self.fps():.1f} fps · latency median {latency['median']:.0f} ms, p95 {latency['p95']:.0f} ms "
            f"(frame received to swapped) · {self.frames_shown} frames, {self.frames_dropped} dropped"
        )

    def start_recording(self, path: Path) -> None:
        with self._lock:
            if self.recorder is None:
                self.recorder = Recorder(str(path), self.width, self.height)

    def stop_recording(self) -> Path | None:
        """The finished recording's file (None when nothing was recording)."""
        with self._lock:
            recorder, self.recorder = self.recorder, None
        if recorder is None:
            return None
        recorder.close()
        return Path(recorder.path)

    def report(self) -> dict[str, Any]:
        return {
            "frames_shown": self.frames_shown,
            "frames_dropped": self.frames_dropped,
            "latency_ms": self.latency.to_json(),
            "fps": round(self.fps(), 2),
        }

    def close(self) -> Path | None:
        recorded = self.stop_recording()
        self.engine.close()
        return recorded

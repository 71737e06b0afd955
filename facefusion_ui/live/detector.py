"""Full-frame face detection for live mode, on a thread of its own so that a frame never waits for it.

Between detections the engine follows faces by their meshes; the detector takes the newest frame when it
is free and due (at once while no face is followed, so a lost face is found again within a detection's
time; every ``every_seconds`` while faces are followed, to find new ones), one frame in flight. Its boxes
are a detection's time old when the engine reads them: they only say where to search in the next frame."""

from __future__ import annotations

import threading
import time

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.frames import BgrImage
from facefusion_ui.live.mailbox import LatestSlot
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

REDETECT_SECONDS = 1.0
"""While faces are followed, a full-frame detection looks for new ones this often."""


class BackgroundDetector:
    def __init__(self, analyser: FaceAnalyser, settings: Settings, every_seconds: float = REDETECT_SECONDS) -> None:
        self.analyser = analyser
        self.settings = settings
        self.every_seconds = every_seconds
        self.detections = 0
        self._frames: LatestSlot[Frame] = LatestSlot()
        self._lock = threading.Lock()
        self._busy = False
        self._started = float("-inf")
        self._found: list[Points] | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-detector", daemon=True)
        self._thread.start()

    def offer(self, frame: Frame, following: bool) -> bool:
        """Give ``frame`` to the detector when it is free and a detection is due; True when taken."""
        now = time.perf_counter()
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._busy or (following and now - self._started < self.every_seconds):
                return False
            self._busy, self._started = True, now
        self._frames.put(frame)
        return True

    def take_found(self) -> list[Points] | None:
        """The face boxes of the last detection finished since the last call (None: none finished)."""
        with self._lock:
            found, self._found = self._found, None
            return found

    def _run(self) -> None:
        while True:
            frame = self._frames.take(timeout=1.0)
            if frame is None:
                if self._frames.closed:
                    return
                continue
            try:
                view = self.analyser.search_view(BgrImage(frame), self.settings)
                found = [detection.bbox for detection in self.analyser.detect_view(view, self.settings)]
            except Exception as error:  # reported to the engine's thread on its next offer
                with self._lock:
                    self._failure, self._busy = error, False
                return
            with self._lock:
                self._found, self._busy = found, False
                self.detections += 1

    def idle(self) -> bool:
        with self._lock:
            return not self._busy

    def close(self) -> None:
        self._frames.close()
        self._thread.join(timeout=30)

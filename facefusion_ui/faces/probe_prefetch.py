"""A video probe's full-frame search computed ahead, on a helper thread, while the analysis thread still
follows the frames of the group before (``video/stream.py``).

A full-frame detection (``FaceAnalyser.detect_view`` of a frame's search view) depends on the frame and
the settings only, so it can run before the detection schedule asks for it. Whether the schedule asks
depends on its state when it gets there (a face that came or went changes the next group's size and its
probe), so the search is speculative: started only while faces are in view (every probe is then a full
search, ``DetectionSchedule.probe_whole``), taken only when the schedule then wants exactly that frame's
full search, and otherwise discarded. At most one search is in flight; its frame is one the pipeline
already holds (it counts among the frames in flight). An error of a search that is taken is raised where
the probe would have raised it; one that is discarded is dropped with it, as the probe never ran it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass

from facefusion_ui.faces.detection import Detection
from facefusion_ui.frames import FrameImage

FullSearch = Callable[[FrameImage], list[Detection]]
FrameAt = Callable[[int], FrameImage | None]
"""A frame the video pipeline has already decoded, by its number (None: not yet, or out of reach)."""


@dataclass
class PrefetchStats:
    started: int = 0
    """Searches started ahead."""
    used: int = 0
    """Searches the schedule then took as its probe."""
    discarded: int = 0
    """Searches the schedule did not ask for (the faces or the groups changed meanwhile), or a stop dropped."""

    def to_json(self) -> dict[str, int]:
        return {"started": self.started, "used": self.used, "discarded": self.discarded}


class ProbePrefetch:
    """At most one full-frame search ahead: ``start`` it for a frame, ``take`` it in that frame's probe,
    ``discard_through`` what a group's analysis did not take. The calls come from one thread (the
    analysis); the searches run on ``executor``, on frames ``frame_at`` gives."""

    def __init__(self, executor: Executor, frame_at: FrameAt, stats: PrefetchStats | None = None) -> None:
        self.executor = executor
        self.frame_at = frame_at
        self.stats = stats if stats is not None else PrefetchStats()
        self._pending: tuple[int, Future[list[Detection]]] | None = None
        self._lock = threading.Lock()

    @property
    def pending_index(self) -> int | None:
        """The frame whose search is in flight or done but not taken (None: none)."""
        with self._lock:
            return None if self._pending is None else self._pending[0]

    def start(self, index: int, search: FullSearch) -> bool:
        """Start ``search`` of frame ``index`` on the helper thread; False when one is already pending (the
        bound: one at a time) or the frame is not decoded yet (never waited for)."""
        with self._lock:
            if self._pending is not None:
                return False
        image = self.frame_at(index)
        if image is None:
            return False
        with self._lock:
            self._pending = (index, self.executor.submit(search, image))
            self.stats.started += 1
            return True

    def take(self, index: int) -> list[Detection] | None:
        """Frame ``index``'s full search, waited for, when it is the one ahead (its error raised here);
        None when no search of that frame is pending (the caller runs the search itself)."""
        with self._lock:
            if self._pending is None or self._pending[0] != index:
                return None
            _, future = self._pending
            self._pending = None
        self.stats.used += 1
        return future.result()

    def discard_through(self, index: int) -> None:
        """Drop the pending search when its frame is ``index`` or before (its group went by without it)."""
        pending = self.pending_index
        if pending is not None and pending <= index:
            self.discard()

    def discard(self) -> None:
        """Drop the pending search, if any, once it has stopped running: after this, no thread reads its
        frame any more (the frame may be written and its memory reused). Its error, if any, is dropped."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        _, future = pending
        self.stats.discarded += 1
        if not future.cancel():
            wait([future])  # running: its result (or error) is dropped once it ends

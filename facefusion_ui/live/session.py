"""A live run: frames from a ``FrameSource`` through the ``LiveEngine`` to the sinks, with what was
measured (frames in, shown, dropped; latency from a frame's arrival to its swapped frame being ready;
frames per second shown; the process's peak memory).

Analysis and swap run one after the other on the caller's thread, on the newest frame the input's slot
holds; frames that came meanwhile were dropped there. (Analysing frame N+1 on a thread while N is swapped
was tried: on the shared 2-core VM it showed about as many frames, 42.8-43.7 % against 36.6-63.8 %, at
three times the latency, median 214-229 ms against 60-89 ms, the analysed frame waiting for the swap.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from facefusion_ui.live.engine import Analysed, LiveEngine
from facefusion_ui.live.latency import LatencyHistogram
from facefusion_ui.live.sinks import FrameSink
from facefusion_ui.live.source import FrameSource
from facefusion_ui.memory import peak_rss_mb

FirstFrame = Callable[[], None]


class LiveSession:
    def __init__(self, engine: LiveEngine, source: FrameSource, sinks: Sequence[FrameSink] = ()) -> None:
        self.engine = engine
        self.source = source
        self.sinks = list(sinks)
        self.latency = LatencyHistogram()
        self.frames_shown = 0
        self.first_arrival: float | None = None
        self.last_shown: float | None = None

    def run(
        self,
        stop: threading.Event | None = None,
        duration: float | None = None,
        on_first_frame: FirstFrame | None = None,
    ) -> None:
        """Until the input ends, ``stop`` is set, or ``duration`` seconds after the first frame (Ctrl-C:
        a KeyboardInterrupt out of here; the counts so far stay readable in ``report``)."""
        while not (stop is not None and stop.is_set()):
            item = self.source.frames.take(timeout=0.25)
            if item is None:
                if self.source.frames.closed:
                    break
                continue
            if self.first_arrival is None:
                self.first_arrival = item.arrived
            self.deliver(self.engine.analysed(item.image, item.arrived), item.arrived, on_first_frame)
            if duration is not None and time.perf_counter() - self.first_arrival >= duration:
                break

    def deliver(self, frame: Analysed, arrived: float, on_first_frame: FirstFrame | None) -> None:
        """The processors on ``frame``, its latency counted, the result handed to the sinks."""
        swapped = self.engine.apply(frame)
        ready = time.perf_counter()
        self.latency.add(ready - arrived)
        self.frames_shown += 1
        self.last_shown = ready
        for sink in self.sinks:
            sink.put(swapped, arrived - (self.first_arrival or arrived))
        if self.frames_shown == 1 and on_first_frame is not None:
            on_first_frame()

    def report(self) -> dict[str, Any]:
        """``--json``: frames in, shown and dropped, latency (ms), frames per second shown and read."""
        frames_in = self.source.frames_in
        seconds = (
            (self.last_shown - self.first_arrival)
            if self.first_arrival is not None and self.last_shown is not None
            else 0.0
        )
        return {
            "frames_in": frames_in,
            "frames_shown": self.frames_shown,
            "frames_dropped": max(frames_in - self.frames_shown, 0),
            "latency_ms": self.latency.to_json(),
            "fps": round(self.frames_shown / seconds, 2) if seconds > 0 else 0.0,
            "input_fps": round(frames_in / seconds, 2) if seconds > 0 else 0.0,
            "seconds": round(seconds, 2),
            "size": [self.source.width, self.source.height],
            "input": self.source.source.label,
            **self.engine.summary(),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }

    def close(self) -> list[Exception]:
        """Stop the input and the engine, and finish every sink (a recording is completed); the sinks'
        failures are returned, not raised, so that the report is still given."""
        self.source.stop()
        self.engine.close()
        failures: list[Exception] = []
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as error:
                failures.append(error)
        return failures

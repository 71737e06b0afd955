"""Fault injection for tests and drills: raise the real error type at a chosen frame.

``FACEFUSION_UI_INJECT_FAULT="frame=12,times=1,kind=onnxruntime"`` (read by the CLI only) makes frame 12
fail once as onnxruntime fails when its arena cannot allocate; ``kind=memory`` raises MemoryError,
``kind=error`` a plain RuntimeError (not a memory error: the job fails).

``FACEFUSION_UI_INJECT_FAULT="hold:chunk=2,until=/tmp/release"`` holds the job when it reports progress in
its chunk 2 (the chunks before are finished): it writes ``/tmp/release.held`` and waits until
``/tmp/release`` exists (or the job is stopped, or Ctrl-C interrupts ``process``), so a test can interrupt a
run at a known point instead of racing it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facefusion_ui.errors import UsageError

ONNXRUNTIME_OOM = (
    "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Conv node. "
    "Status Message: bfc_arena.cc:376 onnxruntime::BFCArena::AllocateRawInternal "
    "Failed to allocate memory for requested buffer of size 67108864"
)


@dataclass
class FaultInjection:
    frame: int
    times: int = 1
    kind: str = "onnxruntime"
    fired: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def parse(cls, text: str) -> FaultInjection:
        values = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            injection = cls(int(values["frame"]), int(values.get("times", 1)), values.get("kind", "onnxruntime"))
        except (KeyError, ValueError) as error:
            raise UsageError(
                f"bad fault injection '{text}': use frame=N[,times=N][,kind=onnxruntime|memory|error]"
            ) from error
        if injection.kind not in ("onnxruntime", "memory", "error"):
            raise UsageError(f"bad fault kind '{injection.kind}': use onnxruntime, memory or error")
        return injection

    def check(self, index: int) -> None:
        if index != self.frame:
            return
        with self._lock:
            if self.fired >= self.times:
                return
            self.fired += 1
        if self.kind == "memory":
            raise MemoryError("injected: cannot allocate a frame buffer")
        if self.kind == "error":
            raise RuntimeError("injected failure")
        from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException

        raise RuntimeException(ONNXRUNTIME_OOM)

    def wrap(self, stages: Any) -> Any:
        """A ``RunContext.wrap_stages`` that puts this fault in front of the processors."""
        return FaultyStages(stages, self)


@dataclass
class ChunkHold:
    """Hold a job once, at the first progress report of chunk ``chunk`` (1-based) or later, once the job
    has done at least ``frames`` frames in this run (``hold:frames=N,...``: a point N frames into any run,
    also a resumed one)."""

    chunk: int
    until: Path
    frames: int = 0
    poll_s: float = 0.05
    fired: bool = False

    @classmethod
    def parse(cls, text: str) -> ChunkHold:
        values = dict(part.split("=", 1) for part in text.removeprefix("hold:").split(",") if "=" in part)
        try:
            if "chunk" not in values and "frames" not in values:
                raise KeyError("chunk")
            return cls(int(values.get("chunk", 0)), Path(values["until"]), int(values.get("frames", 0)))
        except (KeyError, ValueError) as error:
            raise UsageError(f"bad fault injection '{text}': use hold:chunk=N|frames=N,until=PATH") from error

    @property
    def marker(self) -> Path:
        return self.until.with_name(self.until.name + ".held")

    def around(self, progress: Callable[[dict[str, Any]], None], stop: threading.Event) -> Callable[..., None]:
        first: int | None = None  # the job's frames done at its first report in this run

        def held(state: dict[str, Any]) -> None:
            nonlocal first
            progress(state)
            done = int(state["frames_done"])
            first = done if first is None else first
            if self.fired or int(state["chunk"]) < self.chunk or done - first < self.frames:
                return
            self.fired = True
            self.marker.write_text(str(state["chunk"]), encoding="utf-8")
            while not self.until.exists() and not stop.wait(self.poll_s):
                pass

        return held


def injected_hold(text: str | None) -> ChunkHold | None:
    """The hold in ``FACEFUSION_UI_INJECT_FAULT``'s value ``text`` for a queue worker (None when unset);
    a frame fault there is a mistake."""
    if not text:
        return None
    fault = parse_fault(text)
    if not isinstance(fault, ChunkHold):
        raise UsageError("a queue worker takes only hold:chunk=N,until=PATH in FACEFUSION_UI_INJECT_FAULT")
    return fault


def parse_fault(text: str) -> FaultInjection | ChunkHold:
    """``FACEFUSION_UI_INJECT_FAULT``'s value: a frame fault or a hold."""
    return ChunkHold.parse(text) if text.startswith("hold:") else FaultInjection.parse(text)


class FaultyStages:
    """Frame stages that run ``injection.check`` before the processors of each frame."""

    def __init__(self, stages: Any, injection: FaultInjection) -> None:
        self.stages = stages
        self.injection = injection

    def group_size_from(self, index: int) -> int:
        return int(self.stages.group_size_from(index))

    def analyse_group(self, images: Any, indices: Any, timestamps: Any) -> Any:
        return self.stages.analyse_group(images, indices, timestamps)

    def changes(self, analysis: Any) -> bool:
        return True  # every frame goes through ``apply``, so a fault can hit a frame with no face

    def apply(self, frame: Any, analysis: Any, index: int, timestamp: float) -> Any:
        self.injection.check(index)
        return self.stages.apply(frame, analysis, index, timestamp)

    def frame_region(self, analysis: Any, width: int, height: int) -> tuple[int, int, int, int] | None:
        """The stages' own (``RegionalStages``): a run with a fault swaps the same pixels as one without."""
        from facefusion_ui.video.stream import RegionalStages  # here: the command line imports this module

        if not isinstance(self.stages, RegionalStages):
            return None
        return self.stages.frame_region(analysis, width, height)

    def apply_within(self, crop: Any, analysis: Any, origin: tuple[int, int], index: int, timestamp: float) -> Any:
        self.injection.check(index)
        return self.stages.apply_within(crop, analysis, origin, index, timestamp)

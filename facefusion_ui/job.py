"""What one job is (``SwapJob``), what runs it (``RunContext``), and what it returns (``ProcessResult``).

The job is data a queue stores: the settings snapshot, the source photos, the target and the output.
The context is everything about *how* this process runs it: warm models, the processor registry, a
progress callback, the work folder, a cancel event, and an optional wrapper around the frame stages
(instrumentation; the tests inject faults through it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefusion_ui.faces.face_map import FaceMapEntry, map_paths, parse_face_map
from facefusion_ui.state_manager import Settings

if TYPE_CHECKING:
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.processors.registry import ProcessorRegistry
    from facefusion_ui.video.stream import FrameStages

Progress = Callable[[dict[str, Any]], None]
StageWrapper = Callable[["FrameStages"], "FrameStages"]


@dataclass(frozen=True)
class SwapJob:
    settings: Settings
    sources: tuple[Path, ...]
    target: Path
    output: Path
    face_map: tuple[FaceMapEntry, ...] = ()
    """Each person of the target their own source (``faces/face_map.py``); when given, ``sources`` is empty
    and the selector mode is not used."""

    @classmethod
    def of(
        cls,
        settings: Settings,
        sources: Sequence[Path | str],
        target: Path | str,
        output: Path | str,
        face_map: Sequence[FaceMapEntry | str] = (),
    ) -> SwapJob:
        """``face_map``: entries, or ``WHO=SOURCE`` texts as on the command line (``--face-map``)."""
        entries = tuple(parse_face_map(entry) if isinstance(entry, str) else entry for entry in face_map)
        return cls(settings, tuple(Path(source) for source in sources), Path(target), Path(output), entries)

    def photos(self) -> list[Path]:
        """Every photo the job reads besides the target: the sources, or the face map's photos."""
        return map_paths(self.face_map) if self.face_map else list(self.sources)


@dataclass
class RunContext:
    runtime: ModelRuntime | None = None
    """Warm models shared by every job of a process; a new one is made when None."""
    registry: ProcessorRegistry | None = None
    progress: Progress | None = None
    work_dir: Path | None = None
    """Where a video job keeps its segments and manifest (default: from target and output)."""
    cancel: threading.Event | None = None
    wrap_stages: StageWrapper | None = None


@dataclass
class ProcessResult:
    output: str
    kind: str
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "kind": self.kind, "seconds": round(self.seconds, 3), **self.stats}

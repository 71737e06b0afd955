"""Chunks: the plan (frame ranges), the job's manifest of finished segments, and its fingerprint.

A chunk is recorded in ``manifest.json`` (written to a temporary file, then renamed) only after its
segment file is complete, so a run that is killed at any moment resumes from its last finished chunk.
A manifest made with other settings, sources or target is not reused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.state_manager import Settings, frame_setting_keys, setting_keys
from facefusion_ui.version import __version__

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_VERSION = 2


def settings_not_in_fingerprint() -> tuple[str, ...]:
    """What ``NOT_IN_FINGERPRINT`` holds (each setting's ``frames`` facet read once)."""
    frame_keys = set(frame_setting_keys())
    return tuple(key for key in setting_keys() if key not in frame_keys)


NOT_IN_FINGERPRINT = settings_not_in_fingerprint()
"""Settings that change how fast or in how much memory a run goes, never its frames (their ``frames`` facet)."""


@dataclass(frozen=True)
class Chunk:
    index: int
    start: int
    """First frame (source numbering)."""
    end: int
    """Frame after the last."""

    @property
    def frames(self) -> int:
        return self.end - self.start

    @property
    def segment_name(self) -> str:
        return f"segment_{self.index:05d}.mp4"


def frame_range(frame_count: int, trim_start: int | None, trim_end: int | None) -> tuple[int, int]:
    start = min(trim_start or 0, frame_count)
    end = min(trim_end if trim_end is not None else frame_count, frame_count)
    return start, max(start, end)


def chunk_length(seconds: float, fps: float, grid: int) -> int:
    """A chunk's length in frames: ``seconds`` of video rounded to a multiple of ``grid`` (at least one),
    the detection groups' grid (``faces/schedule.py``), so no group crosses a chunk's border."""
    frames = max(1, round(seconds * fps))
    return max(grid, int(frames / grid + 0.5) * grid)  # half up: 2.5 grid steps are 3


def plan_chunks(start: int, end: int, frames_per_chunk: int) -> list[Chunk]:
    """Consecutive chunks covering ``[start, end)``: no frame lost or repeated at the borders."""
    size = max(1, frames_per_chunk)
    return [Chunk(i, s, min(s + size, end)) for i, s in enumerate(range(start, end, size))]


def fingerprint(settings: Settings, sources_key: str, target: Path, chunks: list[Chunk]) -> str:
    stat = target.stat()
    relevant = {key: value for key, value in settings.to_dict().items() if key not in NOT_IN_FINGERPRINT}
    payload = {
        "version": __version__,
        "settings": relevant,
        "sources": sources_key,
        "target": {"path": str(target.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
        "chunks": [asdict(chunk) for chunk in chunks],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class Manifest:
    """Which chunks of a job are finished, in ``work_dir/manifest.json``."""

    def __init__(self, work_dir: Path, key: str, chunks: list[Chunk]) -> None:
        self.work_dir = work_dir
        self.key = key
        self.chunks = chunks
        self.done: dict[int, dict[str, Any]] = {}
        self.discarded_reason: str | None = None
        self.saved_state: dict[str, Any] | None = None
        """The pipeline's state (detection schedule, identities) after the last finished chunk:
        ``{"after_chunk": i, "state": ...}`` (the file's key is "schedule", as when it held only that)."""

    @classmethod
    def open(cls, work_dir: Path, key: str, chunks: list[Chunk]) -> Manifest:
        """Load the manifest for ``key``; a manifest for another key is discarded with its segments."""
        work_dir.mkdir(parents=True, exist_ok=True)
        manifest = cls(work_dir, key, chunks)
        path = work_dir / MANIFEST
        if not path.exists():
            return manifest
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            data = {}
        if data.get("version") != MANIFEST_VERSION or data.get("fingerprint") != key:
            manifest.discarded_reason = (
                "the settings, sources or target changed since the last run: finished chunks are not reused"
                if data
                else "the manifest was unreadable: starting over"
            )
            logger.warning(manifest.discarded_reason)
            for item in work_dir.iterdir():
                if item.name.startswith("segment_"):
                    item.unlink()
            path.unlink()
            return manifest
        for index, entry in data.get("done", {}).items():
            segment = work_dir / entry["file"]
            if segment.exists() and segment.stat().st_size == entry.get("bytes"):
                manifest.done[int(index)] = entry
        manifest.saved_state = data.get("schedule")
        return manifest

    def is_done(self, chunk: Chunk) -> bool:
        return chunk.index in self.done

    def record(
        self,
        chunk: Chunk,
        frames: int,
        seconds: float,
        state: dict[str, Any] | None = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        """``chunk`` is finished; ``state``: the pipeline's state after it (for a resume); ``counts``: what
        was done in it (faces swapped...), so that a resumed run reports the whole output."""
        segment = self.work_dir / chunk.segment_name
        self.done[chunk.index] = {
            "file": chunk.segment_name,
            "frames": frames,
            "bytes": segment.stat().st_size,
            "seconds": round(seconds, 3),
            "counts": dict(counts or {}),
        }
        self.saved_state = {"after_chunk": chunk.index, "state": state} if state is not None else None
        self.save()

    def counts_of(self, chunk: Chunk) -> dict[str, int]:
        """What was done in a finished chunk (empty for manifests written before counts were kept)."""
        counts = self.done.get(chunk.index, {}).get("counts", {})
        return {str(key): int(value) for key, value in counts.items()} if isinstance(counts, dict) else {}

    def state_after(self, index: int) -> dict[str, Any] | None:
        """The pipeline's state saved after chunk ``index``, None when that is not the one saved."""
        saved = self.saved_state
        if saved is None or saved.get("after_chunk") != index or index not in self.done:
            return None
        state = saved.get("state")
        return state if isinstance(state, dict) else None

    def save(self) -> None:
        data = {
            "version": MANIFEST_VERSION,
            "fingerprint": self.key,
            "chunks_total": len(self.chunks),
            "done": {str(index): entry for index, entry in sorted(self.done.items())},
            "schedule": self.saved_state,
        }
        temporary = self.work_dir / (MANIFEST + ".tmp")
        temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(temporary, self.work_dir / MANIFEST)

    def segments(self) -> list[Path]:
        return [self.work_dir / chunk.segment_name for chunk in self.chunks]


def remove_work_dir(work_dir: Path) -> None:
    shutil.rmtree(work_dir, ignore_errors=True)

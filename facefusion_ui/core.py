"""``process(settings, sources, target, output)``: the image or video workflow for one job."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import InputError, NotAvailableError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import read_image
from facefusion_ui.memory import process_rss_mb
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v")
Progress = Callable[[dict[str, Any]], None]


@dataclass
class ProcessResult:
    output: str
    kind: str
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "kind": self.kind, "seconds": round(self.seconds, 3), **self.stats}


def media_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    raise InputError(
        f"{path} is neither an image ({', '.join(IMAGE_SUFFIXES)}) nor a video ({', '.join(VIDEO_SUFFIXES)})"
    )


def check_paths(sources: Sequence[Path], target: Path, output: Path) -> str:
    """Validate the job's files before any work; returns the target's kind."""
    if not sources:
        raise InputError("no source image given: add -s PHOTO with the face to put in")
    for source in sources:
        if media_kind(source) != "image":
            raise InputError(f"source {source} is a video: the source must be a photo of the face")
        if not source.is_file():
            raise InputError(f"source {source} does not exist: check the path")
    if not target.is_file():
        raise InputError(f"target {target} does not exist: check the path")
    kind = media_kind(target)
    if media_kind(output) != kind:
        raise InputError(f"output {output} must be {'an image' if kind == 'image' else 'a video'} like the target")
    if output.resolve() == target.resolve():
        raise InputError(f"output {output} is the target itself: choose another output path")
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"output folder {folder} does not exist: create it or choose another -o")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".facefusion_ui-write-test-"):
            pass
    except OSError as error:
        raise InputError(f"cannot write to output folder {folder} ({error.strerror}): choose another -o") from error
    return kind


def write_image(path: Path, image: Frame, quality: int) -> None:
    """Encode by the file's suffix and write atomically (temp + rename): no half-written output."""
    suffix = path.suffix.lower()
    params: list[int] = []
    if suffix in (".jpg", ".jpeg"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif suffix == ".webp":
        params = [cv2.IMWRITE_WEBP_QUALITY, max(quality, 1)]
    elif suffix == ".png":
        params = [cv2.IMWRITE_PNG_COMPRESSION, 3]
    ok, data = cv2.imencode(suffix, image, params)
    if not ok:
        raise InputError(f"cannot encode {path.name}: choose a .jpg or .png output")
    temporary = path.with_name(f".{path.name}.part")
    np.asarray(data).tofile(str(temporary))
    os.replace(temporary, path)


def process_image(
    settings: Settings,
    sources: Sequence[Path],
    target: Path,
    output: Path,
    runtime: ModelRuntime,
    registry: ProcessorRegistry | None = None,
) -> ProcessResult:
    started = time.perf_counter()
    pipeline = FramePipeline.build(settings, runtime, sources, registry)
    frame = read_image(target, "target")
    pipeline.set_reference_from(frame)
    result = pipeline.process(frame)
    write_image(output, result, settings.output_image_quality)
    stats = {**pipeline.summary(), "frames": 1, "peak_rss_mb": round(process_rss_mb(), 1)}
    return ProcessResult(str(output), "image", time.perf_counter() - started, stats)


def process(
    settings: Settings,
    sources: Sequence[Path],
    target: Path,
    output: Path,
    runtime: ModelRuntime | None = None,
    registry: ProcessorRegistry | None = None,
    progress: Progress | None = None,
) -> ProcessResult:
    """Run one job. ``runtime`` keeps models warm across calls; a new one is made when not given."""
    kind = check_paths(sources, target, output)
    runtime = runtime or ModelRuntime.create(settings)
    if kind == "image":
        return process_image(settings, sources, target, output, runtime, registry)
    raise NotAvailableError("video targets are not available in this version yet: they arrive with the video pipeline")

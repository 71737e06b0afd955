"""``process(settings, sources, target, output)``: the image or video workflow for one job."""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui import __version__
from facefusion_ui.errors import FfmpegError, InputError, OutOfMemory
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.faces.source import read_image
from facefusion_ui.faults import FaultInjection, FaultyStages
from facefusion_ui.inference import SessionPool
from facefusion_ui.memory import (
    MemoryBudget,
    is_out_of_memory,
    peak_rss_mb,
    plan_budget,
    probe_gpus,
    return_free_memory,
)
from facefusion_ui.paths import home_dir
from facefusion_ui.pipeline import FramePipeline, VideoState
from facefusion_ui.presets import PRESET_KEYS
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.progress import FrameProgress
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import (
    Chunk,
    Manifest,
    chunk_length,
    fingerprint,
    frame_range,
    plan_chunks,
    remove_work_dir,
)
from facefusion_ui.video.commands import assemble_args, audio_codec_args, concat_list
from facefusion_ui.video.ffmpeg import resolve_ffmpeg, run_tool, stderr_tail
from facefusion_ui.video.probe import VideoInfo, probe_video
from facefusion_ui.video.stream import ChunkRun, ChunkTask, FrameStages, read_frame, run_chunk

logger = logging.getLogger(__name__)
MAX_CHUNK_ATTEMPTS = 3
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
    if check_paths(sources, target, output) != "image":
        raise InputError(f"{target} is not an image: use process_video() for videos")
    pipeline = FramePipeline.build(settings, runtime, sources, registry)
    frame = read_image(target, "target")
    pipeline.set_reference_from(frame)
    result = pipeline.process(frame)
    write_image(output, result, settings.output_image_quality)
    stats = {**pipeline.summary(), "frames": 1, "peak_rss_mb": round(peak_rss_mb(), 1)}
    return ProcessResult(str(output), "image", time.perf_counter() - started, stats)


def default_work_dir(target: Path, output: Path) -> Path:
    """Where a job keeps its segments and manifest: the same command finds them again to resume."""
    home = home_dir()
    key = hashlib.sha256(f"{target.resolve()}\n{output.resolve()}".encode()).hexdigest()[:16]
    return home / "work" / key


def budget_for(settings: Settings, info: VideoInfo) -> MemoryBudget:
    gpus = probe_gpus() if any(p != "cpu" for p in settings.execution_providers) else []
    return plan_budget(
        info.width,
        info.height,
        float(info.fps),
        settings.frame_queue_size,
        settings.execution_threads,
        settings.video_chunk_size,
        settings.memory_threshold_mb,
        gpu_free_mb=gpus[0].free_mb if gpus else None,
        held=largest_group(settings.face_detector_interval),
    )


def effective_values(settings: Settings) -> dict[str, Any]:
    """What the preset and options amount to for this job (reported in --json)."""
    keys = (*PRESET_KEYS, "face_identity_cache", "execution_providers")
    return {key: settings.to_dict()[key] for key in keys}


def lighter(settings: Settings) -> Settings:
    """The next attempt after running out of memory: half the queues, one frame worker."""
    return settings.with_items(frame_queue_size=max(1, settings.frame_queue_size // 2), execution_threads=1)


def run_chunk_recovering(
    ffmpeg: str,
    info: VideoInfo,
    chunk: Chunk,
    work_dir: Path,
    pipeline: FramePipeline,
    stages: FrameStages,
    settings: Settings,
    tracker: FrameProgress,
    cancel: threading.Event | None,
    recoveries: list[str],
) -> ChunkRun:
    """Run a chunk; on out-of-memory free everything, lighten, retry; the second retry on a GPU runs the
    chunk on the CPU; a third failure fails the job with the preset to use."""
    partial = work_dir / f"part_{chunk.segment_name}"
    attempt_settings = settings
    gpu_pool: SessionPool | None = None
    state = pipeline.video_state()
    try:
        for attempt in range(MAX_CHUNK_ATTEMPTS):
            done_before = tracker.frames_done
            try:
                pipeline.restore_video_state(state)  # a retry starts the chunk as the first attempt did
                pipeline.begin_chunk()
                return run_chunk(
                    ChunkTask(ffmpeg, info, chunk, partial, attempt_settings, stages, tracker.advance, cancel)
                )
            except BaseException as error:
                if not is_out_of_memory(error):
                    raise
                tracker.rewind(tracker.frames_done - done_before)
                pipeline.release()
                gc.collect()
                if attempt + 1 == MAX_CHUNK_ATTEMPTS:
                    raise OutOfMemory(
                        f"out of memory on chunk {chunk.index + 1} after {MAX_CHUNK_ATTEMPTS} attempts ({error}): "
                        "run again with --preset strict (or lightweight), or a smaller --video-chunk-size"
                    ) from error
                lighter_settings = lighter(attempt_settings)
                note = (
                    f"out of memory on chunk {chunk.index + 1} (attempt {attempt + 1}): released models and caches, "
                    f"queue {attempt_settings.frame_queue_size} -> {lighter_settings.frame_queue_size}, "
                    f"threads {attempt_settings.execution_threads} -> {lighter_settings.execution_threads}"
                )
                attempt_settings = lighter_settings
                if attempt == 1 and pipeline.runtime.sessions.providers != ("cpu",):
                    gpu_pool = pipeline.runtime.sessions
                    pipeline.runtime.sessions = SessionPool(("cpu",), 0, attempt_settings.execution_threads)
                    note += "; this chunk falls back to the CPU"
                logger.warning(note)
                recoveries.append(note)
        raise AssertionError("unreachable")
    finally:
        if gpu_pool is not None:
            pipeline.runtime.sessions.release_all()
            pipeline.runtime.sessions = gpu_pool


def output_comment(settings: Settings) -> str:
    processors = ", ".join(settings.processors)
    swapper = settings.face_swapper_model
    return f"faces swapped by facefusion_ui {__version__} (processors: {processors}; swapper: {swapper})"


def process_video(
    settings: Settings,
    sources: Sequence[Path],
    target: Path,
    output: Path,
    runtime: ModelRuntime | None = None,
    registry: ProcessorRegistry | None = None,
    progress: Progress | None = None,
    work_dir: Path | None = None,
    cancel: threading.Event | None = None,
    fault: FaultInjection | None = None,
) -> ProcessResult:
    """Swap faces in a video, chunk by chunk; running it again resumes from the finished chunks."""
    started = time.perf_counter()
    if check_paths(sources, target, output) != "video":
        raise InputError(f"{target} is not a video: use process() for images")
    runtime = runtime or ModelRuntime.create(settings)
    ffmpeg = resolve_ffmpeg().path
    info = probe_video(target)
    pipeline = FramePipeline.build(settings, runtime, sources, registry)
    first, last = frame_range(info.frame_count, settings.trim_frame_start, settings.trim_frame_end)
    if last <= first:
        raise InputError(
            f"the trim range {settings.trim_frame_start}-{settings.trim_frame_end} holds no frame of {target} "
            f"({info.frame_count} frames): fix --trim-frame-start/--trim-frame-end"
        )
    budget = budget_for(settings, info)
    seconds = budget.chunk_seconds
    settings = settings.with_items(frame_queue_size=budget.queue_size)
    frames_per_chunk = chunk_length(seconds, float(info.fps), largest_group(settings.face_detector_interval))
    chunks = plan_chunks(first, last, frames_per_chunk)
    work_dir = work_dir or default_work_dir(target, output)
    manifest = Manifest.open(work_dir, fingerprint(settings, pipeline.sources.key, target, chunks), chunks)
    if settings.face_selector_mode == "reference" and settings.reference_face_from == "frame":
        reference_index = min(settings.reference_frame_number, info.frame_count - 1)
        pipeline.set_reference_from(read_frame(ffmpeg, info, reference_index))
    tracker = FrameProgress(last - first, len(chunks), progress)
    chunk_runs: list[ChunkRun] = []
    recoveries: list[str] = []
    stages: FrameStages = FaultyStages(pipeline, fault) if fault is not None else pipeline
    skipped = 0
    carried = False  # whether the pipeline's state comes from the chunk just run
    for chunk in chunks:
        tracker.chunk_index = chunk.index
        if manifest.is_done(chunk):
            skipped += 1
            tracker.skip(chunk.frames)
            carried = False
            continue
        if not carried:  # the job's start, or a resume: the state saved after the chunk before, if any
            saved = manifest.state_after(chunk.index - 1)
            pipeline.start_video(first, VideoState.from_json(saved) if saved is not None else None)
        run = run_chunk_recovering(
            ffmpeg, info, chunk, work_dir, pipeline, stages, settings, tracker, cancel, recoveries
        )
        os.replace(work_dir / f"part_{chunk.segment_name}", work_dir / chunk.segment_name)
        manifest.record(chunk, run.frames, run.seconds, pipeline.video_state().to_json())
        carried = True
        chunk_runs.append(run)
        if settings.release_models == "after_chunk":
            pipeline.release()
        gc.collect()
        return_free_memory()
    assemble(ffmpeg, manifest, info, first, last, settings, output)
    if not settings.keep_temp:
        remove_work_dir(work_dir)
    if settings.release_models in ("after_job", "after_chunk"):
        pipeline.release()
    processed_frames = sum(run.frames for run in chunk_runs)
    elapsed = time.perf_counter() - started
    stats = {
        **pipeline.summary(),
        "frames": last - first,
        "frames_converted": sum(run.frames_converted for run in chunk_runs),
        "fps": round(processed_frames / elapsed, 2) if elapsed > 0 else 0.0,
        "chunks_total": len(chunks),
        "chunks_done": len(chunks) - skipped,
        "chunks_skipped": skipped,
        "chunk_seconds": seconds,
        "chunk_frames": frames_per_chunk,
        "memory_budget": budget.to_json(),
        "settings_effective": effective_values(settings),
        "recoveries": recoveries,
        "manifest_reused": manifest.discarded_reason is None,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "queues": chunk_runs[-1].queues if chunk_runs else {},
        "video": info.to_json(),
    }
    return ProcessResult(str(output), "video", elapsed, stats)


def assemble(
    ffmpeg: str, manifest: Manifest, info: VideoInfo, first: int, last: int, settings: Settings, output: Path
) -> None:
    """Concatenate the segments and mux the source audio once over the trimmed range, atomically."""
    list_file = manifest.work_dir / "segments.txt"
    list_file.write_text(concat_list(manifest.segments()), encoding="utf-8")
    duration = (last - first) / float(info.fps)
    temporary = output.with_name(f".{output.stem}.part{output.suffix}")
    trimmed = first > 0 or last < info.frame_count
    audio = audio_codec_args(info.audio_codec, output, trimmed) if info.has_audio else None
    command = assemble_args(
        ffmpeg,
        list_file,
        Path(info.path),
        audio,
        info.seek_time(first) if first else 0.0,
        duration,
        output_comment(settings),
        temporary,
    )
    completed = run_tool(command)
    if completed.returncode != 0:
        temporary.unlink(missing_ok=True)
        raise FfmpegError(f"joining the segments failed: {stderr_tail(completed.stderr)}")
    os.replace(temporary, output)


def process(
    settings: Settings,
    sources: Sequence[Path],
    target: Path,
    output: Path,
    runtime: ModelRuntime | None = None,
    registry: ProcessorRegistry | None = None,
    progress: Progress | None = None,
    work_dir: Path | None = None,
    cancel: threading.Event | None = None,
    fault: FaultInjection | None = None,
) -> ProcessResult:
    """Run one job. ``runtime`` keeps models warm across calls; a new one is made when not given.
    Each workflow validates its files first (``check_paths``)."""
    runtime = runtime or ModelRuntime.create(settings)
    if media_kind(target) == "image":
        return process_image(settings, sources, target, output, runtime, registry)
    return process_video(settings, sources, target, output, runtime, registry, progress, work_dir, cancel, fault)

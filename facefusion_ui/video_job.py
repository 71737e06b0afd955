"""A video job: plan the chunks, run each (resuming from the manifest, recovering from running out of
memory), join the segments with the source audio, and report what was done over the whole output."""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facefusion_ui.errors import InputError, OutOfMemory
from facefusion_ui.faces.detection_schedule import warm_proposer
from facefusion_ui.faces.face_map import PeopleSwap
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.inference import SessionPool
from facefusion_ui.job import ProcessResult, RunContext, SwapJob
from facefusion_ui.memory import (
    MemoryBudget,
    is_out_of_memory,
    peak_rss_mb,
    plan_budget,
    probe_gpus,
    return_free_memory,
)
from facefusion_ui.paths import home_dir
from facefusion_ui.people_job import people_swap
from facefusion_ui.pipeline import PERSON_COUNT, FramePipeline, VideoState
from facefusion_ui.presets import PRESET_KEYS
from facefusion_ui.processors.source_audio import replacement_audio
from facefusion_ui.progress import FrameProgress, PeoplePassProgress
from facefusion_ui.state_manager import Settings
from facefusion_ui.version import __version__
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
from facefusion_ui.video.ffmpeg import ffmpeg_failure, resolve_ffmpeg, run_tool
from facefusion_ui.video.gops import gops_in, plan_chunks_on_cuts
from facefusion_ui.video.output_format import OutputFormat, changed_reason, output_format
from facefusion_ui.video.pieces import HELD_FRAMES, ChunkCopy, SpliceFailed
from facefusion_ui.video.probe import VideoInfo, probe_video_listing
from facefusion_ui.video.quality import CRF_ENCODERS, VideoQuality, choose_quality, read_source_crf
from facefusion_ui.video.splice import CopySource, EarlyProbes, probe_copy_source, static_reason
from facefusion_ui.video.stream import ChunkRun, ChunkTask, FrameStages, raise_if_cancelled, read_frame, run_chunk
from facefusion_ui.video.yuv import even_size

logger = logging.getLogger(__name__)
MAX_CHUNK_ATTEMPTS = 3
ALWAYS_COUNTED = ("faces_detected", "faces_selected", "faces_swapped")
"""Reported for every job; the other counts only when a processor that makes them ran."""
MASK_COUNTED = ("faces_masked", "occlusion_pixels")
"""The mask stage's counts: reported under "masks"."""
Resize = Callable[[int, int], tuple[int, int]]
COPY_COUNTED = ("gops_copied", "gops_encoded", "frames_copied", "frames_not_read", "frames_read", "decoder_runs")


def default_work_dir(target: Path, output: Path) -> Path:
    """Where a job keeps its segments and manifest: the same command finds them again to resume."""
    key = hashlib.sha256(f"{target.resolve()}\n{output.resolve()}".encode()).hexdigest()[:16]
    return home_dir() / "work" / key


def budget_for(settings: Settings, info: VideoInfo, output_scale: float = 1.0) -> MemoryBudget:
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
        held=largest_group(settings.face_detector_interval) + HELD_FRAMES,  # and the untouched frames the writer keeps
        output_scale=output_scale,
    )


def effective_values(settings: Settings, runtime: ModelRuntime) -> dict[str, Any]:
    """What the preset and options amount to for this job (reported in --json); the providers are the
    ones that really ran, not the ones asked for."""
    values = {key: settings.to_dict()[key] for key in (*PRESET_KEYS, "face_identity_cache")}
    return {**values, "execution_providers": runtime.providers_used()}


def lighter(settings: Settings) -> Settings:
    """The next attempt after running out of memory: half the queues, one frame worker."""
    return settings.with_items(frame_queue_size=max(1, settings.frame_queue_size // 2), execution_threads=1)


def output_comment(settings: Settings) -> str:
    processors = ", ".join(settings.processors)
    swapper = settings.face_swapper_model
    return f"faces swapped by facefusion_ui {__version__} (processors: {processors}; swapper: {swapper})"


@dataclass(frozen=True)
class VideoPlan:
    info: VideoInfo
    first: int
    last: int
    budget: MemoryBudget
    settings: Settings
    """The job's settings with the queue size the memory budget allows."""
    frames_per_chunk: int
    chunks: list[Chunk]
    output_size: tuple[int, int] | None = None
    """The encoded frames' size when the processors change it (an upscaler); None: the video's."""
    copy: CopySource | None = None
    """Where the untouched GOPs are copied from; None when every frame is encoded (``copy_reason`` says why)."""
    copy_reason: str | None = None
    output: OutputFormat = field(default_factory=OutputFormat)
    """The output's own size and frame rate (``--output-video-resolution``/``-fps``) where they differ."""
    quality: VideoQuality | None = None
    """The quality every encoded frame gets (``video/quality.py``), set in ``settings`` too."""

    @classmethod
    def make(cls, settings: Settings, target: Path, output: Path, ffmpeg: str) -> VideoPlan:
        """The job's plan; the ffmpeg runs the copy path and the quality need (``splice.EarlyProbes``) run
        beside the video's own probe: each one stands between the command and the first frame."""
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="plan-probe") as pool:
            early = EarlyProbes.start(pool, ffmpeg, target)
            info, listing = probe_video_listing(target)
            first, last = frame_range(info.frame_count, settings.trim_frame_start, settings.trim_frame_end)
            if last <= first:
                raise InputError(
                    f"the trim range {settings.trim_frame_start}-{settings.trim_frame_end} holds no frame of "
                    f"{target} ({info.frame_count} frames): fix --trim-frame-start/--trim-frame-end"
                )
            return cls.of(settings, info, (first, last), output, ffmpeg, listing=listing, early=early)

    @classmethod
    def of(
        cls,
        settings: Settings,
        info: VideoInfo,
        frames: tuple[int, int],
        output: Path,
        ffmpeg: str,
        resize: Resize | None = None,
        listing: str | None = None,
        known: VideoQuality | None = None,
        early: EarlyProbes | None = None,
    ) -> VideoPlan:
        """The plan for the frames ``[first, last)``; ``resize``: the encoded size the processors make;
        ``listing``: the source's packets as probing listed them (``probe.probe_video_listing``); ``known``:
        a quality chosen for this source before (its source CRF is not read again); ``early``: the copy
        path's ffmpeg runs, started already."""
        first, last = frames
        size = even_size(info.width, info.height)
        encoded = resize(*size) if resize is not None else size
        budget = budget_for(settings, info, encoded[0] * encoded[1] / (size[0] * size[1]))
        settings = settings.with_items(frame_queue_size=budget.queue_size)
        length = chunk_length(budget.chunk_seconds, float(info.fps), largest_group(settings.face_detector_interval))
        made = output_format(settings, encoded, info.fps, first)
        changed = changed_reason(settings, size, info.fps)
        if encoded != size:
            changed = "the processors change the frame size"
        if changed is not None:  # no GOP of the source fits the output
            if settings.video_copy_unchanged == "on":
                raise InputError(
                    f"cannot copy the untouched stretches of {info.path}: {changed} (--video-copy-unchanged on)"
                )
            copy, reason = None, changed
            chunks = plan_chunks(first, last, length)
        else:
            copy, reason = copy_source_for(settings, info, output, ffmpeg, listing, early)
            chunks = plan_chunks_on_cuts(first, last, length, copy.cuts) if copy else plan_chunks(first, last, length)
        resized = encoded if encoded != size else None
        quality = quality_for(settings, info, ffmpeg, copy, known, early)
        settings = settings.with_items(output_video_quality=quality.quality)
        reason_left = None if copy else reason
        return cls(info, first, last, budget, settings, length, chunks, resized, copy, reason_left, made, quality)

    def resized(self, settings: Settings, resize: Resize, output: Path, ffmpeg: str) -> VideoPlan:
        """The plan for processors that may change the frame's size (``settings``: the job's): itself when
        they do not, else one whose budget counts the larger frames (and that copies nothing)."""
        size = even_size(self.info.width, self.info.height)
        if resize(*size) == size:
            return self
        return VideoPlan.of(settings, self.info, (self.first, self.last), output, ffmpeg, resize, known=self.quality)


def quality_for(
    settings: Settings,
    info: VideoInfo,
    ffmpeg: str,
    copy: CopySource | None,
    known: VideoQuality | None = None,
    early: EarlyProbes | None = None,
) -> VideoQuality:
    """The quality the job encodes at (``video/quality.py``); the source's CRF is read from its stream
    only when no quality is set, the encoder works by CRF and neither the copy path nor an earlier plan
    (``known``) has read it already."""
    encoder = settings.output_video_encoder
    source_crf = copy.params.source_crf if copy is not None else known.source_crf if known is not None else None
    unread = copy is None and known is None
    if unread and settings.output_video_quality is None and encoder in CRF_ENCODERS:
        source_crf = read_source_crf(ffmpeg, Path(info.path), early)
    return choose_quality(settings.output_video_quality, encoder, source_crf)


def copy_source_for(
    settings: Settings,
    info: VideoInfo,
    output: Path,
    ffmpeg: str,
    listing: str | None = None,
    early: EarlyProbes | None = None,
) -> tuple[CopySource | None, str]:
    """The source to copy untouched GOPs from, or None and why every frame is encoded instead; with
    ``--video-copy-unchanged on`` a reason is an InputError."""
    mode = settings.video_copy_unchanged
    if mode == "off":
        return None, "--video-copy-unchanged off"
    reason = static_reason(settings, info, output)
    found = probe_copy_source(ffmpeg, info, listing, early) if reason is None else reason
    if isinstance(found, CopySource):
        return found, ""
    if mode == "on":
        raise InputError(f"cannot copy the untouched stretches of {info.path}: {found} (--video-copy-unchanged on)")
    logger.info("every frame is re-encoded: %s", found)
    return None, found


class VideoRun:
    """One run of a video job; ``run()`` once."""

    def __init__(self, job: SwapJob, context: RunContext, runtime: ModelRuntime) -> None:
        self.job = job
        self.context = context
        self.runtime = runtime
        self.ffmpeg = resolve_ffmpeg().path
        self.warming = warm_proposer(job.settings, runtime)  # beside the planning's ffmpeg runs
        self.early: FramePipeline | None = None
        """The pipeline built before the planning (no face map): its thread checks the source photos."""
        try:
            self._plan()
        except BaseException:
            self.settle_threads(self.early)
            raise

    def _plan(self) -> None:
        """The plan, the pipeline and the run's bookkeeping: the part of ``__init__`` that may fail while the
        threads started beside the planning still run."""
        job, context, runtime = self.job, self.context, self.runtime
        # Without a face map the source photos are checked beside the planning's ffmpeg runs and the first
        # probe. Preparing the source there too would bring the first frame about 0.06 s sooner, but a video
        # without faces would then hold the face mesh's model and the prepared source (75 MB) for nothing.
        self.early = early = None if job.face_map else self._pipeline(job.settings, None)
        self.plan = VideoPlan.make(job.settings, job.target, job.output, self.ffmpeg)
        self.settings = self.plan.settings
        passing = PeoplePassProgress(context.progress) if context.progress is not None else None
        people = people_swap(job, runtime, passing, context.cancel)  # the people pass, unless it is cached
        self.pipeline = early or self._pipeline(self.settings, people)
        self.plan = self.plan.resized(job.settings, self.pipeline.output_size, job.output, self.ffmpeg)
        self.settings = self.plan.settings
        self.work_dir = context.work_dir or default_work_dir(job.target, job.output)
        key = fingerprint(self.settings, self.pipeline.sources_key, job.target, self.plan.chunks)
        self.manifest = Manifest.open(self.work_dir, key, self.plan.chunks)
        self.tracker = FrameProgress(self.plan.last - self.plan.first, len(self.plan.chunks), context.progress)
        self.stages: FrameStages = context.wrap_stages(self.pipeline) if context.wrap_stages else self.pipeline
        self.chunk_runs: list[ChunkRun] = []
        self.recoveries: list[str] = []
        self.reused = 0
        self.counts: Counter[str] = Counter()
        self.chunk_fallbacks: list[str] = []

    def _pipeline(self, settings: Settings, people: PeopleSwap | None) -> FramePipeline:
        """The job's frame pipeline; the planning's settings differ from the job's only in what the
        stream and the encoder read (the frame queue's size, the output's quality)."""
        job = self.job
        return FramePipeline.build(settings, self.runtime, job.sources, self.context.registry, people, background=True)

    def settle_threads(self, pipeline: FramePipeline | None) -> None:
        """Wait for the run's own threads (the proposer's graph, ``pipeline``'s: the source photos read, the
        source prepared): a process that ends while one builds a mediapipe graph is aborted by it (SIGABRT),
        and a short or failed job can end first."""
        if self.warming is not None:
            self.warming.join()
        if pipeline is not None:
            pipeline.settle()

    def run(self) -> ProcessResult:
        started = time.perf_counter()
        try:
            self._set_reference()
            self._run_chunks()
            self.pipeline.sources.check()  # every chunk reused from an earlier run: the photos are still checked
            raise_if_cancelled(self.context.cancel)  # a cancel after the last group was analysed: no output
        except InputError as error:
            self._drop_work_of_a_bad_photo(error)
            raise
        finally:
            self.settle_threads(self.pipeline)
        plan = self.plan
        timescale = plan.copy.params.timescale if plan.copy else None
        output = self.job.output
        assemble(self.ffmpeg, self.manifest, plan.info, plan.first, plan.last, self.settings, output, timescale)
        if not self.settings.keep_temp:
            remove_work_dir(self.work_dir)
        if self.settings.release_models in ("after_job", "after_chunk"):
            self.pipeline.release()
        elapsed = time.perf_counter() - started
        return ProcessResult(str(self.job.output), "video", elapsed, self._stats(elapsed))

    def _drop_work_of_a_bad_photo(self, error: InputError) -> None:
        """The source photos are read while the first frames decode, so a photo without a face fails the
        job after its first chunk: that chunk can never be resumed (another photo is another job's key),
        so the work folder goes with the failure, as if the photo had been checked first."""
        photos = {os.fspath(path) for path in self.job.photos()}
        if not self.settings.keep_temp and photos & set(error.paths):
            remove_work_dir(self.work_dir)

    def _set_reference(self) -> None:
        settings = self.settings
        if settings.face_selector_mode == "reference" and settings.reference_face_from == "frame":
            index = min(settings.reference_frame_number, self.plan.info.frame_count - 1)
            self.pipeline.set_reference_from(read_frame(self.ffmpeg, self.plan.info, index))

    def _run_chunks(self) -> None:
        carried = False  # whether the pipeline's state comes from the chunk just run
        for chunk in self.plan.chunks:
            self.tracker.chunk_index = chunk.index
            if self.manifest.is_done(chunk):
                self.reused += 1
                self.counts.update(self.manifest.counts_of(chunk))
                self.tracker.skip(chunk.frames)
                carried = False
                continue
            if not carried:  # the job's start, or a resume: the state saved after the chunk before, if any
                saved = self.manifest.state_after(chunk.index - 1)
                self.pipeline.start_video(self.plan.first, VideoState.from_json(saved) if saved is not None else None)
            before = self.pipeline.counts()
            run = self._run_chunk_recovering(chunk)
            self.pipeline.sources.check()  # a source photo without a face fails the job, faces in the video or not
            done = self.pipeline.counts()
            done.subtract(before)
            os.replace(self.work_dir / f"part_{chunk.segment_name}", self.work_dir / chunk.segment_name)
            state = self.pipeline.video_state().to_json()
            self.manifest.record(chunk, run.frames, run.seconds, state, counts={**dict(+done), **run.copy})
            self.counts.update(+done)
            self.counts.update(run.copy)
            carried = True
            self.chunk_runs.append(run)
            if self.settings.release_models == "after_chunk":
                self.pipeline.release()
            gc.collect()
            return_free_memory()

    def _chunk_copy(self, chunk: Chunk, encode_all: bool = False) -> ChunkCopy | None:
        copy = self.plan.copy
        if copy is None:
            return None
        gops = gops_in(copy.cuts, chunk.start, chunk.end, self.plan.info.frame_count)
        return ChunkCopy(copy, gops, encode_all)

    def _run_chunk_recovering(self, chunk: Chunk) -> ChunkRun:
        """``_run_chunk_attempts``; a chunk whose joined pieces fail their check is encoded whole (still
        splicing into its neighbours), or fails the job with ``--video-copy-unchanged on``."""
        state = self.pipeline.video_state()
        try:
            return self._run_chunk_attempts(chunk, self._chunk_copy(chunk))
        except SpliceFailed as error:
            if self.settings.video_copy_unchanged == "on":
                raise
            note = f"{error}: chunk {chunk.index + 1} is encoded whole"
            logger.warning(note)
            self.chunk_fallbacks.append(note)
            self.tracker.rewind(chunk.frames)
            self.pipeline.restore_video_state(state)
            return self._run_chunk_attempts(chunk, self._chunk_copy(chunk, encode_all=True))

    def _run_chunk_attempts(self, chunk: Chunk, copy: ChunkCopy | None) -> ChunkRun:
        """Run a chunk; on out-of-memory free everything, lighten, retry; the second retry on a GPU runs
        the chunk on the CPU; a third failure fails the job with the preset to use."""
        partial = self.work_dir / f"part_{chunk.segment_name}"
        attempt_settings = self.settings
        gpu_pool: SessionPool | None = None
        state = self.pipeline.video_state()
        try:
            for attempt in range(MAX_CHUNK_ATTEMPTS):
                done_before = self.tracker.frames_done
                try:
                    self.pipeline.restore_video_state(state)  # a retry starts the chunk as the first attempt did
                    self.pipeline.begin_chunk()
                    task = ChunkTask(
                        self.ffmpeg,
                        self.plan.info,
                        chunk,
                        partial,
                        attempt_settings,
                        self.stages,
                        self.tracker.advance,
                        self.context.cancel,
                        output_size=self.plan.output_size,
                        copy=copy,
                        output=self.plan.output,
                    )
                    return run_chunk(task)
                except BaseException as error:
                    if not is_out_of_memory(error):
                        raise
                    self.tracker.rewind(self.tracker.frames_done - done_before)
                    attempt_settings, pool = self._recover(chunk, attempt, attempt_settings, error)
                    gpu_pool = gpu_pool or pool
            raise AssertionError("unreachable")
        finally:
            if gpu_pool is not None:
                self.pipeline.runtime.sessions.release_all()
                self.pipeline.runtime.sessions = gpu_pool

    def _recover(
        self, chunk: Chunk, attempt: int, settings: Settings, error: BaseException
    ) -> tuple[Settings, SessionPool | None]:
        """After running out of memory: release, lighten, and on the second retry leave the GPU.
        Returns the next attempt's settings and the GPU pool set aside, if any."""
        self.pipeline.release()
        gc.collect()
        if attempt + 1 == MAX_CHUNK_ATTEMPTS:
            raise OutOfMemory(
                f"out of memory on chunk {chunk.index + 1} after {MAX_CHUNK_ATTEMPTS} attempts ({error}): "
                "run again with --preset strict (or lightweight), or a smaller --video-chunk-size"
            ) from error
        next_settings = lighter(settings)
        note = (
            f"out of memory on chunk {chunk.index + 1} (attempt {attempt + 1}): released models and caches, "
            f"queue {settings.frame_queue_size} -> {next_settings.frame_queue_size}, "
            f"threads {settings.execution_threads} -> {next_settings.execution_threads}"
        )
        set_aside = None
        runtime = self.pipeline.runtime
        if attempt == 1 and runtime.sessions.providers != ("cpu",):
            set_aside = runtime.sessions
            runtime.sessions = SessionPool(("cpu",), 0, next_settings.execution_threads)
            note += "; this chunk falls back to the CPU"
        logger.warning(note)
        self.recoveries.append(note)
        return next_settings, set_aside

    def _copy_stats(self) -> dict[str, Any]:
        counts = {key: self.counts[key] for key in COPY_COUNTED}
        reason = self.plan.copy_reason or ("; ".join(self.chunk_fallbacks) if self.chunk_fallbacks else None)
        return {**counts, "fallback_reason": reason}

    def _encoding(self) -> dict[str, Any]:
        """How the frames were encoded: the encoder, and the quality chosen (``video/quality.py``)."""
        quality = self.plan.quality.to_json() if self.plan.quality is not None else {}
        return {"encoder": self.settings.output_video_encoder, **quality}

    def _stats(self, elapsed: float) -> dict[str, Any]:
        plan = self.plan
        processed_frames = sum(run.frames for run in self.chunk_runs)
        summary = self.pipeline.summary()
        counted = {
            key: self.counts[key]
            for key in self.counts
            if key not in (*MASK_COUNTED, *COPY_COUNTED) and not key.startswith(PERSON_COUNT)
        }
        masks = {**summary["masks"], "faces_masked": self.counts["faces_masked"]}
        if masks["occlusion_pixels"] is not None:
            masks["occlusion_pixels"] = self.counts["occlusion_pixels"]
        return {
            **summary,
            **{key: 0 for key in ALWAYS_COUNTED},
            **counted,
            "masks": masks,
            **({"people": self.pipeline.people_summary(self.counts)} if self.pipeline.people is not None else {}),
            "frames": plan.last - plan.first,
            "frames_converted": sum(run.frames_converted for run in self.chunk_runs),
            "fps": round(processed_frames / elapsed, 2) if elapsed > 0 else 0.0,
            "first_frame_s": self.tracker.first_frame_seconds(),
            "chunks_total": len(plan.chunks),
            "chunks_done": len(plan.chunks) - self.reused,
            "chunks_skipped": self.reused,
            "chunk_seconds": plan.budget.chunk_seconds,
            "chunk_frames": plan.frames_per_chunk,
            "memory_budget": plan.budget.to_json(),
            "settings_effective": effective_values(self.settings, self.runtime),
            "execution_providers": self.runtime.providers_used(),
            "precision": self.runtime.precision(),
            "onnx_models": self.runtime.onnx_models_used(),
            "recoveries": self.recoveries,
            "copy": self._copy_stats(),
            "encoding": self._encoding(),
            "manifest_reused": self.reused > 0,
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "queues": self.chunk_runs[-1].queues if self.chunk_runs else {},
            "video": plan.info.to_json(),
        }


def assemble(
    ffmpeg: str,
    manifest: Manifest,
    info: VideoInfo,
    first: int,
    last: int,
    settings: Settings,
    output: Path,
    timescale: int | None = None,
) -> None:
    """Concatenate the segments and mux the source audio once over the trimmed range, atomically. A new
    audio track (the lip syncer's) replaces it: re-encoded, padded with silence or cut at the video's end."""
    list_file = manifest.work_dir / "segments.txt"
    list_file.write_text(concat_list(manifest.segments()), encoding="utf-8")
    duration = (last - first) / float(info.fps)
    temporary = output.with_name(f".{output.stem}.part{output.suffix}")
    trimmed = first > 0 or last < info.frame_count
    audio = audio_codec_args(info.audio_codec, output, trimmed) if info.has_audio else None
    audio_source, audio_filter, audio_start = Path(info.path), "", info.seek_time(first) if first else 0.0
    replacement = replacement_audio(settings)
    if replacement is not None:  # its time 0 is the target's first frame, as the lip syncer read it
        audio = audio_codec_args(None, output, True)
        audio_source, audio_filter = replacement, f"apad=whole_dur={duration:.6f}"
        audio_start = float(info.frame_times[first])
    command = assemble_args(
        ffmpeg,
        list_file,
        audio_source,
        audio,
        audio_start,
        duration,
        output_comment(settings),
        temporary,
        audio_filter,
        timescale,
    )
    try:
        completed = run_tool(command)
        if completed.returncode != 0:
            raise ffmpeg_failure("joining the segments failed", completed.stderr, output.parent)
        os.replace(temporary, output)
    finally:  # an error, Ctrl-C or SIGTERM leaves no hidden part file in the user's folder
        temporary.unlink(missing_ok=True)

"""``process(job, context)``: run one job, an image or a video, holding its output for this process.

``SwapJob`` says what the job is and ``RunContext`` what runs it (``facefusion_ui/job.py``); the video
workflow lives in ``video_job.py``. Every workflow checks the job's files first and takes the output's
lock (``output_lock.py``), so two runs never write the same output or work folder.
"""

from __future__ import annotations

import time

from facefusion_ui.errors import InputError, disk_full_named
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import read_image
from facefusion_ui.job import ProcessResult, RunContext, SwapJob
from facefusion_ui.media_files import check_paths, keeps_alpha, write_image
from facefusion_ui.memory import peak_rss_mb
from facefusion_ui.output_lock import OutputLock
from facefusion_ui.people_job import people_swap
from facefusion_ui.pipeline import FramePipeline, source_face_needed
from facefusion_ui.video_job import VideoRun


def checked_kind(job: SwapJob, context: RunContext) -> str:
    """The job's files checked (``media_files.check_paths``); the target's kind."""
    needed = bool(job.face_map) or source_face_needed(job.settings, context.registry)
    return check_paths(job.photos(), job.target, job.output, needed)


def process_image(job: SwapJob, context: RunContext | None = None) -> ProcessResult:
    context = context or RunContext()
    if checked_kind(job, context) != "image":
        raise InputError(f"{job.target} is not an image: use process_video() for videos")
    runtime = context.runtime or ModelRuntime.create(job.settings)
    with OutputLock(job.output):
        started = time.perf_counter()
        runtime.warn_unusable_providers()
        people = people_swap(job, runtime)
        pipeline = FramePipeline.build(job.settings, runtime, job.sources, context.registry, people)
        frame = read_image(job.target, "target")
        pipeline.set_reference_from(frame)
        result = pipeline.process(frame, keep_alpha=keeps_alpha(job.output))
        write_image(job.output, result, job.settings.output_image_quality)
        stats = {
            **pipeline.summary(),
            "frames": 1,
            "execution_providers": runtime.providers_used(),
            "precision": runtime.precision(),
            "onnx_models": runtime.onnx_models_used(),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        return ProcessResult(str(job.output), "image", time.perf_counter() - started, stats)


def process_video(job: SwapJob, context: RunContext | None = None) -> ProcessResult:
    """Swap faces in a video, chunk by chunk; running it again resumes from the finished chunks."""
    context = context or RunContext()
    if checked_kind(job, context) != "video":
        raise InputError(f"{job.target} is not a video: use process() for images")
    runtime = context.runtime or ModelRuntime.create(job.settings)
    with OutputLock(job.output), disk_full_named(job.output.parent):  # the work folder's disk is named too
        runtime.warn_unusable_providers()
        return VideoRun(job, context, runtime).run()


def process(job: SwapJob, context: RunContext | None = None) -> ProcessResult:
    """Run one job. ``context.runtime`` keeps models warm across calls; a new one is made when not given."""
    context = context or RunContext()
    if checked_kind(job, context) == "image":
        return process_image(job, context)
    return process_video(job, context)

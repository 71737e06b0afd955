"""The Single tab's handlers: each a module-level function over ``UiServices`` (bound with
``functools.partial``), so each runs without a browser. A handler's first output is the tab's one
message area: a mistake is said there and every other control stays as it was."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from facefusion_ui.errors import FacefusionError
from facefusion_ui.faces.face_map import FaceMapEntry
from facefusion_ui.faces.selector import FILTER_SETTINGS
from facefusion_ui.jobs.worker import read_log
from facefusion_ui.media_files import keeps_alpha, media_kind
from facefusion_ui.pipeline import FramePipeline, source_face_needed
from facefusion_ui.state_manager import Settings
from facefusion_ui.ui.common import file_path, file_paths, job_text, problem, progress_line, reported
from facefusion_ui.ui.controls import control_values
from facefusion_ui.ui.media_view import (
    TargetInfo,
    frame_of,
    frame_time,
    rgb,
    source_face,
    target_faces,
    target_info,
)
from facefusion_ui.ui.people import map_line, preview_map
from facefusion_ui.ui.preview_gate import PreviewGate
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import Request, missing_names, output_path, request_settings

LOG_LINES = 40
ACTIVE = ("queued", "running")


class SourcesShown(NamedTuple):
    """What ``show_sources`` updates (each field a ``SingleTab`` part of that name)."""

    message: Any
    sources: Any
    source_faces: Any


class TargetShown(NamedTuple):
    """What ``analyse_target`` updates."""

    message: Any
    faces: Any
    frame: Any
    trim_start: Any
    trim_end: Any
    position: Any
    trim_times: Any
    frame_time: Any


class FrameShown(NamedTuple):
    """What ``change_frame`` updates."""

    message: Any
    faces: Any
    position: Any
    frame_time: Any


class PreviewShown(NamedTuple):
    """What a preview updates."""

    message: Any
    preview: Any


class Started(NamedTuple):
    """What Start updates."""

    message: Any
    job_id: Any
    start: Any
    timer: Any
    log: Any


class Polled(NamedTuple):
    """What the progress timer updates."""

    status: Any
    result_video: Any
    result_image: Any
    download: Any
    log: Any
    timer: Any
    start: Any


@reported(SourcesShown)
def show_sources(services: UiServices, source_values: Any) -> SourcesShown:
    """The face found in each source photo as a thumbnail; a photo without one is taken off the list
    (so the next upload replaces it instead of joining it) and named in the message."""
    kept, thumbnails, dropped = [], [], []
    settings = services.settings()
    for path in file_paths(source_values):
        try:
            thumbnails.append(source_face(services, path, settings))
            kept.append(str(path))
        except FacefusionError as error:
            dropped.append(f"- {path.name} removed: {error.for_page()}")
    message = problem("\n".join(["Some source photos have no usable face:", *dropped])) if dropped else gr.skip()
    return SourcesShown(message, (kept or None) if dropped else gr.skip(), thumbnails)


def gallery_settings(services: UiServices, filters: tuple[Any, ...]) -> Settings:
    """The saved settings with the tab's face selector filters (``FILTER_SETTINGS``' controls), when given."""
    if not filters:
        return services.settings()
    return services.settings().with_items(**control_values(FILTER_SETTINGS, filters))


@reported(TargetShown)
def analyse_target(services: UiServices, target_value: Any, frame: float, *filters: Any) -> TargetShown:
    """The target's faces in frame ``frame`` (largest first); for a video the frame slider, its time and the
    trim range fitted to its length, hidden for an image; the reference position back to 0. The frame's time
    comes with the slider, in one update: a separate update landing after the user typed a frame would
    overwrite the typed frame's time."""
    path = file_path(target_value)
    if path is None:  # back to frame 0: a frame number left from a video would not fit the next target
        hidden = gr.Slider(value=0, visible=False)
        return TargetShown("", [], hidden, hidden, hidden, 0, "", "")
    info = target_info(path)
    last = max(info.frame_count - 1, 0)
    frame = min(int(frame or 0), last)
    faces = target_faces(services, frame_of(path, frame), gallery_settings(services, filters))
    message = gr.skip() if faces else no_face_line(filters)
    return TargetShown(
        message,
        faces,
        frame=gr.Slider(maximum=max(last, 1), value=frame, visible=info.is_video),
        trim_start=gr.Slider(maximum=max(last, 1), value=0, visible=info.is_video),
        trim_end=gr.Slider(maximum=max(last, 1), value=last, visible=info.is_video),
        position=0,
        trim_times=trim_times(target_value, 0, last) if info.is_video else "",
        frame_time=frame_line(target_value, frame),
    )


@reported(FrameShown)
def change_frame(services: UiServices, target_value: Any, frame: float, *filters: Any) -> FrameShown:
    """The faces of another frame of the video (the frame slider was moved), or of the same frame kept by
    other filters (``filters``: the face selector filters' controls)."""
    path = file_path(target_value)
    if path is None:
        return FrameShown("", [], 0, "")
    faces = target_faces(services, frame_of(path, int(frame or 0)), gallery_settings(services, filters))
    message = gr.skip() if faces else no_face_line(filters)
    return FrameShown(message, faces, 0, frame_line(target_value, frame))


def no_face_line(filters: tuple[Any, ...]) -> str:
    if any(value not in (None, "", "none") for value in filters):
        return problem("No face in this frame that the face selector's filters keep: try other filters or frame.")
    return problem("No face found in this frame: try another frame or a larger photo.")


def frame_line(target_value: Any, frame: float) -> str:
    """'Frame 9 at 0:00.36' under the frame slider of a video; nothing for an image or no target."""
    info = readable_target(target_value)
    return f"Frame {int(frame or 0)} at {frame_time(int(frame or 0), info.fps)}" if info and info.is_video else ""


def readable_target(target_value: Any) -> TargetInfo | None:
    """The target's kind and length; none without a target or when it cannot be read (the message area
    already says why: ``analyse_target`` reads it first)."""
    path = file_path(target_value)
    if path is None:
        return None
    try:
        return target_info(path)
    except FacefusionError:
        return None


def trim_times(target_value: Any, start: float, end: float) -> str:
    """The trim range as times: 'from 0:01.50 to 0:04.00 (61 frames)'."""
    info = readable_target(target_value)
    if info is None or not info.is_video:
        return ""
    first, last = int(start or 0), int(info.frame_count - 1 if end is None else end)
    if last < first:
        return problem(f"the trim ends (frame {last}) before it starts (frame {first})")
    return f"Trim: from {frame_time(first, info.fps)} to {frame_time(last + 1, info.fps)} ({last - first + 1} frames)"


def run_order(processors: Any) -> str:
    """The chosen processors in the order they run (the order they were ticked in)."""
    chosen = list(processors or [])
    return "Runs: " + " → ".join(f"{number}. {name}" for number, name in enumerate(chosen, 1)) if chosen else ""


def option_panels_shown(names: Sequence[str], processors: Any) -> list[Any]:
    """Each of ``names``' options panel shown while that processor is ticked, hidden otherwise."""
    chosen = set(processors or [])
    return [gr.update(visible=name in chosen) for name in names]


def pick(event: gr.SelectData) -> int:
    return int(event.index)


@reported(PreviewShown)
def run_preview(services: UiServices, request: Request, face_map: Sequence[FaceMapEntry] = ()) -> PreviewShown:
    """Frame N of the target before and after the chosen processors (RGB pair, for gr.ImageSlider); with
    the People panel's map (``face_map``), each mapped person with their own source, said in the message.
    Called on every change (the last request wins): without a target and a source it waits quietly."""
    if request.target is None:
        return PreviewShown(gr.skip(), gr.skip())
    settings = request_settings(services, request, trim=False)
    if not (request.sources or face_map) and source_face_needed(settings, services.registry):
        return PreviewShown(gr.skip(), gr.skip())
    missing = missing_names(services, settings)
    if missing:  # the preview before the choice would no longer match it: cleared (Download is beside the model)
        names = f"{', '.join(missing)} {'are' if len(missing) > 1 else 'is'}"
        return PreviewShown(problem(f"No preview until {names} downloaded (the one shown was out of date)"), None)
    image = frame_of(request.target, request.frame)
    people = preview_map(services, request.target, settings, list(face_map)) if face_map else None
    pipeline = FramePipeline.build(settings, services.runtime, request.sources, services.registry, people)
    pipeline.set_reference_from(image)
    line = map_line(people) if people is not None else ""
    keep_alpha = media_kind(request.target) != "video" and keeps_alpha(request.target)  # as the output will
    return PreviewShown(line, (rgb(image), rgb(pipeline.process(image, request.frame, keep_alpha=keep_alpha))))


def gated_preview(
    services: UiServices,
    gate: PreviewGate,
    session: str,
    request: Request,
    asked_at: float | None = None,
    face_map: Sequence[FaceMapEntry] = (),
) -> PreviewShown:
    """``run_preview`` once the session has been quiet for a moment (``PreviewGate``); a change made
    stale by a newer one shows nothing (the newer one shows its preview). ``asked_at``: when the browser
    sent it (its clock, milliseconds)."""
    number = gate.ticket(session)
    if not gate.quiet(session, number):
        return PreviewShown(gr.skip(), gr.skip())
    with gate.working:
        if not gate.latest(session, number):
            return PreviewShown(gr.skip(), gr.skip())
        message, images = run_preview(services, request, face_map)
    if not gate.latest(session, number):
        return PreviewShown(gr.skip(), gr.skip())
    return PreviewShown(message if gate.may_clear_message(session, number, asked_at) else gr.skip(), images)


@reported(Started)
def run_start(
    services: UiServices, current: int | None, request: Request, face_map: Sequence[FaceMapEntry] = ()
) -> Started:
    """Queue the job (refused while this tab's last job is still queued or running); its id, the
    message, the Start button disabled and the progress timer switched on. ``face_map``: the People
    panel's choices (then the source photos are not used)."""
    if current is not None and services.job(int(current)).status in ACTIVE:
        return Started(problem(f"job {current} is still running: wait for it or press Cancel"), *(gr.skip(),) * 4)
    settings = request_settings(services, request)
    sources, target = request.files(bool(face_map), source_face_needed(settings, services.registry))
    output = output_path(services, target, request.folder, request.name)
    new_id = services.enqueue(sources, target, output, settings, origin="single", face_map=face_map)
    written = Path(services.job(new_id).payload["output"])
    shown = written.relative_to(services.outputs_dir) if services.outputs_dir in written.parents else written.name
    return Started(
        f"Job {new_id} queued: it writes {shown}", new_id, gr.Button(interactive=False), gr.Timer(active=True), ""
    )


def poll(services: UiServices, current: int | None) -> Polled:
    """The job's progress line and its log so far; once completed its output (video or image) with a
    download. The previous result stays until the new one exists; Start is usable again once the job
    ends, and the timer stops."""
    if current is None:
        return Polled("", gr.skip(), gr.skip(), gr.skip(), "", gr.Timer(active=False), gr.Button(interactive=True))
    job = services.job(int(current))
    log = job_text(job.payload, "\n".join(read_log(services.store, job.id).splitlines()[-LOG_LINES:]))
    active = job.status in ACTIVE
    line = job_text(job.payload, progress_line(job))
    if job.status == "completed" and job.result is not None:
        output = job.result["output"]
        video = job.result["kind"] == "video"
        shown = (
            gr.Video(value=output if video else None, visible=video),
            gr.Image(value=None if video else output, visible=not video),
        )
        return Polled(
            line,
            *shown,
            download=gr.File(value=output, visible=True),
            log=log,
            timer=gr.Timer(active=False),
            start=gr.Button(interactive=True),
        )
    skipped = (gr.skip(), gr.skip(), gr.skip())
    return Polled(line, *skipped, log=log, timer=gr.Timer(active=active), start=gr.Button(interactive=not active))


@reported()
def run_cancel(services: UiServices, current: int | None) -> str:
    if current is None:
        return "nothing to cancel"
    job = services.job(int(current))
    if job.status not in ACTIVE:
        return f"job {current} is already {job.status}: nothing to cancel"
    state = services.store.cancel(int(current))
    return f"job {current} " + ("cancelled" if state == "cancelled" else "is stopping")

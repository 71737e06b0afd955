"""The Single tab: source photos and one target (image or video), the target's faces to pick a reference,
processors and models (installed ones only), a one-frame preview, Start/Cancel with live progress, and
the result with a download.

``render_single_tab`` lays out the components, ``listen_single_tab`` wires them to the handlers; the
handlers are module-level functions over ``UiServices`` (bound with ``functools.partial``), so each runs
without a browser."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.selector import sort_faces
from facefusion_ui.faces.source import read_image
from facefusion_ui.media_files import media_kind
from facefusion_ui.models import download_command, model_state
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.processors.options import OptionValue, ProcessorOption, resolve_options
from facefusion_ui.state_manager import Settings, merge_options
from facefusion_ui.types import FaceSelectorMode, Frame, FrameEnhancerModel, LipSyncerModel, choices
from facefusion_ui.ui.common import file_path, file_paths, output_name, plain_errors, progress_line
from facefusion_ui.ui.services import UiServices
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.stream import read_frame

SWAPPER_MODELS = ("mesh_warp", "inswapper_128", "inswapper_128_fp16")
PROCESSOR_MODELS = {"face_enhancer": "gfpgan_1.4", "frame_enhancer": "real_esrgan_x2", "lip_syncer": "wav2lip_gan_96"}
"""Processors offered once one of their models is installed (the model named here is the one suggested)."""
PROCESSOR_MODEL_CHOICES = {
    "face_enhancer": ("gfpgan_1.4",),
    "frame_enhancer": choices(FrameEnhancerModel),
    "lip_syncer": choices(LipSyncerModel),
}


def installed(services: UiServices, name: str) -> bool:
    return model_state(services.runtime.spec(name), services.runtime.folder).installed


def model_notes(services: UiServices) -> str:
    missing = [name for name in (*SWAPPER_MODELS, *PROCESSOR_MODELS.values()) if not installed(services, name)]
    if not missing:
        return "All models are installed."
    lines = [f"- `{name}`: not downloaded — `{download_command(name)}`" for name in missing]
    return "Models you can add (then restart the page):\n" + "\n".join(lines)


def frame_of(target: Path, frame_number: int) -> tuple[Frame, int]:
    """The frame to analyse (the image itself, or frame N of a video) and the video's frame count."""
    if media_kind(target) == "image":
        return read_image(target, "target"), 1
    info = probe_video(target)
    index = min(max(int(frame_number), 0), info.frame_count - 1)
    return read_frame(resolve_ffmpeg().path, info, index), info.frame_count


def rgb(frame: Frame) -> np.ndarray:
    return np.ascontiguousarray(frame[:, :, ::-1])


def choices_for(
    services: UiServices, processors: list[str], swapper: str, mode: str, position: int, frame_number: int
) -> dict[str, Any]:
    if not processors:
        raise InputError("choose at least one processor")
    return {
        "processors": tuple(processors),
        "face_swapper_model": swapper,
        "face_selector_mode": mode,
        "reference_face_position": int(position),
        "reference_frame_number": int(frame_number),
    }


@dataclass(frozen=True)
class SingleTab:
    """The components of the Single tab that handlers read or update."""

    sources: Any
    target: Any
    frame_number: Any
    faces: Any
    position: Any
    processors: Any
    swapper: Any
    mode: Any
    preview_button: Any
    start: Any
    cancel: Any
    preview: Any
    status: Any
    result_video: Any
    result_image: Any
    download: Any
    job_id: Any
    timer: Any
    audio: Any
    """The lip syncer's audio upload: the last input of Preview and Start, after the option controls."""
    option_controls: list[Any]
    """One control per option of the offered processors, in ``option_fields`` order."""


def processor_choices(services: UiServices) -> list[str]:
    """The processors the page offers: every registered one whose model is installed."""
    return [
        name
        for name in services.registry.names()
        if name not in PROCESSOR_MODEL_CHOICES
        or any(installed(services, model) for model in PROCESSOR_MODEL_CHOICES[name])
    ]


def option_fields(services: UiServices) -> list[tuple[str, ProcessorOption]]:
    """(processor, option) for every option of the processors the page offers, in a stable order."""
    table = services.registry.option_table()
    return [(name, option) for name in processor_choices(services) for option in table.get(name, ())]


def render_option_control(processor: str, option: ProcessorOption, value: OptionValue) -> Any:
    """A checkbox for a bool, a dropdown for choices, a slider for a numeric range, else a number."""
    label = f"{processor}: {option.help or option.name}"
    elem_id = f"single-option-{processor}-{option.name}"
    if option.type is bool:
        return gr.Checkbox(value=bool(value), label=label, elem_id=elem_id)
    if option.type is str:
        return gr.Dropdown(list(option.choices), value=value, label=label, elem_id=elem_id)
    number = float(value)  # an int or float option: its value is a number
    if option.low is not None and option.high is not None:
        step = 1 if option.type is int else (option.high - option.low) / 100
        return gr.Slider(option.low, option.high, value=number, step=step, label=label, elem_id=elem_id)
    return gr.Number(value=number, precision=0 if option.type is int else None, label=label, elem_id=elem_id)


def render_option_controls(services: UiServices) -> list[Any]:
    fields = option_fields(services)
    if not fields:
        return []
    given = services.settings().processor_options
    gr.Markdown("Processor options (used when the processor is chosen)")
    return [
        render_option_control(processor, option, given.get(processor, {}).get(option.name, option.default))
        for processor, option in fields
    ]


def option_values(services: UiServices, chosen: Sequence[str], values: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The controls' values as processor options, for the chosen processors (whole numbers from sliders
    made ints); checked against each processor's declaration."""
    if not values:
        return {}
    fields = option_fields(services)
    if len(values) != len(fields):
        raise InputError("the page is out of date (processors changed): reload it")
    options: dict[str, dict[str, Any]] = {}
    for (processor, option), value in zip(fields, values, strict=True):
        if processor not in chosen:
            continue
        if option.type is int and isinstance(value, float) and value.is_integer():
            value = int(value)  # a slider gives floats
        options.setdefault(processor, {})[option.name] = value
    for processor, given in options.items():
        resolve_options(processor, services.registry.options(processor), given)
    return options


def render_target_column() -> dict[str, Any]:
    sources = gr.File(
        label="Source face photo(s)", file_count="multiple", file_types=["image"], elem_id="single-sources"
    )
    target = gr.File(label="Target image or video", file_types=["image", "video"], elem_id="single-target")
    frame_number = gr.Slider(0, 1, value=0, step=1, label="Frame (reference and preview)")
    faces = gr.Gallery(
        label="Faces in that frame: click one to use it as the reference", columns=6, height=160, elem_id="single-faces"
    )
    position = gr.Number(value=0, precision=0, label="Reference face (position, largest first)")
    audio = gr.File(label="Source audio (lip syncer)", file_types=["audio", "video"], elem_id="single-audio")
    return {
        "sources": sources,
        "target": target,
        "frame_number": frame_number,
        "faces": faces,
        "position": position,
        "audio": audio,
    }


def render_run_column(services: UiServices) -> dict[str, Any]:
    settings = services.settings()
    offered = processor_choices(services)
    swappers = [name for name in SWAPPER_MODELS if installed(services, name)]
    processors = gr.CheckboxGroup(
        offered, value=[p for p in settings.processors if p in offered] or ["face_swapper"], label="Processors"
    )
    swapper = gr.Dropdown(
        swappers,
        value=settings.face_swapper_model if settings.face_swapper_model in swappers else "mesh_warp",
        label="Face swapper model",
    )
    option_controls = render_option_controls(services)
    mode = gr.Radio(list(choices(FaceSelectorMode)), value=settings.face_selector_mode, label="Which faces")
    gr.Markdown(model_notes(services))
    with gr.Row():
        preview_button = gr.Button("Preview frame")
        start = gr.Button("Start", variant="primary", elem_id="single-start")
        cancel = gr.Button("Cancel", elem_id="single-cancel")
    return {
        "processors": processors,
        "option_controls": option_controls,
        "swapper": swapper,
        "mode": mode,
        "preview_button": preview_button,
        "start": start,
        "cancel": cancel,
        "preview": gr.Image(label="Preview", type="numpy", interactive=False),
        "status": gr.Markdown("Add a source photo and a target, then press Start.", elem_id="single-status"),
        "result_video": gr.Video(label="Result", visible=False, elem_id="single-result-video"),
        "result_image": gr.Image(label="Result", visible=False, type="filepath", elem_id="single-result-image"),
        "download": gr.File(label="Download", visible=False),
    }


def render_single_tab(services: UiServices) -> SingleTab:
    with gr.Row():
        with gr.Column():
            target_column = render_target_column()
        with gr.Column():
            run_column = render_run_column(services)
    return SingleTab(**target_column, **run_column, job_id=gr.State(None), timer=gr.Timer(1.0, active=False))


def listen_single_tab(tab: SingleTab, services: UiServices) -> None:
    analyse = functools.partial(analyse_target, services)
    tab.target.change(analyse, [tab.target, tab.frame_number], [tab.faces, tab.frame_number, tab.position])
    tab.frame_number.release(analyse, [tab.target, tab.frame_number], [tab.faces, tab.frame_number, tab.position])
    tab.faces.select(pick, None, tab.position)
    inputs = [
        tab.sources,
        tab.target,
        tab.frame_number,
        tab.processors,
        tab.swapper,
        tab.mode,
        tab.position,
        *tab.option_controls,
        tab.audio,
    ]
    tab.preview_button.click(functools.partial(run_preview, services), inputs, tab.preview)
    tab.start.click(functools.partial(run_start, services), inputs, [tab.job_id, tab.status, tab.timer])
    tab.timer.tick(
        functools.partial(poll, services),
        tab.job_id,
        [tab.status, tab.result_video, tab.result_image, tab.download, tab.timer],
    )
    tab.cancel.click(functools.partial(run_cancel, services), tab.job_id, tab.status)


def build_single_tab(services: UiServices) -> None:
    listen_single_tab(render_single_tab(services), services)


@plain_errors
def analyse_target(services: UiServices, target_value: Any, frame: float) -> tuple[Any, Any, int]:
    """The target's faces in frame ``frame`` as gallery crops (largest first), the frame slider fitted to
    the target's length, and the reference position reset to 0."""
    path = file_path(target_value)
    if path is None:
        return [], gr.Slider(maximum=1, value=0), 0
    image, count = frame_of(path, int(frame))
    settings = services.settings()
    found = sort_faces(
        FaceAnalyser(services.runtime).analyse(image, settings, embeddings=False), settings.face_selector_order
    )
    crops = []
    for number, face in enumerate(found):
        x1, y1, x2, y2 = face.bbox.astype(int)
        pad = int((x2 - x1) * 0.2)
        crop = image[max(y1 - pad, 0) : y2 + pad, max(x1 - pad, 0) : x2 + pad]
        crops.append((rgb(crop), f"face {number}"))
    if not crops:
        gr.Warning("No face found in this frame: try another frame or a larger photo.")
    return crops, gr.Slider(maximum=max(count - 1, 1), value=min(int(frame), count - 1)), 0


def pick(event: gr.SelectData) -> int:
    return int(event.index)


def job_settings(
    services: UiServices,
    chosen: list[str],
    model: str,
    selector: str,
    picked: float,
    frame: float,
    values: Sequence[Any] = (),
) -> Settings:
    """The saved settings with this tab's choices (processor options: the controls' ``values``, then the
    source audio upload when the page sends it)."""
    settings = services.settings().with_items(**choices_for(services, chosen, model, selector, int(picked), int(frame)))
    values = list(values)
    if len(values) == len(option_fields(services)) + 1:
        audio = file_path(values.pop())
        if audio is not None:
            settings = settings.with_items(source_audio=str(audio))
    edits = option_values(services, chosen, values)
    return settings.with_items(processor_options=merge_options(settings.processor_options, edits))


def given_paths(source_values: Any, target_value: Any) -> tuple[list[Path], Path]:
    path = file_path(target_value)
    sources = file_paths(source_values)
    if path is None or not sources:
        raise InputError("add a source photo and a target first")
    return sources, path


@plain_errors
def run_preview(
    services: UiServices,
    source_values: Any,
    target_value: Any,
    frame: float,
    chosen: list[str],
    model: str,
    selector: str,
    picked: float,
    *values: Any,
) -> np.ndarray:
    """Frame ``frame`` of the target through the chosen processors (RGB, for gr.Image)."""
    sources, path = given_paths(source_values, target_value)
    settings = job_settings(services, chosen, model, selector, picked, frame, values)
    image, _ = frame_of(path, int(frame))
    pipeline = FramePipeline.build(settings, services.runtime, sources, services.registry)
    pipeline.set_reference_from(image)
    return rgb(pipeline.process(image, int(frame)))


@plain_errors
def run_start(
    services: UiServices,
    source_values: Any,
    target_value: Any,
    frame: float,
    chosen: list[str],
    model: str,
    selector: str,
    picked: float,
    *values: Any,
) -> tuple[int, str, Any]:
    """Queue the job; its id, a status line, and the progress timer switched on."""
    sources, path = given_paths(source_values, target_value)
    settings = job_settings(services, chosen, model, selector, picked, frame, values)
    new_id = services.enqueue(sources, path, output_name(path, services.outputs_dir), settings)
    return new_id, f"job {new_id} queued", gr.Timer(active=True)


def poll(services: UiServices, current: int | None) -> tuple[str, Any, Any, Any, Any]:
    """The job's progress line; once completed, its output shown (video or image) with a download, and
    the timer switched off when the job is no longer queued or running."""
    hidden = (gr.Video(visible=False), gr.Image(visible=False), gr.File(visible=False))
    if current is None:
        return "", *hidden, gr.Timer(active=False)
    job = services.job(int(current))
    if job.status == "completed" and job.result is not None:
        output = job.result["output"]
        shown = (
            (gr.Video(value=output, visible=True), gr.Image(visible=False))
            if job.result["kind"] == "video"
            else (gr.Video(visible=False), gr.Image(value=output, visible=True))
        )
        return progress_line(job), *shown, gr.File(value=output, visible=True), gr.Timer(active=False)
    active = job.status in ("queued", "running")
    return progress_line(job), *hidden, gr.Timer(active=active)


@plain_errors
def run_cancel(services: UiServices, current: int | None) -> str:
    if current is None:
        return "nothing to cancel"
    state = services.store.cancel(int(current))
    return f"job {current} " + ("cancelled" if state == "cancelled" else "is stopping")

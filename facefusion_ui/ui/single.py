"""The Single tab: source photos and one target (image or video), the target's faces to pick a reference,
processors and models (installed ones only), a one-frame preview, Start/Cancel with live progress, and
the result with a download."""

from __future__ import annotations

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
from facefusion_ui.types import FaceSelectorMode, Frame, choices
from facefusion_ui.ui.common import file_path, file_paths, output_name, plain_errors, progress_line
from facefusion_ui.ui.services import UiServices
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.stream import read_frame

SWAPPER_MODELS = ("mesh_warp", "inswapper_128", "inswapper_128_fp16")
PROCESSOR_MODELS = {"face_enhancer": "gfpgan_1.4"}


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


def build_single_tab(services: UiServices) -> None:
    settings = services.settings()
    processor_choices = [
        name
        for name in services.registry.names()
        if name not in PROCESSOR_MODELS or installed(services, PROCESSOR_MODELS[name])
    ]
    swapper_choices = [name for name in SWAPPER_MODELS if installed(services, name)]
    with gr.Row():
        with gr.Column():
            sources = gr.File(
                label="Source face photo(s)", file_count="multiple", file_types=["image"], elem_id="single-sources"
            )
            target = gr.File(label="Target image or video", file_types=["image", "video"], elem_id="single-target")
            frame_number = gr.Slider(0, 1, value=0, step=1, label="Frame (reference and preview)")
            faces = gr.Gallery(
                label="Faces in that frame: click one to use it as the reference",
                columns=6,
                height=160,
                elem_id="single-faces",
            )
            position = gr.Number(value=0, precision=0, label="Reference face (position, largest first)")
        with gr.Column():
            processors = gr.CheckboxGroup(
                processor_choices,
                value=[p for p in settings.processors if p in processor_choices] or ["face_swapper"],
                label="Processors",
            )
            swapper = gr.Dropdown(
                swapper_choices,
                value=settings.face_swapper_model if settings.face_swapper_model in swapper_choices else "mesh_warp",
                label="Face swapper model",
            )
            mode = gr.Radio(list(choices(FaceSelectorMode)), value=settings.face_selector_mode, label="Which faces")
            gr.Markdown(model_notes(services))
            with gr.Row():
                preview_button = gr.Button("Preview frame")
                start = gr.Button("Start", variant="primary", elem_id="single-start")
                cancel = gr.Button("Cancel", elem_id="single-cancel")
            preview = gr.Image(label="Preview", type="numpy", interactive=False)
            status = gr.Markdown("Add a source photo and a target, then press Start.", elem_id="single-status")
            result_video = gr.Video(label="Result", visible=False, elem_id="single-result-video")
            result_image = gr.Image(label="Result", visible=False, type="filepath", elem_id="single-result-image")
            download = gr.File(label="Download", visible=False)
    job_id = gr.State(None)
    timer = gr.Timer(1.0, active=False)

    @plain_errors
    def analyse_target(target_value: Any, frame: float) -> tuple[Any, Any, int]:
        path = file_path(target_value)
        if path is None:
            return [], gr.Slider(maximum=1, value=0), 0
        image, count = frame_of(path, int(frame))
        found = sort_faces(
            FaceAnalyser(services.runtime).analyse(image, services.settings(), embeddings=False),
            services.settings().face_selector_order,
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

    @plain_errors
    def run_preview(
        source_values: Any, target_value: Any, frame: float, chosen: list[str], model: str, selector: str, picked: float
    ) -> np.ndarray:
        path = file_path(target_value)
        if path is None or not file_paths(source_values):
            raise InputError("add a source photo and a target first")
        settings = services.settings().with_items(
            **choices_for(services, chosen, model, selector, int(picked), int(frame))
        )
        image, _ = frame_of(path, int(frame))
        pipeline = FramePipeline.build(settings, services.runtime, file_paths(source_values), services.registry)
        pipeline.set_reference_from(image)
        return rgb(pipeline.process(image, int(frame)))

    @plain_errors
    def run_start(
        source_values: Any, target_value: Any, frame: float, chosen: list[str], model: str, selector: str, picked: float
    ) -> tuple[int, str, Any]:
        path = file_path(target_value)
        if path is None or not file_paths(source_values):
            raise InputError("add a source photo and a target first")
        settings = services.settings().with_items(
            **choices_for(services, chosen, model, selector, int(picked), int(frame))
        )
        new_id = services.enqueue(file_paths(source_values), path, output_name(path, services.outputs_dir), settings)
        return new_id, f"job {new_id} queued", gr.Timer(active=True)

    def poll(current: int | None) -> tuple[str, Any, Any, Any, Any]:
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
    def run_cancel(current: int | None) -> str:
        if current is None:
            return "nothing to cancel"
        state = services.store.cancel(int(current))
        return f"job {current} " + ("cancelled" if state == "cancelled" else "is stopping")

    target.change(analyse_target, [target, frame_number], [faces, frame_number, position])
    frame_number.release(analyse_target, [target, frame_number], [faces, frame_number, position])
    faces.select(pick, None, position)
    inputs = [sources, target, frame_number, processors, swapper, mode, position]
    preview_button.click(run_preview, inputs, preview)
    start.click(run_start, inputs, [job_id, status, timer])
    timer.tick(poll, job_id, [status, result_video, result_image, download, timer])
    cancel.click(run_cancel, job_id, status)

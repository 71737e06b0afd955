"""The Single tab's models: a Download button beside each model dropdown whose choice is not downloaded,
the downloads' progress line (bytes, speed, ETA), the dropdowns' labels refreshed once the downloads end
(no restart), and Start that first downloads what the job needs, then queues it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import gradio as gr

from facefusion_ui.errors import FacefusionError, InputError
from facefusion_ui.faces.face_map import FaceMapEntry
from facefusion_ui.model_service import DownloadStatus
from facefusion_ui.state_manager import Settings
from facefusion_ui.ui.common import plain_message, problem, reported
from facefusion_ui.ui.downloads import page_line, status_line
from facefusion_ui.ui.processor_options import installed, model_choices
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import Request, request_settings
from facefusion_ui.ui.single_run import ACTIVE, run_start

POLL_S = 0.5
"""How often Start's wait for its downloads says how far they got."""


def job_models(services: UiServices, settings: Settings) -> list[str]:
    """The models a job with ``settings`` loads: the face analysis's and each processor's."""
    names: list[str] = [settings.face_detector_model, settings.face_landmarker_model]
    if settings.face_selector_mode == "reference":
        names.append(settings.face_recognizer_model)
    for processor in settings.processors:
        names.extend(services.registry.create(processor, settings, services.runtime).required_models())
    return list(dict.fromkeys(names))


def downloadable(services: UiServices, name: Any) -> bool:
    """Whether ``name`` is a catalog model that is not installed and can be downloaded."""
    manifest = services.runtime.manifest
    return (
        isinstance(name, str) and name in manifest and manifest[name].kind == "onnx" and not installed(services, name)
    )


def progress_lines(statuses: Sequence[DownloadStatus]) -> str:
    return "\n".join(f"- {plain_message(page_line(status))}" for status in statuses)


def model_chosen(services: UiServices, name: Any) -> tuple[str, Any]:
    """A model was chosen: the Download button beside it when it is not downloaded, and what it takes."""
    if not downloadable(services, name):
        return "", gr.Button(visible=False)
    size = services.downloads.size(str(name))
    weight = f" ({size / 1e6:.0f} MB)" if size else ""
    line = f"{name} is not downloaded{weight}: press Download beside it, or Start (it downloads what the job needs)"
    return line, gr.Button(visible=True)


@reported(2)
def download_chosen(services: UiServices, name: Any) -> tuple[str, Any]:
    """Download the chosen model and what it requires; the timer shows the progress."""
    if not downloadable(services, name):
        return f"{name} is already downloaded", gr.skip()
    started = services.downloads.start_missing([str(name)])
    statuses = [services.downloads.progress()[each] for each in started]
    return progress_lines(statuses), gr.Timer(active=True)


def download_tick(services: UiServices, model_lists: Sequence[Sequence[str]], *values: Any) -> tuple[Any, ...]:
    """The downloads' progress; once none runs, every model dropdown relabelled (installed, sizes) with
    its Download button shown only for a model still missing, and the timer stopped."""
    statuses = list(services.downloads.progress().values())
    line = progress_lines(statuses) if statuses else gr.skip()
    count = len(model_lists)
    if services.downloads.running():
        return line, *(gr.skip(),) * (2 * count), gr.Timer(active=True)
    dropdowns = [gr.update(choices=model_choices(services, names)) for names in model_lists]
    buttons = [gr.Button(visible=downloadable(services, value)) for value in values]
    return line, *dropdowns, *buttons, gr.Timer(active=False)


def wait_for_downloads(services: UiServices, names: Sequence[str]) -> Iterator[str]:
    """The progress lines of the downloads of ``names`` until all ended; a failed one is an InputError."""
    while True:
        progress = services.downloads.progress()
        statuses = [progress[name] for name in names if name in progress]
        if all(status.finished for status in statuses):
            break
        yield progress_lines(statuses)
        running = next(status.name for status in statuses if not status.finished)
        services.downloads.wait(running, POLL_S)
    failed = [status for status in statuses if status.state != "done"]
    if failed:
        reasons = "; ".join(plain_message(status_line(status)) for status in failed)
        raise InputError(f"{reasons}: no job was queued (press Start to try again)")


def run_start_with_models(
    services: UiServices,
    keys: Sequence[str],
    current: int | None,
    *values: Any,
    face_map: Sequence[FaceMapEntry] = (),
) -> Iterator[tuple[Any, ...]]:
    """Start: the models the job needs that are not downloaded are downloaded first (their progress in the
    message area, Start disabled meanwhile), then the job is queued (``run_start``)."""
    try:
        if current is not None and services.job(int(current)).status in ACTIVE:
            yield run_start(services, keys, current, *values, face_map=face_map)
            return
        request = Request.parse(keys, values)
        request.files(mapped=bool(face_map))
        needed = services.downloads.start_missing(job_models(services, request_settings(services, keys, request)))
        if needed:
            busy = (gr.skip(), gr.Button(interactive=False), gr.skip(), gr.skip())
            yield f"Downloading {', '.join(needed)} first: the job starts once they are here", *busy
            for line in wait_for_downloads(services, needed):
                yield f"Downloading what the job needs first:\n{line}", *busy
    except FacefusionError as error:
        yield problem(str(error)), gr.skip(), gr.Button(interactive=True), gr.skip(), gr.skip()
        return
    yield run_start(services, keys, current, *values, face_map=face_map)

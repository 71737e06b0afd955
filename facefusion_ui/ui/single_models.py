"""The Single tab's models: a Download button beside each model dropdown whose choice is not downloaded,
the downloads' progress line (bytes, speed, ETA), the dropdowns' labels refreshed once the downloads end
(no restart), the face swapper's line naming the model of best likeness (``swapper_hint``), and Start
that first downloads what the job needs, then queues it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import gradio as gr

from facefusion_ui.errors import FacefusionError, InputError
from facefusion_ui.faces.face_map import FaceMapEntry
from facefusion_ui.model_service import DownloadStatus
from facefusion_ui.pipeline import source_face_needed
from facefusion_ui.ui.common import problem, reported
from facefusion_ui.ui.downloads import status_line
from facefusion_ui.ui.processor_options import installed, model_choices
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import Request, job_models, request_settings
from facefusion_ui.ui.single_run import ACTIVE, Started, run_start
from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER, hint

POLL_S = 0.5
"""How often Start's wait for its downloads says how far they got."""


class ModelChosen(NamedTuple):
    """What choosing a model updates: the downloads' line and the Download button beside it."""

    line: Any
    button: Any


class DownloadStarted(NamedTuple):
    """What a Download button updates: the downloads' line and their timer."""

    line: Any
    timer: Any


def downloadable(services: UiServices, name: Any) -> bool:
    """Whether ``name`` is a catalog model that is not installed and can be downloaded."""
    manifest = services.runtime.manifest
    return (
        isinstance(name, str) and name in manifest and manifest[name].kind == "onnx" and not installed(services, name)
    )


def progress_lines(services: UiServices, statuses: Sequence[DownloadStatus]) -> str:
    return services.downloads.lines(statuses)


def model_chosen(services: UiServices, name: Any) -> ModelChosen:
    """A model was chosen: the Download button beside it when it is not downloaded, and what it takes."""
    if not downloadable(services, name):
        return ModelChosen("", gr.Button(visible=False))
    size = services.downloads.size(str(name))
    weight = f" ({size / 1e6:.0f} MB)" if size else ""
    line = f"{name} is not downloaded{weight}: press Download beside it"
    return ModelChosen(line, gr.Button(visible=True))


@reported(DownloadStarted)
def download_chosen(services: UiServices, name: Any) -> DownloadStarted:
    """Download the chosen model and what it requires; the timer shows the progress."""
    if not downloadable(services, name):
        return DownloadStarted(f"{name} is already downloaded", gr.skip())
    started = services.downloads.start_missing([str(name)])
    statuses = [services.downloads.progress()[each] for each in started]
    return DownloadStarted(progress_lines(services, statuses), gr.Timer(active=True))


class HintShown(NamedTuple):
    """What the face swapper's line updates: the line, its Download button, and its timer (ticking while
    the network's answer or the recommended model's download is awaited)."""

    line: Any
    button: Any
    timer: Any


def swapper_hint(services: UiServices, chosen: Any) -> HintShown:
    """The face swapper's line for the dropdown showing ``chosen`` (``swapper_hint.hint``)."""
    downloads = services.downloads
    name = RECOMMENDED_SWAPPER
    status = downloads.progress().get(name)
    downloading = status is not None and not status.finished
    size = downloads.size(name)  # asks the server the first time: the answer says whether there is a network
    downloaded = installed(services, name)
    answered = downloads.size_answered(name)
    embedded = ", ".join(downloads.instead(name)) or "mesh_warp"
    line, offer = hint(
        str(chosen), name, size, answered=answered, downloaded=downloaded, downloading=downloading, embedded=embedded
    )
    waiting = downloading or not (downloaded or answered)
    return HintShown(line, gr.Button(visible=offer), gr.Timer(active=waiting))


def download_recommended(services: UiServices) -> DownloadStarted:
    """The face swapper line's Download: the recommended model through the page's download flow."""
    return download_chosen(services, RECOMMENDED_SWAPPER)


def download_tick(services: UiServices, model_lists: Sequence[Sequence[str]], *values: Any) -> tuple[Any, ...]:
    """The downloads' progress; once none runs, every model dropdown relabelled (installed, sizes) with
    its Download button shown only for a model still missing, and the timer stopped."""
    statuses = list(services.downloads.progress().values())
    line = progress_lines(services, statuses) if statuses else gr.skip()
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
        yield progress_lines(services, statuses)
        running = next(status.name for status in statuses if not status.finished)
        services.downloads.wait(running, POLL_S)
    failed = [status for status in statuses if status.state != "done"]
    if failed:
        lines = [status_line(status, services.downloads.instead(status.name)) for status in failed]
        if len(lines) == 1:
            raise InputError(f"No job was queued: {lines[0]}")
        raise InputError("No job was queued: models it needs are missing.\n" + "\n".join(f"- {x}" for x in lines))


def run_start_with_models(
    services: UiServices, current: int | None, request: Request, face_map: Sequence[FaceMapEntry] = ()
) -> Iterator[Started]:
    """Start: the models the job needs that are not downloaded are downloaded first (their progress in the
    message area, Start disabled meanwhile), then the job is queued (``run_start``)."""
    try:
        if current is not None and services.job(int(current)).status in ACTIVE:
            yield run_start(services, current, request, face_map)
            return
        settings = request_settings(services, request)
        request.files(bool(face_map), source_face_needed(settings, services.registry))
        needed = services.downloads.start_missing(job_models(services, settings))
        if needed:
            busy = {"job_id": gr.skip(), "start": gr.Button(interactive=False), "timer": gr.skip(), "log": gr.skip()}
            yield Started(f"Downloading {', '.join(needed)} first: the job starts once they are here", **busy)
            for line in wait_for_downloads(services, needed):
                yield Started(f"Downloading what the job needs first:\n{line}", **busy)
    except FacefusionError as error:
        yield Started(
            problem(error.for_page()), gr.skip(), start=gr.Button(interactive=True), timer=gr.skip(), log=gr.skip()
        )
        return
    yield run_start(services, current, request, face_map)

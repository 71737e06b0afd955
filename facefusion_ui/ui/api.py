"""The page's API for scripts (``gradio_client``), on the same queue as the page: a few named endpoints
with named parameters; every other event of the page is the page's own and left out of the API page.

- ``/swap`` (sources, target, settings) -> the output file, once the job ends
- ``/submit`` (sources, target, settings, priority) -> the job's id at once
- ``/job`` (job_id) -> the job: status, progress, output, error
- ``/cancel`` (job_id) -> what was done
- ``/settings`` () -> the saved settings a job takes unless ``settings`` changes some

``settings``: a JSON object of settings (``{"face_selector_mode": "one", "output_video_quality": 90}``)
over the saved ones, checked by the same rules as the command line's options; blank for none."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from facefusion_ui.errors import InputError, SettingsError
from facefusion_ui.jobs.store import Job, wait_for
from facefusion_ui.state_manager import Settings, validate_item
from facefusion_ui.ui.common import file_path, file_paths, job_text, output_name, plain_errors, progress_line
from facefusion_ui.ui.services import UiServices

API_TIMEOUT_S = 3600
ENDPOINTS = ("swap", "submit", "job", "cancel", "settings")
"""The API's endpoints; the page's other events are hidden from it (``hide_page_events``)."""


def job_settings(services: UiServices, settings: str | None) -> Settings:
    """The saved settings with the JSON object ``settings`` over them (blank: none)."""
    if not settings or not settings.strip():
        return services.settings()
    try:
        given = json.loads(settings)
    except json.JSONDecodeError as error:
        raise SettingsError(f'settings: not JSON ({error.msg}): give an object, e.g. {{"fp16": "on"}}') from None
    if not isinstance(given, dict):
        raise SettingsError('settings: give a JSON object of setting names and values, e.g. {"fp16": "on"}')
    try:  # a script names settings by their keys: said by them, not by the page's labels
        items = {str(key): tuple(value) if isinstance(value, list) else value for key, value in given.items()}
        checked = {key: validate_item(key, value) for key, value in items.items()}
        return services.settings().with_items(**checked)
    except SettingsError as error:
        raise SettingsError(f"settings: {error.problem}") from None


def queue_job(services: UiServices, sources: Any, target: Any, settings: str | None, priority: float = 0) -> int:
    path = file_path(target)
    if path is None or not file_paths(sources):
        raise InputError("give source photo(s) and a target")
    chosen = job_settings(services, settings)
    return services.enqueue(
        file_paths(sources), path, output_name(path, services.outputs_dir), chosen, int(priority or 0), origin="api"
    )


def job_view(job: Job) -> dict[str, Any]:
    """A job as ``/job`` gives it."""
    return {
        "id": job.id,
        "status": job.status,
        "progress": job_text(job.payload, progress_line(job)),
        "frames_done": job.frames_done,
        "frames_total": job.frames_total,
        "output": (job.result or {}).get("output") if job.status == "completed" else None,
        "error": job_text(job.payload, job.last_error) if job.status == "failed" and job.last_error else None,
    }


@plain_errors
def api_swap(services: UiServices, sources: Any, target: Any, settings: str | None = None) -> str:
    """Queue one job (the saved settings, ``settings`` over them) and wait for it: the output's path."""
    job_id = queue_job(services, sources, target, settings)
    job = wait_for(services.store, job_id, timeout_s=API_TIMEOUT_S)
    if job.status != "completed" or job.result is None:
        raise InputError(f"job {job_id} {job.status}: {job_text(job.payload, job.last_error or 'no output')}")
    return str(job.result["output"])


@plain_errors
def api_submit(services: UiServices, sources: Any, target: Any, settings: str | None, priority: float) -> int:
    """Queue one job and return its id at once (``/job`` follows it)."""
    return queue_job(services, sources, target, settings, priority)


@plain_errors
def api_job(services: UiServices, job_id: float) -> dict[str, Any]:
    return job_view(services.job(int(job_id)))


@plain_errors
def api_cancel(services: UiServices, job_id: float) -> str:
    state = services.store.cancel(int(job_id))
    return f"job {int(job_id)} " + ("cancelled" if state == "cancelled" else "is stopping")


def build_api(services: UiServices) -> None:
    """Hidden components carrying the endpoints; each function's parameters are the endpoint's names."""

    def swap(sources: Any, target: Any, settings: str | None = None) -> str:
        return api_swap(services, sources, target, settings)

    def submit(sources: Any, target: Any, settings: str | None, priority: float) -> int:
        return api_submit(services, sources, target, settings, priority)

    def job(job_id: float) -> dict[str, Any]:
        return api_job(services, job_id)

    def cancel(job_id: float) -> str:
        return api_cancel(services, job_id)

    def saved_settings() -> dict[str, Any]:
        return services.settings().to_dict()

    with gr.Row(visible=False):
        sources = gr.File(file_count="multiple", label="sources")
        target = gr.File(label="target")
        settings = gr.Textbox("", label="settings")
        priority = gr.Number(0, precision=0, label="priority")
        job_id = gr.Number(0, precision=0, label="job_id")
        output = gr.File(label="output")
        text = gr.Textbox(label="result")
        view = gr.JSON(label="job")
        button = gr.Button()
    described: dict[str, Any] = {"api_visibility": "public", "show_progress": "hidden"}
    button.click(
        swap, [sources, target, settings], output, api_name="swap", api_description=api_swap.__doc__, **described
    )
    button.click(
        submit,
        [sources, target, settings, priority],
        job_id,
        api_name="submit",
        api_description=api_submit.__doc__,
        **described,
    )
    button.click(
        job, job_id, view, api_name="job", api_description="The job: status, progress, output, error", **described
    )
    button.click(cancel, job_id, text, api_name="cancel", api_description="Cancel a job", **described)
    button.click(saved_settings, None, view, api_name="settings", api_description="The saved settings", **described)


def hide_page_events(demo: Any) -> None:
    """Every event but the API's endpoints left out of the API page (the page still calls them)."""
    for function in demo.fns.values():
        if function.api_name not in ENDPOINTS:
            function.api_visibility = "undocumented"

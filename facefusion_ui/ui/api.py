"""``/swap`` for scripts (gradio_client): the same queue as the page, waits for the result."""

from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from facefusion_ui.errors import InputError
from facefusion_ui.jobs.store import wait_for
from facefusion_ui.ui.common import file_path, file_paths, job_text, output_name, plain_errors
from facefusion_ui.ui.services import UiServices

API_TIMEOUT_S = 3600


def build_api(services: UiServices) -> None:
    """Hidden components carrying the ``/swap`` endpoint (sources, target -> output file)."""
    with gr.Row(visible=False):
        sources = gr.File(file_count="multiple")
        target = gr.File()
        result = gr.File()
        button = gr.Button()
    button.click(functools.partial(api_swap, services), [sources, target], result, api_name="swap")


@plain_errors
def api_swap(services: UiServices, source_values: Any, target_value: Any) -> str:
    """Queue one job with the saved settings and wait for it: the output's path."""
    path = file_path(target_value)
    if path is None or not file_paths(source_values):
        raise InputError("give source photo(s) and a target")
    job_id = services.enqueue(
        file_paths(source_values), path, output_name(path, services.outputs_dir), services.settings()
    )
    job = wait_for(services.store, job_id, timeout_s=API_TIMEOUT_S)
    if job.status != "completed" or job.result is None:
        raise InputError(f"job {job_id} {job.status}: {job_text(job.payload, job.last_error or 'no output')}")
    return str(job.result["output"])

"""The Batch tab: many targets (and sources) into the queue, a live job table, cancel/retry/remove, and
downloads of finished outputs. Laid out by ``render_batch_tab``, wired by ``listen_batch_tab`` to
module-level handlers over ``UiServices``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from facefusion_ui.errors import FacefusionError, InputError
from facefusion_ui.jobs.payload import output_for
from facefusion_ui.ui.common import file_paths, plain_errors
from facefusion_ui.ui.services import UiServices

COLUMNS = ["id", "target", "status", "progress", "fps", "ETA s", "attempts", "error"]


def table_rows(services: UiServices) -> list[list[Any]]:
    rows = []
    for job in services.store.jobs():
        progress = (
            f"{100 * job.frames_done / job.frames_total:.0f}%"
            if job.frames_total
            else ("100%" if job.status == "completed" else "")
        )
        eta = f"{job.eta_s:.0f}" if job.eta_s is not None and job.status == "running" else ""
        rows.append(
            [
                job.id,
                Path(job.target).name,
                job.status,
                progress,
                f"{job.fps:.1f}",
                eta,
                f"{job.attempts}/{job.max_attempts}",
                job.last_error or "",
            ]
        )
    return rows


def finished_outputs(services: UiServices) -> list[str]:
    outputs = []
    for job in services.store.jobs(["completed"]):
        output = Path(job.payload["output"])
        if output.exists() and services.outputs_dir in output.resolve().parents:
            outputs.append(str(output))
    return outputs


@dataclass(frozen=True)
class BatchTab:
    """The components of the Batch tab that handlers read or update."""

    sources: Any
    targets: Any
    folder: Any
    priority: Any
    add: Any
    message: Any
    table: Any
    chosen: Any
    cancel: Any
    retry: Any
    remove: Any
    downloads: Any
    timer: Any


def render_batch_tab(services: UiServices) -> BatchTab:
    with gr.Row():
        sources = gr.File(
            label="Source face photo(s)", file_count="multiple", file_types=["image"], elem_id="batch-sources"
        )
        targets = gr.File(
            label="Targets (images or videos)",
            file_count="multiple",
            file_types=["image", "video"],
            elem_id="batch-targets",
        )
    with gr.Row():
        folder = gr.Textbox(value="batch", label=f"Output folder (inside {services.outputs_dir})")
        priority = gr.Number(value=0, precision=0, label="Priority (higher runs first)")
        add = gr.Button("Add to queue", variant="primary", elem_id="batch-add")
    message = gr.Markdown("", elem_id="batch-message")
    table = gr.Dataframe(value=table_rows(services), headers=COLUMNS, interactive=False, elem_id="batch-table")
    with gr.Row():
        chosen = gr.Number(value=None, precision=0, label="Job id")
        cancel = gr.Button("Cancel")
        retry = gr.Button("Retry")
        remove = gr.Button("Remove")
    downloads = gr.File(label="Finished outputs", file_count="multiple", interactive=False)
    return BatchTab(
        sources, targets, folder, priority, add, message, table, chosen, cancel, retry, remove, downloads, gr.Timer(1.0)
    )


def listen_batch_tab(tab: BatchTab, services: UiServices) -> None:
    tab.add.click(
        functools.partial(run_add, services),
        [tab.sources, tab.targets, tab.folder, tab.priority],
        [tab.message, tab.table],
    )
    tab.timer.tick(functools.partial(refresh, services), None, [tab.table, tab.downloads])
    for button, action in ((tab.cancel, "cancel"), (tab.retry, "retry"), (tab.remove, "remove")):
        button.click(functools.partial(act_on_job, services, action), tab.chosen, [tab.message, tab.table])


def build_batch_tab(services: UiServices) -> None:
    listen_batch_tab(render_batch_tab(services), services)


def output_folder(services: UiServices, subfolder: str) -> Path:
    """The named folder inside the outputs folder, created (a name only: no '..', no absolute path)."""
    name = Path(subfolder.strip() or "batch")
    if name.is_absolute() or ".." in name.parts:
        raise InputError("the output folder is a name inside the outputs folder (no '..', no absolute path)")
    out_dir = services.outputs_dir / name
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


@plain_errors
def run_add(
    services: UiServices, source_values: Any, target_values: Any, subfolder: str, level: float
) -> tuple[str, Any]:
    """Queue one job per target; the rejected ones (no face, unreadable, ...) listed with their reason."""
    source_paths, target_paths = file_paths(source_values), file_paths(target_values)
    if not source_paths or not target_paths:
        raise InputError("add at least one source photo and one target")
    out_dir = output_folder(services, subfolder)
    settings = services.settings()
    queued, rejected = [], []
    for target in target_paths:
        try:
            queued.append(
                services.enqueue(source_paths, target, output_for(target, out_dir), settings, int(level or 0))
            )
        except FacefusionError as error:
            rejected.append(f"{target.name}: {error}")
    text = f"queued {len(queued)} job(s)" + ("".join(f"\n- rejected {line}" for line in rejected))
    if rejected:
        gr.Warning(f"{len(rejected)} target(s) rejected: see the message under the buttons")
    return text, table_rows(services)


def refresh(services: UiServices) -> tuple[Any, Any]:
    return table_rows(services), finished_outputs(services) or None


@plain_errors
def act_on_job(services: UiServices, action: str, job_id: float | None) -> tuple[str, Any]:
    """``action`` (cancel, retry or remove) on the job whose id was typed."""
    if job_id is None:
        raise InputError("type the id of a job from the table")
    number = int(job_id)
    if action == "cancel":
        services.store.cancel(number)
    elif action == "retry":
        services.store.retry(number)
    else:
        services.store.remove(number)
    return f"job {number}: {action} done", table_rows(services)

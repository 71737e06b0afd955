"""The Batch tab: many targets (and sources) into the queue, a live job table, cancel/retry/remove, and
downloads of finished outputs."""

from __future__ import annotations

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


def build_batch_tab(services: UiServices) -> None:
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
    timer = gr.Timer(1.0)

    @plain_errors
    def run_add(source_values: Any, target_values: Any, subfolder: str, level: float) -> tuple[str, Any]:
        source_paths, target_paths = file_paths(source_values), file_paths(target_values)
        if not source_paths or not target_paths:
            raise InputError("add at least one source photo and one target")
        name = Path(subfolder.strip() or "batch")
        if name.is_absolute() or ".." in name.parts:
            raise InputError("the output folder is a name inside the outputs folder (no '..', no absolute path)")
        out_dir = services.outputs_dir / name
        out_dir.mkdir(parents=True, exist_ok=True)
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

    def refresh() -> tuple[Any, Any]:
        return table_rows(services), finished_outputs(services) or None

    def act(action: str) -> Any:
        @plain_errors
        def handler(job_id: float | None) -> tuple[str, Any]:
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

        return handler

    add.click(run_add, [sources, targets, folder, priority], [message, table])
    timer.tick(refresh, None, [table, downloads])
    cancel.click(act("cancel"), chosen, [message, table])
    retry.click(act("retry"), chosen, [message, table])
    remove.click(act("remove"), chosen, [message, table])

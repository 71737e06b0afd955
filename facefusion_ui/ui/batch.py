"""The Batch tab: many targets (and sources) into the queue, a live job table whose rows are selected by
clicking them (one or several), cancel/retry/remove on the selected jobs, and downloads of the outputs
this tab made, each once. Laid out by ``render_batch_tab``, wired by ``listen_batch_tab`` to
module-level handlers over ``UiServices``; each handler's first output is the tab's message area."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from facefusion_ui.errors import FacefusionError, InputError
from facefusion_ui.jobs.payload import output_for
from facefusion_ui.jobs.store import TOO_LATE, Job
from facefusion_ui.ui.common import file_paths, job_text, outputs_of, problem, reported
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import output_dir

COLUMNS = ["✓", "id", "target", "status", "progress", "fps", "ETA s", "attempts", "error"]
SELECTED_MARK = "✓"
ACTIONS = {"cancel": "cancelled", "retry": "queued again", "remove": "removed"}


def job_row(job: Job, selected: Sequence[int]) -> list[Any]:
    progress = (
        f"{100 * job.frames_done / job.frames_total:.0f}%"
        if job.frames_total
        else ("100%" if job.status == "completed" else "")
    )
    eta = f"{job.eta_s:.0f}" if job.eta_s is not None and job.status == "running" else ""
    status: str = "cancelling" if job.status == "running" and job.cancel_requested else job.status
    if job.status == "completed" and job.status_line == TOO_LATE:
        status = "completed (the cancel came too late)"
    return [
        SELECTED_MARK if job.id in selected else "",
        job.id,
        Path(job.target).name,
        status,
        progress,
        f"{job.fps:.1f}" if job.frames_total else "",
        eta,
        f"{job.attempts}/{job.max_attempts}",
        job_text(job.payload, job.last_error or ""),
    ]


def table_rows(services: UiServices, selected: Sequence[int] = ()) -> list[list[Any]]:
    return [job_row(job, selected) for job in services.store.jobs()]


def job_origin(job: Job) -> str:
    """The tab that queued the job; jobs queued before the page recorded it, and the command line's, are
    the Batch tab's unless they wrote straight into the outputs folder as the Single tab did."""
    origin = job.payload.get("origin")
    if isinstance(origin, str):
        return origin
    return "single" if "_swapped_" in Path(job.payload["output"]).name else "batch"


def finished_outputs(services: UiServices, origin: str = "batch") -> list[str]:
    """The outputs of completed jobs that ``origin`` queued, each once, inside the outputs folder."""
    outputs: dict[str, None] = {}
    for job in services.store.jobs(["completed"]):
        output = Path((job.result or {}).get("output") or job.payload["output"])  # a job may have stepped aside
        if job_origin(job) == origin and output.exists() and services.outputs_dir in output.resolve().parents:
            outputs[str(output)] = None
    return list(outputs)


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
    selected: Any
    selection: Any
    clear: Any
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
    table = gr.Dataframe(
        value=table_rows(services), headers=COLUMNS, interactive=False, type="array", elem_id="batch-table"
    )
    selection = gr.Markdown(selection_line([]), elem_id="batch-selection")
    with gr.Row():
        clear = gr.Button("Clear selection", elem_id="batch-clear")
        cancel = gr.Button("Cancel selected", elem_id="batch-cancel")
        retry = gr.Button("Retry selected", elem_id="batch-retry")
        remove = gr.Button("Remove selected", elem_id="batch-remove")
    downloads = gr.File(
        label="Finished outputs of this tab", file_count="multiple", interactive=False, elem_id="batch-downloads"
    )
    return BatchTab(
        sources, targets, folder, priority, add, message, table, gr.State([]), selection, clear, cancel, retry,
        remove, downloads, gr.Timer(1.0),
    )  # fmt: skip


def listen_batch_tab(tab: BatchTab, services: UiServices) -> None:
    tab.add.click(
        functools.partial(run_add, services),
        [tab.sources, tab.targets, tab.folder, tab.priority, tab.selected],
        outputs_of(Added, tab),
    )
    tab.timer.tick(
        functools.partial(refresh, services),
        [tab.selected, tab.table],
        [tab.table, tab.downloads],
        show_progress="hidden",
    )

    def on_select(selected: Any, event: gr.SelectData) -> tuple[list[int], str, Any]:
        return toggle_row(services, selected, event)  # gradio finds SelectData on a plain function only

    tab.table.select(on_select, tab.selected, [tab.selected, tab.selection, tab.table])
    tab.clear.click(functools.partial(clear_selection, services), None, [tab.selected, tab.selection, tab.table])
    for button, action in ((tab.cancel, "cancel"), (tab.retry, "retry"), (tab.remove, "remove")):
        button.click(
            functools.partial(act_on_jobs, services, action),
            tab.selected,
            outputs_of(Acted, tab),
        )


def build_batch_tab(services: UiServices) -> None:
    listen_batch_tab(render_batch_tab(services), services)


def output_folder(services: UiServices, subfolder: str) -> Path:
    """The named folder inside the outputs folder, created (a name only: no '..', no absolute path)."""
    return output_dir(services, subfolder, "batch")


class Added(NamedTuple):
    """What Add updates (each field a ``BatchTab`` part of that name)."""

    message: Any
    table: Any


class Acted(NamedTuple):
    """What cancel, retry and remove update."""

    message: Any
    selected: Any
    selection: Any
    table: Any


@reported(Added)
def run_add(
    services: UiServices, source_values: Any, target_values: Any, subfolder: str, level: float, selected: Any = ()
) -> Added:
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
                services.enqueue(
                    source_paths, target, output_for(target, out_dir), settings, int(level or 0), origin="batch"
                )
            )
        except FacefusionError as error:
            rejected.append(f"{target.name}: {error.for_page()}")
    text = f"queued {len(queued)} job(s)" + ("".join(f"\n- rejected {line}" for line in rejected))
    return Added(problem(text) if rejected else text, table_rows(services, selected or ()))


def refresh(services: UiServices, selected: Any = (), shown: Any = None) -> tuple[Any, Any]:
    """The table (unchanged rows are not sent again, so a click on a row is not lost) and this tab's
    finished outputs."""
    rows = table_rows(services, selected or ())
    same = shown is not None and [[str(cell) for cell in row] for row in rows] == [
        [str(cell) for cell in row] for row in shown
    ]
    return (gr.skip() if same else rows), finished_outputs(services) or None


def selection_line(selected: Sequence[int]) -> str:
    if not selected:
        return "Click rows of the table to select jobs (click again to unselect)."
    return "Selected: " + ", ".join(f"job {job_id}" for job_id in selected)


def toggle_row(services: UiServices, selected: Any, event: gr.SelectData) -> tuple[list[int], str, Any]:
    """A click on a row selects its job, or unselects it."""
    row = event.row_value if event.row_value else None
    index = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
    if row is None:
        rows = table_rows(services)
        row = rows[index] if 0 <= index < len(rows) else None
    chosen = list(selected or [])
    if row is not None:
        job_id = int(row[1])
        chosen = [item for item in chosen if item != job_id] if job_id in chosen else [*chosen, job_id]
    return chosen, selection_line(chosen), table_rows(services, chosen)


def clear_selection(services: UiServices) -> tuple[list[int], str, Any]:
    return [], selection_line([]), table_rows(services)


def refusal(action: str, job_id: int, status: str | None) -> str | None:
    """Why the page does not ask the queue for ``action`` on a job (it says so its own way), if it does not."""
    if status is None:
        return f"job {job_id} no longer exists"
    if action == "remove" and status == "running":
        return f"job {job_id} is running: cancel it first"
    return None


@reported(Acted)
def act_on_jobs(services: UiServices, action: str, selected: Any) -> Acted:
    """``action`` (cancel, retry or remove) on each selected job; what could not be done is said per job.
    Removed jobs leave the selection."""
    chosen = [int(job_id) for job_id in selected or []]
    if not chosen:
        raise InputError("select jobs first: click their rows in the table")
    done, refused, stopping = [], [], []
    verb = {"cancel": services.store.cancel, "retry": services.store.retry, "remove": services.store.remove}[action]
    statuses = {job.id: job.status for job in services.store.jobs()}
    for job_id in chosen:
        reason = refusal(action, job_id, statuses.get(job_id))
        if reason:
            refused.append(f"- {reason}")
            continue
        try:
            if verb(job_id) == "running":  # a running job stops at its next frames
                stopping.append(job_id)
            done.append(job_id)
        except FacefusionError as error:
            refused.append(f"- {error.for_page()}")
    remaining = [job_id for job_id in chosen if not (action == "remove" and job_id in done)]
    ended = [job_id for job_id in done if job_id not in stopping]
    parts = [f"{ACTIONS[action]}: " + (", ".join(f"job {job_id}" for job_id in ended) or "none")]
    if stopping:  # said instead of "cancelled: none" when every one of them is still running
        stopped = "stopping at their next frames: " + ", ".join(f"job {job_id}" for job_id in stopping)
        parts = [*parts, stopped] if ended else [stopped]
    text = "\n".join(parts)
    message = problem("\n".join([text, *refused])) if refused else text
    return Acted(message, remaining, selection_line(remaining), table_rows(services, remaining))

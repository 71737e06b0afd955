"""Helpers the tabs share: plain-words errors (raised for the API, shown in a tab's one message area for
the page, each said as ``FacefusionError.for_page`` says it), progress text, output names."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import gradio as gr

from facefusion_ui.errors import FacefusionError
from facefusion_ui.jobs.store import Job
from facefusion_ui.media_files import IMAGE_SUFFIXES

logger = logging.getLogger(__name__)
Handler = TypeVar("Handler", bound=Callable[..., Any])


def plain_errors(handler: Handler) -> Handler:
    """Show user mistakes as Gradio errors in plain words; never a traceback on the page."""

    @functools.wraps(handler)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        except FacefusionError as error:
            raise gr.Error(error.for_page(), print_exception=False) from error
        except gr.Error:
            raise
        except Exception as error:  # logged with its traceback for the developer, one line for the user
            logger.exception("UI action failed")
            raise gr.Error(
                f"internal error ({type(error).__name__}: {error}); see the terminal log", print_exception=False
            ) from error

    return wrapped  # type: ignore[return-value]


def job_text(payload: Mapping[str, Any], text: str) -> str:
    """A line a job recorded (its error, its log) as the page shows it: the files of the job's
    ``payload`` by their names (an upload as the person picked it)."""
    named = [*payload.get("sources", ()), payload.get("target"), payload.get("output")]
    for path in sorted((str(item) for item in named if item), key=len, reverse=True):
        text = text.replace(path, Path(path).name)
    return text


def problem(text: str) -> str:
    """A mistake or a warning in a tab's message area."""
    return f"⚠️ {text}"


Outputs = type[tuple[Any, ...]]
"""A NamedTuple class naming a handler's outputs: each field the component of that name it updates."""


def output_names(view: Outputs) -> tuple[str, ...]:
    return tuple(view.__annotations__)  # a NamedTuple's fields, in order


def outputs_of(view: Outputs, parts: Any) -> list[Any]:
    """The components a handler returning ``view`` updates, in its fields' order: each the attribute (or,
    in a mapping, the item) of ``parts`` of the field's name."""
    return [parts[name] if isinstance(parts, Mapping) else getattr(parts, name) for name in output_names(view)]


def reported(outputs: Outputs | None = None) -> Callable[[Handler], Handler]:
    """For a page handler whose first output is its tab's message area: a mistake becomes that message
    (the other outputs unchanged, their controls usable), never an error pill. ``outputs``: the NamedTuple
    the handler returns (its first field the message); none when the message is its only output."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except FacefusionError as error:
                message = problem(error.for_page())
            except Exception as error:  # logged with its traceback for the developer, one line for the user
                logger.exception("UI action failed")
                message = problem(f"internal error ({type(error).__name__}: {error}); see the terminal log")
            if outputs is None:
                return message
            return cast(Any, outputs)(message, *(gr.skip() for _ in output_names(outputs)[1:]))

        return wrapped  # type: ignore[return-value]

    return decorate


def file_path(value: Any) -> Path | None:
    """A gr.File value (a path string, or an object with .name) as a Path."""
    if value is None:
        return None
    return Path(value if isinstance(value, str) else getattr(value, "name", str(value)))


def file_paths(values: Any) -> list[Path]:
    if values is None:
        return []
    items = values if isinstance(values, list) else [values]
    return [path for path in (file_path(item) for item in items) if path is not None]


def progress_line(job: Job) -> str:
    if job.status == "queued":
        return f"job {job.id}: {job.status_line or 'queued'}"
    if job.status == "running" and job.cancel_requested:
        return f"job {job.id}: cancelling (it stops at its next frames)"
    if job.status == "running" and not job.frames_total:  # an image, or a video before its first frames
        return f"job {job.id}: working on the image" if is_image(job.target) else f"job {job.id}: starting"
    if job.status == "running":
        eta = f" · ETA {job.eta_s:.0f} s" if job.eta_s is not None else ""
        chunk = f" · chunk {job.chunk}/{job.chunks_total}" if job.chunks_total else ""
        return f"job {job.id}: {job.frames_done}/{job.frames_total} frames · {job.fps:.1f} fps{eta}{chunk}"
    if job.status == "failed":
        return f"job {job.id} failed: {job.last_error}"
    if job.status == "completed" and job.status_line and job.status_line != "completed":
        return f"job {job.id} {job.status_line}"  # e.g. a cancel that came too late
    return f"job {job.id} {job.status}"


def is_image(target: str) -> bool:
    return Path(target).suffix.lower() in IMAGE_SUFFIXES


def output_name(target: Path, outputs_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return outputs_dir / f"{target.stem}_swapped_{stamp}{target.suffix.lower()}"

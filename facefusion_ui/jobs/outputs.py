"""Output paths of queued jobs: two live jobs (queued or running) never write the same file.

A name the tool makes itself (``batch add --output-dir``) steps aside: ``clip_swapped.mp4`` taken by a
live job or by an existing file becomes ``clip_swapped-2.mp4``, ``-3``... An output the user chose
(``batch import``) is refused when a live job writes it or when the file exists, unless ``overwrite``.
The choice and the insert are one write transaction in the SQLite queue, so two ``batch add`` processes
never get the same name. The payload records whether the tool made the name and whether ``overwrite`` was
asked for, so that a job checks its output again when it starts (``output_at_start``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from facefusion_ui.errors import InputError, JobError

LiveOutputs = Mapping[str, str]
"""Output path (as stored in the payload) -> id of the live job writing it."""
OutputChooser = Callable[[LiveOutputs], str]


class OutputClaimer(Protocol):
    """A queue that adds a job under the output ``choose`` picks, given the live jobs' outputs."""

    def add_claiming(self, payload: dict[str, Any], priority: int, choose: OutputChooser) -> tuple[str, str]: ...


def numbered(path: Path, number: int) -> Path:
    return path if number < 2 else path.with_name(f"{path.stem}-{number}{path.suffix}")


def choose_output(wanted: Path, live: LiveOutputs, made: bool, overwrite: bool) -> Path:
    """The output for a new job wanting ``wanted``.

    ``made``: the tool made the name, so it steps aside (``-2``, ``-3``...) from live jobs' outputs and,
    unless ``overwrite``, from existing files. Otherwise the user chose it: refused when a live job writes
    it or the file exists, unless ``overwrite``."""
    if made:
        number = 1
        while str(numbered(wanted, number)) in live or (not overwrite and numbered(wanted, number).exists()):
            number += 1
        return numbered(wanted, number)
    if overwrite:
        return wanted
    if str(wanted) in live:
        raise JobError(
            f"output {wanted} is already the output of job {live[str(wanted)]} (queued or running): "
            "choose another output, or add --overwrite to let both write it"
        )
    if wanted.exists():
        raise JobError(
            f"output {wanted} exists (from an earlier run) and is not overwritten: "
            "choose another output, or add --overwrite to replace it"
        )
    return wanted


def claim_output(
    queue: OutputClaimer, payload: dict[str, Any], priority: int = 0, made: bool = False, overwrite: bool = False
) -> tuple[str, Path]:
    """Queue ``payload`` under the output ``choose_output`` gives; returns the job's id and its output.

    A ``JobError`` (exit 2) names the live job when a chosen output is taken."""
    wanted = Path(payload["output"])

    def choose(live: LiveOutputs) -> str:
        return str(choose_output(wanted, live, made, overwrite))

    job_id, output = queue.add_claiming({**payload, "output_made": made, "overwrite": overwrite}, priority, choose)
    return job_id, Path(output)


def output_at_start(payload: dict[str, Any]) -> tuple[Path, str | None]:
    """The output a queued job writes, checked again as it starts, and a line for its log when it is not
    the one queued. A file at that name now is not the job's (its own work is in its job folder until the
    end), and is kept: a name the tool made steps aside to the next free one, a name given explicitly fails
    the job (InputError), unless ``overwrite`` was asked for. Payloads queued without the record (older
    ones, or added by code) count as names given explicitly."""
    wanted = Path(payload["output"])
    if payload.get("overwrite") or not os.path.lexists(wanted):
        return wanted, None
    if not payload.get("output_made"):
        raise InputError(
            f"output {wanted} appeared after the job was queued and is kept: choose another output, "
            "or queue the job again with --overwrite to replace it"
        )
    chosen = choose_output(wanted, {}, made=True, overwrite=False)
    return chosen, f"{wanted.name} appeared after the job was queued and is kept: writing {chosen.name} instead"


def prepare_output_dir(folder: Path, option: str) -> None:
    """Create ``folder`` (parents too) and check that files can be written there; errors name ``option``."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create {option} {folder} ({error.strerror}): choose another {option}") from error
    if not folder.is_dir():
        raise InputError(f"{option} {folder} is not a folder: choose another {option}")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".facefusion_ui-write-test-"):
            pass
    except OSError as error:
        raise InputError(f"cannot write to {option} {folder} ({error.strerror}): choose another {option}") from error

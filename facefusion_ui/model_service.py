"""The models a person can choose, and their downloads in the background: what the page calls.

``ModelDownloads`` lists the catalog with each model's state (installed and verified, or its download
size), starts downloads on worker threads (a model with the models it requires), reports their progress
(bytes, total, speed, ETA), cancels and deletes. Downloads go through ``model_download.download_model``,
the command line's code path; a model is usable as soon as its file has its final name, without a
restart (``ModelRuntime`` looks for a missing file again on each use).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from facefusion_ui.errors import DownloadCancelled, FacefusionError, ModelError
from facefusion_ui.model_download import DownloadProgress, download_model
from facefusion_ui.models import ModelSpec, get_spec, load_manifest, model_files, model_state, models_dir
from facefusion_ui.types import ModelRole, ModelVerification

DownloadState = Literal["queued", "running", "done", "failed", "cancelled"]
MAX_PARALLEL_DOWNLOADS = 2


@dataclass(frozen=True)
class CatalogEntry:
    """One model as a dropdown shows it."""

    name: str
    role: ModelRole
    family: str | None
    description: str
    installed: bool
    verified: bool | None
    verification: ModelVerification
    bytes_on_disk: int | None
    download_size: int | None
    requires: tuple[str, ...]

    @property
    def label(self) -> str:
        """``name (installed)`` or ``name (download 554.3 MB)``."""
        if self.installed:
            return f"{self.name} (installed)"
        size = f" {self.download_size / 1e6:.1f} MB" if self.download_size else ""
        return f"{self.name} (download{size})"


@dataclass(frozen=True)
class DownloadStatus:
    name: str
    state: DownloadState
    done: int = 0
    total: int | None = None
    speed_bps: float = 0.0
    eta_s: float | None = None
    message: str = ""
    """The error line of a failed download, or where a finished one lies."""
    error: FacefusionError | None = None
    """What stopped a failed or cancelled download (the page says it with ``for_page``)."""
    ended_at: float | None = None
    """When it ended (``time.monotonic()``); none while it runs."""

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")


def required_closure(names: Iterable[str], manifest: Mapping[str, ModelSpec]) -> list[str]:
    """``names`` and every model they require, requirements first, each once."""
    ordered: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in ordered or name in trail:
            return
        for required in get_spec(name, manifest).requires:
            visit(required, (*trail, name))
        ordered.append(name)

    for name in names:
        visit(name, ())
    return ordered


class ModelDownloads:
    """Catalog and background downloads for one models folder (one object per server, passed down)."""

    def __init__(
        self,
        folder: Path | None = None,
        manifest: Mapping[str, ModelSpec] | None = None,
        max_parallel: int = MAX_PARALLEL_DOWNLOADS,
        retries: int = 3,
    ) -> None:
        self.folder = folder or models_dir()
        self.manifest = dict(manifest) if manifest is not None else load_manifest(folder=self.folder)
        self.retries = retries
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(max_parallel)
        self._status: dict[str, DownloadStatus] = {}
        """One entry per catalog model at most: the last download of each."""
        self._cancel: dict[str, threading.Event] = {}
        self._threads: dict[str, threading.Thread] = {}

    # catalog ---------------------------------------------------------------------------------------------
    def entry(self, name: str) -> CatalogEntry:
        spec = get_spec(name, self.manifest)
        state = model_state(spec, self.folder)
        return CatalogEntry(
            name=spec.name,
            role=spec.role,
            family=spec.family,
            description=spec.description,
            installed=state.installed,
            verified=state.verified,
            verification=spec.verification,
            bytes_on_disk=state.bytes_on_disk,
            download_size=spec.size,
            requires=spec.requires,
        )

    def catalog(self, role: ModelRole | None = None) -> list[CatalogEntry]:
        return [self.entry(name) for name, spec in self.manifest.items() if role is None or spec.role == role]

    def missing(self, names: Iterable[str]) -> list[str]:
        """The models of ``names`` and their requirements that are not installed and can be downloaded."""
        closure = required_closure(names, self.manifest)
        return [
            name
            for name in closure
            if self.manifest[name].kind == "onnx" and not model_state(self.manifest[name], self.folder).installed
        ]

    def usage(self) -> dict[str, int]:
        """Bytes on disk per model (model file, partial download and sidecars), models present only."""
        sizes = {
            name: sum(path.stat().st_size for path in model_files(spec, self.folder))
            for name, spec in self.manifest.items()
        }
        return {name: size for name, size in sizes.items() if size}

    # downloads -------------------------------------------------------------------------------------------
    def start(self, name: str) -> DownloadStatus:
        """Start downloading ``name`` in the background (nothing new when it is queued or running)."""
        spec = get_spec(name, self.manifest)
        if spec.kind != "onnx":
            raise ModelError(f"'{name}' ships inside the package {spec.package}: there is nothing to download")
        with self._lock:
            current = self._status.get(name)
            if current is not None and not current.finished:
                return current
            status = DownloadStatus(name, "queued", total=spec.size)
            self._status[name] = status
            self._cancel[name] = threading.Event()
            thread = threading.Thread(target=self._run, args=(spec,), name=f"download-{name}", daemon=True)
            self._threads[name] = thread
        thread.start()
        return status

    def start_missing(self, names: Sequence[str]) -> list[DownloadStatus]:
        """Start every model a job needs that is not installed (requirements included)."""
        return [self.start(name) for name in self.missing(names)]

    def status(self, name: str) -> DownloadStatus | None:
        with self._lock:
            return self._status.get(name)

    def statuses(self) -> dict[str, DownloadStatus]:
        with self._lock:
            return dict(self._status)

    def wait(self, name: str, timeout_s: float | None = None) -> DownloadStatus | None:
        """The status once the download of ``name`` ended (or the timeout passed)."""
        with self._lock:
            thread = self._threads.get(name)
        if thread is not None:
            thread.join(timeout_s)
        return self.status(name)

    def cancel(self, name: str) -> bool:
        """Ask a queued or running download to stop (its partial file is kept for a resume)."""
        with self._lock:
            status, event = self._status.get(name), self._cancel.get(name)
        if status is None or status.finished or event is None:
            return False
        event.set()
        return True

    def delete(self, name: str) -> int:
        """Delete a downloaded model's files; the bytes freed. Refused while it downloads."""
        spec = get_spec(name, self.manifest)
        if spec.kind != "onnx":
            raise ModelError(f"'{name}' ships inside the package {spec.package}: uninstall that package instead")
        current = self.status(name)
        if current is not None and not current.finished:
            raise ModelError(f"'{name}' is downloading: cancel the download before deleting it")
        freed = 0
        for path in model_files(spec, self.folder):
            freed += path.stat().st_size
            path.unlink(missing_ok=True)
        return freed

    def _run(self, spec: ModelSpec) -> None:
        event = self._cancel[spec.name]
        with self._slots:
            self._set(spec.name, state="running")
            try:
                path = download_model(spec, self.folder, retries=self.retries, progress=self._report, cancel=event)
            except DownloadCancelled as error:
                self._set(spec.name, state="cancelled", message=str(error), error=error, speed_bps=0.0, eta_s=None)
            except FacefusionError as error:
                self._set(spec.name, state="failed", message=str(error), error=error, speed_bps=0.0, eta_s=None)
            except Exception as error:  # a bug must still end the status, not leave it "running"
                self._set(spec.name, state="failed", message=f"{type(error).__name__}: {error}")
            else:
                size = path.stat().st_size
                self._set(spec.name, state="done", done=size, total=size, eta_s=0.0, message=str(path))

    def _report(self, progress: DownloadProgress) -> None:
        self._set(
            progress.name,
            done=progress.done,
            total=progress.total,
            speed_bps=progress.speed_bps,
            eta_s=progress.eta_s,
        )

    def _set(self, name: str, **changes: object) -> None:
        if changes.get("state") in ("done", "failed", "cancelled"):
            changes["ended_at"] = time.monotonic()
        elif "state" in changes:
            changes["ended_at"] = None
        with self._lock:
            self._status[name] = replace(self._status[name], **changes)  # type: ignore[arg-type]

"""Model downloads started from the page, on the catalog's download service (``model_service.py``, the
command line's code path): background threads, bytes done / total, speed and ETA, the error line of a
failed download, and delete. The page reads ``progress()`` on its timer; a downloaded model is usable at
once (no restart)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from facefusion_ui.errors import DownloadError, InputError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.model_service import DownloadStatus, ModelDownloads, required_closure
from facefusion_ui.models import ModelSpec, model_path, model_state
from facefusion_ui.ui.model_sizes import ModelSizes


def failure_line(status: DownloadStatus, instead: Sequence[str] = ()) -> str:
    """A failed download in one line, beside its Download button: what failed, why, what to do now
    (``instead``: models of the same role that need no download)."""
    name, error = status.name, status.error
    if not isinstance(error, DownloadError) or not error.why:
        return f"{name}: download failed: {error.for_page() if error else status.message}"
    amount = f"{error.kept / 1e6:.1f} MB" if error.kept >= 100_000 else f"{max(error.kept // 1000, 1)} kB"
    kept = f" ({amount} arrived and are kept: Download resumes)" if error.kept else ""
    online = "press Download again later (if it keeps failing, the address may be gone: report it)"
    todo = "connect to the internet, then press Download again" if error.offline else online
    others = f"; meanwhile {' or '.join(instead)} needs no download" if instead else ""
    return f"{name} was not downloaded: {error.why}{kept}. To do: {todo}{others}"


def status_line(status: DownloadStatus, instead: Sequence[str] = ()) -> str:
    """``gfpgan_1.4: 120.3 MB of 348.6 MB (35%), 4.1 MB/s, 56 s left`` and the like; a failure as
    ``failure_line`` says it."""
    name = status.name
    if status.state == "failed":
        return failure_line(status, instead)
    if status.state == "cancelled":
        return f"{name}: download cancelled (what arrived is kept: Download resumes it)"
    if status.state == "done":
        return f"{name}: downloaded and verified"
    if status.state == "queued":
        return f"{name}: waiting for another download to finish"
    line = f"{name}: {status.done / 1e6:.1f} MB"
    if status.total:
        line += f" of {status.total / 1e6:.1f} MB ({100 * status.done / status.total:.0f}%)"
    if status.speed_bps > 0:
        line += f", {status.speed_bps / 1e6:.1f} MB/s"
    if status.eta_s is not None and status.eta_s > 0:
        line += f", {status.eta_s:.0f} s left"
    return line


def moved(spec: ModelSpec, url: str) -> ModelSpec:
    """``spec`` downloaded from ``url``, its publisher's hash sidecar looked for beside it."""
    sidecar = f"{url.rpartition('/')[0]}/{spec.hash_url.rpartition('/')[2]}" if spec.hash_url else None
    return replace(spec, url=url, hash_url=sidecar)


BAR_CELLS = 20
ENDED_SHOWN_S = 60.0
"""An ended download (its failure, or that it is here) is shown this long, then no longer to new page loads."""


def progress_bar(status: DownloadStatus) -> str:
    """``▕██████░░░░░░░░░░░░░░▏`` for a download under way whose size is known; empty otherwise."""
    if status.finished or not status.total:
        return ""
    filled = min(BAR_CELLS, int(BAR_CELLS * status.done / status.total))
    return f"`▕{'█' * filled}{'░' * (BAR_CELLS - filled)}▏` "


def page_line(status: DownloadStatus, instead: Sequence[str] = ()) -> str:
    """One download as the page shows it: its bar, then ``status_line``."""
    return progress_bar(status) + status_line(status, instead)


@dataclass
class PageDownloads:
    runtime: ModelRuntime
    url_for: dict[str, str] = field(default_factory=dict)
    """Another address for a model (tests, mirrors); the catalog's otherwise."""
    sizes: ModelSizes = field(default_factory=ModelSizes, repr=False)
    shown_s: float = ENDED_SHOWN_S
    """How long an ended download stays in ``progress()`` (every page load would show it otherwise)."""
    _service: ModelDownloads | None = field(default=None, repr=False)

    def spec(self, name: str) -> ModelSpec:
        """``name`` as the runtime knows it, from the address it is downloaded from."""
        spec = self.runtime.spec(name)
        override = self.url_for.get(name)
        return moved(spec, override) if override else spec

    def _synced(self, name: str) -> ModelDownloads:
        """The service, on the runtime's folder, knowing ``name`` and what it requires as the runtime does now."""
        if self._service is None or self._service.folder != self.runtime.folder:
            self._service = ModelDownloads(self.runtime.folder, self.runtime.manifest)
        for each in required_closure([name], self.runtime.manifest):
            self._service.manifest[each] = self.spec(each)
        return self._service

    def start(self, name: str) -> None:
        """Begin downloading ``name`` in the background (nothing new if it already runs)."""
        if self.runtime.spec(name).kind != "onnx":
            raise InputError(f"{name} comes with the program: there is nothing to download")
        self._synced(name).start(name)

    def missing(self, names: Sequence[str]) -> list[str]:
        """The models of ``names`` and those they require that can be downloaded and are not installed."""
        folder = self.runtime.folder
        closure = required_closure([name for name in names if name in self.runtime.manifest], self.runtime.manifest)
        return [
            name
            for name in closure
            if self.runtime.spec(name).kind == "onnx" and not model_state(self.runtime.spec(name), folder).installed
        ]

    def start_missing(self, names: Sequence[str]) -> list[str]:
        """Start downloading every model of ``missing(names)``; their names."""
        needed = self.missing(names)
        for name in needed:
            self.start(name)
        return needed

    def size(self, name: str) -> int | None:
        """The download size of ``name``: the catalog's, else the server's (asked in the background)."""
        spec = self.spec(name)
        if spec.size or spec.kind != "onnx" or not spec.url:
            return spec.size
        return self.sizes.size(spec.url)

    def size_answered(self, name: str) -> bool:
        """Whether ``size(name)`` is final: the catalog gives it, or the server's answer (or its absence:
        no network) came back. False while the request is on its way."""
        spec = self.spec(name)
        if spec.size or spec.kind != "onnx" or not spec.url:
            return True
        return self.sizes.answered(spec.url)

    def instead(self, name: str) -> list[str]:
        """The models of ``name``'s role that come with the program (no download)."""
        role = self.runtime.spec(name).role
        return [spec.name for spec in self.runtime.manifest.values() if spec.role == role and spec.kind == "embedded"]

    def lines(self, statuses: Sequence[DownloadStatus] | None = None) -> str:
        """The downloads (``statuses``, by default all of them) as the page lists them, one line each."""
        shown = list(self.progress().values()) if statuses is None else statuses
        return "\n".join(f"- {page_line(status, self.instead(status.name))}" for status in shown)

    def progress(self) -> dict[str, DownloadStatus]:
        """The downloads under way, and those that ended in the last ``shown_s`` seconds."""
        statuses = self._service.statuses() if self._service is not None else {}
        now = time.monotonic()
        return {
            name: status
            for name, status in statuses.items()
            if status.ended_at is None or now - status.ended_at < self.shown_s
        }

    def wait(self, name: str, timeout_s: float) -> None:
        """Until the download of ``name`` ends or ``timeout_s`` passed."""
        if self._service is not None:
            self._service.wait(name, timeout_s)

    def running(self) -> bool:
        return any(not status.finished for status in self.progress().values())

    def delete(self, name: str) -> Path:
        """Remove ``name``'s weights and their records from the models folder."""
        spec = self.runtime.spec(name)
        if spec.kind != "onnx":
            raise InputError(f"{name} comes with the program: it cannot be deleted here")
        path = model_path(spec, self.runtime.folder)
        if path is None or not model_state(spec, self.runtime.folder).installed:
            raise InputError(f"{name} is not downloaded")
        status = self.progress().get(name)
        if status is not None and not status.finished:
            raise InputError(f"{name} is downloading: wait for it to finish")
        self._synced(name).delete(name)
        self.runtime.release_models([name])
        return path

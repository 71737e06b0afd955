"""Model downloads started from the page: one thread per model (at most one per manifest entry, so the
table stays bounded), with bytes done / total and the last error, read by the page's timer. Deleting
removes the weights and their digest record. Built on ``models.download_model``; a model catalog service
with the same three verbs (start, progress, delete) can take its place."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from facefusion_ui.errors import FacefusionError, InputError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.models import download_model, model_path, model_state


@dataclass
class DownloadState:
    done: int = 0
    total: int | None = None
    running: bool = True
    error: str | None = None

    def line(self, name: str) -> str:
        if self.error:
            return f"{name}: download failed: {self.error}"
        if not self.running:
            return f"{name}: downloaded and verified"
        size = f" of {self.total / 1e6:.1f} MB" if self.total else ""
        percent = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        return f"{name}: {self.done / 1e6:.1f} MB{size}{percent}"


@dataclass
class ModelDownloads:
    runtime: ModelRuntime
    url_for: dict[str, str] = field(default_factory=dict)
    """Another address for a model (tests, mirrors); the manifest's otherwise."""
    _states: dict[str, DownloadState] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, name: str) -> None:
        """Begin downloading ``name`` in the background (nothing if it already runs)."""
        spec = self.runtime.spec(name)
        if spec.kind != "onnx":
            raise InputError(f"{name} comes with the program: there is nothing to download")
        with self._lock:
            current = self._states.get(name)
            if current is not None and current.running:
                return
            state = self._states[name] = DownloadState(total=spec.size)
        threading.Thread(target=self._run, args=(name, state), name=f"download-{name}", daemon=True).start()

    def _run(self, name: str, state: DownloadState) -> None:
        def progress(done: int, total: int | None) -> None:
            state.done, state.total = done, total or state.total

        try:
            download_model(self.runtime.spec(name), self.runtime.folder, url=self.url_for.get(name), progress=progress)
        except FacefusionError as error:
            state.error = str(error)
        except OSError as error:
            state.error = f"{error.strerror or error}"
        finally:
            state.running = False

    def progress(self) -> dict[str, DownloadState]:
        with self._lock:
            return dict(self._states)

    def running(self) -> bool:
        return any(state.running for state in self.progress().values())

    def delete(self, name: str) -> Path:
        """Remove ``name``'s weights (and its digest record) from the models folder."""
        spec = self.runtime.spec(name)
        if spec.kind != "onnx":
            raise InputError(f"{name} comes with the program: it cannot be deleted here")
        if name in self.progress() and self.progress()[name].running:
            raise InputError(f"{name} is downloading: wait for it to finish")
        path = model_path(spec, self.runtime.folder)
        if path is None or not model_state(spec, self.runtime.folder).installed:
            raise InputError(f"{name} is not downloaded")
        path.unlink()
        path.with_name(path.name + ".sha256").unlink(missing_ok=True)
        self.runtime.release_all()
        with self._lock:
            self._states.pop(name, None)
        return path

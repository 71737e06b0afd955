"""What the page works with: settings (saved in the data folder), the job queue, and a worker thread
that runs queued jobs in this process with warm models. The UI itself never touches a model or ffmpeg:
it queues jobs and reads their progress (previews go through the same pipeline as jobs)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from facefusion_ui.config import build_state, config_path, read_config, save_config
from facefusion_ui.faces.face_map import FaceMapEntry
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.jobs.outputs import claim_output
from facefusion_ui.jobs.payload import make_payload, validate_job
from facefusion_ui.jobs.sqlite_backend import SqliteBackend
from facefusion_ui.jobs.store import Job, JobStore
from facefusion_ui.jobs.worker import Worker, WorkerOptions
from facefusion_ui.paths import home_dir
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings, StateManager
from facefusion_ui.ui.downloads import PageDownloads

Origin = Literal["single", "batch", "api"]
"""The part of the page that queued a job (``payload["origin"]``); jobs from the command line have none."""


@dataclass
class UiServices:
    state: StateManager
    store: JobStore
    runtimes: WarmRuntimes
    """Warm models: the page's worker runs each job on its own execution settings."""
    runtime: ModelRuntime
    """The page's own runtime (on its settings' pool): model states, source analysis and previews."""
    registry: ProcessorRegistry
    outputs_dir: Path
    uploads_dir: Path
    downloads: PageDownloads
    worker: Worker | None = None
    notice: str = ""
    """A line the page shows above its tabs (e.g. that the share link could not be made)."""
    _thread: threading.Thread | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls,
        home: Path | None = None,
        preset: str | None = None,
        overrides: dict[str, Any] | None = None,
        start_worker: bool = True,
    ) -> UiServices:
        home = home or home_dir()
        state = build_state(read_config(config_path(home)), preset=preset)
        if overrides:
            state.update(overrides)
        settings = state.snapshot()
        runtimes = WarmRuntimes()
        runtime = runtimes.runtime(settings)
        services = cls(
            state=state,
            store=JobStore(home / "jobs.db"),
            runtimes=runtimes,
            runtime=runtime,
            registry=ProcessorRegistry.discover(),
            outputs_dir=home / "outputs",
            uploads_dir=home / "ui-uploads",
            downloads=PageDownloads(runtime),
        )
        services.outputs_dir.mkdir(parents=True, exist_ok=True)
        services.uploads_dir.mkdir(parents=True, exist_ok=True)
        if start_worker:
            services.start_worker(settings)
        return services

    def start_worker(self, settings: Settings) -> None:
        options = WorkerOptions(
            concurrency=settings.max_concurrent_jobs,
            memory_threshold_mb=settings.memory_threshold_mb,
            poll_s=0.3,
            heartbeat_s=2.0,
            lease_s=15.0,
        )
        self.worker = Worker(self.store, self.runtimes, options, registry=self.registry)
        self._thread = threading.Thread(target=self.worker.run, name="ui-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.downloads.sizes.close()
        if self.worker is not None:
            self.worker.stop.set()
            for job_id in list(self.worker.running):
                self.store.release(job_id, self.worker.owner)
        if self._thread is not None:
            self._thread.join(timeout=30)

    def settings(self) -> Settings:
        return self.state.snapshot()

    def save_settings(self, values: dict[str, Any]) -> Settings:
        """Validate and apply edits, then persist them: jobs queued afterwards get them, queued ones not."""
        self.state.update(values)
        save_config(self.state.snapshot(), config_path(self.store.path.parent))
        return self.state.snapshot()

    def enqueue(
        self,
        sources: list[Path],
        target: Path,
        output: Path,
        settings: Settings,
        priority: int = 0,
        origin: Origin = "api",
        face_map: Sequence[FaceMapEntry] = (),
    ) -> int:
        """Validate (clear error on bad input) and queue one job with a frozen settings snapshot. The page
        names its outputs itself, so one taken by a live job or an existing file steps aside (``-2``...).
        ``origin``: the tab that queued it, which shows its output."""
        payload = {**make_payload(sources, target, output, settings, face_map), "origin": origin}
        validate_job(payload, self.runtime)
        job_id, _ = claim_output(SqliteBackend(self.store), payload, priority, made=True)
        return int(job_id)

    def job(self, job_id: int) -> Job:
        return self.store.get(job_id)

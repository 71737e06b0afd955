"""Warm models for a process that runs many jobs (the batch worker, the page's worker, an RQ worker), each
job on the execution settings it was queued with.

A job's providers, device and intra-op threads choose a session pool (``ExecutionKey``); at most ``limit``
pools stay warm, the least recently used idle one released first, so a worker started plain runs a
lightweight (FP16) or CUDA job as that job asked without loading every model again for each job. Every
pool shares the process's embedded models (dlib and mediapipe run on the CPU whatever a job asks) and its
source cache. Each job gets its own ``ModelRuntime`` over those shared parts: its FP16 choice, the
precisions it really ran and its out-of-memory fallback to a CPU pool are its own, and it can free only
what no other running job holds (``RuntimeUsers``).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.faces.runtime import EmbeddedModels, ModelRuntime, RuntimeUsers
from facefusion_ui.faces.source_cache import LruTtlCache
from facefusion_ui.inference import ProviderCheck, SessionPool
from facefusion_ui.models import load_manifest, models_dir
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import ExecutionProvider

DEFAULT_WARM_POOLS = 2
"""Session pools kept warm: the worker's own settings and one other set that jobs ask for."""


@dataclass(frozen=True)
class ExecutionKey:
    """What makes two jobs' ONNX sessions different: providers, device, intra-op threads."""

    providers: tuple[ExecutionProvider, ...]
    device_id: int
    threads: int

    @classmethod
    def of(cls, settings: Settings) -> ExecutionKey:
        return cls(tuple(settings.execution_providers), settings.execution_device_id, settings.execution_threads)

    def pool(self) -> SessionPool:
        return SessionPool(self.providers, self.device_id, self.threads)


class WarmRuntimes:
    """``with runtimes.lease(job_settings) as runtime:`` runs one job on its own execution settings."""

    def __init__(self, limit: int = DEFAULT_WARM_POOLS, folder: Path | None = None) -> None:
        self.limit = max(1, limit)
        self.folder = folder or models_dir()
        self.manifest = load_manifest(folder=self.folder)
        self.embedded = EmbeddedModels()
        self.sources: LruTtlCache[Any, Any] = LruTtlCache()
        self.users = RuntimeUsers()
        self.pools_released = 0
        """Pools released because more than ``limit`` were warm."""
        self._pools: OrderedDict[ExecutionKey, SessionPool] = OrderedDict()
        self._checked: dict[ExecutionProvider, ProviderCheck] = {}
        """Providers already checked for every job (a real session each: once per process)."""
        self._lock = threading.Lock()

    def runtime(self, settings: Settings) -> ModelRuntime:
        """A runtime on ``settings``' pool (made warm) for work outside a job, such as the page's previews:
        it holds nothing, so a job may free its models."""
        with self._lock:
            pool = self._pool_for(ExecutionKey.of(settings))
        return self._view(pool, settings)

    @contextlib.contextmanager
    def lease(self, settings: Settings) -> Iterator[ModelRuntime]:
        """A runtime for one job on ``settings``' providers, device, threads and FP16 mode; its pool and the
        embedded models are not released while the job holds them."""
        key = ExecutionKey.of(settings)
        with self._lock:
            pool = self._pool_for(key)
            self.users.hold(pool)
        try:
            yield self._view(pool, settings, holding=True)
        finally:
            self.users.drop(pool)
            with self._lock:
                self._release_surplus()

    def warm_keys(self) -> list[ExecutionKey]:
        """The warm pools' keys, least recently used first."""
        with self._lock:
            return list(self._pools)

    def _pool_for(self, key: ExecutionKey) -> SessionPool:
        pool = self._pools.pop(key, None) or key.pool()
        self._pools[key] = pool  # the most recently used last
        self._release_surplus()
        return pool

    def _release_surplus(self) -> None:
        """Drop the least recently used idle pools beyond ``limit`` (a pool a job holds stays, and so
        does the one just asked for)."""
        for key in list(self._pools)[:-1]:
            if len(self._pools) <= self.limit:
                return
            pool = self._pools[key]
            if self.users.holders(pool) == 0:
                pool.release_all()
                del self._pools[key]
                self.pools_released += 1

    def _view(self, pool: SessionPool, settings: Settings, holding: bool = False) -> ModelRuntime:
        return ModelRuntime(
            self.manifest,
            self.folder,
            pool,
            self.embedded,
            fp16_mode=settings.fp16,
            sources=self.sources,
            users=self.users,
            holding=holding,
            _checked=self._checked,
        )

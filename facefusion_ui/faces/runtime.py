"""The models a job runs on: ONNX sessions (SessionPool) and the embedded dlib/mediapipe models, loaded on
first use and released on demand. A ``ModelRuntime`` is owned by whoever runs jobs (CLI command, UI, queue
worker) and passed down explicitly; nothing here is a module-level global. A process that runs many jobs
keeps its runtimes warm in ``faces/warm_runtimes.py``, where jobs share the parts they have in common:
``RuntimeUsers`` counts who holds which part, so that nothing is released under a running job.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.errors import DependencyError, ModelError
from facefusion_ui.faces.detector_dlib import load_hog_detector
from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.faces.mesh_model import MeshModel
from facefusion_ui.faces.source_cache import LruTtlCache
from facefusion_ui.inference import (
    ProviderCheck,
    SessionPool,
    captured_native_stderr,
    check_provider,
    fallback_message,
    wants_fp16,
)
from facefusion_ui.models import ModelSpec, get_spec, load_manifest, models_dir, require_model
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import ExecutionProvider, Fp16Mode

BLAZEFACE_MIN_CONFIDENCE = 0.2
"""mediapipe fixes the threshold when the graph is built; we keep it low and filter by the setting."""
POOLED_MODELS = frozenset({"dlib_hog"})
"""Models kept as a pool of instances, one per thread using it at the same moment: dlib's HOG detector is
not thread-safe but releases the GIL, so concurrent jobs detect in parallel instead of queueing on a lock.
Instances are reused across threads and jobs (building one takes ~0.5 s); the pool never holds more
instances than threads ever used the model at once."""


def _load_embedded(spec: ModelSpec) -> Any:
    os.environ.setdefault("GLOG_minloglevel", "2")  # mediapipe's C++ start-up chatter
    # mediapipe 0.10.14 calls a protobuf API that protobuf 4 deprecates on every graph run
    warnings.filterwarnings("ignore", message="SymbolDatabase.GetPrototype", category=UserWarning)
    try:
        if spec.package == "mediapipe":
            import_mediapipe()
        if spec.name == "dlib_hog":
            return load_hog_detector(models_dir())
        if spec.name in ("dlib_68", "dlib_5"):
            import dlib

            return dlib.shape_predictor(str(require_model(spec)))
        if spec.name == "dlib_resnet":
            import dlib

            return dlib.face_recognition_model_v1(str(require_model(spec)))
        if spec.name == "mediapipe_blazeface":
            from mediapipe.python.solutions import face_detection

            return face_detection.FaceDetection(model_selection=1, min_detection_confidence=BLAZEFACE_MIN_CONFIDENCE)
        if spec.name in ("mediapipe_face_mesh", "mesh_warp"):
            # the embedded swapper's own mesh has the irises too (refined landmarks, 478 points: its gaze)
            return MeshModel(with_attention=spec.name == "mesh_warp")
        if spec.name == "mediapipe_hands":
            from mediapipe.python.solutions import hands

            return hands.Hands(static_image_mode=True, max_num_hands=2, model_complexity=0)
        if spec.name == "mediapipe_selfie_segmentation":
            from mediapipe.python.solutions import selfie_segmentation

            return selfie_segmentation.SelfieSegmentation(model_selection=0)
    except ImportError as error:
        raise DependencyError(
            f"the package for '{spec.name}' ({spec.package}) cannot be imported ({error}): "
            "run 'python -m facefusion_ui.installer'"
        ) from error
    raise ModelError(f"'{spec.name}' is not an embedded model")


NATIVE_CHATTER = re.compile(
    r"(INFO: Created TensorFlow Lite |WARNING: All log messages before absl::InitializeLog"
    r"|[IWEF]\d{4} [\d:.]+ +\d+ [\w.-]+:\d+\] )"
)
"""The start-up lines of TFLite and absl (glog's format: ``W0000 00:00:17.5 123 file.cc:114] ...``)."""


def _load_quietly(spec: ModelSpec) -> Any:
    """Build a mediapipe graph and run it once with native stderr captured: TFLite and absl print
    start-up lines (XNNPACK delegate, feedback manager) that would otherwise reach the user's terminal.
    Building is inside the capture too: the graph starts its calculators on its own threads as it is
    built, and on a busy machine a delegate could be created before the warm-up run began. The capture
    takes the whole process's stderr: what other threads wrote meanwhile (a log line of the job's
    planning, an error) is written out after it, the native start-up lines left out."""
    with captured_native_stderr() as lines:
        graph = _load_embedded(spec)
        if isinstance(graph, MeshModel):
            graph.warm_up()
        else:
            graph.process(np.zeros((64, 64, 3), dtype=np.uint8))
    others = [line for line in lines if not NATIVE_CHATTER.match(line)]
    if others:  # what other threads wrote meanwhile (a log line, an error): late, not lost
        sys.stderr.write("".join(f"{line}\n" for line in others))
    return graph


class EmbeddedModels:
    """dlib and mediapipe objects by manifest name. Neither is thread-safe (dlib's HOG detector releases
    the GIL and shares scratch buffers; a mediapipe graph is one stateful pipeline), so each model is used
    only inside ``using(name)``, which holds that model's own lock (or, for ``POOLED_MODELS``, lends the
    thread an instance nobody else is using): threads run in parallel wherever they are not in the same
    model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, Any] = {}
        self._use_locks: dict[str, threading.Lock] = {}
        self._load_locks: dict[str, threading.Lock] = {}
        self.loads: Counter[str] = Counter()
        """First loads per model (a warm process loads each model once)."""
        self.copies: Counter[str] = Counter()
        """Further instances of pooled models, built when threads used one at the same moment."""
        self.releases = 0
        self._idle: dict[str, list[Any]] = {}
        self._generation = 0
        """Bumped by release_all: instances lent before a release are not taken back."""

    def get(self, spec: ModelSpec) -> Any:
        """The model (loaded on first use). For a pooled model this warms the pool; run it in ``using``."""
        if spec.name in POOLED_MODELS:
            with self.using(spec) as model:
                return model
        with self._lock:
            model = self._models.get(spec.name)
            loading = self._load_locks.setdefault(spec.name, threading.Lock())
        if model is not None:
            return model
        with loading:  # one load per model; the other models stay usable meanwhile (a source photo's
            with self._lock:  # landmarks load while a video's first frames are probed)
                model = self._models.get(spec.name)
            if model is None:
                model = _load_quietly(spec) if spec.package == "mediapipe" else _load_embedded(spec)
                with self._lock:
                    self._models[spec.name] = model
                    self.loads[spec.name] += 1
            return model

    def lock_for(self, name: str) -> threading.Lock:
        with self._lock:
            return self._use_locks.setdefault(name, threading.Lock())

    @contextlib.contextmanager
    def using(self, spec: ModelSpec) -> Iterator[Any]:
        if spec.name in POOLED_MODELS:
            model, generation = self._lend(spec)
            try:
                yield model
            finally:
                with self._lock:
                    if generation == self._generation:
                        self._idle.setdefault(spec.name, []).append(model)
            return
        model = self.get(spec)
        with self.lock_for(spec.name):
            yield model

    def _lend(self, spec: ModelSpec) -> tuple[Any, int]:
        """An idle instance of a pooled model, or a new one when all are in use."""
        with self._lock:
            idle = self._idle.get(spec.name)
            if idle:
                return idle.pop(), self._generation
            generation = self._generation
        model = _load_embedded(spec)  # outside the lock: other models stay usable meanwhile
        with self._lock:
            if spec.name in self._models:
                self.copies[spec.name] += 1
            else:
                self._models[spec.name] = model
                self.loads[spec.name] += 1
        return model, generation

    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._models)

    def release_all(self) -> int:
        with self._lock:
            count = len(self._models)
            for model in self._models.values():
                close = getattr(model, "close", None)  # mediapipe graphs hold native resources
                if callable(close):
                    close()
            self._models.clear()
            self._idle.clear()
            self._generation += 1
            self.releases += count
            return count


class RuntimeUsers:
    """How many running jobs hold each session pool, and how many hold any runtime sharing these embedded
    models. A job that wants models freed (out of memory, ``--release-models``) frees only what it holds
    alone; ``alone`` keeps new holders out while it decides and frees."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._pools: Counter[int] = Counter()
        self._total = 0

    def hold(self, pool: SessionPool) -> None:
        with self._lock:
            self._pools[id(pool)] += 1
            self._total += 1

    def drop(self, pool: SessionPool) -> None:
        with self._lock:
            self._pools[id(pool)] -= 1
            self._total -= 1
            if self._pools[id(pool)] <= 0:
                del self._pools[id(pool)]

    def holders(self, pool: SessionPool) -> int:
        with self._lock:
            return self._pools[id(pool)]

    @contextlib.contextmanager
    def alone(self, pool: SessionPool, holding: bool) -> Iterator[tuple[bool, bool]]:
        """(no other job holds ``pool``, no other job holds any runtime), for a caller that holds ``pool``
        itself or not; new holders wait meanwhile."""
        own = 1 if holding else 0
        with self._lock:
            yield self._pools[id(pool)] <= own, self._total <= own


@dataclass
class ModelRuntime:
    manifest: dict[str, ModelSpec]
    folder: Path
    sessions: SessionPool
    embedded: EmbeddedModels = field(default_factory=EmbeddedModels)
    fp16_mode: Fp16Mode = "auto"
    sources: LruTtlCache[Any, Any] = field(default_factory=LruTtlCache)
    """Analysed source photos, by content hash: see ``faces.source.load_sources``."""
    users: RuntimeUsers = field(default_factory=RuntimeUsers)
    """The jobs holding this runtime's parts now (shared with the other runtimes of ``WarmRuntimes``)."""
    holding: bool = False
    """Whether this runtime's job is one of ``users`` (a leased runtime) or outside them (a preview)."""
    _fp16: bool | None = None
    _resolved: dict[str, tuple[ModelSpec, Path]] = field(default_factory=dict)
    _precisions: dict[str, str] = field(default_factory=dict)
    """The ONNX models this runtime handed out sessions of, with their precision ("fp16", "fp32")."""
    _checked: dict[ExecutionProvider, ProviderCheck] = field(default_factory=dict)
    """Providers already checked by ``provider_fallbacks`` (shared by the runtimes of ``WarmRuntimes``)."""

    @classmethod
    def create(cls, settings: Settings, folder: Path | None = None) -> ModelRuntime:
        folder = folder or models_dir()
        pool = SessionPool(settings.execution_providers, settings.execution_device_id, settings.execution_threads)
        return cls(load_manifest(folder=folder), folder, pool, fp16_mode=settings.fp16)

    def spec(self, name: str) -> ModelSpec:
        return get_spec(name, self.manifest)

    def use_fp16(self) -> bool:
        if self._fp16 is None:
            self._fp16 = wants_fp16(self.fp16_mode, self.sessions.providers, self._provider_usable)
        return self._fp16

    def _provider_usable(self, provider: ExecutionProvider) -> bool:
        return self._provider_check(provider).usable

    def _provider_check(self, provider: ExecutionProvider) -> ProviderCheck:
        """Whether ``provider`` really runs here, checked once per process (a real session each)."""
        check = self._checked.get(provider)
        if check is None:
            check = self._checked[provider] = check_provider(provider, self.sessions.device_id)
        return check

    def resolve(self, name: str) -> ModelSpec:
        """The spec to load for ``name``: its FP16 variant when FP16 applies and that variant is installed."""
        spec = self.spec(name)
        if spec.fp16_variant and self.use_fp16():
            variant = self.manifest.get(spec.fp16_variant)
            if variant is not None and (self.folder / str(variant.file)).exists():
                return variant
        return spec

    def onnx_session(self, name: str) -> tuple[ModelSpec, Any]:
        """The session of model ``name`` (its FP16 variant where that applies). Called per face on every
        frame, so the file checks happen once, until the next ``release_all``."""
        resolved = self._resolved.get(name)
        if resolved is None:
            spec = self.resolve(name)
            resolved = self._resolved[name] = (spec, require_model(spec, self.folder))
        spec, path = resolved
        precision = "fp16" if spec.name.endswith("_fp16") else "fp32"
        self._precisions[spec.name] = precision
        return spec, self.sessions.get(spec.name, path, precision)

    def embedded_model(self, name: str) -> Any:
        """The loaded model, for callers that manage thread safety themselves (prefer ``using``)."""
        return self.embedded.get(self.spec(name))

    @contextlib.contextmanager
    def using(self, name: str) -> Iterator[Any]:
        """An embedded model, held exclusively by this thread for the ``with`` block."""
        with self.embedded.using(self.spec(name)) as model:
            yield model

    def provider_fallbacks(self) -> list[str]:
        """Why each provider asked for (but the CPU) cannot run here, in one line each; every provider is
        checked once per process. The embedded models never ask onnxruntime, so without this a CUDA
        request would go unanswered."""
        checks = [self._provider_check(provider) for provider in self.sessions.providers if provider != "cpu"]
        return [fallback_message(check.requested, check.reason) for check in checks if not check.usable]

    def warn_unusable_providers(self) -> None:
        """Say once on stderr (and in the pool's notices) when a provider asked for cannot run here."""
        for message in self.provider_fallbacks():
            self.sessions.warn_once(message)

    def providers_used(self) -> list[str]:
        """The providers that really ran models in this process: those the ONNX sessions got, and the
        CPU for the embedded models (dlib, mediapipe) or when nothing else ran."""
        used: list[str] = [name for name in self.sessions.providers if name in self.sessions.used_providers]
        if self.embedded.loads or not used:
            used = [*(name for name in used if name != "cpu"), "cpu"]
        return used

    def precision(self) -> str:
        """The precision that ran: "fp16" when FP16 variants ran (for the models that have one; the others
        stay FP32), else "fp32" (the embedded models always run in FP32)."""
        return "fp16" if "fp16" in self._precisions.values() else "fp32"

    def onnx_models_used(self) -> dict[str, str]:
        """The ONNX models that ran, each with its precision."""
        return dict(self._precisions)

    def release_all(self) -> None:
        """Free every model now, whoever uses it; the source cache stays (it is small and saves a
        recognizer run per job). A running job frees through ``release_models`` instead."""
        self.sessions.release_all()
        self.embedded.release_all()
        self._resolved.clear()

    def release_models(self, names: Collection[str] | None = None) -> None:
        """Free the models (all, or the ONNX models ``names``) that no other running job holds: the
        sessions when no other job uses this session pool, the embedded models when no other job runs at
        all. They reload on next use."""
        with self.users.alone(self.sessions, self.holding) as (pool_alone, all_alone):
            if pool_alone:
                for name in names if names is not None else self.sessions.loaded():
                    self.sessions.release(name)
            if all_alone and names is None:
                self.embedded.release_all()
        self._resolved.clear()

    def stats(self) -> dict[str, Any]:
        return {
            "onnx_loads": self.sessions.stats.loads,
            "onnx_releases": self.sessions.stats.releases,
            "embedded_loads": dict(self.embedded.loads),
            "embedded_copies": dict(self.embedded.copies),
            "embedded_releases": self.embedded.releases,
            "notices": list(self.sessions.notices),
            "source_cache": self.sources.stats.to_json(),
        }

"""The models a worker process keeps warm: ONNX sessions (SessionPool) and the embedded dlib/mediapipe
models, loaded on first use, shared by every job, released on demand. One object, owned by whoever runs
jobs (CLI command, UI, queue worker), passed down explicitly; nothing here is a module-level global.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.errors import DependencyError, ModelError
from facefusion_ui.faces.mesh_model import MeshModel
from facefusion_ui.faces.source_cache import LruTtlCache
from facefusion_ui.inference import SessionPool, captured_native_stderr, check_provider, fallback_message, wants_fp16
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
        if spec.name == "dlib_hog":
            import dlib

            return dlib.get_frontal_face_detector()
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


def _load_quietly(spec: ModelSpec) -> Any:
    """Build a mediapipe graph and run it once with native stderr captured: TFLite and absl print
    start-up lines (XNNPACK delegate, feedback manager) that would otherwise reach the user's terminal.
    Building is inside the capture too: the graph starts its calculators on its own threads as it is
    built, and on a busy machine a delegate could be created before the warm-up run began."""
    with captured_native_stderr():
        graph = _load_embedded(spec)
        if isinstance(graph, MeshModel):
            graph.warm_up()
        else:
            graph.process(np.zeros((64, 64, 3), dtype=np.uint8))
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
            if model is None:
                model = _load_quietly(spec) if spec.package == "mediapipe" else _load_embedded(spec)
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


@dataclass
class ModelRuntime:
    manifest: dict[str, ModelSpec]
    folder: Path
    sessions: SessionPool
    embedded: EmbeddedModels = field(default_factory=EmbeddedModels)
    fp16_mode: Fp16Mode = "auto"
    sources: LruTtlCache[Any, Any] = field(default_factory=LruTtlCache)
    """Analysed source photos, by content hash: see ``faces.source.load_sources``."""
    _fp16: bool | None = None
    _resolved: dict[str, tuple[ModelSpec, Path]] = field(default_factory=dict)
    _checked: set[ExecutionProvider] = field(default_factory=set)
    """Providers already checked by ``warn_unusable_providers`` (a real session each: once per process)."""

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

    @staticmethod
    def _provider_usable(provider: ExecutionProvider) -> bool:
        return check_provider(provider).usable

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
        return spec, self.sessions.get(spec.name, path, precision)

    def embedded_model(self, name: str) -> Any:
        """The loaded model, for callers that manage thread safety themselves (prefer ``using``)."""
        return self.embedded.get(self.spec(name))

    @contextlib.contextmanager
    def using(self, name: str) -> Iterator[Any]:
        """An embedded model, held exclusively by this thread for the ``with`` block."""
        with self.embedded.using(self.spec(name)) as model:
            yield model

    def warn_unusable_providers(self) -> None:
        """Say once on stderr (and in the pool's notices) when a provider asked for cannot run here: the
        embedded models never ask onnxruntime, so without this a CUDA request would go unanswered."""
        for provider in self.sessions.providers:
            if provider == "cpu" or provider in self._checked:
                continue
            self._checked.add(provider)
            check = check_provider(provider, self.sessions.device_id)
            if not check.usable:
                self.sessions.warn_once(fallback_message(provider, check.reason))

    def providers_used(self) -> list[str]:
        """The providers that really ran models in this process: those the ONNX sessions got, and the
        CPU for the embedded models (dlib, mediapipe) or when nothing else ran."""
        used: list[str] = [name for name in self.sessions.providers if name in self.sessions.used_providers]
        if self.embedded.loads or not used:
            used = [*(name for name in used if name != "cpu"), "cpu"]
        return used

    def release_all(self) -> None:
        """Free every model; the source cache stays (it is small and saves a recognizer run per job)."""
        self.sessions.release_all()
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

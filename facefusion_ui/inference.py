"""ONNX Runtime: execution providers, and whether the one asked for is really used.

onnxruntime-gpu lists CUDAExecutionProvider even on a machine without a GPU; when the CUDA libraries
cannot be loaded it logs an error and silently runs on the CPU. We read ``session.get_providers()``
after creating a session and tell the user in plain words.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.errors import DependencyError, ModelError, Remedy
from facefusion_ui.types import ONNX_PROVIDER_NAMES, ExecutionProvider

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProviderCheck:
    requested: ExecutionProvider
    usable: bool
    reason: str


def onnxruntime_module() -> Any:
    try:
        import onnxruntime
    except ImportError as error:
        raise DependencyError(
            "onnxruntime is not installed or broken: run 'python -m facefusion_ui.installer'"
        ) from error
    return onnxruntime


def available_providers() -> list[str]:
    return list(onnxruntime_module().get_available_providers())


def onnx_provider_list(requested: Sequence[ExecutionProvider], device_id: int = 0) -> list[Any]:
    """The providers argument for ``InferenceSession``: requested ones that are built in, CPU last."""
    built_in = set(available_providers())
    providers: list[Any] = []
    for name in requested:
        onnx_name = ONNX_PROVIDER_NAMES[name]
        if onnx_name not in built_in or onnx_name == "CPUExecutionProvider":
            continue
        if name in ("cuda", "tensorrt", "rocm", "directml"):
            providers.append((onnx_name, {"device_id": device_id}))
        else:
            providers.append(onnx_name)
    providers.append("CPUExecutionProvider")
    return providers


def fallback_message(requested: ExecutionProvider, reason: str) -> str:
    hint = {
        "cuda": "install an NVIDIA driver and the CUDA and cuDNN runtime libraries this onnxruntime-gpu "
        "build was made for, or choose --execution-providers cpu",
    }.get(requested, "check the provider's installation, or choose --execution-providers cpu")
    return f"{requested.upper()} requested but not usable: running on CPU because {reason}; {hint}"


STDERR_CAPTURE = threading.RLock()
"""One thread's captures of file descriptor 2 at a time, process-wide as the descriptor is: two threads
loading models at once would each save what the other put there, and the later to finish would leave
stderr pointing at the other's deleted file (every later error line lost). Nested captures of one thread
undo in order and need no lock."""


@contextlib.contextmanager
def captured_native_stderr() -> Iterator[list[str]]:
    """Capture what native code writes to file descriptor 2 (onnxruntime logs there, not to Python); a
    capture on another thread waits for this one (``STDERR_CAPTURE``)."""
    lines: list[str] = []
    with STDERR_CAPTURE, tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(sink.read().decode("utf-8", "replace").splitlines())


def explain_provider_failure(log_lines: Sequence[str]) -> str:
    """The most telling line of onnxruntime's log, shortened (e.g. the library it could not load)."""
    for line in log_lines:
        match = re.search(r"(lib[\w.\-]+\.so[\w.]*|[\w.\-]+\.dll): cannot open shared object file", line)
        if match:
            return f"the library {match.group(1)} was not found"
    for line in log_lines:
        if "error" in line.lower():
            return re.sub(r"^.*?\] ", "", line).strip()[:300]
    return "onnxruntime could not initialise it"


def _field(number: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint (``int``) or length-delimited (``bytes``); all values here are < 128."""
    if isinstance(payload, int):
        return bytes((number << 3, payload))
    return bytes((number << 3 | 2, len(payload))) + payload


def _float_vector_info(name: bytes) -> bytes:
    """ONNX ``ValueInfoProto``: ``name``, a float tensor of shape [1]."""
    shape = _field(2, _field(1, _field(1, 1)))  # TensorShapeProto.dim[0].dim_value = 1
    return _field(1, name) + _field(2, _field(1, _field(1, 1) + shape))  # type.tensor_type: FLOAT, shape


def probe_model_bytes() -> bytes:
    """A one-node ONNX model (Identity, opset 13, IR 8) to try a provider with, serialised here rather
    than with the ``onnx`` package, whose import alone takes a second (``--version`` and ``doctor`` use
    it); ``tests/test_inference_probe.py`` checks the bytes are what ``onnx.helper`` makes."""
    node = _field(1, b"x") + _field(2, b"y") + _field(4, b"Identity")
    graph = _field(1, node) + _field(2, b"probe") + _field(11, _float_vector_info(b"x"))
    graph += _field(12, _float_vector_info(b"y"))
    return _field(1, 8) + _field(7, graph) + _field(8, _field(1, b"") + _field(2, 13))


def check_provider(requested: ExecutionProvider, device_id: int = 0) -> ProviderCheck:
    """Create a tiny session on ``requested`` and report whether onnxruntime really uses it."""
    if requested == "cpu":
        return ProviderCheck(requested, True, "always available")
    onnxruntime = onnxruntime_module()
    onnx_name = ONNX_PROVIDER_NAMES[requested]
    if onnx_name not in onnxruntime.get_available_providers():
        return ProviderCheck(requested, False, f"this onnxruntime build has no {onnx_name}")
    options = onnxruntime.SessionOptions()
    with captured_native_stderr() as log_lines:
        try:
            session = onnxruntime.InferenceSession(
                probe_model_bytes(),
                sess_options=options,
                providers=onnx_provider_list([requested], device_id),
            )
            used = session.get_providers()
        except Exception as error:  # onnxruntime raises its own Fail/RuntimeException types
            return ProviderCheck(requested, False, str(error).splitlines()[0][:300])
    if onnx_name in used:
        return ProviderCheck(requested, True, "in use")
    return ProviderCheck(requested, False, explain_provider_failure(log_lines))


# Session pool -----------------------------------------------------------------------------------------------
SessionKey = tuple[str, tuple[str, ...], str]
"""(model name, provider names, precision)."""


@dataclass
class PoolStats:
    loads: int = 0
    releases: int = 0
    hits: int = 0


class SessionPool:
    """ONNX Runtime sessions shared by every job of a process: a model is loaded once (warm start).

    Concurrency policy: onnxruntime documents ``InferenceSession.run`` as safe to call from several
    threads at once, so each key has one shared session; a lock only guards creation and release, so a
    model is never loaded twice by two threads racing for it.
    """

    def __init__(
        self,
        providers: Sequence[ExecutionProvider] = ("cpu",),
        device_id: int = 0,
        intra_op_threads: int = 0,
        notify: Any = None,
    ) -> None:
        self.providers = tuple(providers)
        self.device_id = device_id
        self.intra_op_threads = intra_op_threads
        self.stats = PoolStats()
        self.notices: list[str] = []
        self.used_providers: set[ExecutionProvider] = set()
        """The providers the loaded sessions really got (onnxruntime may fall back without saying so)."""
        self._notify = notify
        self._sessions: dict[SessionKey, Any] = {}
        self._lock = threading.Lock()

    def key(self, name: str, precision: str = "fp32") -> SessionKey:
        return (name, self.providers, precision)

    def get(self, name: str, path: Path, precision: str = "fp32") -> Any:
        """The session for ``name`` (loaded from ``path`` the first time)."""
        key = self.key(name, precision)
        with self._lock:
            session = self._sessions.get(key)
            if session is not None:
                self.stats.hits += 1
                return session
            session = self._create(path)
            self._sessions[key] = session
            self.stats.loads += 1
            return session

    def _create(self, path: Path) -> Any:
        onnxruntime = onnxruntime_module()
        options = onnxruntime.SessionOptions()
        if self.intra_op_threads:
            options.intra_op_num_threads = self.intra_op_threads
        wanted = onnx_provider_list(self.providers, self.device_id)
        with captured_native_stderr() as log_lines:
            try:
                session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=wanted)
            except Exception as error:  # onnxruntime's own exception types
                detail = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
                raise ModelError(
                    f"{path.name} cannot be loaded by onnxruntime ({detail})",
                    remedy=Remedy(
                        "verify it with 'python run.py models verify' or download it again",
                        "verify it with the Settings tab (Models) or download it again",
                    ),
                ) from error
        used = set(session.get_providers())
        self.used_providers.update(name for name, onnx_name in ONNX_PROVIDER_NAMES.items() if onnx_name in used)
        for name in self.providers:
            onnx_name = ONNX_PROVIDER_NAMES[name]
            if name != "cpu" and onnx_name not in used:
                self.warn_once(fallback_message(name, explain_provider_failure(log_lines)))
        return session

    def warn_once(self, message: str) -> None:
        if message in self.notices:
            return
        self.notices.append(message)
        logger.warning(message)
        if self._notify is not None:
            self._notify(message)

    def loaded(self) -> list[str]:
        with self._lock:
            return [key[0] for key in self._sessions]

    def release(self, name: str) -> int:
        """Drop every session of model ``name``; returns how many were dropped."""
        with self._lock:
            keys = [key for key in self._sessions if key[0] == name]
            for key in keys:
                del self._sessions[key]
            self.stats.releases += len(keys)
            return len(keys)

    def release_all(self) -> int:
        with self._lock:
            count = len(self._sessions)
            self._sessions.clear()
            self.stats.releases += count
            return count


def wants_fp16(mode: str, providers: Sequence[ExecutionProvider], usable: Callable[[ExecutionProvider], bool]) -> bool:
    """Whether to use a model's FP16 variant: 'on', 'off', or 'auto' (on where a GPU provider is in use).

    FP16 on the CPU provider is slower than FP32 (it converts back and forth), so 'auto' keeps FP32 there.
    """
    if mode == "on":
        return True
    if mode == "off":
        return False
    return any(p in ("cuda", "tensorrt", "rocm", "directml") and usable(p) for p in providers)

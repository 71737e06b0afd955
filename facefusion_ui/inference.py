"""ONNX Runtime: execution providers, and whether the one asked for is really used.

onnxruntime-gpu lists CUDAExecutionProvider even on a machine without a GPU; when the CUDA libraries
cannot be loaded it logs an error and silently runs on the CPU. We read ``session.get_providers()``
after creating a session and tell the user in plain words.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from facefusion_ui.errors import DependencyError
from facefusion_ui.types import ONNX_PROVIDER_NAMES, ExecutionProvider


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


@contextlib.contextmanager
def captured_native_stderr() -> Iterator[list[str]]:
    """Capture what native code writes to file descriptor 2 (onnxruntime logs there, not to Python)."""
    lines: list[str] = []
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
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


def probe_model_bytes() -> bytes:
    """A one-node ONNX model (Identity) to try a provider with."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


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

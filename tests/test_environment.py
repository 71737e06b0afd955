"""The installed environment: one onnxruntime with the CUDA provider built in, one cv2, pip check clean."""

from __future__ import annotations

import importlib.metadata as metadata
import platform
import subprocess
import sys

from facefusion_ui.inference import check_provider, explain_provider_failure, onnx_provider_list
from facefusion_ui.installer import shim_pyproject, wants_gpu_runtime
from facefusion_ui.memory import parse_nvidia_smi

GPU_PLATFORM = wants_gpu_runtime(platform.system(), platform.machine())


def module_owners(top_level: str) -> list[str]:
    """Distributions that wrote files under ``top_level/``."""
    owners = []
    for distribution in metadata.distributions():
        files = distribution.files or []
        if any(str(path).startswith(f"{top_level}/") for path in files):
            owners.append(distribution.metadata["Name"])
    return sorted(set(owners))


def test_exactly_one_onnxruntime_with_cuda_provider() -> None:
    import onnxruntime

    expected = "onnxruntime-gpu" if GPU_PLATFORM else "onnxruntime"
    assert module_owners("onnxruntime") == [expected]
    if GPU_PLATFORM:
        assert "CUDAExecutionProvider" in onnxruntime.get_available_providers()
        assert onnxruntime.__version__ == metadata.version("onnxruntime-gpu")


def test_exactly_one_consistent_cv2() -> None:
    import cv2

    assert module_owners("cv2") == ["opencv-contrib-python"]
    assert metadata.version("opencv-contrib-python").startswith(cv2.__version__)
    assert hasattr(cv2, "ximgproc"), "the contrib modules mediapipe expects are missing"


def test_pip_check_is_clean() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False, timeout=300
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_shim_declares_the_real_package() -> None:
    text = shim_pyproject("onnxruntime", "onnxruntime-gpu", "1.31.1")
    assert 'name = "onnxruntime"' in text and 'dependencies = ["onnxruntime-gpu==1.31.1"]' in text
    assert "packages = []" in text


def test_cpu_is_always_last_and_always_usable() -> None:
    assert onnx_provider_list(["cpu"]) == ["CPUExecutionProvider"]
    providers = onnx_provider_list(["cuda", "cpu"], device_id=1)
    assert providers[-1] == "CPUExecutionProvider"
    if GPU_PLATFORM:
        assert providers[0] == ("CUDAExecutionProvider", {"device_id": 1})
    assert check_provider("cpu").usable


def test_cuda_check_reads_the_providers_really_used() -> None:
    check = check_provider("cuda")
    if not GPU_PLATFORM:
        assert not check.usable and "has no CUDAExecutionProvider" in check.reason
        return
    has_gpu = bool(
        parse_nvidia_smi(
            subprocess.run(
                [
                    "sh",
                    "-c",
                    "nvidia-smi --query-gpu=index,name,memory.total,memory.free --format=csv,noheader,nounits"
                    " 2>/dev/null",
                ],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
        )
    )
    if not has_gpu:
        assert not check.usable
        assert check.reason and "Traceback" not in check.reason


def test_failure_explanations() -> None:
    log = [
        "2026 [E:onnxruntime:Default, provider_bridge.cc:1] Failed to load library "
        "libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file"
    ]
    assert explain_provider_failure(log) == "the library libcublasLt.so.13 was not found"
    assert explain_provider_failure(["[W] x", "[E:onnxruntime] bad error here"]) == "bad error here"
    assert explain_provider_failure([]) == "onnxruntime could not initialise it"


def test_parse_nvidia_smi() -> None:
    gpus = parse_nvidia_smi("0, NVIDIA GeForce RTX 3050 Laptop GPU, 4096, 3900\n1, H200, 143771, 140000\nbad\n")
    assert [(g.index, g.total_mb, g.free_mb) for g in gpus] == [(0, 4096, 3900), (1, 143771, 140000)]
    assert parse_nvidia_smi("") == []

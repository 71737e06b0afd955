"""Memory probes: process RSS, system RAM and NVIDIA GPU memory. Nothing here fails without a GPU."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

import psutil

MIB = 1024 * 1024


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    total_mb: int
    free_mb: int


@dataclass(frozen=True)
class SystemMemory:
    total_mb: int
    available_mb: int


def system_memory() -> SystemMemory:
    memory = psutil.virtual_memory()
    return SystemMemory(total_mb=memory.total // MIB, available_mb=memory.available // MIB)


def process_rss_mb() -> float:
    return float(psutil.Process().memory_info().rss) / MIB


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Parse ``nvidia-smi --query-gpu=index,name,memory.total,memory.free --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            gpus.append(GpuInfo(int(parts[0]), parts[1], int(float(parts[2])), int(float(parts[3]))))
        except ValueError:
            continue
    return gpus


def probe_gpus(timeout_s: float = 5.0) -> list[GpuInfo]:
    """NVIDIA GPUs seen by nvidia-smi; an empty list when there is none or it does not answer."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return []
    query = "--query-gpu=index,name,memory.total,memory.free"
    try:
        completed = subprocess.run(
            [binary, query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_nvidia_smi(completed.stdout) if completed.returncode == 0 else []

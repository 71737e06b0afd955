"""Memory probes: process RSS, system RAM and NVIDIA GPU memory. Nothing here fails without a GPU."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass

import psutil

from facefusion_ui.process_environment import libc

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


AUTO_CHUNK_BOUNDS_S = (10, 120)
AUTO_CHUNK_SHARE = 0.25
"""The part of available memory one chunk's raw frames may take (what the temp-frames mode stores)."""


def auto_chunk_seconds(width: int, height: int, fps: float, available_mb: int) -> int:
    """Chunk length for 'auto': one chunk's raw frames fit in a quarter of available memory, 10-120 s.

    Streaming memory does not grow with chunk length; the chunk bounds what a crash can lose, the
    temp-frames mode's disk use and how often caches are reset (strict preset)."""
    frame_mb = width * height * 3 / MIB
    seconds = int(available_mb * AUTO_CHUNK_SHARE / max(frame_mb * fps, 1e-6))
    low, high = AUTO_CHUNK_BOUNDS_S
    return max(low, min(high, seconds))


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (``ru_maxrss``; current RSS where it is unavailable)."""
    try:
        import resource
    except ImportError:  # Windows
        return process_rss_mb()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(peak) / (MIB if sys.platform == "darwin" else 1024)


# Out of memory ---------------------------------------------------------------------------------------------
OOM_MESSAGES = (
    "out of memory",
    "failed to allocate memory",
    "cudaerrormemoryallocation",
    "cuda_error_out_of_memory",
    "bad_alloc",
    "cannot allocate memory",
    "memory allocation failed",
)
"""Lower-case fragments of onnxruntime (CPU arena and CUDA), C++ and ffmpeg allocation failures."""


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    text = str(error).lower()
    return any(fragment in text for fragment in OOM_MESSAGES)


# Budget ------------------------------------------------------------------------------------------------------
FRAME_SHARE = 0.25
"""The part of the memory above the preset's threshold that buffered frames may take."""


@dataclass(frozen=True)
class MemoryBudget:
    available_mb: int
    usable_mb: int
    frame_mb: float
    queue_size: int
    chunk_seconds: int
    gpu_free_mb: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "available_mb": self.available_mb,
            "usable_mb": self.usable_mb,
            "frame_mb": round(self.frame_mb, 2),
            "queue_size": self.queue_size,
            "chunk_seconds": self.chunk_seconds,
            "gpu_free_mb": self.gpu_free_mb,
        }


WORKER_FRAMES = 7
"""What a frame worker holds, in YUV frames: its frame plus three BGR copies (twice the size each) while
processors run: the decoded view, the working copy and the result."""
WORKER_OUTPUT_FRAMES = 8
"""What a frame worker holds besides, in YUV frames of the output size, when the processors change the
frame's size (an upscaler): the result and the plain upscale it is blended with (BGR), the encoder's YUV
copy, and the upscaler's band of joined tiles (float32, a few rows of tiles high)."""


def plan_budget(
    width: int,
    height: int,
    fps: float,
    queue_size: int,
    threads: int,
    chunk_size: int | str,
    threshold_mb: int,
    available_mb: int | None = None,
    gpu_free_mb: int | None = None,
    held: int = 1,
    output_scale: float = 1.0,
) -> MemoryBudget:
    """Queue depth and chunk length that fit: the frames in flight (3 queues, the ``held`` detection
    group, the workers' frames and copies) take at most a quarter of the memory above the preset's
    threshold; 'auto' chunks come from ``auto_chunk_seconds``. Frames in flight are YUV 4:2:0.
    ``output_scale``: an output frame's area over an input frame's (an upscaler: the output queue and
    the workers hold larger frames)."""
    available = system_memory().available_mb if available_mb is None else available_mb
    usable = max(available - threshold_mb, 64)
    frame_mb = width * height * 1.5 / MIB
    worker = WORKER_FRAMES + (WORKER_OUTPUT_FRAMES * output_scale if output_scale != 1.0 else 0.0)
    room = usable * FRAME_SHARE / max(frame_mb, 1e-6) - threads * worker - held - 1
    fitting = int(room / (2 + output_scale))
    queue = max(1, min(queue_size, fitting))
    seconds = auto_chunk_seconds(width, height, fps, usable) if chunk_size == "auto" else int(chunk_size)
    return MemoryBudget(available, usable, frame_mb, queue, seconds, gpu_free_mb)


# The C heap -------------------------------------------------------------------------------------------------
def return_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``); called between chunks.

    Freed 2.6 MiB frames end up on the heap once glibc has raised its mmap threshold, and chunk after
    chunk the heap fragments: peak RSS grew 1.49x from a 1- to a 10-minute clip. Trimming between chunks
    keeps it flat (measured 1.000 from 1 to 4 minutes). Pinning the mmap threshold low did too, but cost
    30 % speed in page faults (``process_environment.configure_process`` pins it high instead). False
    where there is no glibc."""
    glibc = libc()
    if glibc is None:
        return False
    glibc.malloc_trim(0)
    return True

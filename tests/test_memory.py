"""Memory: probes, the budget, out-of-memory classification and recovery by fault injection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import FfmpegError, OutOfMemory
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faults import ONNXRUNTIME_OOM, FaultInjection
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.memory import auto_chunk_seconds, is_out_of_memory, plan_budget, process_rss_mb, system_memory
from facefusion_ui.process_environment import ARENA_MAX
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT
from tests.support import media, videos

LOSSLESS = Settings(
    execution_threads=2,
    frame_queue_size=4,
    output_video_quality=100,
    video_chunk_size=1,
    output_video_preset="ultrafast",
)


def test_probes_work_without_a_gpu() -> None:
    memory = system_memory()
    assert memory.total_mb > 0 and 0 < memory.available_mb <= memory.total_mb
    assert process_rss_mb() > 10


def test_out_of_memory_classification() -> None:
    from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException

    assert is_out_of_memory(RuntimeException(ONNXRUNTIME_OOM))
    assert is_out_of_memory(RuntimeException("CUDA failure 2: out of memory ; GPU=0 ; hostname=x ; expr=cudaMalloc"))
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(FfmpegError("the encoder failed (exit code 1): Cannot allocate memory"))
    assert is_out_of_memory(RuntimeException("std::bad_alloc"))
    assert not is_out_of_memory(RuntimeException("Invalid input name: x"))
    assert not is_out_of_memory(ValueError("shape mismatch"))


def test_budget_limits_queues_when_memory_is_short() -> None:
    roomy = plan_budget(1920, 1080, 30, queue_size=32, threads=2, chunk_size=60, threshold_mb=1024, available_mb=16000)
    assert roomy.queue_size == 32 and roomy.chunk_seconds == 60
    short = plan_budget(
        1920, 1080, 30, queue_size=32, threads=2, chunk_size=60, threshold_mb=1024, available_mb=2000, held=20
    )
    assert 1 <= short.queue_size < 32
    assert short.frame_mb == pytest.approx(1920 * 1080 * 1.5 / 2**20)  # frames in flight are YUV 4:2:0
    frames_in_flight = 3 * short.queue_size + 2 * 7 + 20 + 1  # queues, workers with their BGR copies, group
    assert frames_in_flight * short.frame_mb <= short.usable_mb * 0.25 + short.frame_mb * 3
    tight = plan_budget(
        1920, 1080, 30, queue_size=32, threads=2, chunk_size="auto", threshold_mb=1024, available_mb=1300, held=20
    )
    assert tight.queue_size == 1  # the least that runs
    assert tight.chunk_seconds == 10  # auto: the shortest chunk when memory is short
    assert auto_chunk_seconds(640, 360, 25, 64000) == 120


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("oom")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    return {"face": face, "clip": videos.write_video(folder / "clip.mp4", videos.moving_face(320, 240, 40), 40)}


def test_injected_out_of_memory_is_survived_frame_exact(
    clip: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    plain, recovered = tmp_path / "plain.mp4", tmp_path / "recovered.mp4"
    process(
        SwapJob.of(LOSSLESS, [clip["face"]], clip["clip"], plain),
        RunContext(runtime=shared_runtime, work_dir=tmp_path / "w1"),
    )
    result = process(
        SwapJob.of(LOSSLESS, [clip["face"]], clip["clip"], recovered),
        RunContext(
            runtime=shared_runtime,
            work_dir=tmp_path / "w2",
            wrap_stages=FaultInjection(frame=30, times=2).wrap,
        ),
    ).to_json()
    notes = result["recoveries"]
    assert len(notes) == 2
    assert "out of memory on chunk 2 (attempt 1): released models and caches, queue 4 -> 2, threads 2 -> 1" in notes[0]
    assert "queue 2 -> 1" in notes[1]
    assert result["frames"] == 40 and result["chunks_done"] == 2
    for a, b in zip(videos.decode_all(plain), videos.decode_all(recovered), strict=True):
        assert np.array_equal(a, b)


def test_third_failure_names_the_preset(clip: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    output = tmp_path / "out.mp4"
    with pytest.raises(OutOfMemory, match="--preset strict"):
        process(
            SwapJob.of(LOSSLESS, [clip["face"]], clip["clip"], output),
            RunContext(
                runtime=shared_runtime,
                work_dir=tmp_path / "w",
                wrap_stages=FaultInjection(frame=5, times=3, kind="memory").wrap
                if FaultInjection(frame=5, times=3, kind="memory")
                else None,
            ),
        )
    assert not output.exists()


def test_other_errors_are_not_retried(clip: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    injection = FaultInjection(frame=5, times=5, kind="error")
    with pytest.raises(RuntimeError, match="injected failure"):
        process(
            SwapJob.of(LOSSLESS, [clip["face"]], clip["clip"], tmp_path / "o.mp4"),
            RunContext(runtime=shared_runtime, work_dir=tmp_path / "w", wrap_stages=injection.wrap),
        )
    assert injection.fired == 1


def test_cli_reports_recovery_and_effective_values(clip: dict[str, Path], tmp_path: Path) -> None:
    env = {**os.environ, "FACEFUSION_UI_INJECT_FAULT": "frame=3,times=1", "FACEFUSION_UI_HOME": str(tmp_path)}
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "run.py"),
            "process",
            "-s",
            str(clip["face"]),
            "-t",
            str(clip["clip"]),
            "-o",
            str(tmp_path / "out.mp4"),
            "--preset",
            "lightweight",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout)
    assert len(summary["recoveries"]) == 1 and "out of memory on chunk 1" in completed.stderr
    effective = summary["settings_effective"]
    assert effective["fp16"] == "on" and effective["release_models"] == "after_job"
    assert effective["face_cache_limit"] == 32 and effective["video_chunk_size"] == 30
    assert summary["memory_budget"]["queue_size"] <= 8 and summary["identity_cache"] is not None


FREED_FRAMES = """
import sys
from facefusion_ui.process_environment import configure_process
configure_process()  # as every entry point does: the heap keeps up to 64 MiB free between frames
import numpy as np
from facefusion_ui.memory import process_rss_mb, return_free_memory
before = process_rss_mb()
frames = [np.ones((720, 1280, 3), np.uint8) for _ in range(40)]  # 105 MiB of 720p frames
grown = process_rss_mb() - before
del frames
returned = return_free_memory()
print(grown, process_rss_mb() - before, returned is sys.platform.startswith("linux"))
"""


def test_freed_frames_go_back_to_the_system() -> None:
    """In a fresh process: in a long one (the suite) the heap already holds freed pages that new frames
    reuse, so its growth says nothing. Between chunks the heap goes back whole, whatever the process's
    trim threshold."""
    completed = subprocess.run(
        [sys.executable, "-c", FREED_FRAMES], capture_output=True, text=True, cwd=ROOT, timeout=300, check=True
    )
    grown, left, returned = completed.stdout.split()
    assert float(grown) > 80 and float(left) < 20 and returned == "True", completed.stdout


FRAME_CHURN = """
import resource, sys, threading
if sys.argv[1] == "configured":
    from facefusion_ui.process_environment import configure_process
    configure_process()
import numpy as np

def swap_like() -> None:  # what a worker thread does per face: a few dozen arrays of a face about 400 px wide, freed
    for _ in range(30):
        arrays = [np.ones((386, 358, 3), np.float32) for _ in range(20)]
        del arrays

before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
worker = threading.Thread(target=swap_like)
worker.start()
worker.join()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc tunables")
def test_the_entry_points_heap_reuses_frame_sized_buffers() -> None:
    """A worker thread allocating and freeing a face's worth of 1.6 MiB arrays 30 times: with glibc's
    defaults its heap is trimmed after each round and every page faults in again; with the process
    configured as the entry points configure it the pages are reused (a tenth of the faults or fewer)."""

    def faults(mode: str) -> int:
        completed = subprocess.run(
            [sys.executable, "-c", FRAME_CHURN, mode], capture_output=True, text=True, cwd=ROOT, timeout=300, check=True
        )
        return int(completed.stdout)

    default, configured = faults("default"), faults("configured")
    assert configured * 4 < default, (configured, default)


THREAD_HEAPS = """
import ctypes, os, re, sys, tempfile, threading
if sys.argv[1] == "configured":
    from facefusion_ui.process_environment import configure_process
    configure_process()
import numpy as np

ready = threading.Barrier(9)

def frame_worker() -> None:  # a pipeline thread: frames of its own, held while the others allocate theirs
    frames = [np.ones((720, 1280, 3), np.uint8) for _ in range(2)]
    ready.wait()
    ready.wait()
    del frames

threads = [threading.Thread(target=frame_worker) for _ in range(8)]
for thread in threads:
    thread.start()
ready.wait()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = [ctypes.c_void_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
path = os.path.join(tempfile.mkdtemp(), "heaps.xml")
stream = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, stream)
libc.fclose(stream)
ready.wait()
for thread in threads:
    thread.join()
with open(path) as info:
    print(len(re.findall(r"<heap nr=", info.read())))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heaps")
def test_the_entry_points_threads_share_one_heap() -> None:
    """Eight threads holding frames at once: with glibc's defaults they spread over heaps of their own
    (each keeping up to the trim threshold free); in a process configured as the entry points configure it
    they all allocate from the one heap (``ARENA_MAX``), so the free memory kept is bounded once."""

    def heaps(mode: str) -> int:
        command = [sys.executable, "-c", THREAD_HEAPS, mode]
        completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300, check=True)
        return int(completed.stdout)

    default, configured = heaps("default"), heaps("configured")
    assert configured == ARENA_MAX and default > 1, (configured, default)

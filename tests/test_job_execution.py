"""Each job runs on the execution settings it was queued with, and never frees another job's models."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import CancelledError
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.warm_runtimes import ExecutionKey, WarmRuntimes
from facefusion_ui.faults import FaultInjection
from facefusion_ui.inference import probe_model_bytes
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.jobs.worker import Worker, WorkerOptions, read_log
from facefusion_ui.presets import apply_preset
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.registry import BUILTIN_PROCESSORS, ProcessorEntry, ProcessorRegistry
from facefusion_ui.state_manager import Settings, StateManager
from facefusion_ui.types import Frame
from tests.support import media, videos
from tests.support import onnx_models as stand_ins

ONNX_SWAP = {
    "face_detector_model": "det_10g",
    "face_detector_size": 320,
    "face_recognizer_model": "arcface_w600k_r50",
    "face_landmarker_model": "dlib_5",
    "face_swapper_model": "inswapper_128",
    "face_mask_types": ("box",),
}


def preset_settings(preset: str, **values: object) -> Settings:
    state = StateManager()
    apply_preset(state, preset)
    state.update(values)
    return state.snapshot()


@pytest.fixture
def probe_model(tmp_path: Path) -> Path:
    path = tmp_path / "probe.onnx"
    path.write_bytes(probe_model_bytes())
    return path


def test_jobs_asking_other_providers_get_their_own_pool_and_idle_pools_beyond_the_limit_go(probe_model: Path) -> None:
    runtimes = WarmRuntimes(limit=2)
    plain, one_thread, cuda = Settings(), Settings(execution_threads=1), Settings(execution_providers=("cuda", "cpu"))
    with runtimes.lease(plain) as first:
        first.sessions.get("probe", probe_model)
        with runtimes.lease(plain) as second:
            assert second.sessions is first.sessions  # the same settings share one warm pool
        with runtimes.lease(one_thread) as other:
            assert other.sessions is not first.sessions and other.sessions.intra_op_threads == 1
        with runtimes.lease(cuda) as third:
            assert third.sessions.providers == ("cuda", "cpu")
        # three pools were asked for, two may stay warm: the idle one-thread pool went, the held one stayed
        assert runtimes.warm_keys() == [ExecutionKey.of(plain), ExecutionKey.of(cuda)]
        assert first.sessions.loaded() == ["probe"] and runtimes.pools_released == 1


def test_a_job_frees_only_what_no_other_running_job_holds(probe_model: Path) -> None:
    runtimes = WarmRuntimes()
    with runtimes.lease(Settings()) as running:
        running.sessions.get("probe", probe_model)
        running.embedded_model("dlib_5")
        with runtimes.lease(Settings()) as other:
            other.release_models()
        assert running.sessions.loaded() == ["probe"] and runtimes.embedded.loaded() == ["dlib_5"]
        preview = runtimes.runtime(Settings())  # outside any job: frees nothing a job holds either
        preview.release_models()
        assert running.sessions.loaded() == ["probe"] and runtimes.embedded.loaded() == ["dlib_5"]
        running.release_models()  # alone now: everything goes
        assert running.sessions.loaded() == [] and runtimes.embedded.loaded() == []


@pytest.mark.slow
def test_a_lightweight_job_on_a_plain_worker_runs_fp16_on_its_own_providers(
    onnx_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FACEFUSION_UI_MODELS", str(onnx_models))
    stand_ins.build_inswapper(onnx_models / "inswapper_128_fp16.onnx")
    source, target = tmp_path / "grace.png", tmp_path / "t1.png"
    cv2.imwrite(str(source), media.grace_hopper())
    cv2.imwrite(str(target), media.t1())
    worker_settings = preset_settings("balanced")  # fp16 auto: FP32 on the CPU
    runtimes = WarmRuntimes(folder=onnx_models)
    runtimes.runtime(worker_settings)
    store = JobStore(tmp_path / "jobs.db")
    light = preset_settings("lightweight", execution_providers=("cuda", "cpu"), **ONNX_SWAP)
    plain = preset_settings("balanced", **ONNX_SWAP)
    light_id = store.add(make_payload([source], target, tmp_path / "light.png", light))
    plain_id = store.add(make_payload([source], target, tmp_path / "plain.png", plain))
    options = WorkerOptions(until_empty=True, poll_s=0.05, heartbeat_s=0.2)
    Worker(store, runtimes, options).run()

    light_job, plain_job = store.get(light_id), store.get(plain_id)
    assert (light_job.status, plain_job.status) == ("completed", "completed")
    assert light_job.result is not None and plain_job.result is not None
    assert light_job.result["precision"] == "fp16" and plain_job.result["precision"] == "fp32"
    assert light_job.result["onnx_models"] == {
        "det_10g": "fp32",
        "arcface_w600k_r50": "fp32",
        "inswapper_128_fp16": "fp16",  # the only one of the three with an FP16 variant
    }
    assert light_job.result["execution_providers"] == ["cpu"]
    log = read_log(store, light_id)
    assert "ran on cpu at fp16 (asked: cuda, cpu, device 0, fp16 on)" in log
    assert "CUDA requested but not usable: running on CPU because" in log
    assert "ran on cpu at fp32 (asked: cpu, device 0, fp16 auto)" in read_log(store, plain_id)
    assert {key.providers for key in runtimes.warm_keys()} == {("cpu",), ("cuda", "cpu")}


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fallback")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    return {
        "face": face,
        "clip": videos.write_video(folder / "clip.mp4", videos.moving_face(240, 180, 20), 20),
        "long": videos.write_video(folder / "long.mp4", videos.moving_face(240, 180, 75), 75),
    }


@pytest.mark.slow
def test_an_out_of_memory_fallback_leaves_another_jobs_models_alone(
    clip: dict[str, Path], probe_model: Path, tmp_path: Path
) -> None:
    asked = Settings(execution_providers=("cuda", "cpu"), video_chunk_size=1, execution_threads=1)
    runtimes = WarmRuntimes()
    with runtimes.lease(asked) as other_job:
        shared_pool = other_job.sessions
        shared_pool.get("probe", probe_model)
        other_job.embedded_model("dlib_5")
        result: dict[str, object] = {}

        def run_short_of_memory() -> None:
            with runtimes.lease(asked) as job:
                job_result = process(
                    SwapJob.of(asked, [clip["face"]], clip["clip"], tmp_path / "out.mp4"),
                    RunContext(runtime=job, work_dir=tmp_path / "w", wrap_stages=FaultInjection(frame=5, times=2).wrap),
                )
                result.update(job_result.to_json(), pool_after=job.sessions)

        thread = threading.Thread(target=run_short_of_memory)
        thread.start()
        thread.join()
        notes = result["recoveries"]
        assert isinstance(notes, list) and len(notes) == 2 and "this chunk falls back to the CPU" in notes[1]
        # the job ran on the CPU pool of its own, then got the shared pool back; the other job's models stayed
        assert result["pool_after"] is shared_pool and other_job.sessions is shared_pool
        assert shared_pool.loaded() == ["probe"] and shared_pool.providers == ("cuda", "cpu")
        assert "dlib_5" in runtimes.embedded.loaded() and runtimes.embedded.releases == 0


class Tally:
    """A plugin that counts the frames with faces it is given (and changes nothing)."""

    name = "tally"

    def __init__(self, settings: Settings, runtime: object) -> None:
        self.frames_tallied = 0
        self._lock = threading.Lock()

    def required_models(self) -> tuple[str, ...]:
        return ()

    def pre_check(self) -> list[str]:
        return []

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        with self._lock:
            self.frames_tallied += 1
        return frame

    def release(self) -> None:
        pass

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"frames_tallied": self.frames_tallied}


@pytest.mark.slow
def test_a_resumed_run_reports_plugin_and_mask_counts_of_the_whole_output(
    clip: dict[str, Path], tmp_path: Path
) -> None:
    registry = ProcessorRegistry(
        [
            *(ProcessorEntry(name, target, "built-in") for name, target in BUILTIN_PROCESSORS.items()),
            ProcessorEntry("tally", f"{__name__}:Tally", "plugin from tests"),
        ]
    )
    settings = Settings(
        processors=("face_swapper", "tally"),
        face_mask_types=("box", "occlusion"),
        video_chunk_size=1,
        execution_threads=1,
        face_detector_interval=5,
    )
    runtimes = WarmRuntimes()

    def run(output: Path, work_dir: Path, stop_at_chunk: int = 0) -> dict[str, Any]:
        cancel = threading.Event()

        def progress(state: dict[str, Any]) -> None:
            if stop_at_chunk and state["chunk"] == stop_at_chunk:
                cancel.set()

        context = RunContext(registry=registry, work_dir=work_dir, cancel=cancel, progress=progress)
        with runtimes.lease(settings) as runtime:
            context.runtime = runtime
            return process(SwapJob.of(settings, [clip["face"]], clip["long"], output), context).to_json()

    whole = run(tmp_path / "whole.mp4", tmp_path / "w1")
    with pytest.raises(CancelledError):
        run(tmp_path / "resumed.mp4", tmp_path / "w2", stop_at_chunk=2)
    resumed = run(tmp_path / "resumed.mp4", tmp_path / "w2")
    assert resumed["chunks_skipped"] >= 1 and whole["chunks_skipped"] == 0
    for key in ("faces_detected", "faces_selected", "faces_swapped", "frames_tallied"):
        assert resumed[key] == whole[key] > 0, key
    assert resumed["masks"]["faces_masked"] == whole["masks"]["faces_masked"] > 0
    assert resumed["masks"]["occlusion_pixels"] == whole["masks"]["occlusion_pixels"]

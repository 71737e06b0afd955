"""The ONNX path with small models in the real signatures: same code path, loaded once, CPU, released."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.alignment import warp_face
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.state_manager import Settings
from tests.support.onnx_models import recognizer_matrix, recognizer_weights

ONNX_SETTINGS = Settings(
    face_detector_model="det_10g",
    face_detector_size=320,
    face_recognizer_model="arcface_w600k_r50",
    face_landmarker_model="dlib_5",
)


def runtime_for(folder: Path) -> ModelRuntime:
    return ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))


def bright_square() -> np.ndarray:
    image = np.zeros((320, 320, 3), dtype=np.uint8)
    image[100:164, 140:204] = 255
    return image


def test_scrfd_and_arcface_run_through_the_analyser(onnx_models: Path) -> None:
    runtime = runtime_for(onnx_models)
    analyser = FaceAnalyser(runtime)
    faces = analyser.analyse(bright_square(), ONNX_SETTINGS)
    assert faces, "the SCRFD-like model fires on the bright square"
    for face in faces:
        cx, cy = face.center
        assert 130 <= cx <= 214 and 90 <= cy <= 174
        assert face.embedding is not None and face.embedding.shape == (512,)
        assert face.recognizer == "arcface_w600k_r50"
    # the embedding is exactly the hand computation on the aligned, normalised crop
    face = faces[0]
    crop, _ = warp_face(bright_square(), face.kps, "arcface_112", 112)
    rgb = cv2.cvtColor(crop, cv2.COLOR_BGR2RGB).astype(np.float32)
    weighted = (rgb - 127.5) / 127.5 * recognizer_weights()[..., None]
    expected = weighted.mean(axis=(0, 1)) @ recognizer_matrix()
    assert face.embedding is not None
    np.testing.assert_allclose(face.embedding, expected, rtol=1e-4, atol=1e-4)
    assert runtime.sessions.stats.loads == 2
    assert sorted(runtime.sessions.loaded()) == ["arcface_w600k_r50", "det_10g"]
    assert all(p == ("CPUExecutionProvider",) for p in [tuple(runtime.onnx_session("det_10g")[1].get_providers())])


def test_sessions_are_loaded_once_and_released(onnx_models: Path) -> None:
    runtime = runtime_for(onnx_models)
    analyser = FaceAnalyser(runtime)
    for _ in range(3):
        analyser.analyse(bright_square(), ONNX_SETTINGS)
    assert runtime.sessions.stats.loads == 2 and runtime.sessions.stats.hits >= 4
    assert runtime.sessions.release("det_10g") == 1
    assert runtime.sessions.loaded() == ["arcface_w600k_r50"]
    runtime.release_all()
    assert runtime.sessions.loaded() == [] and runtime.sessions.stats.releases == 2
    analyser.analyse(bright_square(), ONNX_SETTINGS)
    assert runtime.sessions.stats.loads == 4


def test_concurrent_jobs_share_one_session(onnx_models: Path) -> None:
    runtime = runtime_for(onnx_models)
    reference = FaceAnalyser(runtime_for(onnx_models)).analyse(bright_square(), ONNX_SETTINGS)
    results: list[list[np.ndarray]] = []
    errors: list[BaseException] = []

    def job() -> None:
        try:
            faces = FaceAnalyser(runtime).analyse(bright_square(), ONNX_SETTINGS)
            results.append([face.embedding for face in faces if face.embedding is not None])
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=job) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert runtime.sessions.stats.loads == 2
    for embeddings in results:
        for got, want in zip(embeddings, reference, strict=True):
            assert want.embedding is not None
            np.testing.assert_allclose(got, want.embedding, rtol=1e-5)


def test_missing_model_names_the_download_command(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path)
    with pytest.raises(ModelError, match=r"run 'python run.py models download det_10g'"):
        FaceAnalyser(runtime).analyse(bright_square(), ONNX_SETTINGS)


def test_corrupt_model_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "det_10g.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelError, match="cannot be loaded by onnxruntime"):
        FaceAnalyser(runtime_for(tmp_path)).analyse(bright_square(), ONNX_SETTINGS)


def test_fp16_variant_is_chosen_only_when_wanted(onnx_models: Path) -> None:
    (onnx_models / "inswapper_128_fp16.onnx").write_bytes((onnx_models / "inswapper_128.onnx").read_bytes())
    cpu = runtime_for(onnx_models)
    assert cpu.resolve("inswapper_128").name == "inswapper_128"  # auto on CPU keeps FP32
    forced = ModelRuntime(load_manifest(folder=onnx_models), onnx_models, SessionPool(("cpu",)), fp16_mode="on")
    spec, _ = forced.onnx_session("inswapper_128")
    assert spec.name == "inswapper_128_fp16"
    assert forced.sessions.loaded() == ["inswapper_128_fp16"]


def test_scrfd_search_around_a_followed_face(onnx_models: Path) -> None:
    analyser = FaceAnalyser(runtime_for(onnx_models))
    whole = analyser.detect(bright_square(), ONNX_SETTINGS)
    assert whole
    around = analyser.detect_around(bright_square(), [whole[0].bbox + 5], ONNX_SETTINGS)
    assert around and around[0].kps is not None
    found, expected = around[0].bbox, whole[0].bbox
    assert abs((found[0] + found[2]) / 2 - (expected[0] + expected[2]) / 2) < 8  # in frame coordinates
    assert abs((found[1] + found[3]) / 2 - (expected[1] + expected[3]) / 2) < 8

"""Image workflow end to end on package photos: the embedded swapper, selector modes, ONNX paths."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face, face_distance
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceIdentity, load_sources
from facefusion_ui.inference import SessionPool
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.face_swapper import FaceSwapper
from facefusion_ui.processors.inswapper import read_emap, source_latent
from facefusion_ui.processors.latent_swapper import LatentSwapper
from facefusion_ui.processors.mesh_warp import WarpSource
from facefusion_ui.processors.mesh_warp_swapper import MeshWarpSwapper
from facefusion_ui.state_manager import Settings
from tests.support import media
from tests.support.onnx_models import swapper_colour_matrix, swapper_emap

SETTINGS = Settings()


@pytest.fixture(scope="module")
def astronaut_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sources") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def face_zone(faces: list[Face], shape: tuple[int, ...], grow: float = 1.0) -> np.ndarray:
    """True around each face: its box grown by ``grow`` box-widths on every side."""
    zone = np.zeros(shape[:2], dtype=bool)
    for face in faces:
        x1, y1, x2, y2 = face.bbox
        dx, dy = (x2 - x1) * grow, (y2 - y1) * grow
        zone[max(int(y1 - dy), 0) : int(y2 + dy), max(int(x1 - dx), 0) : int(x2 + dx)] = True
    return zone


def nearest(faces: list[Face], face: Face) -> Face:
    return min(faces, key=lambda f: float(np.hypot(*(np.array(f.center) - np.array(face.center)))))


def assert_swapped(
    runtime: ModelRuntime, source: Face, target_image: np.ndarray, output: np.ndarray, swapped: list[Face]
) -> None:
    assert output.shape == target_image.shape
    analyser = FaceAnalyser(runtime)
    zone = face_zone(swapped, target_image.shape)
    assert np.array_equal(output[~zone], target_image[~zone]), "pixels outside the faces changed"
    after = analyser.analyse(output, SETTINGS)
    for face in swapped:
        x1, y1, x2, y2 = face.bbox.astype(int)
        change = np.abs(output[y1:y2, x1:x2].astype(int) - target_image[y1:y2, x1:x2].astype(int)).mean()
        assert change > 8, "the face region did not change"
        result = nearest(after, face)
        assert face_distance(result, source, "euclidean") < face_distance(result, face, "euclidean"), (
            "the swapped face is nearer the target than the source"
        )


@pytest.mark.parametrize("target_name", ["grace_hopper", "t1"])
def test_embedded_swap_carries_the_source_identity(
    shared_runtime: ModelRuntime, astronaut_path: Path, tmp_path: Path, target_name: str
) -> None:
    target_image = getattr(media, target_name)()
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), target_image)
    output = tmp_path / "out.png"
    result = process(SwapJob.of(SETTINGS, [astronaut_path], target, output), RunContext(runtime=shared_runtime))
    expected = 1 if target_name == "grace_hopper" else 6
    assert result.stats["faces_swapped"] == expected and result.stats["faces_detected"] == expected
    assert result.stats["models_used"] == ["dlib_hog", "dlib_68", "mesh_warp", "mediapipe_face_mesh"]
    swapped_image = media.read(output)
    source = FaceAnalyser(shared_runtime).analyse(media.astronaut(), SETTINGS)[0]
    faces = FaceAnalyser(shared_runtime).analyse(target_image, SETTINGS)
    assert_swapped(shared_runtime, source, target_image, swapped_image, faces)


def test_selector_modes_on_t1(shared_runtime: ModelRuntime, astronaut_path: Path, tmp_path: Path) -> None:
    target = media.t1_path()
    faces = FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS)
    counts = {}
    for mode in ("many", "one"):
        result = process(
            SwapJob.of(
                SETTINGS.with_items(face_selector_mode=mode), [astronaut_path], target, tmp_path / f"{mode}.png"
            ),
            RunContext(runtime=shared_runtime),
        )
        counts[mode] = result.stats["faces_swapped"]
    assert counts == {"many": 6, "one": 1}
    one = media.read(tmp_path / "one.png")
    largest = max(faces, key=lambda f: f.area)
    assert np.array_equal(one[~face_zone([largest], one.shape)], media.t1()[~face_zone([largest], one.shape)])

    by_position = sorted(faces, key=lambda f: f.bbox[0])
    settings = SETTINGS.with_items(
        face_selector_mode="reference", face_selector_order="left-right", reference_face_position=2
    )
    result = process(
        SwapJob.of(settings, [astronaut_path], target, tmp_path / "reference.png"), RunContext(runtime=shared_runtime)
    )
    assert result.stats["faces_swapped"] == 1 and result.stats["recognizer_calls"] >= 6
    chosen = by_position[2]
    output = media.read(tmp_path / "reference.png")
    zone = face_zone([chosen], output.shape)
    assert np.array_equal(output[~zone], media.t1()[~zone])
    x1, y1, x2, y2 = chosen.bbox.astype(int)
    assert np.abs(output[y1:y2, x1:x2].astype(int) - media.t1()[y1:y2, x1:x2].astype(int)).mean() > 8


def test_reference_from_the_source_person(shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    """Mode reference with the source as reference: in t1 with a t1 face as source, only that person."""
    faces = sorted(FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS), key=lambda f: f.bbox[0])
    x1, y1, x2, y2 = faces[4].bbox.astype(int)
    pad = int((x2 - x1) * 0.8)
    crop = media.t1()[max(y1 - pad, 0) : y2 + pad, max(x1 - pad, 0) : x2 + pad]
    source_path = tmp_path / "person.png"
    cv2.imwrite(str(source_path), crop)
    settings = SETTINGS.with_items(face_selector_mode="reference", reference_face_from="source")
    result = process(
        SwapJob.of(settings, [source_path], media.t1_path(), tmp_path / "out.png"), RunContext(runtime=shared_runtime)
    )
    assert result.stats["faces_swapped"] == 1
    output = media.read(tmp_path / "out.png")
    zone = face_zone([faces[4]], output.shape)
    assert np.array_equal(output[~zone], media.t1()[~zone])


def onnx_runtime(folder: Path) -> ModelRuntime:
    return ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))


def test_inswapper_latent_is_embedding_times_emap(onnx_models: Path, astronaut_path: Path) -> None:
    runtime = onnx_runtime(onnx_models)
    settings = SETTINGS.with_items(face_swapper_model="inswapper_128")
    swapper = FaceSwapper(settings, runtime)
    assert isinstance(swapper, LatentSwapper)
    assert swapper.pre_check() == []
    sources = load_sources([astronaut_path, media.grace_hopper_path()], FaceAnalyser(runtime), settings)
    latent = swapper.prepare(sources).latent
    assert latent is not None
    np.testing.assert_allclose(read_emap(onnx_models / "inswapper_128.onnx"), swapper_emap())
    # by hand: ArcFace (the generated one) of each source, normed, averaged, normed, x emap, normed
    from facefusion_ui.faces.recognizer import embed_arcface

    spec, session = runtime.onnx_session("arcface_w600k_r50")
    normed = []
    for source in sources.faces:
        vector = embed_arcface(source.image, source.face, session, spec)
        normed.append(vector / np.linalg.norm(vector))
    mean = np.mean(normed, axis=0)
    mean /= np.linalg.norm(mean)
    by_hand = mean @ swapper_emap()
    by_hand /= np.linalg.norm(by_hand)
    np.testing.assert_allclose(latent.reshape(-1), by_hand, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(source_latent(mean, swapper_emap()), by_hand.reshape(1, -1), rtol=1e-4, atol=1e-5)
    assert swapper.prepare(sources) is swapper.prepare(sources)  # computed once per source set


def test_inswapper_paste_back_changes_only_the_face(onnx_models: Path, astronaut_path: Path, tmp_path: Path) -> None:
    runtime = onnx_runtime(onnx_models)
    settings = SETTINGS.with_items(face_swapper_model="inswapper_128")
    target = tmp_path / "grace.png"
    cv2.imwrite(str(target), media.grace_hopper())
    result = process(SwapJob.of(settings, [astronaut_path], target, tmp_path / "out.png"), RunContext(runtime=runtime))
    assert result.stats["faces_swapped"] == 1
    assert result.stats["models_used"] == ["dlib_hog", "dlib_68", "inswapper_128", "arcface_w600k_r50"]
    output = media.read(tmp_path / "out.png")
    face = FaceAnalyser(runtime).analyse(media.grace_hopper(), SETTINGS, embeddings=False)[0]
    zone = face_zone([face], output.shape)
    assert np.array_equal(output[~zone], media.grace_hopper()[~zone])
    x1, y1, x2, y2 = face.bbox.astype(int)
    centre = output[y1 + (y2 - y1) // 3 : y2 - (y2 - y1) // 3, x1 + (x2 - x1) // 3 : x2 - (x2 - x1) // 3]
    original = media.grace_hopper()[
        y1 + (y2 - y1) // 3 : y2 - (y2 - y1) // 3, x1 + (x2 - x1) // 3 : x2 - (x2 - x1) // 3
    ]
    shift = centre.astype(float).mean(axis=(0, 1)) - original.astype(float).mean(axis=(0, 1))
    # the generated model adds (latent @ colour) to the RGB crop: the face centre moves by that colour
    swapper = FaceSwapper(settings, runtime)
    assert isinstance(swapper, LatentSwapper)
    latent = swapper.prepare(load_sources([astronaut_path], FaceAnalyser(runtime), settings)).latent
    assert latent is not None
    expected_rgb = (latent @ swapper_colour_matrix()).reshape(-1) * 255
    for channel, expected in zip((2, 1, 0), expected_rgb, strict=True):  # BGR vs RGB
        if abs(expected) > 20:
            assert np.sign(shift[channel]) == np.sign(expected)
    assert runtime.sessions.stats.loads == 2


def test_enhancer_with_generated_gfpgan(onnx_models: Path, astronaut_path: Path, tmp_path: Path) -> None:
    runtime = onnx_runtime(onnx_models)
    settings = SETTINGS.with_items(processors=("face_swapper", "face_enhancer"))
    target = tmp_path / "grace.png"
    cv2.imwrite(str(target), media.grace_hopper())
    result = process(SwapJob.of(settings, [astronaut_path], target, tmp_path / "out.png"), RunContext(runtime=runtime))
    assert "gfpgan_1.4" in result.stats["models_used"]
    assert result.stats["faces_swapped"] == result.stats["faces_enhanced"] == 1
    plain = process(SwapJob.of(SETTINGS, [astronaut_path], target, tmp_path / "plain.png"), RunContext(runtime=runtime))
    assert "faces_enhanced" not in plain.stats and plain.stats["faces_swapped"] == 1
    enhanced, swapped = media.read(tmp_path / "out.png"), media.read(Path(plain.output))
    face = FaceAnalyser(runtime).analyse(media.grace_hopper(), SETTINGS, embeddings=False)[0]
    zone = face_zone([face], enhanced.shape)
    assert np.array_equal(enhanced[~zone], swapped[~zone])
    x1, y1, x2, y2 = face.bbox.astype(int)
    assert np.abs(enhanced[y1:y2, x1:x2].astype(int) - swapped[y1:y2, x1:x2].astype(int)).mean() > 2


class CountedSwapper(MeshWarpSwapper):
    """The embedded swapper, its source preparation counted and held until ``go`` is set."""

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        super().__init__(settings, runtime)
        self.calls = 0
        self.inside = threading.Event()
        self.go = threading.Event()
        self.asked = threading.Event()

    def prepare(self, sources: SourceIdentity) -> WarpSource:
        if threading.current_thread() is not threading.main_thread():
            self.asked.set()
        return super().prepare(sources)

    def prepare_source(self, sources: SourceIdentity) -> WarpSource:
        self.calls += 1
        self.inside.set()
        assert self.go.wait(30)
        return super().prepare_source(sources)


def test_workers_asking_at_once_prepare_the_source_once(shared_runtime: ModelRuntime, astronaut_path: Path) -> None:
    """At a video's start every frame worker asks for the source at once: one prepares it, the others take
    its result (they used to prepare it again beside it, on the cores the first frames wait for)."""
    swapper = CountedSwapper(SETTINGS, shared_runtime)
    sources = load_sources([astronaut_path], FaceAnalyser(shared_runtime), SETTINGS)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(swapper.prepare, sources)
        assert swapper.inside.wait(30)
        swapper.asked.clear()
        second = pool.submit(swapper.prepare, sources)
        assert swapper.asked.wait(30)
        swapper.go.set()
        assert first.result() is second.result()
    assert swapper.calls == 1
    assert swapper.prepare(sources) is first.result()

"""Every ONNX model family through a stand-in built with onnx.helper in the real model's signature.

The expected values are hand computations from the published contracts (templates as fractions of the
crop, mean/std, channel order, source path), written here independently of the processors' tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from skimage.transform import SimilarityTransform

from facefusion_ui.faces.detector_families import detect_onnx
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.landmarker_fan import landmarks_2dfan4, landmarks_68_from_5
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceFace, SourceIdentity
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.enhancer_families import ENHANCER_CONTRACTS
from facefusion_ui.processors.face_enhancer import FaceEnhancer
from facefusion_ui.processors.face_swapper import FaceSwapper
from facefusion_ui.processors.latent_swapper import LatentSwapper
from facefusion_ui.processors.swapper_families import SWAPPER_CONTRACTS, explode, implode
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FaceEnhancerModel, FaceSwapperModel, choices
from tests.support import onnx_models

# FaceFusion's published templates (fractions of the crop side) and normalisations, copied by hand
TEMPLATES = {
    "arcface_112_v1": [[0.35473214, 0.45658929], [0.64526786, 0.45658929], [0.5, 0.61154464],
                       [0.37913393, 0.776875], [0.62086607, 0.776875]],
    "arcface_112_v2": [[0.34191607, 0.46157411], [0.65653393, 0.45983393], [0.500225, 0.64050536],
                       [0.37097589, 0.82469196], [0.63151696, 0.82325089]],
    "arcface_128": [[0.36167656, 0.40387734], [0.63696719, 0.40235469], [0.50019687, 0.56044219],
                    [0.38710391, 0.72160547], [0.61507734, 0.72034453]],
    "ffhq_512": [[0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
                 [0.39308822, 0.725411], [0.61150205, 0.72490465]],
    "mtcnn_512": [[0.36562865, 0.46733799], [0.63305391, 0.46585885], [0.50019127, 0.61942959],
                  [0.39032951, 0.77598822], [0.61178945, 0.77476328]],
}  # fmt: skip
HALF, ZERO, ONE = (0.5,) * 3, (0.0,) * 3, (1.0,) * 3
# model: template, size, mean, std, output denormalised, source ("emb" kinds or "crop" template/size)
SWAPPERS = {
    "hyperswap_1a_256": ("arcface_128", 256, HALF, HALF, True, "normed"),
    "hyperswap_1b_256": ("arcface_128", 256, HALF, HALF, True, "normed"),
    "hyperswap_1c_256": ("arcface_128", 256, HALF, HALF, True, "normed"),
    "inswapper_128": ("arcface_128", 128, ZERO, ONE, False, "emap"),
    "inswapper_128_fp16": ("arcface_128", 128, ZERO, ONE, False, "emap"),
    "simswap_256": ("arcface_112_v1", 256, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), False, "conv_normed"),
    "simswap_unofficial_512": ("arcface_112_v1", 512, ZERO, ONE, False, "conv_normed"),
    "ghost_1_256": ("arcface_112_v1", 256, HALF, HALF, True, "conv"),
    "ghost_2_256": ("arcface_112_v1", 256, HALF, HALF, True, "conv"),
    "ghost_3_256": ("arcface_112_v1", 256, HALF, HALF, True, "conv"),
    "blendswap_256": ("ffhq_512", 256, ZERO, ONE, False, ("arcface_112_v2", 112)),
    "uniface_256": ("ffhq_512", 256, HALF, HALF, True, ("ffhq_512", 256)),
    "hififace_unofficial_256": ("mtcnn_512", 256, HALF, HALF, True, "conv_normed"),
}
CONVERTERS = {"simswap": "crossface_simswap", "ghost": "crossface_ghost", "hififace": "crossface_hififace"}
KPS = np.array([[84.0, 98.0], [124.0, 97.0], [104.0, 120.0], [89.0, 140.0], [121.0, 139.0]], np.float32)


def textured(height: int = 220, width: int = 220, seed: int = 3) -> np.ndarray:
    """A smooth picture whose three channels differ (a channel swap shows)."""
    noise = np.random.default_rng(seed).uniform(0, 255, size=(height // 8, width // 8, 3)).astype(np.float32)
    image = cv2.resize(noise, (width, height), interpolation=cv2.INTER_CUBIC)
    image[..., 0] = image[..., 0] * 0.5  # blue darker, red untouched: channels are not interchangeable
    return np.clip(image, 0, 255).astype(np.uint8)


def similarity(kps: np.ndarray, target: np.ndarray, method: str = "least_squares") -> np.ndarray:
    """The reference fits: scikit-image's least-squares similarity (insightface's ``estimate_norm``), or
    OpenCV's LMEDS (facexlib's, the enhancers')."""
    if method == "lmeds":
        return np.asarray(cv2.estimateAffinePartial2D(kps, target, method=cv2.LMEDS)[0])
    return np.asarray(SimilarityTransform.from_estimate(kps, target).params[:2])


def align(
    image: np.ndarray, kps: np.ndarray, template: str, size: int, method: str = "least_squares"
) -> tuple[np.ndarray, np.ndarray]:
    target = np.array(TEMPLATES[template], np.float32) * size
    matrix = similarity(kps, target, method)
    crop = cv2.warpAffine(image, matrix, (size, size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)
    return crop, matrix


def face_at(kps: np.ndarray) -> Face:
    box = np.array([kps[:, 0].min() - 30, kps[:, 1].min() - 40, kps[:, 0].max() + 30, kps[:, 1].max() + 30])
    return Face(bbox=box.astype(np.float32), score=0.9, kps=kps, detector="test")


def source_identity(image: np.ndarray) -> SourceIdentity:
    return SourceIdentity(faces=(SourceFace("source.png", image, face_at(KPS), "hash"),), key="source")


def runtime_for(folder: Path) -> ModelRuntime:
    return ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))


def install_swapper(folder: Path, model: str) -> None:
    _template, size, *_, source = SWAPPERS[model]
    file = load_manifest(folder=folder)[model].file
    assert file is not None
    if model.startswith("inswapper"):
        onnx_models.build_inswapper(folder / file)
        return
    shape = [1, 3, source[1], source[1]] if isinstance(source, tuple) else [1, 512]
    onnx_models.build_family_swapper(folder / file, size, shape)
    family = SWAPPER_CONTRACTS[model].family
    if family in CONVERTERS:
        onnx_models.build_converter(folder / f"{CONVERTERS[family]}.onnx")


def expected_source(model: str, runtime: ModelRuntime, image: np.ndarray) -> np.ndarray:
    """What the ``source`` input must be, by hand."""
    value: np.ndarray = _expected_source(model, runtime, image)
    return value


def _expected_source(model: str, runtime: ModelRuntime, image: np.ndarray) -> Any:
    source = SWAPPERS[model][5]
    if isinstance(source, tuple):
        crop, _ = align(image, KPS, source[0], source[1])
        return (crop[:, :, ::-1].astype(np.float32) / 255.0).mean(axis=(0, 1)).reshape(1, 3)
    from facefusion_ui.faces.recognizer import embed_arcface

    spec, session = runtime.onnx_session("arcface_w600k_r50")
    raw = embed_arcface(image, face_at(KPS), session, spec).reshape(1, -1)
    if source == "normed":
        return raw / np.linalg.norm(raw)
    if source == "emap":
        latent = (raw / np.linalg.norm(raw)) @ onnx_models.swapper_emap()
        return latent / np.linalg.norm(latent)
    converted = raw @ onnx_models.converter_matrix()
    return converted / np.linalg.norm(converted) if source == "conv_normed" else converted


def expected_crop(
    model: str, frame: np.ndarray, source_value: np.ndarray, boost: int | None, matrix: np.ndarray
) -> np.ndarray:
    """What the swapper gives on the crop ``matrix`` warps (checked against the reference fit first: a
    difference of 1e-5 in the matrix moves a pixel by one level, which ImageNet's std makes 5)."""
    template, size, mean, std, denormalise, source = SWAPPERS[model]
    _, reference = align(frame, KPS, template, boost or size)
    np.testing.assert_allclose(matrix, reference, atol=1e-3)
    side = boost or size
    crop = cv2.warpAffine(frame, matrix, (side, side), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)
    rgb = crop[:, :, ::-1].astype(np.float32) / 255.0
    normalised = (rgb - np.array(mean, np.float32)) / np.array(std, np.float32)
    if isinstance(source, tuple):
        shift = source_value.reshape(3) * onnx_models.SOURCE_CROP_GAIN
    else:
        shift = (source_value @ onnx_models.swapper_colour_matrix()).reshape(3)
    output = normalised + shift
    if model.startswith("inswapper"):
        output = np.clip(output, 0, 1)  # the inswapper stand-in clips inside the graph
    if denormalise:
        output = output * np.array(std, np.float32) + np.array(mean, np.float32)
    return (np.clip(output, 0, 1) * 255 + 0.5).astype(np.uint8)[:, :, ::-1]


def test_every_swapper_choice_has_a_contract_and_a_catalog_entry() -> None:
    manifest = load_manifest()
    assert set(choices(FaceSwapperModel)) == {"mesh_warp", *SWAPPER_CONTRACTS} == {"mesh_warp", *SWAPPERS}
    assert set(choices(FaceEnhancerModel)) == set(ENHANCER_CONTRACTS)
    for model, contract in SWAPPER_CONTRACTS.items():
        spec = manifest[model]
        assert spec.role == "swapper" and spec.family == contract.family
        assert spec.input_size == (contract.size, contract.size) and spec.template == contract.template
        assert contract.converter is None or contract.converter in spec.requires
    for model, enhancer in ENHANCER_CONTRACTS.items():
        assert manifest[model].input_size == (enhancer.size, enhancer.size)


@pytest.mark.parametrize("model", sorted(SWAPPERS))
def test_swapper_family_crop_normalisation_source_and_paste_back(onnx_models: Path, model: str) -> None:
    install_swapper(onnx_models, model)
    runtime = runtime_for(onnx_models)
    settings = Settings(face_swapper_model=model)  # type: ignore[arg-type]
    swapper = FaceSwapper(settings, runtime)
    assert isinstance(swapper, LatentSwapper)  # the entry point makes the ONNX kind for an ONNX model
    assert swapper.pre_check() == []
    source_image, frame = textured(seed=5), textured(seed=9)
    prepared = swapper.prepare(source_identity(source_image))
    source_value = expected_source(model, runtime, source_image)
    assert prepared.latent is not None
    if isinstance(SWAPPERS[model][5], tuple):  # the model receives the crop; its graph averages it
        pooled = prepared.latent.reshape(3, -1).mean(axis=1).reshape(1, 3)
        np.testing.assert_allclose(pooled, source_value, atol=1e-5)
    else:
        np.testing.assert_allclose(prepared.latent.reshape(1, -1), source_value, rtol=1e-4, atol=1e-5)
    from facefusion_ui.processors.swapper_families import swap_crop

    _, session = runtime.onnx_session(model)
    crop, matrix = swap_crop(session, SWAPPER_CONTRACTS[model], frame, KPS, prepared.latent, None)
    expected = expected_crop(model, frame, source_value, None, matrix)
    assert crop.shape == expected.shape
    assert np.abs(crop.astype(int) - expected.astype(int)).max() <= 1
    # paste-back: the crop lands where the alignment says (the nose of the crop sits on the frame's nose)
    swapped = swapper.swap_face(frame, face_at(KPS), prepared, settings)
    assert swapped is not None
    nose = cv2.transform(KPS[None, 2:3], matrix)[0, 0]
    x, y = round(KPS[2, 0]), round(KPS[2, 1])
    assert np.abs(swapped[y, x].astype(int) - crop[round(nose[1]), round(nose[0])].astype(int)).max() <= 12
    changed = np.argwhere(np.any(swapped != frame, axis=2))
    corners = cv2.transform(np.array([[[0, 0], [crop.shape[1], 0], [0, crop.shape[0]], [crop.shape[1]] * 2]],
                                     np.float32), cv2.invertAffineTransform(matrix))[0]  # fmt: skip
    assert changed[:, 1].min() >= corners[:, 0].min() - 1 and changed[:, 1].max() <= corners[:, 0].max() + 1
    assert changed[:, 0].min() >= corners[:, 1].min() - 1 and changed[:, 0].max() <= corners[:, 1].max() + 1


@pytest.mark.parametrize("model,boost", [("hyperswap_1a_256", 512), ("inswapper_128", 384), ("simswap_256", 1024)])
def test_pixel_boost_runs_the_model_on_interleaved_tiles(onnx_models: Path, model: str, boost: int) -> None:
    install_swapper(onnx_models, model)
    runtime = runtime_for(onnx_models)
    settings = Settings(face_swapper_model=model, face_swapper_pixel_boost=boost)  # type: ignore[arg-type]
    swapper = FaceSwapper(settings, runtime)
    assert isinstance(swapper, LatentSwapper)  # the entry point makes the ONNX kind for an ONNX model
    assert swapper.pre_check() == []
    prepared = swapper.prepare(source_identity(textured(seed=5)))
    from facefusion_ui.processors.swapper_families import swap_crop

    _, session = runtime.onnx_session(model)
    frame = textured(seed=9)
    assert prepared.latent is not None
    crop, matrix = swap_crop(session, SWAPPER_CONTRACTS[model], frame, KPS, prepared.latent, boost)
    source_value = expected_source(model, runtime, textured(seed=5))
    expected = expected_crop(model, frame, source_value, boost, matrix)  # the stand-in is per pixel: tiles agree
    assert crop.shape == (boost, boost, 3)
    assert np.abs(crop.astype(int) - expected.astype(int)).max() <= 1


def test_tiles_interleave_and_weave_back() -> None:
    crop = np.arange(6 * 6 * 3, dtype=np.uint8).reshape(6, 6, 3)
    tiles = implode(crop, 3)
    assert len(tiles) == 9 and tiles[0].shape == (2, 2, 3)
    assert np.array_equal(tiles[1], crop[0::3, 1::3]) and np.array_equal(tiles[3], crop[1::3, 0::3])
    assert np.array_equal(explode(tiles, 3), crop)


def test_a_boost_that_is_not_a_multiple_is_a_clear_problem(onnx_models: Path) -> None:
    install_swapper(onnx_models, "hyperswap_1a_256")
    settings = Settings(face_swapper_model="hyperswap_1a_256", face_swapper_pixel_boost=384)
    problems = FaceSwapper(settings, runtime_for(onnx_models)).pre_check()
    assert problems == ["pixel boost 384 does not suit hyperswap_1a_256 (256 px): choose 256, 512, 768, 1024"]


@pytest.mark.parametrize("model", ["hyperswap_1a_256", "inswapper_128"])
def test_several_source_photos_are_averaged_as_each_familys_authors_do(onnx_models: Path, model: str) -> None:
    """HyperSwap (FaceFusion's own model): the mean of the photos' normed embeddings as it is, its norm
    under 1 (FaceFusion's average face, ``embedding_norm``); inswapper: that mean times emap, normed
    (insightface's INSwapper normalises the latent)."""
    install_swapper(onnx_models, model)
    runtime = runtime_for(onnx_models)
    swapper = FaceSwapper(Settings(face_swapper_model=model), runtime)  # type: ignore[arg-type]
    assert isinstance(swapper, LatentSwapper)
    images = [textured(seed=5), textured(seed=21)]
    faces = tuple(SourceFace(f"source{i}.png", image, face_at(KPS), f"hash{i}") for i, image in enumerate(images))
    prepared = swapper.prepare(SourceIdentity(faces=faces, key="sources"))
    from facefusion_ui.faces.recognizer import embed_arcface

    spec, session = runtime.onnx_session("arcface_w600k_r50")
    raw = [embed_arcface(image, face_at(KPS), session, spec) for image in images]
    mean = np.mean([vector / np.linalg.norm(vector) for vector in raw], axis=0).reshape(1, -1)
    assert np.linalg.norm(mean) < 0.999  # the two photos differ
    if model.startswith("hyperswap"):
        expected = mean
    else:
        from tests.support.onnx_models import swapper_emap

        latent = mean @ swapper_emap()
        expected = latent / np.linalg.norm(latent)
    assert prepared.latent is not None
    np.testing.assert_allclose(prepared.latent.reshape(1, -1), expected, rtol=1e-4, atol=1e-6)


def test_a_missing_converter_is_named_with_its_command(onnx_models: Path) -> None:
    install_swapper(onnx_models, "ghost_1_256")
    (onnx_models / "crossface_ghost.onnx").unlink()
    swapper = FaceSwapper(Settings(face_swapper_model="ghost_1_256"), runtime_for(onnx_models))
    assert swapper.required_models() == ("ghost_1_256", "arcface_w600k_r50", "crossface_ghost")
    assert swapper.pre_check() == [
        "model 'crossface_ghost' is not downloaded: run 'python run.py models download crossface_ghost'"
    ]


# enhancers -------------------------------------------------------------------------------------------------
ENHANCERS = {  # model: template, size (every enhancer: RGB in [-1, 1] both ways)
    "codeformer": ("ffhq_512", 512),
    "gfpgan_1.2": ("ffhq_512", 512),
    "gfpgan_1.3": ("ffhq_512", 512),
    "gfpgan_1.4": ("ffhq_512", 512),
    "gpen_bfr_256": ("arcface_128", 256),
    "gpen_bfr_512": ("ffhq_512", 512),
    "gpen_bfr_1024": ("ffhq_512", 1024),
    "restoreformer_plus_plus": ("ffhq_512", 512),
}


@pytest.mark.parametrize("model", sorted(ENHANCERS))
def test_enhancer_family_crop_range_and_weight(tmp_path: Path, model: str) -> None:
    template, size = ENHANCERS[model]
    weight = 0.7
    onnx_models.build_enhancer(tmp_path / f"{model}.onnx", size, gain=0.9, with_weight=model == "codeformer")
    settings = Settings(face_enhancer_model=model, face_enhancer_weight=weight)  # type: ignore[arg-type]
    enhancer = FaceEnhancer(settings, runtime_for(tmp_path))
    assert enhancer.pre_check() == []
    frame = textured(seed=11)
    crop, _ = align(frame, KPS, template, size, "lmeds")
    gain = 0.9 * (weight if model == "codeformer" else 1.0)
    rgb = crop[:, :, ::-1].astype(np.float32) / 255.0
    expected = (np.clip(((rgb - 0.5) / 0.5 * gain) * 0.5 + 0.5, 0, 1) * 255 + 0.5).astype(np.uint8)[:, :, ::-1]
    got = enhancer.enhance_crop(crop)
    assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1


def test_gpen_2048_is_in_the_table() -> None:
    assert ENHANCER_CONTRACTS["gpen_bfr_2048"].size == 2048  # too big to build in a test: checked as data


# detectors and landmarkers ---------------------------------------------------------------------------------
def yolo_output(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One face at a known place among 8400 candidates of a 640 input: box, score, keypoints."""
    output = np.zeros((1, 20, 8400), np.float32)
    box = np.array([320.0, 200.0, 100.0, 120.0])  # centre x, y, width, height
    kps = np.array([[300, 190], [340, 190], [320, 210], [305, 235], [335, 235]], np.float32)
    output[0, 0:4, 1234] = box
    output[0, 4, 1234] = 0.9
    output[0, 5:20, 1234] = np.concatenate([kps, np.ones((5, 1), np.float32)], axis=1).reshape(-1)
    output[0, 4, 10] = 0.2  # below the threshold
    return output, box, kps


def test_yoloface_decoding_back_to_the_frame(tmp_path: Path) -> None:
    output, box, kps = yolo_output(640)
    path = onnx_models.build_constant_outputs(tmp_path / "yoloface_8n.onnx", [1, 3, 640, 640], {"output": output})
    session = runtime_for(tmp_path).sessions.get("yoloface_8n", path, "fp32")
    frame = np.zeros((960, 1280, 3), np.uint8)  # letterboxed at half scale
    found = detect_onnx("yoloface_8n", frame, session, 640, 0.5)
    assert len(found) == 1
    expected_box = np.array([box[0] - box[2] / 2, box[1] - box[3] / 2, box[0] + box[2] / 2, box[1] + box[3] / 2]) * 2
    np.testing.assert_allclose(found[0].bbox, expected_box, atol=1e-3)
    assert found[0].kps is not None
    np.testing.assert_allclose(found[0].kps, kps * 2, atol=1e-3)
    assert found[0].score == pytest.approx(0.9)


def yunet_outputs(size: int) -> dict[str, np.ndarray]:
    outputs: dict[str, np.ndarray] = {}
    for kind, width in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10)):
        for stride in (8, 16, 32):
            cells = (size // stride) ** 2
            outputs[f"{kind}_{stride}"] = np.zeros((1, cells, width), np.float32)
    cell = 5 * (size // 16) + 7  # row 5, column 7 of the stride-16 grid: centre (112, 80)
    outputs["cls_16"][0, cell] = 0.9
    outputs["obj_16"][0, cell] = 0.8
    outputs["bbox_16"][0, cell] = [0.5, -0.25, np.log(4.0), np.log(5.0)]
    outputs["kps_16"][0, cell] = [-1, -1, 1, -1, 0, 0, -1, 1, 1, 1]
    return outputs


def test_yunet_decoding_scores_boxes_and_points(tmp_path: Path) -> None:
    path = onnx_models.build_constant_outputs(tmp_path / "yunet.onnx", [1, 3, 320, 320], yunet_outputs(320))
    session = runtime_for(tmp_path).sessions.get("yunet_2023_mar", path, "fp32")
    found = detect_onnx("yunet_2023_mar", np.zeros((320, 320, 3), np.uint8), session, 320, 0.5)
    assert len(found) == 1
    centre = np.array([112 + 0.5 * 16, 80 - 0.25 * 16])
    half = np.array([4 * 16, 5 * 16]) / 2
    np.testing.assert_allclose(found[0].bbox, np.concatenate([centre - half, centre + half]), atol=1e-3)
    assert found[0].score == pytest.approx(0.72)
    assert found[0].kps is not None
    np.testing.assert_allclose(found[0].kps[0], [112 - 16, 80 - 16], atol=1e-3)


def test_detector_input_channel_order_and_range(tmp_path: Path) -> None:
    """What each detector is fed for a pure red frame: the probe model returns the channel means."""
    from facefusion_ui.faces.detector_families import DETECTOR_CONTRACTS, detector_blob

    frame = np.zeros((64, 64, 3), np.uint8)
    frame[..., 2] = 255  # red in BGR
    path = onnx_models.build_mean_probe(tmp_path / "probe.onnx", [1, 3, 64, 64])
    session = runtime_for(tmp_path).sessions.get("probe", path, "fp32")
    expected = {
        "det_10g": [(255 - 127.5) / 128, -127.5 / 128, -127.5 / 128],  # RGB
        "scrfd_2.5g": [-127.5 / 128, -127.5 / 128, (255 - 127.5) / 128],  # BGR
        "yoloface_8n": [0.0, 0.0, 1.0],
        "yunet_2023_mar": [0.0, 0.0, 255.0],
    }
    for name, means in expected.items():
        got = session.run(None, {"input": detector_blob(frame, DETECTOR_CONTRACTS[name])})[0]
        np.testing.assert_allclose(got.reshape(-1), means, atol=1e-4, err_msg=name)


def test_2dfan4_points_map_back_through_the_crop(tmp_path: Path) -> None:
    grid = np.random.default_rng(2).uniform(10, 54, size=(1, 68, 3)).astype(np.float32)
    heatmaps = np.zeros((1, 68, 64, 64), np.float32)
    path = onnx_models.build_constant_outputs(
        tmp_path / "2dfan4.onnx", [1, 3, 256, 256], {"landmarks_xyscore": grid, "heatmaps": heatmaps}
    )
    session = runtime_for(tmp_path).sessions.get("2dfan4", path, "fp32")
    bbox = np.array([100.0, 50.0, 300.0, 290.0], np.float32)
    points, score = landmarks_2dfan4(np.zeros((400, 400, 3), np.uint8), bbox, session)
    scale = 195 / 240.0  # the longer side (240 px) becomes 195 px, centred in 256
    shift = (256 - (bbox[2:] + bbox[:2]) * scale) / 2
    np.testing.assert_allclose(points, (grid[0, :, :2] * 4 - shift) / scale, atol=1e-3)
    assert score == 0.0  # flat heatmaps
    # a face turned a quarter clockwise: the crop is turned back (90 degrees counter-clockwise) for the
    # model, so its point (u, v) is (256 - v, u) of the upright crop
    turned, _ = landmarks_2dfan4(np.zeros((400, 400, 3), np.uint8), bbox, session, angle=90)
    u, v = grid[0, :, 0] * 4, grid[0, :, 1] * 4
    np.testing.assert_allclose(turned, (np.stack([256 - v, u], axis=1) - shift) / scale, atol=1e-3)


def test_2dfan4_score_is_the_mean_heatmap_peak_read_onto_0_to_1(tmp_path: Path) -> None:
    heatmaps = np.zeros((1, 68, 64, 64), np.float32)
    heatmaps[0, :, 10, 20] = np.linspace(0.2, 0.7, 68)  # mean peak 0.45: half of 0.9
    heatmaps[0, :34, 30, 30] = 0.1  # not a peak
    path = onnx_models.build_constant_outputs(
        tmp_path / "2dfan4.onnx",
        [1, 3, 256, 256],
        {"landmarks_xyscore": np.zeros((1, 68, 3), np.float32), "heatmaps": heatmaps},
    )
    session = runtime_for(tmp_path).sessions.get("2dfan4", path, "fp32")
    _, score = landmarks_2dfan4(np.zeros((300, 300, 3), np.uint8), np.array([50, 50, 250, 250], np.float32), session)
    assert score == pytest.approx(0.5, abs=1e-5)


def test_2dfan4_angle_is_the_quarter_turn_of_the_eye_line() -> None:
    from facefusion_ui.faces.landmarker_fan import face_angle

    assert face_angle(None) == 0 and face_angle(KPS) == 0
    centre = KPS.mean(axis=0)
    for quarter, angle in ((1, 90), (2, 180), (3, 270)):
        turn = cv2.getRotationMatrix2D(tuple(float(c) for c in centre), -90.0 * quarter + 12, 1.0)  # clockwise, 12 off
        assert face_angle(cv2.transform(KPS[None], turn)[0]) == angle


def test_2dfan4_raises_the_contrast_of_dark_crops_only() -> None:
    """FaceFusion's conditional_optimize_contrast: Lab (converted as from RGB), CLAHE with clip limit 2 on
    L when its mean is under 30, and back; a brighter crop only makes the round trip."""
    from facefusion_ui.faces.landmarker_fan import optimise_contrast

    dark = (textured(seed=4).astype(np.float32) * 0.12).astype(np.uint8)
    lab = cv2.cvtColor(dark, cv2.COLOR_RGB2Lab)
    assert lab[:, :, 0].mean() < 30
    lab[:, :, 0] = cv2.createCLAHE(clipLimit=2.0).apply(lab[:, :, 0])
    np.testing.assert_array_equal(optimise_contrast(dark), cv2.cvtColor(lab, cv2.COLOR_Lab2RGB))
    assert optimise_contrast(dark).astype(int).std() > 1.3 * dark.astype(int).std()  # CLAHE spread it
    bright = textured(seed=4)
    round_trip = cv2.cvtColor(cv2.cvtColor(bright, cv2.COLOR_RGB2Lab), cv2.COLOR_Lab2RGB)
    np.testing.assert_array_equal(optimise_contrast(bright), round_trip)


def test_fan_68_5_works_in_the_unit_ffhq_frame(tmp_path: Path) -> None:
    unit = np.array(TEMPLATES["ffhq_512"], np.float32)
    answer = np.tile(unit, (14, 1))[:68][None]  # the model answers the template points, repeated
    path = onnx_models.build_constant_outputs(tmp_path / "fan_68_5.onnx", [1, 5, 2], {"landmarks": answer})
    session = runtime_for(tmp_path).sessions.get("fan_68_5", path, "fp32")
    points = landmarks_68_from_5(KPS, session)
    matrix = similarity(KPS, unit)
    by_hand = cv2.transform(answer, cv2.invertAffineTransform(matrix))[0]
    np.testing.assert_allclose(points, by_hand, atol=1e-3)
    np.testing.assert_allclose(points[:5], KPS, atol=2.0)  # the template lands on the face's own points


def test_the_arcface_template_is_insightfaces_own() -> None:
    from insightface.utils import face_align

    from facefusion_ui.faces.alignment import ARCFACE_112

    assert np.array_equal(ARCFACE_112, np.asarray(face_align.arcface_dst, dtype=np.float32))


def test_scrfd_anchors_follow_the_grid_the_outputs_have(tmp_path: Path) -> None:
    """At 336 px (not a multiple of 32) the stride-32 grid is 11 cells wide, not 336 // 32 = 10: a
    face in cell (8, 8) decoded on a 10-wide grid lands two rows down and two columns left."""
    path = onnx_models.build_scrfd(tmp_path / "det_10g.onnx")
    session = runtime_for(tmp_path).sessions.get("det_10g", path, "fp32")
    frame = np.zeros((336, 336, 3), np.uint8)
    frame[256:288, 256:288] = 255  # exactly cell (8, 8) of the stride-32 grid
    found = detect_onnx("det_10g", frame, session, 336, 0.5)
    assert found
    for detection in found:
        centre = (detection.bbox[:2] + detection.bbox[2:]) / 2
        assert np.all(centre >= 256 - 32) and np.all(centre <= 288 + 32), centre


def test_detector_sizes_are_those_the_networks_take() -> None:
    from facefusion_ui.errors import SettingsError

    assert Settings(face_detector_model="det_10g", face_detector_size=352).face_detector_size == 352
    with pytest.raises(SettingsError, match="a multiple of 32 from 128 to 2048"):
        Settings(face_detector_model="det_10g", face_detector_size=336)
    for model in ("yoloface_8n", "yunet_2023_mar"):
        assert Settings(face_detector_model=model).face_detector_size == 640
        with pytest.raises(SettingsError, match=f"640 only with face_detector_model {model}"):
            Settings(face_detector_model=model, face_detector_size=320)


# The model-backed maskers ------------------------------------------------------------------------------------
def soft_edged_by_hand(mask: np.ndarray) -> np.ndarray:
    """FaceFusion's finish of every model mask (face_masker.py)."""
    return (cv2.GaussianBlur(mask.clip(0, 1).astype(np.float32), (0, 0), 5).clip(0.5, 1) - 0.5) * 2


def halves(size: int = 300) -> np.ndarray:
    """Bright on the left, dark (something covering the face) on the right."""
    image = np.full((size, size, 3), 255, np.uint8)
    image[:, size // 2 :] = 20
    return image


@pytest.mark.parametrize("model", ["xseg_1", "xseg_3"])
def test_xseg_occluder_is_the_occlusion_mask_when_chosen(tmp_path: Path, model: str) -> None:
    from facefusion_ui.masks.model_maskers import XsegOcclusionMasker
    from facefusion_ui.masks.stage import MaskStage

    onnx_models.build_xseg(tmp_path / f"{model}.onnx")
    settings = Settings(face_mask_types=("occlusion",), face_occluder_model=model)  # type: ignore[arg-type]
    stage = MaskStage(settings, runtime_for(tmp_path))
    assert isinstance(stage.maskers[0], XsegOcclusionMasker) and stage.required_models() == (model,)
    frame = halves()
    matrix = np.array([[0.8, 0.1, 10.0], [-0.1, 0.8, 30.0]])
    got = stage.crop_mask(frame, face_at(KPS), matrix, 200)
    crop = cv2.warpAffine(frame, matrix, (200, 200), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    answer = (cv2.resize(crop, (256, 256)).astype(np.float32) / 255.0).mean(axis=2)
    np.testing.assert_allclose(got, soft_edged_by_hand(cv2.resize(answer, (200, 200))), atol=1e-4)
    assert got[100, 20] > 0.99 and got[100, 190] < 0.01  # the dark side is kept as the target's
    assert stage.counts()["occlusion_pixels"] > 0


def test_the_embedded_maskers_stay_the_default() -> None:
    from facefusion_ui.masks.maskers import RegionMasker
    from facefusion_ui.masks.occlusion import OcclusionMasker
    from facefusion_ui.masks.stage import MaskStage

    settings = Settings(face_mask_types=("occlusion", "region"))
    assert settings.face_occluder_model == "mediapipe" and settings.face_parser_model == "mediapipe"
    stage = MaskStage(settings, runtime_for(Path("/nonexistent")))
    assert [type(masker) for masker in stage.maskers] == [OcclusionMasker, RegionMasker]


def parsed_by_hand(frame: np.ndarray, regions: tuple[str, ...]) -> np.ndarray:
    """The stand-in's classes at 512 px (red: skin 1, blue: nose 10, else background 0), chosen, back."""
    rgb = cv2.resize(frame, (512, 512))[:, :, ::-1].astype(np.float32) / 255.0
    red, blue = (rgb[..., 0] - 0.485) / 0.229, (rgb[..., 2] - 0.406) / 0.225
    classes = np.where((red > 0) & (red >= blue), 1, np.where(blue > 0, 10, 0))
    chosen = np.isin(classes, [{"skin": 1, "nose": 10, "left-eye": 4}[region] for region in regions])
    return soft_edged_by_hand(cv2.resize(chosen.astype(np.float32), frame.shape[:2][::-1]))


def test_bisenet_parser_is_the_region_mask_when_chosen(tmp_path: Path) -> None:
    """Red parses as skin, blue as nose (the stand-in): the mask is 1 over the chosen regions, finished
    as FaceFusion finishes it."""
    from facefusion_ui.masks.model_maskers import ParserRegionMasker
    from facefusion_ui.masks.stage import MaskStage

    onnx_models.build_bisenet(tmp_path / "bisenet_resnet_34.onnx")
    frame = np.zeros((240, 240, 3), np.uint8)
    frame[:, :80, 2] = 255  # red (BGR): skin
    frame[:, 80:160, 0] = 255  # blue: nose; the rest black: background
    matrix = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    for regions, kept in ((("skin",), 80), (("skin", "nose"), 160), (("left-eye",), 0)):
        picked: Any = regions
        settings = Settings(
            face_mask_types=("region",), face_parser_model="bisenet_resnet_34", face_mask_regions=picked
        )
        stage = MaskStage(settings, runtime_for(tmp_path))
        assert isinstance(stage.maskers[0], ParserRegionMasker)
        assert stage.required_models() == ("bisenet_resnet_34",)
        got = stage.crop_mask(frame, face_at(KPS), matrix, 240)
        np.testing.assert_allclose(got, parsed_by_hand(frame, regions), atol=1e-4)
        assert got[120, kept + 20 :].max() < 0.01 and (kept == 0 or got[120, : kept - 20].min() > 0.99)

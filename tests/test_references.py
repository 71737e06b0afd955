"""Our model paths against the references themselves, run here on the same inputs and stand-in ONNX files:
insightface's alignment (``face_align.estimate_norm`` / ``norm_crop``), its ``ArcFaceONNX``, ``INSwapper``
and ``RetinaFace`` (the SCRFD decoder of ``model_zoo``), and FaceFusion's own fit (OpenCV's RANSAC with a
100 px threshold). The stand-ins are position-sensitive (see ``tests/support/onnx_models.py``): a crop
shifted by a pixel, a swapped channel or a wrong grid changes what they return.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from insightface.app.common import Face as InsightFace
from insightface.model_zoo.arcface_onnx import ArcFaceONNX
from insightface.model_zoo.inswapper import INSwapper
from insightface.model_zoo.retinaface import RetinaFace
from insightface.utils import face_align

from facefusion_ui.faces.alignment import estimate_matrix, template_points, warp_face
from facefusion_ui.faces.detector_families import detect_onnx
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.recognizer import embed_arcface
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import template_matrix, warp_points
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from tests.support import onnx_models

pytestmark = pytest.mark.filterwarnings("ignore:`estimate` is deprecated:FutureWarning")  # insightface's call
FACE_KPS = np.array([[84.0, 98.0], [124.0, 97.0], [104.0, 120.0], [89.0, 140.0], [121.0, 139.0]], np.float32)


def noisy_kps(count: int, seed: int = 0, spread: float = 3.0) -> list[np.ndarray]:
    """Five points as a detector gives them: the face's, each moved by a few pixels."""
    rng = np.random.default_rng(seed)
    return [(FACE_KPS + rng.normal(0, spread, FACE_KPS.shape)).astype(np.float32) for _ in range(count)]


def estimate_norm(kps: np.ndarray, size: int) -> np.ndarray:
    return np.asarray(face_align.estimate_norm(kps, size))


def mapped(matrix: np.ndarray, kps: np.ndarray) -> np.ndarray:
    return np.asarray(cv2.transform(kps[None].astype(np.float64), matrix)[0])


def textured(size: int = 256, seed: int = 3) -> np.ndarray:
    noise = np.random.default_rng(seed).uniform(0, 255, size=(size // 8, size // 8, 3)).astype(np.float32)
    image = cv2.resize(noise, (size, size), interpolation=cv2.INTER_CUBIC)
    image[..., 0] = image[..., 0] * 0.5  # the channels are not interchangeable
    return np.clip(image, 0, 255).astype(np.uint8)


# Alignment -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("template", "size"), [("arcface_112", 112), ("arcface_128", 128), ("arcface_128", 512)])
def test_five_point_fit_is_insightfaces_estimate_norm(template: Any, size: int) -> None:
    """On noisy points our matrix is insightface's (least squares) to rounding; LMEDS, what the crops
    used before, drops points as outliers and misses by pixels on some of them."""
    lmeds_misses = []
    for kps in noisy_kps(60):
        reference = estimate_norm(kps, size)
        np.testing.assert_allclose(mapped(estimate_matrix(kps, template, size), kps), mapped(reference, kps), atol=2e-3)
        lmeds = cv2.estimateAffinePartial2D(kps, template_points(template, size), method=cv2.LMEDS)[0]
        lmeds_misses.append(np.abs(mapped(lmeds, kps) - mapped(reference, kps)).max())
    assert max(lmeds_misses) > 1.0


@pytest.mark.parametrize("template", ["arcface_112_v1", "arcface_112_v2", "arcface_128", "ffhq_512", "mtcnn_512"])
def test_swapper_templates_fit_as_facefusion_fits_them(template: Any) -> None:
    """FaceFusion's ``estimate_matrix_by_face_landmark_5``: RANSAC with a 100 px threshold, so all five
    points count and the fit is refined to least squares; our closed form gives the same matrix."""
    for kps in noisy_kps(20, seed=1):
        facefusion = cv2.estimateAffinePartial2D(
            kps, warp_points(template, 256), method=cv2.RANSAC, ransacReprojThreshold=100
        )[0]
        np.testing.assert_allclose(mapped(template_matrix(kps, template, 256), kps), mapped(facefusion, kps), atol=2e-3)


def test_aligned_crop_is_insightfaces_norm_crop() -> None:
    image = textured()
    for kps in noisy_kps(5, seed=2):
        ours = cv2.warpAffine(image, estimate_matrix(kps, "arcface_112", 112), (112, 112), borderValue=0.0)
        assert np.abs(ours.astype(int) - face_align.norm_crop(image, kps, 112).astype(int)).max() <= 1


# The reference model classes on the stand-ins ----------------------------------------------------------------
def runtime_for(folder: Path) -> ModelRuntime:
    return ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))


def box_around(kps: np.ndarray) -> np.ndarray:
    return np.array([kps[:, 0].min() - 30, kps[:, 1].min() - 40, kps[:, 0].max() + 30, kps[:, 1].max() + 30])


def insight_face(kps: np.ndarray, embedding: np.ndarray | None = None) -> Any:
    return InsightFace(bbox=box_around(kps), kps=kps, det_score=0.9, embedding=embedding)


def our_face(kps: np.ndarray) -> Face:
    return Face(bbox=box_around(kps).astype(np.float32), score=0.9, kps=kps, detector="test")


def shifted(matrix: np.ndarray, dx: float) -> np.ndarray:
    moved: np.ndarray = matrix.copy()
    moved[0, 2] += dx
    return moved


def test_embedding_is_insightfaces_arcface_onnx(onnx_models: Path) -> None:
    """Same normalisation and channel order as ``ArcFaceONNX.get_feat`` on the same crop (to float
    rounding); through the whole path (its ``norm_crop`` is bilinear with a black border, ours FaceFusion's
    area-averaged, replicated crop) the embeddings differ by far less than a crop moved by one pixel."""
    reference = ArcFaceONNX(model_file=str(onnx_models / "arcface_w600k_r50.onnx"))
    spec, session = runtime_for(onnx_models).onnx_session("arcface_w600k_r50")
    image = textured()
    for kps in noisy_kps(4, seed=3):
        ours = embed_arcface(image, our_face(kps), session, spec)
        crop, matrix = warp_face(image, kps, "arcface_112", 112)
        np.testing.assert_allclose(ours, reference.get_feat(crop).reshape(-1), rtol=1e-5, atol=1e-5)
        theirs = reference.get(image, insight_face(kps))
        moved = reference.get_feat(cv2.warpAffine(image, shifted(matrix, 1.0), (112, 112))).reshape(-1)
        assert np.abs(ours - theirs).max() < np.abs(moved - theirs).max() / 4
        swapped = reference.get_feat(crop[:, :, ::-1]).reshape(-1)  # a channel swap is seen
        assert np.abs(ours - swapped).max() > 10 * np.abs(ours - theirs).max()


def test_inswapper_latent_crop_and_paste_are_insightfaces(onnx_models: Path) -> None:
    """``INSwapper.get`` on the same stand-in: the latent (normed embedding @ emap, normed), the aligned
    128 px crop the model returns, and the pasted face inside its outline (the masks' feathered edges
    differ by design: ours is FaceFusion's box mask)."""
    from facefusion_ui.faces.source import SourceFace, SourceIdentity
    from facefusion_ui.processors.face_swapper import FaceSwapper
    from facefusion_ui.processors.latent_swapper import LatentSwapper
    from facefusion_ui.processors.swapper_families import SWAPPER_CONTRACTS, swap_crop
    from facefusion_ui.state_manager import Settings

    runtime = runtime_for(onnx_models)
    reference = INSwapper(model_file=str(onnx_models / "inswapper_128.onnx"))
    source_image, frame = textured(seed=5), textured(seed=9)
    settings = Settings(face_swapper_model="inswapper_128", face_mask_blur=0.0)
    swapper = FaceSwapper(settings, runtime)
    assert isinstance(swapper, LatentSwapper)
    source = SourceIdentity(faces=(SourceFace("source.png", source_image, our_face(FACE_KPS), "hash"),), key="source")
    prepared = swapper.prepare(source)
    spec, arcface = runtime.onnx_session("arcface_w600k_r50")
    source_face = insight_face(FACE_KPS, embed_arcface(source_image, our_face(FACE_KPS), arcface, spec))
    latent = source_face.normed_embedding.reshape(1, -1) @ reference.emap
    np.testing.assert_allclose(prepared.latent.reshape(1, -1), latent / np.linalg.norm(latent), atol=1e-5)
    _, session = runtime.onnx_session("inswapper_128")
    for kps in noisy_kps(4, seed=0):  # seed 0: LMEDS, the fit before, misses by pixels on one of them
        crop, matrix = swap_crop(session, SWAPPER_CONTRACTS["inswapper_128"], frame, kps, prepared.latent, None)
        their_crop, their_matrix = reference.get(frame, insight_face(kps), source_face, paste_back=False)
        np.testing.assert_allclose(matrix, their_matrix, atol=1e-3)
        assert np.abs(crop.astype(int) - their_crop.astype(int)).max() <= 2  # area vs bilinear crop, rounding
        ours = swapper.swap_face(frame, our_face(kps), prepared, settings)
        theirs = reference.get(frame, insight_face(kps), source_face, paste_back=True)
        inside = cv2.fillConvexPoly(np.zeros(frame.shape[:2], np.uint8), cv2.convexHull(kps.astype(np.int32)), 1) > 0
        assert ours is not None and np.abs(ours[inside].astype(int) - theirs[inside].astype(int)).max() <= 3
        assert np.abs(ours[inside].astype(int) - frame[inside].astype(int)).max() > 20  # it did swap there


def blobs(height: int, width: int) -> np.ndarray:
    """Two bright, lopsided blobs (no two cells alike, so the scores have no ties) on black."""
    ys, xs = np.mgrid[:height, :width].astype(np.float32)
    light = np.exp(-(((xs - 190) / 38) ** 2) - ((ys - 150) / 52) ** 2) + 0.8 * np.exp(
        -(((xs - 455) / 30) ** 2) - ((ys - 330) / 24) ** 2
    )
    image = np.clip(light * (1.0 + 0.1 * xs / width + 0.05 * ys / height) * 255, 0, 255).astype(np.uint8)
    return np.repeat(image[..., None], 3, axis=2)


@pytest.mark.parametrize(("size", "frame_shape"), [(320, (480, 640)), (640, (480, 640)), (416, (600, 400))])
def test_scrfd_decoding_is_insightfaces_retinaface(tmp_path: Path, size: int, frame_shape: tuple[int, int]) -> None:
    """``RetinaFace.detect`` (insightface's SCRFD decoder) on the same stand-in and frame: the same boxes,
    scores and five points after the same non-maximum suppression (insightface's +1 pixel convention)."""
    path = onnx_models.build_scrfd(tmp_path / "det_10g.onnx")
    reference = RetinaFace(model_file=str(path))
    reference.prepare(-1, input_size=(size, size), det_thresh=0.5)
    frame = blobs(*frame_shape)
    their_boxes, their_points = reference.detect(frame)
    session = runtime_for(tmp_path).sessions.get("det_10g", path, "fp32")
    ours = detect_onnx("det_10g", frame, session, size, 0.5)
    assert len(their_boxes) > 3 and len(ours) == len(their_boxes)
    order = np.lexsort((their_boxes[:, 0], -their_boxes[:, 4]))
    mine = sorted(ours, key=lambda d: (-d.score, float(d.bbox[0])))
    np.testing.assert_allclose([d.score for d in mine], their_boxes[order, 4], atol=1e-5)
    np.testing.assert_allclose([d.bbox for d in mine], their_boxes[order, :4], atol=1e-3)
    np.testing.assert_allclose(np.stack([np.asarray(d.kps) for d in mine]), their_points[order], atol=1e-3)


def test_nms_counts_edge_pixels_as_insightface_does() -> None:
    """Small boxes, where the +1 matters: ours with ``pixel_edges`` keeps what insightface's ``nms`` keeps
    (the SCRFD and RetinaFace families); without it, as OpenCV counts, it keeps other boxes."""
    from types import SimpleNamespace

    from facefusion_ui.faces.detection import non_max_suppression

    rng = np.random.default_rng(6)
    corners = rng.uniform(0, 60, size=(300, 2))
    boxes = np.hstack([corners, corners + rng.uniform(2, 10, size=(300, 2))]).astype(np.float32)
    scores = (rng.permutation(300) / 300).astype(np.float32)
    theirs = RetinaFace.nms(SimpleNamespace(nms_thresh=0.4), np.hstack([boxes, scores[:, None]]))
    assert non_max_suppression(boxes, scores, 0.4, pixel_edges=True) == [int(i) for i in theirs]
    assert non_max_suppression(boxes, scores, 0.4) != [int(i) for i in theirs]

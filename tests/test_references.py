"""Our model paths against the references themselves, run here on the same inputs and stand-in ONNX files:
insightface's alignment (``face_align.estimate_norm`` / ``norm_crop``), its ``ArcFaceONNX``, ``INSwapper``
and ``RetinaFace`` (the SCRFD decoder of ``model_zoo``), and FaceFusion's own fit (OpenCV's RANSAC with a
100 px threshold). The stand-ins are position-sensitive (see ``tests/support/onnx_models.py``): a crop
shifted by a pixel, a swapped channel or a wrong grid changes what they return.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest
from insightface.utils import face_align

from facefusion_ui.faces.alignment import estimate_matrix, template_points
from facefusion_ui.faces.warp_templates import template_matrix, warp_points

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

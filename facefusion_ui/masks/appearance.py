"""What covers a face, told from the face's own appearance: a robust Gaussian of its skin colour, fitted
on patches the mesh knows are skin (forehead, cheeks, nose), and the features where the mesh puts them.
A pixel inside the face that fits neither (a cup, a microphone, a sleeve) is an occluder candidate.

Lightness is given more room than colour (shading and shadows change it more than skin does); the
lips may be redder and darker than the skin; the brows darker; the eyes and the mouth's opening are
taken as they are (small, and the whites of the eyes and the teeth fit no skin).
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.masks.mesh_parts import face_size, oval_polygon_mask, region_polygon_mask
from facefusion_ui.types import Frame, Mask, Points

SKIN_PATCHES = (151, 108, 337, 9, 50, 280, 101, 330, 205, 425, 197)
"""Mesh points at the middle of forehead, cheeks and nose bridge: skin on nearly every face (a hand or a
cup seldom covers all of them; the fit is robust to the ones covered)."""
PATCH_RADIUS = 0.05
"""Radius of each skin patch, as a share of the face's size."""
CHROMA_LIMIT = 3.5
"""Mahalanobis distance (in the a, b chroma plane) beyond which a pixel does not fit the skin."""
LIGHTNESS_LIMIT = 4.0
"""Robust spreads of lightness beyond which a pixel does not fit the skin (shading allowed for)."""
LIP_CHROMA_LIMIT = 8.0
"""The lips fit a looser chroma model: redder than the skin."""
SPREAD_FLOOR = np.array([6.0, 1.5, 1.5], dtype=np.float32)
"""Smallest spread (L, a, b): an evenly lit face would otherwise reject its own shading."""


def skin_samples(lab: np.ndarray, points: Points) -> np.ndarray:
    """The LAB pixels of the skin patches (n, 3)."""
    radius = max(2, int(face_size(points) * PATCH_RADIUS))
    patches = np.zeros(lab.shape[:2], dtype=np.uint8)
    for index in SKIN_PATCHES:
        x, y = points[index]
        cv2.circle(patches, (round(float(x)), round(float(y))), radius, 1, -1)
    return np.asarray(lab[patches > 0], dtype=np.float32)


def skin_distances(lab: np.ndarray, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pixel: the chroma's Mahalanobis distance to the skin, and the lightness's in robust spreads.

    Median and MAD first, then the covariance of the samples within 3 MADs of the median (those that are
    skin), so an occluder over some patches does not widen the model."""
    median = np.median(samples, axis=0)
    spread = np.maximum(np.median(np.abs(samples - median), axis=0) * 1.4826, SPREAD_FLOOR)
    inliers = samples[(np.abs(samples - median) <= 3 * spread).all(axis=1)]
    chroma = inliers[:, 1:] if len(inliers) >= 16 else samples[:, 1:]
    centre = chroma.mean(axis=0)
    covariance = np.cov(chroma, rowvar=False) + np.diag(SPREAD_FLOOR[1:] ** 2)
    inverse = np.linalg.inv(covariance).astype(np.float32)
    offset = lab[..., 1:] - centre.astype(np.float32)
    squared = (offset @ inverse * offset).sum(axis=-1)
    lightness = np.abs(lab[..., 0] - median[0]) / spread[0]
    return np.sqrt(np.maximum(squared, 0.0)), lightness


def occluder_candidates(image: Frame, points: Points) -> Mask:
    """1 where a pixel of ``image`` (BGR; ``points``: the face's mesh in it) fits neither the face's skin
    nor a feature the mesh puts there, 0 elsewhere (outside the face oval too)."""
    shape = image.shape[:2]
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    samples = skin_samples(lab, points)
    if len(samples) < 16:
        return np.zeros(shape, dtype=np.float32)
    chroma, lightness = skin_distances(lab, samples)
    skin = (chroma <= CHROMA_LIMIT) & (lightness <= LIGHTNESS_LIMIT)
    lips = region_polygon_mask(points, "upper-lip", shape) + region_polygon_mask(points, "lower-lip", shape) > 0
    lip_fit = lips & (chroma <= LIP_CHROMA_LIMIT) & (lab[..., 0] <= np.median(samples[:, 0]) + 20)
    brows = region_polygon_mask(points, "left-eyebrow", shape) + region_polygon_mask(points, "right-eyebrow", shape)
    brow_fit = (brows > 0) & (lab[..., 0] <= np.median(samples[:, 0]))
    openings = sum(region_polygon_mask(points, name, shape) for name in ("left-eye", "right-eye", "mouth"))
    face = oval_polygon_mask(points, shape) > 0
    fits = skin | lip_fit | brow_fit | (np.asarray(openings) > 0)
    return np.asarray(face & ~fits, dtype=np.float32)

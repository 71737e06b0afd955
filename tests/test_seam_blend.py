"""The multi-band seam blend on known geometry: exact where the weight is 0 or 1, and a softer edge
along the outline than the plain alpha blend."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.processors.seam_blend import (
    alpha_blend,
    gradient_magnitude,
    multiband_blend,
    pyramid_levels,
    seam_bands,
    seam_ratio,
)


def disc_case() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A flat grey target, a flat lighter patch, and a feathered disc as the weight."""
    target = np.full((200, 220, 3), 90, dtype=np.uint8)
    patch = np.full((200, 220, 3), 170, dtype=np.uint8)
    weight = np.zeros((200, 220), dtype=np.float32)
    cv2.circle(weight, (110, 100), 60, 1.0, -1)
    weight = np.clip(cv2.GaussianBlur(weight, (0, 0), 4) * 1.2 - 0.1, 0.0, 1.0)
    return target, patch, weight


def test_exact_where_the_weight_is_zero_or_one() -> None:
    target, patch, weight = disc_case()
    blended = multiband_blend(target, patch, weight)
    assert (blended[weight == 0] == 90).all()
    assert (blended[weight == 1] == 170).all()
    assert (weight == 0).any() and (weight == 1).any()


def test_the_seam_is_softer_than_the_alpha_blends() -> None:
    target, patch, weight = disc_case()
    border, _, _ = seam_bands(weight)
    multi = gradient_magnitude(multiband_blend(target, patch, weight))[border].mean()
    alpha = gradient_magnitude(alpha_blend(target, patch, weight))[border].mean()
    assert multi < 0.9 * alpha, (multi, alpha)


def test_pixels_beside_an_occluder_stay_the_targets() -> None:
    """A hole of weight 0 inside the face (a cup kept by the masks) is not leaked into."""
    rng = np.random.default_rng(3)
    target = rng.integers(0, 256, (160, 160, 3), dtype=np.uint8)
    patch = rng.integers(0, 256, (160, 160, 3), dtype=np.uint8)
    weight = np.zeros((160, 160), dtype=np.float32)
    cv2.circle(weight, (80, 80), 60, 1.0, -1)
    weight[90:120, 60:100] = 0.0
    weight = np.minimum(weight, cv2.GaussianBlur(weight, (0, 0), 3))
    blended = multiband_blend(target, patch, weight)
    assert (blended[weight == 0] == target[weight == 0]).all()


def test_seam_ratio_sees_an_edge_along_the_outline() -> None:
    rng = np.random.default_rng(5)
    texture = np.clip(128 + rng.normal(0, 6, (200, 220, 3)), 0, 255).astype(np.uint8)
    _, _, weight = disc_case()
    plain = seam_ratio(texture, weight)
    edged = texture.copy()
    edged[weight >= 0.5] = np.clip(edged[weight >= 0.5].astype(np.int16) + 40, 0, 255).astype(np.uint8)
    assert 0.8 < plain < 1.2
    assert seam_ratio(edged, weight) > 2 * plain
    assert np.isnan(seam_ratio(texture, np.zeros((200, 220), dtype=np.float32)))


def test_pyramid_levels_stop_at_small_bands() -> None:
    assert pyramid_levels(8, 8) == 0
    assert pyramid_levels(40, 300) == 2
    assert pyramid_levels(2000, 2000) == 5

"""The source photo's fine detail, for the embedded swapper: a soft or small source face (a low-resolution
crop, drawn larger onto the target) is sharpened until its fine detail reaches ``DETAIL_FLOOR``, so the
features that tell who it is (the lids, the brows, the lips' edges) come across as clearly as a sharp
photo's; a face already that sharp is left as it is. A turned one's skin is first quieted (``quieted``):
its faintest, finest detail is the photo's grain, which its near cheek, drawn large, showed as speckle.

Fine detail: the mean absolute difference between the face's greyscale and its Gaussian blur over
``DETAIL_SCALE`` of the face's size, inside the face's outline. A soft 92 px greyscale portrait measures
about 9, a sharp 200 px portrait of an older face about 18.
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.types import Frame, Mask

DETAIL_SCALE = 0.02
"""The blur (sigma, a share of the face's size) whose difference is the detail measured and sharpened."""
DETAIL_FLOOR = 20.0
"""The fine detail (grey levels) a source face is sharpened up to."""
MOST_SHARPENING = 1.5
"""The most the detail is multiplied by (1 + this): noise would follow beyond it."""
GRAIN_SIGMA = 0.6
"""The sharpening lifts the detail above this scale (a Gaussian's sigma, in pixels) only: the photo's grain
and JPEG noise below it were lifted too, speckled the swapped skin and, drawn at a slightly different place
each frame, made a still face shimmer (temporal change 0.73x the input's with it, 0.67x without)."""


FLAT_DETAIL = 4.0
"""Detail (grey levels) on the skin between the features (cheeks, forehead, chin) under this is lifted less,
none under half of it (``cored``): there it is mostly a small photo's noise, and lifted it came across
as grey speckle on the target's cheeks (Tom Hanks's 89 px greyscale face)."""
FEATURE_REACH = 0.03
"""How far (a Gaussian's sigma, a share of the face's size) round the features their detail is kept whole."""


def cored(detail: np.ndarray) -> np.ndarray:
    """``detail`` with what is fainter than ``FLAT_DETAIL`` faded out: none under half of it, all of it from
    ``FLAT_DETAIL`` on (an unsharp mask's threshold, softened so no edge shows)."""
    half = FLAT_DETAIL / 2.0
    return np.asarray(detail * np.clip((np.abs(detail) - half) / half, 0.0, 1.0), dtype=np.float32)


def masked_blur(grey: np.ndarray, inside: Mask, sigma: float) -> np.ndarray:
    """``grey`` blurred over ``sigma`` reading only the pixels ``inside`` weighs (the face, not what lies
    round it: the source's hair or background never reach the face through the sharpening)."""
    weight = np.asarray(inside, dtype=np.float32)
    spread = cv2.GaussianBlur(weight, (0, 0), sigma)
    return np.asarray(cv2.GaussianBlur(grey * weight, (0, 0), sigma) / np.maximum(spread, 1e-3), dtype=np.float32)


def sharpening(image: Frame, inside: Mask, face_size: float) -> float:
    """How much the face's fine detail (inside ``inside``, 0..1) is to be multiplied by, less 1: what
    brings it up to ``DETAIL_FLOOR``, at most ``MOST_SHARPENING``, 0 when it is that sharp already."""
    sigma = max(0.5, DETAIL_SCALE * face_size)
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    face = inside > 0.5
    if not face.any():
        return 0.0
    detail = float(np.abs(grey - masked_blur(grey, inside, sigma))[face].mean())
    if detail <= 0.0 or detail >= DETAIL_FLOOR:
        return 0.0
    return min(DETAIL_FLOOR / detail - 1.0, MOST_SHARPENING)


def sharpened(image: Frame, inside: Mask, face_size: float, amount: float, features: Mask | None = None) -> Frame:
    """``image`` (a crop round the source face; ``inside``: its outline, 0..1) with an unsharp mask of its
    lightness by ``amount`` (``sharpening``) inside the face, its grain left as it is (``GRAIN_SIGMA``); as it
    is where ``inside`` is 0. Away from ``features`` (0..1: eyes, brows, nose, lips) detail fainter than
    ``FLAT_DETAIL`` is not lifted (``cored``)."""
    if amount <= 0.0:
        return image
    sigma = max(0.5, DETAIL_SCALE * face_size)
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    # lightness only: the same lift on the three channels, no colour fringes; not the grain (GRAIN_SIGMA)
    detail = cv2.GaussianBlur(grey, (0, 0), GRAIN_SIGMA) - masked_blur(grey, inside, sigma)
    if features is not None:
        kept = np.minimum(
            cv2.GaussianBlur(features.astype(np.float32), (0, 0), max(1.0, FEATURE_REACH * face_size)), 1.0
        )
        detail = detail * kept + cored(detail) * (1.0 - kept)
    lift = detail * amount * (inside > 0)
    pixels = image.astype(np.float32) + cv2.merge([lift, lift, lift])
    return np.asarray(np.clip(pixels + 0.5, 0, 255), dtype=np.uint8)


QUIET_SIGMA = 1.0
"""The finest detail (lightness minus its blur over this many pixels) a turned soft or small source's skin
is quieted in (``quieted``): Tom Hanks's 89 px photo's grain, drawn larger on a target's near cheek, came
across as grey speckle."""
QUIET_THRESHOLD = 2.0
"""That detail is kept whole from this many times its median size on the skin (the photo's grain) on,
faded out below, none under half of it. At 3 the grain fell further (t1's cheeks 1.66x the target's fine
detail instead of 1.90x) but dlib put one more of t1's faces 0.01 past the source (2 of 6 carrying him)."""


def quieted(image: Frame, inside: Mask, features: Mask, face_size: float) -> Frame:
    """``image`` (a crop round a soft or small source face; ``inside``: its outline, 0..1) with the grain of
    its skin (away from ``features``, 0..1) taken out of its lightness: the finest detail (``QUIET_SIGMA``)
    fainter than ``QUIET_THRESHOLD`` times its median on the skin is faded out (soft thresholding: a wrinkle's
    or a feature's edge is far stronger and stays). The same change on the three channels: no colour."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    detail = grey - cv2.GaussianBlur(grey, (0, 0), QUIET_SIGMA)
    kept = np.minimum(cv2.GaussianBlur(features.astype(np.float32), (0, 0), max(1.0, FEATURE_REACH * face_size)), 1.0)
    skin = (inside > 0.5) & (kept < 0.5)
    if not skin.any():
        return image
    half = max(QUIET_THRESHOLD * float(np.median(np.abs(detail[skin]))), 1e-3) / 2.0
    faint = detail * (1.0 - np.clip((np.abs(detail) - half) / half, 0.0, 1.0))
    drop = faint * (1.0 - kept) * np.clip(inside, 0.0, 1.0)
    pixels = image.astype(np.float32) - cv2.merge([drop, drop, drop])
    return np.asarray(np.clip(pixels + 0.5, 0, 255), dtype=np.uint8)

"""The target's eyelids, for the embedded swapper: each narrow eye of the target is kept whole (its
opening, lids and lashes, from the mesh's eye contour), so that a shut, winking or cast-down eye keeps its
lid and no source iris is drawn into it.

An eye whose opening (lid to lid) is under ``SHUT`` of its width is narrow, shut or cast down: it is kept
with its lids ``SHUT_REACH`` of the eye's width round its contour. An open eye is the source's, lids and
lashes (a band there would cost likeness, and its edge would cross the lashes). The kept area is feathered
outward only, so no line shows where the source's skin starts. (Before, only the band round a narrow eye
was kept and its opening was the source's: a few pixels of the source's iris and white between the
target's lids moved the opening the mesh reads after the swap by up to 1.8 px on t1.jpg.)

The mesh's contour alone does not tell a cast-down eye: it wraps the lowered lid and its lashes as it would
an open eye (Jennifer Aniston's eyes on t1.jpg read 0.29 open, an open eye of the astronaut 0.32). So an eye
under ``LOOK_CLOSER`` whose mesh has irises is also counted narrow when no iris shows in the target's
picture (``iris_shows``): in an open eye the pupil is far darker than the skin round the eye or its
white is brighter and paler than that skin; in a cast-down one only lid (skin) and lashes are there.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from facefusion_ui.types import Frame, Mask, Points

SHUT = 0.18
"""An eye whose opening (its contour's area over its width squared, times 4/pi: the lid-to-lid height
of an ellipse, as a share of its width) is under this counts as narrow, shut or cast down."""
LOOK_CLOSER = 0.36
"""An eye opening under this (but over ``SHUT``) is looked at in the picture (``iris_shows``)."""
IRIS_DARK = 0.33
"""An iris shows when the darkest tenth of its disc inside the eye is under this share of the skin's
lightness round the eye (on t1.jpg and the packaged sources: open eyes 0.10-0.27, cast-down or squeezed
shut 0.38-0.52)."""
WHITE_SHOWS = 0.0
"""An eye whose pupil is not that dark (a small or soft photo) still shows when its opening has a white:
its brightest tenth brighter than the skin round it by more than the rest of the opening (outside the
iris) is as coloured as that skin (both as shares of the skin's: lightness, Lab chroma). A lowered lid
is skin, as coloured and no brighter (t1.jpg: -0.05 to -0.26 for cast-down, shut and squeezed eyes,
and for the astronaut's eyes shut by a mesh warp); an open eye's white is brighter and paler (0.06 to
0.41, the astronaut's 0.15 and 0.27)."""
UPSCALE = 4
"""The eye's area is read at this many times its size (an eye in a group photo is 20 px wide)."""
SHUT_REACH = 0.25
"""How far out of a shut eye's contour the target's lids and lashes are kept."""
FEATHER = 0.12
"""The band's fade (a share of the eye's width, the Gaussian's sigma)."""


def opening_ratio(contour: Points) -> float:
    """The eye's lid-to-lid height over its width, from its contour (as an ellipse of the same area)."""
    width = float(np.ptp(contour[:, 0])) or 1.0
    area = float(abs(cv2.contourArea(contour.astype(np.float32))))
    return 4.0 * area / (np.pi * width * width)


def iris_shows(image: Frame, contour: Points, centre: Points, radius: float) -> bool:
    """Whether an iris shows in ``image`` (BGR) inside the eye ``contour`` (pixels of ``image``): the
    darkest tenth of the disc (``centre``, ``radius``) inside the contour against the median lightness of
    the skin round the eye (the ring out to 2.5 radii beyond the contour), ``IRIS_DARK``; or, in a small or
    soft photo where the pupil is blurred, a white in the opening (``WHITE_SHOWS``), not a lowered lid."""
    reach = 2.5 * radius + 2.0
    low = np.floor(np.minimum(contour.min(axis=0), centre - reach)).astype(int)
    high = np.ceil(np.maximum(contour.max(axis=0), centre + reach)).astype(int)
    x1, y1 = max(int(low[0]), 0), max(int(low[1]), 0)
    x2, y2 = min(int(high[0]), image.shape[1]), min(int(high[1]), image.shape[0])
    if x2 - x1 < 2 or y2 - y1 < 2:
        return True
    crop = cv2.resize(image[y1:y2, x1:x2], None, fx=UPSCALE, fy=UPSCALE, interpolation=cv2.INTER_LINEAR)
    offset = np.array([x1, y1], dtype=np.float32)
    eye, disc, near = (np.zeros(crop.shape[:2], dtype=np.uint8) for _ in range(3))
    cv2.fillPoly(eye, [np.round((contour - offset) * UPSCALE).astype(np.int32)], 1)
    at = tuple(int(v) for v in np.round((centre - offset) * UPSCALE))
    cv2.circle(disc, at, max(1, round(radius * UPSCALE)), 1, -1)
    cv2.circle(near, at, max(1, round(reach * UPSCALE)), 1, -1)
    # each pixel's part: 0 none, 1 the skin round the eye, 2 the iris inside the eye, 3 the rest of the opening
    part = np.asarray(eye * (3 - disc) + (1 - eye) * near, dtype=np.uint8)
    sizes = cv2.calcHist([part], [0], None, [4], [0, 4]).ravel()
    if float(sizes[1:].min()) < 4:
        return True
    # read only where each test looks, by the count of each lightness value there: the same figures as
    # numpy's median and percentile of those pixels as float32
    lab = cv2.cvtColor(crop, cv2.COLOR_BGR2LAB)
    skin, iris, white = (value_counts(cv2.extractChannel(lab, 0), part, 4))[1:]
    skin_lightness = median_of_counts(skin)
    if percentile_of_counts(iris, 10) < IRIS_DARK * skin_lightness:
        return True
    brighter = percentile_of_counts(iris + white, 90) / max(skin_lightness, 1.0)
    coloured = median_of(chroma(lab[part == 3])) / max(median_of(chroma(lab[part == 1])), 1.0)
    return brighter - coloured > WHITE_SHOWS


def median_of(values: np.ndarray) -> float:
    """``np.median`` of ``values`` (float32, one dimension), the same figure (the mean of the two middle
    values in float32), without its overhead (a tenth of a millisecond a call)."""
    count = len(values)
    middle = np.partition(values, [(count - 1) // 2, count // 2])
    return float((np.float32(middle[(count - 1) // 2]) + np.float32(middle[count // 2])) / np.float32(2.0))


def value_counts(plane: np.ndarray, parts: np.ndarray, count: int) -> np.ndarray:
    """Per part (``parts``: 0 to ``count`` - 1 per pixel, uint8), how many pixels of ``plane`` (uint8) hold
    each value 0..255: (``count``, 256), in one pass over the pixels (a two-dimensional histogram)."""
    counts = cv2.calcHist([parts, plane], [0, 1], None, [count, 256], [0, count, 0, 256])
    return np.asarray(counts, dtype=np.int64)


def ranked_values(counts: np.ndarray, ranks: list[int]) -> list[np.float32]:
    """The values (as float32) at ``ranks`` (0 the smallest) of the pixels ``counts`` counts (``value_counts``)."""
    return [np.float32(value) for value in np.searchsorted(np.cumsum(counts), ranks, side="right")]


def median_of_counts(counts: np.ndarray) -> float:
    """``np.median`` (as float32) of the pixels ``counts`` counts (``value_counts``): the same figure."""
    total = int(counts.sum())
    low, high = ranked_values(counts, [(total - 1) // 2, total // 2])
    return float((low + high) / np.float32(2.0))


def percentile_of_counts(counts: np.ndarray, percent: int) -> float:
    """``np.percentile`` (linear, as float32) of the pixels ``counts`` counts (``value_counts``), the same
    figure: numpy's interpolation between the two nearest ranks, in float32 as numpy does it for an ``int``
    percent."""
    total = int(counts.sum())
    index = (total - 1) * (percent / 100)
    lower = min(math.floor(index), total - 1)
    low, high = ranked_values(counts, [lower, min(lower + 1, total - 1)])
    if index >= total - 1:
        return float(high)
    gamma = index - lower
    step = high - low
    return float(high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma)


def chroma(lab: np.ndarray) -> np.ndarray:
    """The Lab chroma (float32) of ``lab`` pixels (n, 3; uint8, a* and b* offset by 128)."""
    colour = lab[:, 1:].astype(np.float32) - 128.0
    return np.asarray(np.hypot(colour[:, 0], colour[:, 1]), dtype=np.float32)


def narrow(points: Points, contour: np.ndarray, iris: tuple[int, ...] | None, image: Frame | None) -> bool:
    """Whether the eye (``contour``: its point indices) is narrow, shut or cast down: its opening under
    ``SHUT``, or under ``LOOK_CLOSER`` with no iris showing in ``image`` (when it and the mesh's ``iris``
    points, centre first, are there)."""
    ratio = opening_ratio(points[contour])
    if ratio < SHUT:
        return True
    if ratio >= LOOK_CLOSER or image is None or iris is None or len(points) <= max(iris):
        return False
    centre = points[iris[0]].astype(np.float32)
    radius = float(np.linalg.norm(points[list(iris[1:])] - centre, axis=1).mean())
    return not iris_shows(image, points[contour].astype(np.float32), centre, radius)


def lid_band(
    points: Points,
    contours: tuple[np.ndarray, ...],
    region: tuple[int, int, int, int],
    image: Frame | None = None,
    irises: tuple[tuple[int, ...], ...] = (),
) -> Mask:
    """0..1 over ``region`` (x1, y1, x2, y2): 1 where the target's own eye region is kept (``points``: the
    mesh the face is drawn with; ``contours``: the point indices of each eye's contour; ``image``: the
    target's pixels over ``region``, and ``irises`` each eye's iris points, to tell a cast-down eye)."""
    x1, y1, x2, y2 = region
    band = np.zeros((y2 - y1, x2 - x1), dtype=np.float32)
    offset = np.array([x1, y1], dtype=np.float32)
    local = (points - offset).astype(np.float32)
    for index, contour in enumerate(contours):
        outline = local[contour]
        width = float(np.linalg.norm(outline.max(axis=0) - outline.min(axis=0))) or 1.0
        if not narrow(local, contour, irises[index] if index < len(irises) else None, image):
            continue
        reach = max(1, round(SHUT_REACH * width))
        eye = np.zeros_like(band)
        cv2.fillPoly(eye, [np.round(outline).astype(np.int32)], 1.0)
        grown = cv2.dilate(eye, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1)))
        # feathered outward only: the opening itself is wholly the target's
        kept = np.maximum(cv2.GaussianBlur(grown, (0, 0), max(1.0, FEATHER * width)), eye)
        band = np.maximum(band, kept)
    return band

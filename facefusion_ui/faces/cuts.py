"""Cuts between consecutive video frames, from a small grey copy of each: after a cut the face in view is
another shot's, and what was smoothed over the frames before must not pull it back."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.frames import FrameImage

CUT_SIZE = 32
"""Side of the grey copy (pixels): sensor noise and encoding averages out, a new shot does not."""
CUT_MEAN_DIFFERENCE = 20.0
"""Mean absolute difference (grey levels of 255) between the copies above which the shot changed."""
CUT_HISTOGRAM = 0.35
"""Share of the copies' grey-level histograms (16 bins) that moved above which the shot changed."""
HISTOGRAM_BINS = 16


STEP_SIZE = CUT_SIZE * 8
"""A frame larger than this is first brought to this side bilinearly: OpenCV's area average over a
fractional factor (720 / 32) takes 2.3 ms on a 720p frame, over a whole one (8) a twentieth of that; the
copy differs by a quarter of a grey level on average."""


def cut_thumbnail(image: FrameImage) -> np.ndarray:
    """The small grey copy of ``image`` that ``is_cut`` compares. A large frame is brought to ``STEP_SIZE``
    before it is made grey (a video frame before it is made BGR: the analysis of a face followed by its
    mesh converts no whole frame), and the copy is within a grey level of the one made grey first (at
    most 1 on every frame of a 720p talking head)."""
    large = min(image.width, image.height) > STEP_SIZE
    frame = image.resized_bgr(STEP_SIZE, STEP_SIZE) if large else image.bgr()
    grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    return np.asarray(cv2.resize(grey, (CUT_SIZE, CUT_SIZE), interpolation=cv2.INTER_AREA), dtype=np.uint8)


def histogram_change(first: np.ndarray, second: np.ndarray) -> float:
    """Half the L1 distance of the two copies' normalised histograms: 0 the same, 1 nothing in common."""
    bins = [np.bincount(copy.ravel() // (256 // HISTOGRAM_BINS), minlength=HISTOGRAM_BINS) for copy in (first, second)]
    return float(np.abs(bins[0] / first.size - bins[1] / second.size).sum() / 2)


def is_cut(previous: np.ndarray, current: np.ndarray) -> bool:
    """Whether two consecutive frames' copies (``cut_thumbnail``) belong to different shots."""
    difference = float(np.abs(previous.astype(np.int16) - current.astype(np.int16)).mean())
    return difference > CUT_MEAN_DIFFERENCE or histogram_change(previous, current) > CUT_HISTOGRAM

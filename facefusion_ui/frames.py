"""A frame as the pipeline's stages see it: full-size BGR on demand, and small BGR or grey copies for detection.

Video frames arrive as YUV planes (``video/yuv.py``) and most of them never need BGR at all (no face in
view); images arrive as BGR. Both give the stages the same two views.
"""

from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from facefusion_ui.faces.detection import fit_within
from facefusion_ui.types import Frame


class FrameImage(Protocol):
    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    def bgr(self) -> Frame:
        """The full-size BGR frame (made once, then shared)."""
        ...

    def bgr_region(self, region: tuple[int, int, int, int]) -> Frame:
        """The BGR pixels of ``region`` (x1, y1, x2, y2; even for a video frame), the same as that slice of
        ``bgr()``, made without converting the whole frame where it is not BGR yet. Read it, do not write."""
        ...

    def preview(self, max_side: int) -> tuple[Frame, float]:
        """A BGR copy whose longer side is at most ``max_side``, and its scale (preview / frame)."""
        ...

    def resized_bgr(self, width: int, height: int) -> Frame:
        """A BGR copy scaled bilinearly to ``width`` x ``height`` (a thumbnail; not the frame's aspect)."""
        ...

    def luma(self, max_side: int) -> tuple[Frame, float]:
        """The grey image (luma) whose longer side is at most ``max_side``, and its scale."""
        ...


class BgrImage:
    """A frame that is already BGR (images, extracted frame files)."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    @property
    def width(self) -> int:
        return int(self.frame.shape[1])

    @property
    def height(self) -> int:
        return int(self.frame.shape[0])

    def bgr(self) -> Frame:
        return self.frame

    def bgr_region(self, region: tuple[int, int, int, int]) -> Frame:
        x1, y1, x2, y2 = region
        return self.frame[y1:y2, x1:x2]

    def preview(self, max_side: int) -> tuple[Frame, float]:
        return fit_within(self.frame, max_side)

    def resized_bgr(self, width: int, height: int) -> Frame:
        return np.asarray(cv2.resize(self.frame, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.uint8)

    def luma(self, max_side: int) -> tuple[Frame, float]:
        small, scale = fit_within(self.frame, max_side)
        return np.asarray(cv2.cvtColor(small, cv2.COLOR_BGR2GRAY), dtype=np.uint8), scale

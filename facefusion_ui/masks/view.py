"""One face as the mask stage sees it: the target's pixels in the space the swapper pastes from (an
aligned crop, or a rectangle of the frame) and the face's mesh in that space."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_ui.faces.face import Face
from facefusion_ui.masks.box import CROP_BORDER
from facefusion_ui.types import Frame, Matrix, Points

Region = tuple[int, int, int, int]
"""x1, y1, x2, y2 of a rectangle of the frame."""


@dataclass(frozen=True, eq=False)
class FaceView:
    frame: Frame
    """The target frame, before anything is pasted on this face."""
    face: Face
    matrix: Matrix
    """The 2x3 affine map from frame pixels to the view's pixels."""
    shape: tuple[int, int]
    """Height and width of the view (and of every mask made for it)."""
    points: Points | None
    """The face's mesh points (468, and the irises) in the view's pixels; None where the mesh could not be made."""
    border: float
    """The least the box mask trims from each side, as a share of the side (see ``box_mask``)."""

    @functools.cached_property
    def image(self) -> Frame:
        """The target's pixels in the view."""
        height, width = self.shape
        warped = cv2.warpAffine(
            self.frame, self.matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        return np.asarray(warped, dtype=np.uint8)

    @property
    def frame_pixels_per_pixel(self) -> float:
        """How many frame pixels one view pixel stands for."""
        return 1.0 / (abs(float(np.linalg.det(self.matrix[:, :2]))) or 1.0)


def _mapped(points: Points | None, matrix: Matrix) -> Points | None:
    if points is None:
        return None
    return np.asarray(cv2.transform(np.asarray(points, dtype=np.float32)[None], matrix)[0], dtype=np.float32)


def crop_view(frame: Frame, face: Face, mesh: Points | None, matrix: Matrix, size: int) -> FaceView:
    """The view of an aligned ``size`` px crop (``matrix``: frame to crop; ``mesh`` in frame pixels)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    return FaceView(frame, face, matrix, (size, size), _mapped(mesh, matrix), CROP_BORDER)


def region_view(frame: Frame, face: Face, mesh: Points | None, region: Region) -> FaceView:
    """The view of a rectangle of the frame (the embedded swapper blends there): no border trimmed."""
    x1, y1, x2, y2 = region
    matrix = np.array([[1.0, 0.0, -x1], [0.0, 1.0, -y1]], dtype=np.float64)
    view = FaceView(frame, face, matrix, (y2 - y1, x2 - x1), _mapped(mesh, matrix), 0.0)
    view.__dict__["image"] = np.ascontiguousarray(frame[y1:y2, x1:x2])  # a plain slice: no warp needed
    return view

"""Paste-back masks as outlines in frame pixels (``OutliningProcessor.mask_outline``): a crop's mask traced
and mapped back through the crop's alignment, or the hull of a face's mesh."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.faces.alignment import TemplateName, estimate_matrix
from facefusion_ui.faces.face import Face
from facefusion_ui.masks.box import box_mask
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Mask, Matrix, Points


def crop_mask_outline(crop_mask: Mask, matrix: Matrix) -> list[Points]:
    """The outline of ``crop_mask`` (where it is at least one half), in the frame ``matrix`` aligned from."""
    contours, _ = cv2.findContours((crop_mask >= 0.5).astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    inverse = cv2.invertAffineTransform(matrix)
    return [cv2.transform(contour.reshape(1, -1, 2).astype(np.float32), inverse)[0] for contour in contours]


def box_outline(face: Face, template: TemplateName, size: int, settings: Settings) -> list[Points]:
    """The box mask's outline (padding and blur of ``settings``) on ``face`` aligned to ``template``."""
    matrix = estimate_matrix(face.kps, template, size)
    return crop_mask_outline(box_mask((size, size), settings.face_mask_padding, settings.face_mask_blur), matrix)


def mesh_outline(face: Face) -> list[Points]:
    """The convex hull of the face's mesh (none without a mesh)."""
    if face.mesh is None:
        return []
    hull: Points = np.asarray(cv2.convexHull(np.asarray(face.mesh.points, np.float32)), np.float32)
    return [hull.reshape(-1, 2)]

"""The geometric maskers: box, region, area (from the face mesh) and the mouth mask."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.box import box_mask
from facefusion_ui.masks.mesh_parts import area_polygon_mask, face_size, part_indices, region_polygon_mask
from facefusion_ui.masks.view import FaceView
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Mask, Points

EDGE_FEATHER = 0.03
"""The soft edge of a region or area mask, as a share of the face's size."""
MOUTH_REACH = 0.12
"""How far beyond the inner lip contour the mouth mask keeps the target, as a share of the mouth's
width: the lips' inner edges move with the speech."""


def feathered(mask: Mask, points: Points, share: float = EDGE_FEATHER) -> Mask:
    kernel = max(3, int(face_size(points) * share) | 1)
    return np.asarray(cv2.GaussianBlur(mask, (kernel, kernel), 0), dtype=np.float32)


class BoxMasker:
    """The paste-back rectangle, trimmed by ``face_mask_padding`` and feathered by ``face_mask_blur``."""

    name = "box"
    needs_mesh = False

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.padding = settings.face_mask_padding
        self.blur = settings.face_mask_blur

    def required_models(self) -> tuple[str, ...]:
        return ()

    def mask(self, view: FaceView) -> Mask:
        if view.border == 0 and not any(self.padding):
            return np.ones(view.shape, dtype=np.float32)  # nothing trimmed: nothing to fade
        return box_mask(view.shape, self.padding, self.blur, view.border)


class RegionMasker:
    """1 over the chosen face regions (``face_mask_regions``), from the mesh."""

    name = "region"
    needs_mesh = True

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.regions = settings.face_mask_regions

    def required_models(self) -> tuple[str, ...]:
        return ()

    def mask(self, view: FaceView) -> Mask:
        if view.points is None:
            return np.ones(view.shape, dtype=np.float32)
        parts = [region_polygon_mask(view.points, region, view.shape) for region in self.regions]
        return feathered(np.maximum.reduce(parts), view.points)


class AreaMasker:
    """1 over the chosen face areas (``face_mask_areas``), from the mesh."""

    name = "area"
    needs_mesh = True

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.areas = settings.face_mask_areas

    def required_models(self) -> tuple[str, ...]:
        return ()

    def mask(self, view: FaceView) -> Mask:
        if view.points is None:
            return np.ones(view.shape, dtype=np.float32)
        parts = [area_polygon_mask(view.points, area, view.shape) for area in self.areas]
        return feathered(np.maximum.reduce(parts), view.points)


def mouth_interior(points: Points, shape: tuple[int, int]) -> Mask:
    """1 over the mouth's opening and the inner edges of the lips, 0 elsewhere (not feathered)."""
    inner = points[list(part_indices()["lips-inner"])]
    width = float(inner[:, 0].max() - inner[:, 0].min())
    mask = np.zeros(shape, dtype=np.uint8)
    cv2.fillPoly(mask, [np.round(inner * 16).astype(np.int32)], 1, cv2.LINE_8, shift=4)
    reach = max(1, int(width * MOUTH_REACH))
    grown = cv2.dilate(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1)))
    return np.asarray(grown, dtype=np.float32)


class MouthMasker:
    """0 over the target's mouth interior (teeth, tongue, the lips' inner edges), so the target's own
    mouth and its motion stay; 1 elsewhere (``--mouth-mask``)."""

    name = "mouth"
    needs_mesh = True

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        pass

    def required_models(self) -> tuple[str, ...]:
        return ()

    def mask(self, view: FaceView) -> Mask:
        if view.points is None:
            return np.ones(view.shape, dtype=np.float32)
        return 1.0 - feathered(mouth_interior(view.points, view.shape), view.points, share=0.02)

"""The model-backed maskers: an XSeg occluder for the occlusion mask (``--face-occluder-model``) and a
BiSeNet face parser for the region mask (``--face-parser-model``), run on the view's pixels as FaceFusion
3.x runs them (``face_masker.py``: ``create_occlusion_mask``, ``create_region_mask``,
https://github.com/facefusion/facefusion/blob/master/facefusion/face_masker.py).

Both finish as FaceFusion does: the mask blurred (Gaussian, sigma 5 px) and its upper half stretched onto
0..1, so a pixel is kept only where the model is sure of it and the edge is soft.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.view import FaceView
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FaceMaskRegion, Frame, Mask

EDGE_SIGMA = 5.0
PARSER_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
PARSER_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
"""ImageNet's, on RGB in [0, 1]: what the BiSeNet parsers take."""
PARSER_CLASSES: Mapping[FaceMaskRegion, int] = {
    "skin": 1,
    "left-eyebrow": 2,
    "right-eyebrow": 3,
    "left-eye": 4,
    "right-eye": 5,
    "glasses": 6,
    "nose": 10,
    "mouth": 11,
    "upper-lip": 12,
    "lower-lip": 13,
}
"""The parser's class of each region (CelebAMask-HQ's labels, as FaceFusion's ``face_mask_region_set``)."""


def soft_edged(mask: np.ndarray) -> Mask:
    """FaceFusion's finish: ``(blur(mask, sigma 5).clip(0.5, 1) - 0.5) * 2``."""
    blurred = cv2.GaussianBlur(np.clip(mask, 0, 1).astype(np.float32), (0, 0), EDGE_SIGMA)
    return np.asarray((np.clip(blurred, 0.5, 1.0) - 0.5) * 2.0, dtype=np.float32)


def model_side(runtime: ModelRuntime, model: str, default: int) -> int:
    spec = runtime.resolve(model)
    return int(spec.input_size[0]) if spec.input_size else default


def xseg_mask(image: Frame, session: Any, side: int) -> Mask:
    """1 where XSeg sees the face, 0 over what covers it: the image resized to the model's side, BGR in
    [0, 1], NHWC; the 1 x side x side x 1 answer clipped to 0..1 and resized back."""
    blob = cv2.resize(image, (side, side))[None].astype(np.float32) / 255.0
    answer = np.asarray(session.run(None, {session.get_inputs()[0].name: blob})[0][0], dtype=np.float32)
    answer = answer.reshape(side, side)
    return soft_edged(cv2.resize(answer.clip(0, 1), image.shape[:2][::-1]))


def parsed_regions(image: Frame, session: Any, side: int, regions: Sequence[FaceMaskRegion]) -> Mask:
    """1 over the chosen regions: the image resized to the model's side, RGB in [0, 1], ImageNet-normalised,
    NCHW; each pixel's class the highest of the parser's scores."""
    rgb = cv2.resize(image, (side, side))[:, :, ::-1].astype(np.float32) / 255.0
    blob = np.ascontiguousarray(((rgb - PARSER_MEAN) / PARSER_STD).transpose(2, 0, 1)[None], dtype=np.float32)
    scores = np.asarray(session.run(None, {session.get_inputs()[0].name: blob})[0][0], dtype=np.float32)
    chosen = np.isin(scores.argmax(axis=0), [PARSER_CLASSES[region] for region in regions])
    return soft_edged(cv2.resize(chosen.astype(np.float32), image.shape[:2][::-1]))


class XsegOcclusionMasker:
    """The occlusion mask by an XSeg model (``face_occluder_model``)."""

    name = "occlusion"
    needs_mesh = False

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.model = settings.face_occluder_model
        self.runtime = runtime

    def required_models(self) -> tuple[str, ...]:
        return (self.model,)

    def mask(self, view: FaceView) -> Mask:
        _, session = self.runtime.onnx_session(self.model)
        return xseg_mask(view.image, session, model_side(self.runtime, self.model, 256))


class ParserRegionMasker:
    """The region mask (``face_mask_regions``) by a BiSeNet face parser (``face_parser_model``)."""

    name = "region"
    needs_mesh = False

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.model = settings.face_parser_model
        self.regions = settings.face_mask_regions
        self.runtime = runtime

    def required_models(self) -> tuple[str, ...]:
        return (self.model,)

    def mask(self, view: FaceView) -> Mask:
        _, session = self.runtime.onnx_session(self.model)
        return parsed_regions(view.image, session, model_side(self.runtime, self.model, 512), self.regions)

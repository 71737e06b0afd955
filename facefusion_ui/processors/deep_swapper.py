"""The deep swapper: a per-person DeepFaceLab model (a DeepFaceLive ``.dfm``, which is ONNX) puts its
person's face on the selected faces, as FaceFusion's ``deep_swapper/core.py`` runs it (``swap_face``,
``forward``, ``prepare_crop_frame``, ``prepare_crop_mask``):

the face aligned on ``dfl_whole_face`` at the model's own side (its ``in_face:0`` input, NHWC), sharpened
(``1.75 x crop - 0.75 x its Gaussian blur, sigma 2``), BGR in [0, 1]; ``morph_value:0`` (where the model has
it) the morph 0..100 read as 0..1. The outputs are the target's mask, the face (NHWC BGR [0, 1]) and the
source's mask; the face's colours are moved towards the crop's as far as their histograms differ
(``conditional_match_frame_color``); the two masks' minimum, eroded twice (3 px ellipse) and blurred
(sigma 6.25), joins the job's mask stage for the paste-back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import WarpTemplate, warp_to_template
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.age_families import match_frame_color
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Mask

TEMPLATE: WarpTemplate = "dfl_whole_face"
FACE_INPUT, MORPH_INPUT = "in_face:0", "morph_value:0"


def model_side(session: Any) -> int:
    for model_input in session.get_inputs():
        if model_input.name == FACE_INPUT:
            return int(model_input.shape[1])
    raise ModelError(f"this deep swapper model has no '{FACE_INPUT}' input: convert a DeepFaceLive .dfm model")


def deep_blob(crop: Frame) -> np.ndarray:
    sharpened = cv2.addWeighted(crop, 1.75, cv2.GaussianBlur(crop, (0, 0), 2), -0.75, 0)
    return np.ascontiguousarray((sharpened / 255.0)[None], dtype=np.float32)


def run_deep(session: Any, blob: np.ndarray, morph: int) -> tuple[Frame, np.ndarray, np.ndarray]:
    """The model's face (BGR uint8) and its source and target masks."""
    feed = {FACE_INPUT: blob}
    if any(model_input.name == MORPH_INPUT for model_input in session.get_inputs()):
        feed[MORPH_INPUT] = np.array([np.interp(morph, [0, 100], [0, 1])], dtype=np.float32)
    target_mask, face, source_mask = session.run(None, feed)
    pixels = np.clip(np.asarray(face[0], dtype=np.float32) * 255.0, 0, 255).astype(np.uint8)
    return pixels, np.asarray(source_mask[0], dtype=np.float32), np.asarray(target_mask[0], dtype=np.float32)


def model_mask(source_mask: np.ndarray, target_mask: np.ndarray, side: int) -> Mask:
    mask = np.minimum(source_mask, target_mask).reshape(side, side).clip(0, 1).astype(np.float32)
    mask = cv2.erode(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)), iterations=2)
    return np.asarray(cv2.GaussianBlur(mask, (0, 0), 6.25), dtype=np.float32)


def histogram_difference(first: Frame, second: Frame) -> float:
    """FaceFusion's ``calculate_histogram_difference``: hue/saturation histograms' correlation on 0..1."""
    histograms = [
        cv2.calcHist([cv2.cvtColor(image, cv2.COLOR_BGR2HSV)], [0, 1], None, [50, 60], [0, 180, 0, 256])
        for image in (first, second)
    ]
    return float(np.interp(cv2.compareHist(histograms[0], histograms[1], cv2.HISTCMP_CORREL), [-1, 1], [0, 1]))


def matched_colours(crop: Frame, face: Frame) -> Frame:
    factor = histogram_difference(crop, face)
    return np.asarray(cv2.addWeighted(face, 1 - factor, match_frame_color(crop, face), factor, 0), dtype=np.uint8)


class DeepSwapper(MaskedProcessor):
    name = "deep_swapper"
    summary = "puts the person of a DeepFaceLab model (yours, imported) on the selected faces"
    needs_source_face = False
    reads_settings = ("deep_swapper_model", "deep_swapper_morph")
    needs_68_landmarks = False
    counted = ("faces_swapped",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.model = settings.deep_swapper_model
        self.morph = settings.deep_swapper_morph
        self.masks = MaskStage(settings, runtime)
        self.faces_swapped = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return (self.model,) if self.model else ()

    def pre_check(self) -> list[str]:
        if self.model is None:
            return [
                "the deep swapper needs a model: convert your DeepFaceLive .dfm to ONNX, add it with "
                "'python run.py models import FILE --name NAME' and pass --deep-swapper-model NAME"
            ]
        return super().pre_check()

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def swap(self, frame: Frame, face: Face, session: Any) -> Frame:
        side = model_side(session)
        crop, matrix = warp_to_template(frame, face.kps, TEMPLATE, side)
        swapped, source_mask, target_mask = run_deep(session, deep_blob(crop), self.morph)
        mask = np.minimum(self.masks.crop_mask(frame, face, matrix, side), model_mask(source_mask, target_mask, side))
        return paste_back(frame, matched_colours(crop, swapped), matrix, mask)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if self.model is None:
            return frame
        _, session = self.runtime.onnx_session(self.model)
        for face in context.faces:
            frame = self.swap(frame, face, session)
            with self._lock:
                self.faces_swapped += 1
        return frame

"""The expression restorer: after a swap, the target's own expression put back on the swapped face with
LivePortrait (``live_portrait.py``), as FaceFusion's ``restore_expression`` does. The target's face is
read from the frame as it was before the chain (``FrameContext.extras["target_frame"]``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import warp_to_template
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors import live_portrait as lp
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

PARTS = ("feature_extractor", "motion_extractor", "generator")
FACTOR_TOP = 1.2
"""The factor 0..100 is read onto 0..1.2 (FaceFusion's ``numpy.interp``): past 100 % a little."""


def restored_expression(target: np.ndarray, current: np.ndarray, factor: float, areas: Sequence[str]) -> np.ndarray:
    """The expression to give the face: the target's in the areas asked (never the points in ``KEPT``),
    mixed with the current one by ``factor``, within LivePortrait's limits."""
    chosen = target.copy()
    for area, indices in (("upper-face", lp.UPPER_FACE), ("lower-face", lp.LOWER_FACE)):
        if area not in areas:
            chosen[:, list(indices)] = current[:, list(indices)]
    chosen[:, list(lp.KEPT)] = current[:, list(lp.KEPT)]
    return lp.limit_expression(chosen * factor + current * (1 - factor))


class ExpressionRestorer(MaskedProcessor):
    name = "expression_restorer"
    summary = "puts the target's own expression back on the swapped face"
    needs_source_face = False
    reads_settings = ("expression_restorer_model", "expression_restorer_factor", "expression_restorer_areas")
    needs_68_landmarks = False
    counted = ("faces_restored",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.models = {part: f"{settings.expression_restorer_model}_{part}" for part in PARTS}
        self.factor = float(np.interp(settings.expression_restorer_factor, [0, 100], [0, FACTOR_TOP]))
        self.areas = settings.expression_restorer_areas
        self.masks = MaskStage(settings, runtime)
        self.faces_restored = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return tuple(self.models.values())

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces) and self.factor > 0

    def session(self, part: str) -> object:
        return self.runtime.onnx_session(self.models[part])[1]

    def restore(self, frame: Frame, target: Frame, face: Face, target_kps: Points) -> Frame:
        target_crop, _ = warp_to_template(target, target_kps, lp.TEMPLATE, lp.SIZE)
        crop, matrix = warp_to_template(frame, face.kps, lp.TEMPLATE, lp.SIZE)
        blob = lp.crop_blob(crop)
        features = lp.extract_features(self.session("feature_extractor"), blob)
        wanted = lp.extract_motion(self.session("motion_extractor"), lp.crop_blob(target_crop)).expression
        motion = lp.extract_motion(self.session("motion_extractor"), blob)
        expression = restored_expression(wanted, motion.expression, self.factor, self.areas)
        source, current = lp.implicit_points(motion, expression), lp.implicit_points(motion, motion.expression)
        restored = lp.crop_frame(lp.generate(self.session("generator"), features, source, current))
        return paste_back(frame, restored, matrix, self.masks.crop_mask(frame, face, matrix, lp.SIZE))

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if self.factor <= 0 or not context.faces:
            return frame
        target: Frame = context.extras.get("target_frame", frame)
        ratio = np.array([target.shape[1] / frame.shape[1], target.shape[0] / frame.shape[0]], np.float32)
        for face in context.faces:
            frame = self.restore(frame, target, face, face.kps * ratio)
            with self._lock:
                self.faces_restored += 1
        return frame

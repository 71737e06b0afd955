"""The face enhancer: the ONNX enhancer families (``enhancer_families``) on the aligned face, blended back."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import warp_to_template
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.processors.enhancer_families import enhance_crop, enhancer_contract
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame


class FaceEnhancer(MaskedProcessor):
    name = "face_enhancer"
    summary = "restores face detail (sharper eyes, skin) after the swap"
    needs_source_face = False
    reads_settings = ("face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight")
    needs_68_landmarks = False
    counted = ("faces_enhanced",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.model = settings.face_enhancer_model
        self.faces_enhanced = 0
        self._lock = threading.Lock()
        self.masks = MaskStage(settings, runtime)

    def own_models(self) -> tuple[str, ...]:
        return (self.model,)

    def enhance_crop(self, crop: Frame) -> Frame:
        _, session = self.runtime.onnx_session(self.model)
        return enhance_crop(session, enhancer_contract(self.model), crop, self.settings.face_enhancer_weight)

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces) and self.settings.face_enhancer_blend > 0

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        weight = context.settings.face_enhancer_blend / 100.0
        if weight <= 0:
            return frame
        contract = enhancer_contract(self.model)
        size = contract.size
        for face in context.faces:
            crop, matrix = warp_to_template(frame, face.kps, contract.template, size, contract.fit)
            enhanced = self.enhance_crop(crop)
            mixed = np.clip(enhanced.astype(np.float32) * weight + crop.astype(np.float32) * (1 - weight), 0, 255)
            mask = self.masks.crop_mask(frame, face, matrix, size)
            frame = paste_back(frame, mixed.astype(np.uint8), matrix, mask)
            with self._lock:
                self.faces_enhanced += 1
        return frame

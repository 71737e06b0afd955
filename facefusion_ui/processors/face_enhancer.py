"""The face enhancer: GFPGAN 1.4-compatible ONNX on the 512 px FFHQ-aligned face, blended back."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import cv2
import numpy as np

from facefusion_ui.faces.alignment import paste_back, warp_face
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.base import FrameContext, missing_models
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame


class FaceEnhancer:
    name = "face_enhancer"

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.model = settings.face_enhancer_model
        self.faces_enhanced = 0
        self._lock = threading.Lock()
        self.masks = MaskStage(settings, runtime)

    def required_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.model, *self.masks.required_models())))

    def pre_check(self) -> list[str]:
        return missing_models(self.runtime, self.required_models())

    def release(self) -> None:
        self.runtime.sessions.release(self.model)

    def enhance_crop(self, crop: Frame) -> Frame:
        spec, session = self.runtime.onnx_session(self.model)
        size = crop.shape[0]
        blob = cv2.dnn.blobFromImage(crop, 1.0 / spec.std, (size, size), (spec.mean,) * 3, swapRB=True)
        output = np.asarray(session.run(None, {session.get_inputs()[0].name: blob})[0], dtype=np.float32)[0]
        rgb = np.clip(output.transpose(1, 2, 0) * spec.std + spec.mean + 0.5, 0, 255).astype(np.uint8)
        return np.ascontiguousarray(rgb[:, :, ::-1])

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"faces_enhanced": self.faces_enhanced}

    def mask_counts(self) -> dict[str, int]:
        return self.masks.counts()

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces) and self.settings.face_enhancer_blend > 0

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        weight = context.settings.face_enhancer_blend / 100.0
        if weight <= 0:
            return frame
        spec = self.runtime.spec(self.model)
        size = spec.input_size[0] if spec.input_size else 512
        for face in context.faces:
            crop, matrix = warp_face(frame, face.kps, "ffhq_512", size)
            enhanced = self.enhance_crop(crop)
            mixed = np.clip(enhanced.astype(np.float32) * weight + crop.astype(np.float32) * (1 - weight), 0, 255)
            mask = self.masks.crop_mask(frame, face, matrix, size)
            frame = paste_back(frame, mixed.astype(np.uint8), matrix, mask)
            with self._lock:
                self.faces_enhanced += 1
        return frame

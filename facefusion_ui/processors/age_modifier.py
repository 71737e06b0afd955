"""The age modifier: FaceFusion's age models (``age_families.py``) on each selected face, younger or older
by ``--age-modifier-direction``, pasted back through the job's mask stage (box, occlusion, region...)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import cv2
import numpy as np

from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.classifier import FACE_CLASSIFIER, classify
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import warp_to_template
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.age_families import (
    OUTPUT_SCALE,
    AgeContract,
    age_blob,
    age_contract,
    drawn_in,
    fran_direction,
    fran_face,
    run_age,
    styleganex_direction,
    styleganex_face,
)
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame


class AgeModifier(MaskedProcessor):
    name = "age_modifier"
    summary = "makes the selected faces younger or older"
    needs_source_face = False
    reads_settings = ("age_modifier_model", "age_modifier_direction")
    needs_68_landmarks = False
    counted = ("faces_aged",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.model = settings.age_modifier_model
        self.contract = age_contract(self.model)
        self.direction = settings.age_modifier_direction
        self.masks = MaskStage(settings, runtime)
        self.faces_aged = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return (self.model, FACE_CLASSIFIER) if self.contract.family == "fran" else (self.model,)

    def released_models(self) -> tuple[str, ...]:
        return (self.model,)  # the classifier stays: the face analysis shares it

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces) and self.direction != 0

    def age_of(self, frame: Frame, face: Face) -> range:
        """The face's age bracket: the classifier's, asked here when the analysis did not."""
        if face.age is not None:
            return face.age
        _, session = self.runtime.onnx_session(FACE_CLASSIFIER)
        return classify(frame, face, session).age

    def fran(self, frame: Frame, face: Face, contract: AgeContract) -> Frame:
        crop, matrix = warp_to_template(frame, face.kps, contract.template, contract.size)
        _, session = self.runtime.onnx_session(self.model)
        direction = fran_direction(self.age_of(frame, face), self.direction)
        blob = age_blob(crop, contract)
        aged = fran_face(run_age(session, blob, blob, direction), contract)
        return paste_back(frame, aged, matrix, self.masks.crop_mask(frame, face, matrix, contract.size))

    def styleganex(self, frame: Frame, face: Face, contract: AgeContract) -> Frame:
        assert contract.extend_template is not None
        crop, _ = warp_to_template(frame, face.kps, contract.template, contract.size)
        wide, wide_matrix = warp_to_template(frame, drawn_in(face.kps), contract.extend_template, contract.extend_size)
        _, session = self.runtime.onnx_session(self.model)
        output = run_age(
            session, age_blob(crop, contract), age_blob(wide, contract), styleganex_direction(self.direction)
        )
        aged = styleganex_face(output, wide, contract)
        side = contract.size * OUTPUT_SCALE
        mask = self.masks.crop_mask(frame, face, wide_matrix, contract.extend_size)
        mask = np.asarray(cv2.resize(mask, (side, side)), dtype=np.float32)
        return paste_back(frame, aged, wide_matrix * (side / contract.extend_size), mask)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if self.direction == 0:
            return frame
        for face in context.faces:
            if self.contract.family == "fran":
                frame = self.fran(frame, face, self.contract)
            else:
                frame = self.styleganex(frame, face, self.contract)
            with self._lock:
                self.faces_aged += 1
        return frame

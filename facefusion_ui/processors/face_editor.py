"""The face editor: eyebrows, gaze, eyes and lips open, mouth and head moved by sliders with LivePortrait
and its retargeters, as FaceFusion's ``face_editor/core.py`` (``edit_face``, ``apply_edit``): the 5 points
spread by 1.5 round the nose, aligned on ``ffhq_512`` at 512 px; the edited points stitched to the face's
own and rendered by the generator; pasted back through the job's mask stage."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.warp_templates import WarpTemplate, warp_to_template
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors import live_portrait as lp
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.processors.face_edits import edit_expression, edited_angles, eye_input, lip_input
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FACE_EDITOR_CONTROLS, Frame, Points

TEMPLATE: WarpTemplate = "ffhq_512"
SPREAD = 1.5
"""The 5 points scaled round the nose tip before the crop (FaceFusion's ``scale_face_landmark_5``)."""
PARTS = ("feature_extractor", "motion_extractor", "eye_retargeter", "lip_retargeter", "stitcher", "generator")


def spread(kps: Points) -> Points:
    nose = kps[2]
    return np.asarray((kps - nose) * SPREAD + nose, dtype=np.float32)


class FaceEditor(MaskedProcessor):
    name = "face_editor"
    summary = "moves eyebrows, gaze, eyes, lips, mouth and head by sliders"
    needs_source_face = False
    reads_settings = ("face_editor_model", *(f"face_editor_{control}" for control in FACE_EDITOR_CONTROLS))
    needs_68_landmarks = True
    counted = ("faces_edited",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.models = {part: f"{settings.face_editor_model}_{part}" for part in PARTS}
        self.values = {control: float(getattr(settings, f"face_editor_{control}")) for control in FACE_EDITOR_CONTROLS}
        self.masks = MaskStage(settings, runtime)
        self.faces_edited = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return tuple(self.models.values())

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces) and any(self.values.values())

    def run(self, part: str, feed: dict[str, np.ndarray]) -> np.ndarray:
        _, session = self.runtime.onnx_session(self.models[part])
        return np.asarray(session.run(None, feed)[0], dtype=np.float32)

    def source_points(self, motion: lp.Motion, current: np.ndarray, landmarks: Points) -> np.ndarray:
        """``apply_edit``: the points the face should take, before stitching."""
        expression = lp.limit_expression(edit_expression(motion.expression, self.values))
        turned = motion.points @ lp.rotation(*edited_angles(motion.pitch, motion.yaw, motion.roll, self.values)).T
        source = (turned + expression) * motion.scale + motion.translation
        eyes = self.run("eye_retargeter", {"input": eye_input(current, landmarks, self.values["eye_open_ratio"])})
        lips = self.run("lip_retargeter", {"input": lip_input(current, landmarks, self.values["lip_open_ratio"])})
        source = source + eyes.reshape(-1, 21, 3) * abs(self.values["eye_open_ratio"])
        return np.asarray(source + lips.reshape(-1, 21, 3) * abs(self.values["lip_open_ratio"]), dtype=np.float32)

    def edit(self, frame: Frame, face: Face, landmarks: Points) -> Frame:
        crop, matrix = warp_to_template(frame, spread(face.kps), TEMPLATE, lp.SIZE)
        blob = lp.crop_blob(crop)
        features = self.run("feature_extractor", {"input": blob})
        _, session = self.runtime.onnx_session(self.models["motion_extractor"])
        motion = lp.extract_motion(session, blob)
        current = lp.implicit_points(motion, motion.expression)
        source = self.source_points(motion, current, landmarks)
        stitched = self.run("stitcher", {"source": source, "target": current})
        _, generator = self.runtime.onnx_session(self.models["generator"])
        edited = lp.crop_frame(lp.generate(generator, features, stitched, current))
        return paste_back(frame, edited, matrix, self.masks.crop_mask(frame, face, matrix, lp.SIZE))

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if not any(self.values.values()):
            return frame
        for face in context.faces:
            if face.landmarks_68 is None:
                continue  # the eyes' and lips' openings are read from the 68 landmarks
            frame = self.edit(frame, face, face.landmarks_68)
            with self._lock:
                self.faces_edited += 1
        return frame

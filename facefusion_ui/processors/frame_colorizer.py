"""The frame colorizer: black-and-white footage given colour by FaceFusion's DDColor and DeOldify models
(``colorizer_families.py``), the whole frame at ``--frame-colorizer-size``, blended by
``--frame-colorizer-blend``."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.base import FrameContext, ModelProcessor
from facefusion_ui.processors.colorizer_families import colorize, colorizer_family
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame


class FrameColorizer(ModelProcessor):
    name = "frame_colorizer"
    summary = "gives black-and-white footage colour"
    needs_source_face = False
    reads_settings = ("frame_colorizer_model", "frame_colorizer_size", "frame_colorizer_blend")
    needs_68_landmarks = False
    needs_faces = False
    counted = ("frames_colorized",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.model = settings.frame_colorizer_model
        self.family = colorizer_family(self.model)
        self.size = int(settings.frame_colorizer_size.split("x")[0])
        self.blend = settings.frame_colorizer_blend
        self.frames_colorized = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return (self.model,)

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return self.blend > 0

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if self.blend <= 0:
            return frame
        _, session = self.runtime.onnx_session(self.model)
        result = colorize(session, frame, self.family, self.size, self.blend)
        with self._lock:
            self.frames_colorized += 1
        return result

"""The background remover: the person kept, the background made transparent or filled with a colour.

The matte comes from mediapipe's selfie segmentation (embedded: no download) or one of FaceFusion's
background remover models (``background_families.py``). How the background goes, as FaceFusion's
``apply_fill_color``: with the colour's alpha ``A``, the background's share of each pixel is
``m = (1 - matte) * A / 255`` and the frame becomes ``frame * (1 - m) + colour * m``. An image written
as PNG or WebP keeps an alpha channel instead (``FrameContext.extras["keep_alpha"]``): the colour is then
what lies under the background, and the alpha is ``matte + (1 - matte) * A / 255`` (A 0: see-through).

The colour is ``background_remover_color``; unset, it is transparent where the output keeps alpha and
green screen (0 255 0 255) elsewhere (videos, JPEG).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import cv2
import numpy as np

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.background_families import matte_contract, run_matte
from facefusion_ui.processors.base import FrameContext, ModelProcessor
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Mask

EMBEDDED_MODEL = "mediapipe_selfie_segmentation"
EMBEDDED_SIDE = 320
"""The longer side the frame is scaled to for the embedded model (its network sees 256x256): the matte
comes back at that size and is scaled up, so a 4K frame costs what a small one does."""
CERTAIN = (0.2, 0.8)
"""The selfie segmentation gives the person's probability, not a matte: below 0.2 a pixel is background,
above 0.8 the person, with a linear ramp between (else the person would be half see-through wherever the
model is not sure)."""
TRANSPARENT = (0, 0, 0, 0)
GREEN_SCREEN = (0, 255, 0, 255)


def default_color(keep_alpha: bool) -> tuple[int, int, int, int]:
    return TRANSPARENT if keep_alpha else GREEN_SCREEN


class FillPlane:
    """The colour as a frame-sized BGR plane, made once per frame size (a video's frames share one; it is
    only read)."""

    def __init__(self, color: tuple[int, int, int, int]) -> None:
        self.color = color
        self._plane: Frame = np.zeros((0, 0, 3), dtype=np.uint8)

    def of(self, height: int, width: int) -> Frame:
        plane = self._plane
        if plane.shape[:2] != (height, width):
            red, green, blue, _ = self.color
            plane = np.full((height, width, 3), (blue, green, red), dtype=np.uint8)
            self._plane = plane  # one reference swap: a thread reading the old plane keeps it
        return plane


def fill_background(frame: Frame, matte: Mask, fill: FillPlane) -> Frame:
    """FaceFusion's ``apply_fill_color``: the background weighed by the colour's alpha (no alpha channel)."""
    height, width = frame.shape[:2]
    keep = np.ascontiguousarray(matte, dtype=np.float32)
    share = np.ascontiguousarray(1.0 - keep, dtype=np.float32)
    if fill.color[3] < 255:
        share *= fill.color[3] / 255.0
        keep = np.ascontiguousarray(1.0 - share, dtype=np.float32)
    return np.asarray(cv2.blendLinear(frame, fill.of(height, width), keep, share), dtype=np.uint8)


def with_alpha(frame: Frame, matte: Mask, fill: FillPlane) -> Frame:
    """A BGRA frame: the person's colours over the colour's, the alpha the person's plus the colour's own."""
    height, width = frame.shape[:2]
    matte = np.ascontiguousarray(matte, dtype=np.float32)
    rest = np.ascontiguousarray(1.0 - matte, dtype=np.float32)
    colours = np.asarray(cv2.blendLinear(frame, fill.of(height, width), matte, rest), dtype=np.uint8)
    alpha = np.clip((matte + rest * (fill.color[3] / 255.0)) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return np.dstack([colours, alpha])


def embedded_matte(model: object, frame: Frame) -> Mask:
    """mediapipe's selfie segmentation of ``frame`` (scaled to ``EMBEDDED_SIDE``), at the frame's size."""
    height, width = frame.shape[:2]
    ratio = min(EMBEDDED_SIDE / max(height, width), 1.0)
    small = cv2.resize(
        frame, (max(round(width * ratio), 1), max(round(height * ratio), 1)), interpolation=cv2.INTER_AREA
    )
    rgb = np.ascontiguousarray(small[:, :, ::-1])
    person = np.asarray(model.process(rgb).segmentation_mask, dtype=np.float32)  # type: ignore[attr-defined]
    low, high = CERTAIN
    matte = np.clip((person - low) / (high - low), 0.0, 1.0)
    return np.asarray(cv2.resize(matte, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.float32)


class BackgroundRemover(ModelProcessor):
    name = "background_remover"
    summary = "removes the background: transparent in PNG/WebP images, a colour (green screen) in videos"
    needs_source_face = False
    reads_settings = ("background_remover_model", "background_remover_color")
    needs_68_landmarks = False
    needs_faces = False
    counted = ("frames_matted",)

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.model = settings.background_remover_model
        self.color = settings.background_remover_color
        self.fills = {keep: FillPlane(self.color or default_color(keep)) for keep in (False, True)}
        self.frames_matted = 0
        self._lock = threading.Lock()
        if self.model != EMBEDDED_MODEL:
            matte_contract(self.model)

    def own_models(self) -> tuple[str, ...]:
        return (self.model,)

    def released_models(self) -> tuple[str, ...]:
        return () if self.model == EMBEDDED_MODEL else (self.model,)  # the embedded one stays warm

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return True

    def matte(self, frame: Frame) -> tuple[Mask, Frame]:
        """The person's matte (1 = kept) and the colours to keep (the frame's own but for corridor_key)."""
        if self.model == EMBEDDED_MODEL:
            with self.runtime.using(EMBEDDED_MODEL) as model:
                return embedded_matte(model, frame), frame
        _, session = self.runtime.onnx_session(self.model)
        return run_matte(session, matte_contract(self.model), frame)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        keep_alpha = bool(context.extras.get("keep_alpha", False))
        fill = self.fills[keep_alpha]
        matte, colours = self.matte(frame)
        result = with_alpha(colours, matte, fill) if keep_alpha else fill_background(colours, matte, fill)
        with self._lock:
            self.frames_matted += 1
        return result

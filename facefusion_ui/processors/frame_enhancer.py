"""The frame enhancer: a single-network x2/x4 upscaler (Real-ESRGAN and kin) over the whole frame.

Contract of the models (FaceFusion's frame enhancer family): input 1x3xHxW RGB in [0, 1], output
1x3x(sH)x(sW) RGB in [0, 1]. The frame runs through ``tiles.run_tiled`` in tiles of the model's
``input_size`` so memory does not follow the frame's size; the result is blended with the plainly
resized frame (``blend``), at the enhanced size or scaled back to the target's.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import cv2
import numpy as np

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.base import FrameContext, ModelProcessor
from facefusion_ui.processors.options import ProcessorOption, resolve_options
from facefusion_ui.processors.tiles import TileGrid, run_tiled
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, FrameEnhancerModel, FrameEnhancerOutputSize, choices

DEFAULT_TILE = 256
OVERLAP_SHARE = 8
"""Tiles overlap by 1/8 of their side; the outer quarter of an overlap is not used (zero padding there)."""
UPSCALE_MARGIN = 2
"""Source rows around a band when the plain upscale for blending is made band by band (bilinear reach)."""


def grid_for(tile: int) -> TileGrid:
    overlap = max(tile // OVERLAP_SHARE, 4)
    return TileGrid(tile, overlap, overlap // 4)


class EnhancedFrame:
    """A ``BandSink`` that writes bands into the enhanced-size frame, blended with the plain upscale."""

    def __init__(self, frame: Frame, scale: int, weight: float) -> None:
        self.frame = frame
        self.scale = scale
        self.weight = weight
        height, width = frame.shape[:2]
        self.result: Frame = np.empty((height * scale, width * scale, 3), dtype=np.uint8)

    def put(self, top: int, band: Frame) -> None:
        rows = band.shape[0]
        if self.weight < 1.0:
            band = _mix(band, self.plain_band(top, rows), self.weight)
        self.result[top : top + rows] = band

    def plain_band(self, top: int, rows: int) -> Frame:
        """Output rows ``top``..``top + rows`` of the bilinear upscale, made from the source rows around them."""
        scale, height, width = self.scale, self.frame.shape[0], self.frame.shape[1]
        first = max(top // scale - UPSCALE_MARGIN, 0)
        last = min((top + rows) // scale + UPSCALE_MARGIN, height)
        piece = self.frame[first:last]
        # the whole frame's sampling grid: output row r reads source row (r + 0.5) / scale - 0.5
        matrix = np.array([[1 / scale, 0, 0.5 / scale - 0.5], [0, 1 / scale, (top + 0.5) / scale - 0.5 - first]])
        plain = cv2.warpAffine(
            piece,
            matrix,
            (width * scale, rows),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_REPLICATE,
        )
        return np.asarray(plain, dtype=np.uint8)


class TargetFrame:
    """A ``BandSink`` that scales each band back to the target's size (area averaging: bands start on
    multiples of the scale, so this equals scaling the whole frame) and blends it with the target."""

    def __init__(self, frame: Frame, scale: int, weight: float) -> None:
        self.frame = frame
        self.scale = scale
        self.weight = weight
        self.result: Frame = frame.copy()

    def put(self, top: int, band: Frame) -> None:
        first, rows = top // self.scale, band.shape[0] // self.scale
        small = np.asarray(cv2.resize(band, (self.frame.shape[1], rows), interpolation=cv2.INTER_AREA), dtype=np.uint8)
        self.result[first : first + rows] = _mix(small, self.frame[first : first + rows], self.weight)


def _mix(enhanced: Frame, plain: Frame, weight: float) -> Frame:
    mixed = enhanced.astype(np.float32) * weight + plain.astype(np.float32) * (1.0 - weight)
    return np.clip(mixed + 0.5, 0, 255).astype(np.uint8)


class FrameEnhancer(ModelProcessor):
    name = "frame_enhancer"
    summary = "upscales the whole frame"
    needs_source_face = False
    needs_68_landmarks = False
    counted = ("frames_enhanced",)
    options = (
        ProcessorOption("model", str, "real_esrgan_x2", help="upscaler model", choices=choices(FrameEnhancerModel)),
        ProcessorOption("blend", int, 80, help="enhanced frame weight in percent", low=0, high=100),
        ProcessorOption(
            "output_size",
            str,
            "enhanced",
            help="output at the enhanced size, or scaled back to the target's",
            choices=choices(FrameEnhancerOutputSize),
        ),
    )

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        values = resolve_options(self.name, self.options, settings.processor_options.get(self.name, {}))
        self.model = str(values["model"])
        self.keep_size = values["output_size"] == "target"
        self.frames_enhanced = 0
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return (self.model,)

    @property
    def scale(self) -> int:
        return self.runtime.spec(self.model).scale or 1

    @property
    def tile(self) -> int:
        size = self.runtime.spec(self.model).input_size
        return size[0] if size else DEFAULT_TILE

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        """The size of the frames it returns for frames of ``width`` x ``height``."""
        return (width, height) if self.keep_size else (width * self.scale, height * self.scale)

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return True

    def enhance_tile(self, tile: Frame) -> Frame:
        """One tile through the model (BGR uint8 in and out)."""
        _, session = self.runtime.onnx_session(self.model)
        model_input = session.get_inputs()[0]
        dtype = np.float16 if "float16" in str(model_input.type) else np.float32
        blob = np.asarray(cv2.dnn.blobFromImage(tile, 1.0 / 255.0, swapRB=True), dtype=dtype)
        output = np.asarray(session.run(None, {model_input.name: blob})[0], dtype=np.float32)[0]
        rgb = np.clip(output.transpose(1, 2, 0) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return np.ascontiguousarray(rgb[:, :, ::-1])

    def enhance(self, frame: Frame, weight: float, tile: int | None = None) -> Frame:
        """``frame`` upscaled through tiles of ``tile`` px (the model's size when None), blended by ``weight``."""
        sink: EnhancedFrame | TargetFrame = (
            TargetFrame(frame, self.scale, weight) if self.keep_size else EnhancedFrame(frame, self.scale, weight)
        )
        run_tiled(frame, self.enhance_tile, self.scale, grid_for(tile or self.tile), sink)
        return sink.result

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        weight = float(context.options.get("blend", 80)) / 100.0
        result = self.enhance(frame, weight)
        with self._lock:
            self.frames_enhanced += 1
        return result

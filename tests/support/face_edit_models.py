"""Stand-in face-editing models (the age modifiers) in FaceFusion's signatures, built with onnx.helper.

Each returns its image input (or the wider one, upscaled as the real model's output is) plus a red square
(RGB channel 0) at its template's left-eye point, as strong as the direction asks: pasted back, the square
must land on the face's own left eye and in the frame's red channel. A wrong template, crop size, channel
order or direction sign puts it elsewhere, in another channel, or takes it away.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from facefusion_ui.faces.warp_templates import WARP_TEMPLATES, WarpTemplate
from tests.support.onnx_models import _const, _save

MARK_HALF = 12
"""Half the red square's side, in the output's pixels."""


def eye_mark(template: WarpTemplate, side: int, half: int = MARK_HALF) -> np.ndarray:
    """1x3xSxS: ones in channel 0 on a square round the template's left-eye point, zeros elsewhere."""
    mark = np.zeros((1, 3, side, side), np.float32)
    x, y = (np.array(WARP_TEMPLATES[template][0]) * side).round().astype(int)
    mark[0, 0, y - half : y + half, x - half : x + half] = 1.0
    return mark


def build_fran(path: Path, gain: float = 2.0) -> Path:
    """target 1x3x1024x1024 + direction (2,) -> target + mark * gain * (new age - age)."""
    nodes = [
        helper.make_node("Mul", ["direction", "signs"], ["signed"]),
        helper.make_node("ReduceSum", ["signed"], ["change"], keepdims=0),
        helper.make_node("Mul", ["mark", "change"], ["marked"]),
        helper.make_node("Add", ["target", "marked"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "fran_like",
        [
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, 1024, 1024]),
            helper.make_tensor_value_info("direction", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 1024, 1024])],
        initializer=[
            _const("signs", np.array([-1.0, 1.0], np.float32)),
            _const("mark", eye_mark("ffhq_512", 1024) * gain),
        ],
    )
    return _save(graph, path)


def build_styleganex_age(path: Path, gain: float = 1.0) -> Path:
    """target 1x3x256x256 + target_with_background 1x3x384x384 + direction () -> the wider crop upscaled
    4x (1536 px) less mark * gain * direction (the direction is negative for older), plus the narrow
    crop's mean times 0 so that it must be fed."""
    nodes = [
        helper.make_node("Resize", ["target_with_background", "", "scales"], ["wide"], mode="nearest"),
        helper.make_node("Mul", ["mark", "direction"], ["marked"]),
        helper.make_node("Sub", ["wide", "marked"], ["shown"]),
        helper.make_node("ReduceMean", ["target"], ["level"], keepdims=1),
        helper.make_node("Mul", ["level", "zero"], ["nothing"]),
        helper.make_node("Add", ["shown", "nothing"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "styleganex_age_like",
        [
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, 256, 256]),
            helper.make_tensor_value_info("target_with_background", TensorProto.FLOAT, [1, 3, 384, 384]),
            helper.make_tensor_value_info("direction", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 1536, 1536])],
        initializer=[
            _const("scales", np.array([1, 1, 4, 4], np.float32)),
            _const("mark", eye_mark("styleganex_384", 1536, MARK_HALF * 2) * gain),
            _const("zero", np.zeros((1,), np.float32)),
        ],
    )
    return _save(graph, path)

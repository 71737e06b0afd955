"""Stand-in face-editing models (the age modifiers) in FaceFusion's signatures, built with onnx.helper.

Each returns its image input (or the wider one, upscaled as the real model's output is) plus a red square
(RGB channel 0) at its template's left-eye point, as strong as the direction asks: pasted back, the square
must land on the face's own left eye and in the frame's red channel. A wrong template, crop size, channel
order or direction sign puts it elsewhere, in another channel, or takes it away.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
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


MOUTH_ROWS, MOUTH_COLUMNS = (176, 192), (105, 151)
"""Where the mouth lies in LivePortrait's 256 px input (arcface_128 template: corners at 0.72 of the side)."""
EXPRESSION_GAIN = 0.02
GENERATOR_GAIN = 5.0


def build_live_portrait(folder: Path) -> None:
    """The three LivePortrait parts: the feature extractor gives its input back; the motion extractor's
    expression is the mouth's redness (every point's x, ``EXPRESSION_GAIN`` * (mean red - 0.5)), its
    other outputs fixed; the generator upscales the features to 512 px and brightens them by
    ``GENERATOR_GAIN`` * the sum of (source - target) points."""
    image = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 256, 256])]
    features = helper.make_graph(
        [helper.make_node("Identity", ["input"], ["feature_volume"])],
        "live_portrait_feature_extractor_like",
        image,
        [helper.make_tensor_value_info("feature_volume", TensorProto.FLOAT, [1, 3, 256, 256])],
    )
    _save(features, folder / "live_portrait_feature_extractor.onnx")
    _save(_motion_graph(image), folder / "live_portrait_motion_extractor.onnx")
    _save(_generator_graph(), folder / "live_portrait_generator.onnx")


MOTION_SHAPES = {
    "pitch": [1],
    "yaw": [1],
    "roll": [1],
    "scale": [1, 1],
    "translation": [1, 3],
    "expression": [1, 21, 3],
    "motion_points": [1, 21, 3],
}


def _motion_graph(image: list[onnx.ValueInfoProto]) -> onnx.GraphProto:
    rng = np.random.default_rng(5)
    pattern = np.zeros((1, 21, 3), np.float32)
    pattern[:, :, 0] = EXPRESSION_GAIN
    starts, ends = [0, MOUTH_ROWS[0], MOUTH_COLUMNS[0]], [1, MOUTH_ROWS[1], MOUTH_COLUMNS[1]]
    nodes = [
        helper.make_node("Slice", ["input", "starts", "ends", "axes"], ["mouth"]),
        helper.make_node("ReduceMean", ["mouth"], ["redness"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Sub", ["redness", "half"], ["centred"]),
        helper.make_node("Mul", ["pattern", "centred"], ["expression"]),
    ]
    constants = {"pitch": [8.0], "yaw": [-15.0], "roll": [4.0]}
    nodes += [
        helper.make_node("Identity", [f"{name}_value"], [name])
        for name in (*constants, "scale", "translation", "motion_points")
    ]
    outputs = ["pitch", "yaw", "roll", "scale", "translation", "expression", "motion_points"]
    initializers = [_const(f"{name}_value", np.array(value, np.float32)) for name, value in constants.items()]
    initializers += [
        _const("scale_value", np.array([[1.1]], np.float32)),
        _const("translation_value", np.array([[0.01, -0.02, 0.0]], np.float32)),
        _const("motion_points_value", rng.uniform(-0.5, 0.5, (1, 21, 3)).astype(np.float32)),
        _const("starts", np.array(starts, np.int64)),
        _const("ends", np.array(ends, np.int64)),
        _const("axes", np.array([1, 2, 3], np.int64)),
        _const("half", np.array([0.5], np.float32)),
        _const("pattern", pattern),
    ]
    return helper.make_graph(
        nodes,
        "live_portrait_motion_extractor_like",
        image,
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, MOTION_SHAPES[name]) for name in outputs],
        initializer=initializers,
    )


def _generator_graph() -> onnx.GraphProto:
    nodes = [
        helper.make_node("Resize", ["feature_volume", "", "scales"], ["face"], mode="nearest"),
        helper.make_node("Sub", ["source", "target"], ["moved"]),
        helper.make_node("ReduceSum", ["moved"], ["total"], keepdims=0),
        helper.make_node("Mul", ["total", "gain"], ["shift"]),
        helper.make_node("Add", ["face", "shift"], ["output"]),
    ]
    return helper.make_graph(
        nodes,
        "live_portrait_generator_like",
        [
            helper.make_tensor_value_info("feature_volume", TensorProto.FLOAT, [1, 3, 256, 256]),
            helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 21, 3]),
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 21, 3]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 512, 512])],
        initializer=[
            _const("scales", np.array([1, 1, 2, 2], np.float32)),
            _const("gain", np.array(GENERATOR_GAIN, np.float32)),
        ],
    )


RETARGET_GAIN = 0.01


def _retargeter(path: Path, width: int, openings: tuple[int, ...], wanted: int, axis: int) -> Path:
    """(1, width) -> (1, 63): every point's ``axis`` coordinate moved by RETARGET_GAIN * (wanted - the
    mean of the ``openings`` entries)."""
    weights = np.zeros((width, 63), np.float32)
    weights[wanted, axis::3] = RETARGET_GAIN
    for index in openings:
        weights[index, axis::3] = -RETARGET_GAIN / len(openings)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "weights"], ["output"])],
        path.stem + "_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 63])],
        initializer=[_const("weights", weights)],
    )
    return _save(graph, path)


def build_face_editor_parts(folder: Path) -> None:
    """LivePortrait's parts as ``build_live_portrait``, and the retargeters and stitcher: the eye retargeter
    moves every point's y by the wanted opening less the eyes' mean, the lip retargeter every point's x by
    the wanted opening less the lips'; the stitcher keeps half the move from target to source."""
    build_live_portrait(folder)
    _retargeter(folder / "live_portrait_eye_retargeter.onnx", 66, (63, 64), 65, 1)
    _retargeter(folder / "live_portrait_lip_retargeter.onnx", 65, (63,), 64, 0)
    points = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 21, 3]) for name in ("source", "target")]
    graph = helper.make_graph(
        [
            helper.make_node("Sub", ["source", "target"], ["move"]),
            helper.make_node("Mul", ["move", "half"], ["kept"]),
            helper.make_node("Add", ["target", "kept"], ["output"]),
        ],
        "live_portrait_stitcher_like",
        points,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 21, 3])],
        initializer=[_const("half", np.array(0.5, np.float32))],
    )
    _save(graph, folder / "live_portrait_stitcher.onnx")


def build_deep_swapper(path: Path, side: int = 224, morph: bool = True) -> Path:
    """A DeepFaceLive-like model: ``in_face:0`` 1xSxSx3 (NHWC, BGR [0, 1]) and ``morph_value:0`` (1,) ->
    the target's mask (ones), the face (its input plus a red square, 0.3 at morph 1, at dfl_whole_face's left
    eye) and the source's mask (ones but the lowest quarter), in that order."""
    mark = np.zeros((1, side, side, 3), np.float32)
    x, y = (np.array(WARP_TEMPLATES["dfl_whole_face"][0]) * side).round().astype(int)
    mark[0, y - 4 : y + 4, x - 4 : x + 4, 2] = 0.3
    source_mask = np.ones((1, side, side, 1), np.float32)
    source_mask[0, side * 3 // 4 :] = 0.0
    inputs = [helper.make_tensor_value_info("in_face:0", TensorProto.FLOAT, [1, side, side, 3])]
    nodes = [helper.make_node("Identity", ["target_mask_value"], ["out_celeb_face_mask:0"])]
    if morph:
        inputs.append(helper.make_tensor_value_info("morph_value:0", TensorProto.FLOAT, [1]))
        nodes += [helper.make_node("Mul", ["mark", "morph_value:0"], ["marked"])]
    else:
        nodes += [helper.make_node("Identity", ["mark"], ["marked"])]
    nodes += [
        helper.make_node("Add", ["in_face:0", "marked"], ["out_celeb_face:0"]),
        helper.make_node("Identity", ["source_mask_value"], ["out_face_mask:0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "deep_swapper_like",
        inputs,
        [
            helper.make_tensor_value_info("out_celeb_face_mask:0", TensorProto.FLOAT, [1, side, side, 1]),
            helper.make_tensor_value_info("out_celeb_face:0", TensorProto.FLOAT, [1, side, side, 3]),
            helper.make_tensor_value_info("out_face_mask:0", TensorProto.FLOAT, [1, side, side, 1]),
        ],
        initializer=[
            _const("mark", mark),
            _const("target_mask_value", np.ones((1, side, side, 1), np.float32)),
            _const("source_mask_value", source_mask),
        ],
    )
    return _save(graph, path)

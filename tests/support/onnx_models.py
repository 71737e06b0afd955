"""Small ONNX models in the real signatures, built with onnx.helper (no weights to download).

- SCRFD-like detector: input 1x3xHxW, 9 outputs (scores, boxes, keypoints for strides 8/16/32, two
  anchors per cell). It "detects" bright regions: score = sigmoid(12 * (mean pixel - 0.3)) of each
  stride x stride cell, on a grid of ceil(side / stride) cells per side as the real network's padded
  convolutions make it (a side that is not a multiple of 32 ends in a partial cell).
- ArcFace-like recognizer: 1x3x112x112 -> 1x512 (the crop's colour averaged with a weight that grows
  across the crop, times a fixed matrix: a shifted crop or a swapped channel gives another embedding).
- inswapper-like swapper: target 1x3x128x128 + source 1x512 -> 1x3x128x128, with an ``emap``
  initializer last (the output is the target plus a colour shift from the latent).
- GFPGAN-like enhancer: 1x3x512x512 -> 1x3x512x512 (identity scaled by 0.9).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _const(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name=name)


def build_scrfd(path: Path) -> Path:
    nodes: list[onnx.NodeProto] = []
    inits = [
        _const("gain", np.array(12.0, np.float32)),
        _const("bias", np.array(0.3, np.float32)),
        _const("zero", np.array(0.0, np.float32)),
        _const("one", np.array(1.0, np.float32)),
        _const(
            "kps_offsets",
            np.array([-0.3, -0.2, 0.3, -0.2, 0.0, 0.1, -0.25, 0.35, 0.25, 0.35] * 2, np.float32).reshape(1, 20, 1, 1),
        ),
        _const("shape_1", np.array([-1, 1], np.int64)),
        _const("shape_4", np.array([-1, 4], np.int64)),
        _const("shape_10", np.array([-1, 10], np.int64)),
    ]
    outputs: dict[str, list[str]] = {"score": [], "bbox": [], "kps": []}
    for stride in (8, 16, 32):
        s = str(stride)
        nodes += [
            helper.make_node(
                "AveragePool",
                ["input.1"],
                [f"pool{s}"],
                kernel_shape=[stride, stride],
                strides=[stride, stride],
                ceil_mode=1,
            ),
            helper.make_node("ReduceMean", [f"pool{s}"], [f"mean{s}"], axes=[1], keepdims=1),
            helper.make_node("Sub", [f"mean{s}", "bias"], [f"centred{s}"]),
            helper.make_node("Mul", [f"centred{s}", "gain"], [f"logit{s}"]),
            helper.make_node("Sigmoid", [f"logit{s}"], [f"prob{s}"]),
            helper.make_node("Concat", [f"prob{s}", f"prob{s}"], [f"prob2{s}"], axis=1),
            helper.make_node("Transpose", [f"prob2{s}"], [f"probt{s}"], perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", [f"probt{s}", "shape_1"], [f"score_{s}"]),
            helper.make_node("Mul", [f"mean{s}", "zero"], [f"zeros{s}"]),
            helper.make_node("Add", [f"zeros{s}", "one"], [f"ones{s}"]),
            helper.make_node("Concat", [f"ones{s}"] * 8, [f"dist{s}"], axis=1),
            helper.make_node("Transpose", [f"dist{s}"], [f"distt{s}"], perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", [f"distt{s}", "shape_4"], [f"bbox_{s}"]),
            helper.make_node("Add", [f"zeros{s}", "kps_offsets"], [f"kpsmap{s}"]),
            helper.make_node("Transpose", [f"kpsmap{s}"], [f"kpst{s}"], perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", [f"kpst{s}", "shape_10"], [f"kps_{s}"]),
        ]
        outputs["score"].append(f"score_{s}")
        outputs["bbox"].append(f"bbox_{s}")
        outputs["kps"].append(f"kps_{s}")
    names = outputs["score"] + outputs["bbox"] + outputs["kps"]
    graph = helper.make_graph(
        nodes,
        "scrfd_like",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["n", "k"]) for name in names],
        initializer=inits,
    )
    return _save(graph, path)


def recognizer_matrix() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(3, 512)).astype(np.float32)


def recognizer_weights() -> np.ndarray:
    """Where the recognizer stand-in looks: each pixel's weight in the 112 px crop, growing to the right and
    down, so that a crop shifted by a pixel (another template, another fit) gives another embedding."""
    ys, xs = np.mgrid[:112, :112].astype(np.float32) / 111.0
    weights: np.ndarray = (1.0 + 2.0 * xs + 3.0 * ys**2).astype(np.float32)
    return weights


def build_arcface(path: Path) -> Path:
    """embedding = mean over the crop of (input x ``recognizer_weights``), per channel, @ the matrix."""
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["input", "weights"], ["weighted"]),
            helper.make_node("GlobalAveragePool", ["weighted"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["flat"]),
            helper.make_node("MatMul", ["flat", "projection"], ["embedding"]),
        ],
        "arcface_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, 512])],
        initializer=[
            _const("weights", recognizer_weights().reshape(1, 1, 112, 112)),
            _const("projection", recognizer_matrix()),
        ],
    )
    return _save(graph, path)


def swapper_emap() -> np.ndarray:
    emap: np.ndarray = (np.random.default_rng(11).normal(size=(512, 512)) / np.sqrt(512)).astype(np.float32)
    return emap


def swapper_colour_matrix() -> np.ndarray:
    matrix: np.ndarray = np.random.default_rng(13).normal(size=(512, 3)).astype(np.float32) * 0.5
    return matrix


def build_inswapper(path: Path) -> Path:
    """output = clip(target + reshape(source @ colour, 1x3x1x1), 0, 1); ``emap`` is the last initializer."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["source", "colour"], ["shift"]),
            helper.make_node("Reshape", ["shift", "shift_shape"], ["shift4"]),
            helper.make_node("Add", ["target", "shift4"], ["raw"]),
            helper.make_node("Clip", ["raw", "low", "high"], ["output"]),
        ],
        "inswapper_like",
        [
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, 128, 128]),
            helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 512]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 128, 128])],
        initializer=[
            _const("colour", swapper_colour_matrix()),
            _const("shift_shape", np.array([1, 3, 1, 1], np.int64)),
            _const("low", np.array(0.0, np.float32)),
            _const("high", np.array(1.0, np.float32)),
            _const("emap", swapper_emap()),
        ],
    )
    return _save(graph, path)


def build_gfpgan(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Mul", ["input", "gain"], ["output"])],
        "gfpgan_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 512, 512])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 512, 512])],
        initializer=[_const("gain", np.array(0.9, np.float32))],
    )
    return _save(graph, path)


# The swapper, converter, enhancer, detector and landmarker families ------------------------------------------
def converter_matrix() -> np.ndarray:
    matrix: np.ndarray = (np.random.default_rng(17).normal(size=(512, 512)) / np.sqrt(512)).astype(np.float32)
    return matrix


def build_converter(path: Path) -> Path:
    """crossface-like embedding converter: input 1x512 -> output 1x512 = input @ matrix."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "matrix"], ["output"])],
        "crossface_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 512])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 512])],
        initializer=[_const("matrix", converter_matrix())],
    )
    return _save(graph, path)


SOURCE_CROP_GAIN = 0.5


def build_family_swapper(path: Path, size: int, source_shape: list[int]) -> Path:
    """A swapper in FaceFusion's signature: ``target`` 1x3xSxS and ``source`` (1x512 or an image) ->
    ``output`` 1x3xSxS = target + a per-channel shift: ``source @ colour`` for an embedding, the mean
    colour of the source image times SOURCE_CROP_GAIN for a source crop. No clipping: the caller's
    denormalisation and clipping are what the test checks."""
    if len(source_shape) == 2:
        nodes = [helper.make_node("MatMul", ["source", "colour"], ["shift2"])]
        inits = [_const("colour", swapper_colour_matrix())]
    else:
        nodes = [
            helper.make_node("GlobalAveragePool", ["source"], ["pooled"]),
            helper.make_node("Mul", ["pooled", "gain"], ["shift2"]),
        ]
        inits = [_const("gain", np.array(SOURCE_CROP_GAIN, np.float32))]
    nodes += [
        helper.make_node("Reshape", ["shift2", "shift_shape"], ["shift4"]),
        helper.make_node("Add", ["target", "shift4"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "swapper_like",
        [
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, size, size]),
            helper.make_tensor_value_info("source", TensorProto.FLOAT, source_shape),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, size, size])],
        initializer=[*inits, _const("shift_shape", np.array([1, 3, 1, 1], np.int64))],
    )
    return _save(graph, path)


def build_enhancer(path: Path, size: int, gain: float = 0.9, with_weight: bool = False) -> Path:
    """``input`` 1x3xSxS -> ``output`` = input * gain (and * weight, a 1-element double, for CodeFormer)."""
    nodes = [helper.make_node("Mul", ["input", "gain"], ["scaled" if with_weight else "output"])]
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])]
    if with_weight:
        inputs.append(helper.make_tensor_value_info("weight", TensorProto.DOUBLE, [1]))
        nodes += [
            helper.make_node("Cast", ["weight"], ["weight32"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["scaled", "weight32"], ["output"]),
        ]
    graph = helper.make_graph(
        nodes,
        "enhancer_like",
        inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, size, size])],
        initializer=[_const("gain", np.array(gain, np.float32))],
    )
    return _save(graph, path)


def build_constant_outputs(path: Path, input_shape: list[int], outputs: dict[str, np.ndarray]) -> Path:
    """``input`` -> each output = its constant + 0 * mean(input): the input is read, the answer known."""
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["mean"], keepdims=0),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
    ]
    inits = [_const("zero", np.array(0.0, np.float32))]
    infos = []
    for name, value in outputs.items():
        inits.append(_const(f"{name}_value", value.astype(np.float32)))
        nodes.append(helper.make_node("Add", [f"{name}_value", "nothing"], [name]))
        infos.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape)))
    graph = helper.make_graph(
        nodes,
        "constant_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
        infos,
        initializer=inits,
    )
    return _save(graph, path)


def build_mean_probe(path: Path, input_shape: list[int]) -> Path:
    """``input`` -> ``output`` 1x3 = the mean of each channel (what the caller fed, normalised)."""
    graph = helper.make_graph(
        [
            helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["output"]),
        ],
        "probe_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3])],
    )
    return _save(graph, path)


def build_upscaler(path: Path, scale: int) -> Path:
    copies = scale * scale
    weights = np.zeros((3 * copies, 3, 3, 3), dtype=np.float32)
    for copy in range(copies):  # DepthToSpace (DCR) reads channel (copy * 3 + colour) into block position copy
        for colour in range(3):
            weights[copy * 3 + colour, colour] = (0.9 + 0.1 * copy / max(copies - 1, 1)) / 9.0
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["input", "weights"], ["features"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("DepthToSpace", ["features"], ["output"], blocksize=scale, mode="DCR"),
        ],
        "upscaler_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, "out_height", "out_width"])],
        initializer=[_const("weights", weights)],
    )
    return _save(graph, path)


def build_wav2lip(path: Path) -> Path:
    """output = clip(0.5 * target[:, 3:6] + (mean(source) + 4) / 16, 0, 1)."""
    graph = helper.make_graph(
        [
            helper.make_node("Slice", ["target", "starts", "ends", "axes"], ["face"]),
            helper.make_node("Mul", ["face", "half"], ["dimmed"]),
            helper.make_node("ReduceMean", ["source"], ["level"], axes=[1, 2, 3], keepdims=1),
            helper.make_node("Add", ["level", "four"], ["shifted"]),
            helper.make_node("Div", ["shifted", "sixteen"], ["grey"]),
            helper.make_node("Add", ["dimmed", "grey"], ["raw"]),
            helper.make_node("Clip", ["raw", "low", "high"], ["output"]),
        ],
        "wav2lip_like",
        [
            helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 1, 80, 16]),
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 6, 96, 96]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 96, 96])],
        initializer=[
            _const("starts", np.array([3], np.int64)),
            _const("ends", np.array([6], np.int64)),
            _const("axes", np.array([1], np.int64)),
            _const("half", np.array(0.5, np.float32)),
            _const("four", np.array(4.0, np.float32)),
            _const("sixteen", np.array(16.0, np.float32)),
            _const("low", np.array(0.0, np.float32)),
            _const("high", np.array(1.0, np.float32)),
        ],
    )
    return _save(graph, path)


EDTALK_MOUTH = (slice(176, 196), slice(108, 148))
"""Where the edtalk stand-in paints: the mouth of an ffhq_512 crop at 256 px (its corners at y 185.6)."""


def build_edtalk(path: Path) -> Path:
    """EDTalk-like: ``source`` 1x1x80x16, ``target`` 1x3x256x256 (RGB in [0, 1]), ``weight`` (1,) ->
    ``output`` 1x3x256x256 = clip(target + weight * (max(source) + 4) / 8 on the red channel over
    ``EDTALK_MOUTH``, 0, 1): silence paints nothing, a wrong template paints off the mouth, a wrong channel
    order paints blue."""
    mark = np.zeros((1, 3, 256, 256), np.float32)
    rows, columns = EDTALK_MOUTH
    mark[0, 0, rows, columns] = 1.0
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["source"], ["level"], axes=[1, 2, 3], keepdims=0),
            helper.make_node("Add", ["level", "four"], ["shifted"]),
            helper.make_node("Div", ["shifted", "eight"], ["loudness"]),
            helper.make_node("Mul", ["loudness", "weight"], ["amount"]),
            helper.make_node("Mul", ["mark", "amount"], ["paint"]),
            helper.make_node("Add", ["target", "paint"], ["raw"]),
            helper.make_node("Clip", ["raw", "low", "high"], ["output"]),
        ],
        "edtalk_like",
        [
            helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 1, 80, 16]),
            helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, 256, 256]),
            helper.make_tensor_value_info("weight", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 256, 256])],
        initializer=[
            _const("mark", mark),
            _const("four", np.array(4.0, np.float32)),
            _const("eight", np.array(8.0, np.float32)),
            _const("low", np.array(0.0, np.float32)),
            _const("high", np.array(1.0, np.float32)),
        ],
    )
    return _save(graph, path)


def build_xseg(path: Path) -> Path:
    """XSeg-like occluder: ``input`` 1x256x256x3 (NHWC, BGR in [0, 1]) -> ``output`` 1x256x256x1 = the mean
    of each pixel's three channels (bright reads as face, dark as what covers it)."""
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["input"], ["output"], axes=[3], keepdims=1)],
        "xseg_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 256, 256, 3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 256, 256, 1])],
    )
    return _save(graph, path)


PARSER_CLASS_OF_RED, PARSER_CLASS_OF_BLUE = 1, 10


def build_bisenet(path: Path) -> Path:
    """BiSeNet-like face parser: ``input`` 1x3x512x512 (RGB, ImageNet-normalised) -> ``output`` 1x19x512x512
    scores, all 0 but class 1 (skin) = the red input and class 10 (nose) = the blue input: a red pixel
    parses as skin, a blue one as nose, a dark one as background (class 0)."""
    weights = np.zeros((19, 3, 1, 1), np.float32)
    weights[PARSER_CLASS_OF_RED, 0] = 1.0
    weights[PARSER_CLASS_OF_BLUE, 2] = 1.0
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "weights"], ["output"], kernel_shape=[1, 1])],
        "bisenet_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 512, 512])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 19, 512, 512])],
        initializer=[_const("weights", weights)],
    )
    return _save(graph, path)


CLASSIFIER_CLASSES = (7, 2, 9)
"""How many ids each of the classifier stand-in's outputs has: race, gender, age (FairFace's heads)."""
CLASSIFIER_STEPS = 40.0
"""The classifier stand-in's ids step this many times per unit of its weighted means (fine enough that a
crop moved by a pixel, a swapped channel or another normalisation gives other ids; coarse enough that
float rounding does not)."""


def classifier_weights() -> np.ndarray:
    """Where the classifier stand-in looks: each pixel's weight in the 224 px crop, growing to the right and
    down (as ``recognizer_weights``), so that another template or fit gives another input."""
    ys, xs = np.mgrid[:224, :224].astype(np.float32) / 223.0
    weights: np.ndarray = (1.0 + 2.0 * xs + 3.0 * ys**2).astype(np.float32)
    return weights


def classifier_matrix() -> np.ndarray:
    """Mixes the three channels' weighted means into one value per output (race, gender, age)."""
    return np.array([[0.9, -0.4, 0.3], [-0.2, 0.8, 0.5], [0.4, 0.3, -0.7]], np.float32)


def build_fairface(path: Path) -> Path:
    """FairFace-like classifier: ``input`` 1x3x224x224 -> ``race_id``, ``gender_id``, ``age_id``, each an
    int64 of shape (1,) as FairFace's export gives them (ids, not scores). Each id is
    floor(CLASSIFIER_STEPS x (channel means weighted by ``classifier_weights``) @ ``classifier_matrix``)
    modulo the output's class count."""
    nodes = [
        helper.make_node("Mul", ["input", "weights"], ["weighted"]),
        helper.make_node("GlobalAveragePool", ["weighted"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("MatMul", ["flat", "mix"], ["mixed"]),
        helper.make_node("Mul", ["mixed", "steps"], ["scaled"]),
        helper.make_node("Floor", ["scaled"], ["floored"]),
        helper.make_node("Cast", ["floored"], ["whole"], to=TensorProto.INT64),
        helper.make_node("Mod", ["whole", "classes"], ["ids"], fmod=0),
        helper.make_node("Split", ["ids"], ["race_2d", "gender_2d", "age_2d"], axis=1),
        *(helper.make_node("Reshape", [f"{name}_2d", "shape_1"], [f"{name}_id"]) for name in ("race", "gender", "age")),
    ]
    graph = helper.make_graph(
        nodes,
        "fairface_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info(f"{name}_id", TensorProto.INT64, [1]) for name in ("race", "gender", "age")],
        initializer=[
            _const("weights", classifier_weights().reshape(1, 1, 224, 224)),
            _const("mix", classifier_matrix()),
            _const("steps", np.array(CLASSIFIER_STEPS, np.float32)),
            _const("classes", np.array([CLASSIFIER_CLASSES], np.int64)),
            _const("shape_1", np.array([1], np.int64)),
        ],
    )
    return _save(graph, path)

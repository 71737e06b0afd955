"""Stand-in background remover models in FaceFusion's signatures, built with onnx.helper: one 1x1
convolution that undoes the contract's normalisation, so each output reads one colour of the frame.

- matte (most families): input 1x3xSxS -> 1x1xSxS, the frame's red in [0, 1]: a red region is the person;
  a wrong channel order reads blue, a wrong mean or std shifts the levels, a wrong size fails.
- u2net_cloth: 1x3xSxS -> 1x4xSxS class scores: background 0.6, then red, green and minus blue, so the
  argmax is a clothing class on red or green, background on grey and blue.
- corridor_key: 1x4xSxS (RGB + coarse green matte) -> the coarse matte as the matte, and the frame's
  colours (RGB in [0, 1]) as the foreground, in that output order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from facefusion_ui.processors.background_families import MatteContract
from tests.support.onnx_models import _const, _save


def _unnormalise(contract: MatteContract) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel weight and bias taking the normalised input back to [0, 1] RGB."""
    return np.array(contract.std, np.float32), np.array(contract.mean, np.float32)


def _conv_model(path: Path, size: int, inputs: int, weights: np.ndarray, bias: np.ndarray, outputs: list[str]) -> Path:
    """A 1x1 convolution from a 1 x ``inputs`` x size x size input named ``input`` (fixed size, as the real
    exports: a wrong size fails), its channels split over ``outputs`` (one, or the first and the rest)."""
    nodes = [helper.make_node("Conv", ["input", "weights", "bias"], ["all"], kernel_shape=[1, 1])]
    if len(outputs) == 1:
        nodes.append(helper.make_node("Identity", ["all"], outputs))
    else:
        nodes.append(helper.make_node("Split", ["all", "sizes"], outputs, axis=1))
    graph = helper.make_graph(
        nodes,
        "matte_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, inputs, size, size])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, None, size, size]) for output in outputs],
        initializer=[
            _const("weights", weights.reshape(weights.shape[0], inputs, 1, 1)),
            _const("bias", bias),
            _const("sizes", np.array([1, weights.shape[0] - 1], np.int64)),
        ],
    )
    return _save(graph, path)


def build_matte(path: Path, contract: MatteContract) -> Path:
    std, mean = _unnormalise(contract)
    weights = np.zeros((1, 3), np.float32)
    weights[0, 0] = std[0]
    return _conv_model(path, contract.size, 3, weights, np.array([mean[0]], np.float32), ["matte"])


def build_cloth(path: Path, contract: MatteContract) -> Path:
    std, mean = _unnormalise(contract)
    weights = np.zeros((4, 3), np.float32)
    bias = np.array([0.6, mean[0], mean[1], -mean[2]], np.float32)
    weights[1, 0], weights[2, 1], weights[3, 2] = std[0], std[1], -std[2]
    return _conv_model(path, contract.size, 3, weights, bias, ["classes"])


def build_corridor_key(path: Path, contract: MatteContract) -> Path:
    std, mean = _unnormalise(contract)
    weights = np.zeros((4, 4), np.float32)
    weights[0, 3] = 1.0
    for colour in range(3):
        weights[1 + colour, colour] = std[colour]
    bias = np.array([0.0, *mean], np.float32)
    return _conv_model(path, contract.size, 4, weights, bias, ["matte", "foreground"])


def build_for(path: Path, contract: MatteContract) -> Path:
    if contract.family == "u2net_cloth":
        return build_cloth(path, contract)
    if contract.family == "corridor_key":
        return build_corridor_key(path, contract)
    return build_matte(path, contract)

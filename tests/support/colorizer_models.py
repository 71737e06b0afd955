"""Stand-in frame colorizers in FaceFusion's signatures (``input`` 1x3xHxW, any size), built with
onnx.helper: one 1x1 convolution each.

- DDColor-like: a/b out (1x2xHxW): a = 120 * (red - 0.5), so light parts turn red and dark parts green;
  b = 30 everywhere (yellow). Swapped a/b, a lost lightness or a flipped frame shows.
- DeOldify-like: its grey RGB input (0..255) back with red raised and blue lowered by 40 (a warm picture):
  read as BGR instead of RGB it would come out cool.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from tests.support.onnx_models import _const, _save


def _conv(path: Path, name: str, weights: np.ndarray, bias: np.ndarray) -> Path:
    outputs = weights.shape[0]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "weights", "bias"], ["output"], kernel_shape=[1, 1])],
        name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, outputs, "height", "width"])],
        initializer=[_const("weights", weights.reshape(outputs, 3, 1, 1)), _const("bias", bias)],
    )
    return _save(graph, path)


def build_ddcolor(path: Path) -> Path:
    weights = np.array([[120.0, 0.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    return _conv(path, "ddcolor_like", weights, np.array([-60.0, 30.0], np.float32))


def build_deoldify(path: Path) -> Path:
    return _conv(path, "deoldify_like", np.eye(3, dtype=np.float32), np.array([40.0, 0.0, -40.0], np.float32))

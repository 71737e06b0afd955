"""The inswapper family (inswapper_128 and its fp16 export): insightface's arithmetic, our session.

Source latent = normed ArcFace embedding x emap (the model's last initializer), normalised again.
Target = the face aligned to 128 px with the ArcFace template shifted for 128, RGB in [0, 1].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.alignment import warp_face
from facefusion_ui.models import ModelSpec
from facefusion_ui.types import Embedding, Frame, Matrix, Points


def read_emap(path: Path) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    emap: np.ndarray = numpy_helper.to_array(model.graph.initializer[-1]).astype(np.float32)
    return emap


def source_latent(normed_embedding: Embedding, emap: np.ndarray) -> np.ndarray:
    latent = np.asarray(normed_embedding, dtype=np.float32).reshape(1, -1) @ emap
    normalised: np.ndarray = latent / (np.linalg.norm(latent) or 1.0)
    return normalised.astype(np.float32)


def _feed(session: Any, latent: np.ndarray, blob: np.ndarray) -> dict[str, np.ndarray]:
    feed = {}
    for model_input in session.get_inputs():
        value = latent if len(model_input.shape) == 2 else blob
        feed[model_input.name] = value.astype(np.float16 if "float16" in model_input.type else np.float32)
    return feed


def swap_crop(session: Any, spec: ModelSpec, frame: Frame, kps: Points, latent: np.ndarray) -> tuple[Frame, Matrix]:
    """The swapped, aligned face crop (BGR) and the matrix that aligned it."""
    size = spec.input_size[0] if spec.input_size else 128
    crop, matrix = warp_face(frame, kps, "arcface_128", size)
    blob = cv2.dnn.blobFromImage(crop, 1.0 / spec.std, (size, size), (spec.mean,) * 3, swapRB=True)
    prediction = np.asarray(session.run(None, _feed(session, latent, blob))[0], dtype=np.float32)
    rgb = np.clip(prediction[0].transpose(1, 2, 0) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]), matrix

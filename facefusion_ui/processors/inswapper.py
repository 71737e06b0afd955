"""The inswapper family (inswapper_128 and its fp16 export): insightface's arithmetic, our session.

Source latent = normed ArcFace embedding x emap (the model's last initializer), normalised again.
Target = the face aligned to 128 px with the ArcFace template shifted for 128, RGB in [0, 1].
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.models import ModelSpec
from facefusion_ui.processors.swapper_families import contract_for
from facefusion_ui.processors.swapper_families import swap_crop as family_swap_crop
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


def swap_crop(session: Any, spec: ModelSpec, frame: Frame, kps: Points, latent: np.ndarray) -> tuple[Frame, Matrix]:
    """The swapped, aligned face crop (BGR) and the matrix that aligned it (the family's code, no boost)."""
    return family_swap_crop(session, contract_for(spec.name), frame, kps, latent, None)

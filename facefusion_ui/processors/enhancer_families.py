"""The ONNX face enhancer families: each model's contract as data, and the code that runs one crop.

Every enhancer takes one aligned face, RGB, ``(pixel / 255 - 0.5) / 0.5`` (so [-1, 1]), 1x3xSxS, named
``input``, and returns the restored face in the same range and layout. CodeFormer takes a second input,
``weight`` (a 1-element double): its fidelity, 0 restores most, 1 keeps closest to the input face.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.alignment import AlignmentFit
from facefusion_ui.faces.warp_templates import WarpTemplate
from facefusion_ui.types import Frame


@dataclass(frozen=True)
class EnhancerContract:
    family: str
    template: WarpTemplate
    size: int
    mean: float = 0.5
    std: float = 0.5
    """On the [0, 1] RGB scale, the same for the three channels."""
    input_name: str = "input"
    weight_input: str | None = None
    fit: AlignmentFit = "lmeds"
    """How the five points are fitted to the template: LMEDS, as facexlib's ``FaceRestoreHelper`` aligns
    faces for GFPGAN, CodeFormer and RestoreFormer++ (``align_warp_face``, ``method=cv2.LMEDS``).
    FaceFusion aligns them by least squares like its swappers; the restorers' own path is kept."""
    channels: str = "rgb"


ENHANCER_CONTRACTS: Mapping[str, EnhancerContract] = {
    "codeformer": EnhancerContract("codeformer", "ffhq_512", 512, weight_input="weight"),
    "gfpgan_1.2": EnhancerContract("gfpgan", "ffhq_512", 512),
    "gfpgan_1.3": EnhancerContract("gfpgan", "ffhq_512", 512),
    "gfpgan_1.4": EnhancerContract("gfpgan", "ffhq_512", 512),
    "gpen_bfr_256": EnhancerContract("gpen", "arcface_128", 256),
    "gpen_bfr_512": EnhancerContract("gpen", "ffhq_512", 512),
    "gpen_bfr_1024": EnhancerContract("gpen", "ffhq_512", 1024),
    "gpen_bfr_2048": EnhancerContract("gpen", "ffhq_512", 2048),
    "restoreformer_plus_plus": EnhancerContract("restoreformer", "ffhq_512", 512),
}


def enhancer_contract(model: str) -> EnhancerContract:
    try:
        return ENHANCER_CONTRACTS[model]
    except KeyError:
        known = ", ".join(ENHANCER_CONTRACTS)
        raise ModelError(f"'{model}' is not a face enhancer this version can run: choose one of {known}") from None


def enhancer_feed(session: Any, contract: EnhancerContract, blob: np.ndarray, weight: float) -> dict[str, np.ndarray]:
    """The image goes to every input but the weight (GFPGAN exports name theirs differently)."""
    feed = {}
    for model_input in session.get_inputs():
        if model_input.name == contract.weight_input:
            dtype = np.float64 if "double" in model_input.type else np.float32
            feed[model_input.name] = np.array([weight], dtype=dtype)
        else:
            dtype = np.float16 if "float16" in model_input.type else np.float32
            feed[model_input.name] = blob.astype(dtype)
    return feed


def enhance_crop(session: Any, contract: EnhancerContract, crop: Frame, weight: float = 0.5) -> Frame:
    """The restored crop (BGR uint8, same size) of an aligned BGR crop."""
    rgb = crop[:, :, ::-1].astype(np.float32) / 255.0
    blob = np.ascontiguousarray(((rgb - contract.mean) / contract.std).transpose(2, 0, 1)[None], dtype=np.float32)
    output = np.asarray(session.run(None, enhancer_feed(session, contract, blob, weight))[0], dtype=np.float32)
    restored = output.reshape(3, *output.shape[-2:]).transpose(1, 2, 0) * contract.std + contract.mean
    pixels = np.clip(restored, 0.0, 1.0) * 255.0 + 0.5
    return np.ascontiguousarray(pixels.astype(np.uint8)[:, :, ::-1])

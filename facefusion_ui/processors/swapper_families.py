"""The ONNX face swapper families: each model's input/output contract as data, and the code that runs it.

Every family takes the target as ``target`` (1x3xSxS, RGB, ``(pixel / 255 - mean) / std``) and the
source as ``source``, which is one of:

- ``inswapper_latent``: the normed ArcFace embedding times the model's ``emap``, normed (inswapper);
- ``arcface_normed``: the normed ArcFace embedding; of several photos, the mean of theirs (HyperSwap);
- ``converted``: the ArcFace embedding through an embedding converter (GHOST);
- ``converted_normed``: the same, then normed (SimSwap, HifiFace);
- ``source_crop``: the source face itself, aligned, RGB in [0, 1] (BlendSwap, UniFace).

The output (1x3xSxS RGB) is either in [0, 1] already or, for the families trained on [-1, 1]
(``denormalise``), mapped back with ``* std + mean``. It is pasted back through the inverse of the
alignment matrix. Pixel boost runs a model of size S on a larger aligned crop of side k*S: the crop is
cut into k*k interleaved tiles (tile (a, b) holds the pixels (a + k*i, b + k*j)), each one a whole face
at the model's size, and the swapped tiles are woven back together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.warp_templates import WarpTemplate, warp_to_template
from facefusion_ui.types import Embedding, Frame, Matrix, Points

SourceKind = Literal["inswapper_latent", "arcface_normed", "converted", "converted_normed", "source_crop"]
Triple = tuple[float, float, float]
HALF: Triple = (0.5, 0.5, 0.5)
ZERO: Triple = (0.0, 0.0, 0.0)
ONE: Triple = (1.0, 1.0, 1.0)
IMAGENET_MEAN: Triple = (0.485, 0.456, 0.406)
IMAGENET_STD: Triple = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class SwapperContract:
    """What one swapper model expects and returns. ``mean``/``std`` are on the [0, 1] RGB scale."""

    family: str
    template: WarpTemplate
    size: int
    mean: Triple
    std: Triple
    source: SourceKind
    denormalise: bool
    """True: the output is in the normalised range and maps back with ``* std + mean``."""
    converter: str | None = None
    """The embedding converter model (``converted`` sources)."""
    source_template: WarpTemplate | None = None
    source_size: int = 0
    """The source crop (``source_crop`` sources)."""
    target_input: str = "target"
    source_input: str = "source"
    channels: Literal["rgb"] = "rgb"

    @property
    def needs_embedding(self) -> bool:
        return self.source != "source_crop"


def _hyperswap() -> SwapperContract:
    return SwapperContract("hyperswap", "arcface_128", 256, HALF, HALF, "arcface_normed", True)


def _inswapper() -> SwapperContract:
    return SwapperContract("inswapper", "arcface_128", 128, ZERO, ONE, "inswapper_latent", False)


def _ghost() -> SwapperContract:
    return SwapperContract("ghost", "arcface_112_v1", 256, HALF, HALF, "converted", True, "crossface_ghost")


SWAPPER_CONTRACTS: Mapping[str, SwapperContract] = {
    "hyperswap_1a_256": _hyperswap(),
    "hyperswap_1b_256": _hyperswap(),
    "hyperswap_1c_256": _hyperswap(),
    "inswapper_128": _inswapper(),
    "inswapper_128_fp16": _inswapper(),
    "simswap_256": SwapperContract(
        "simswap", "arcface_112_v1", 256, IMAGENET_MEAN, IMAGENET_STD, "converted_normed", False, "crossface_simswap"
    ),
    "simswap_unofficial_512": SwapperContract(
        "simswap", "arcface_112_v1", 512, ZERO, ONE, "converted_normed", False, "crossface_simswap"
    ),
    "ghost_1_256": _ghost(),
    "ghost_2_256": _ghost(),
    "ghost_3_256": _ghost(),
    "blendswap_256": SwapperContract(
        "blendswap", "ffhq_512", 256, ZERO, ONE, "source_crop", False, None, "arcface_112_v2", 112
    ),
    "uniface_256": SwapperContract("uniface", "ffhq_512", 256, HALF, HALF, "source_crop", True, None, "ffhq_512", 256),
    "hififace_unofficial_256": SwapperContract(
        "hififace", "mtcnn_512", 256, HALF, HALF, "converted_normed", True, "crossface_hififace"
    ),
}
"""model name -> contract (FaceFusion's 3.x exports of each model)."""


def contract_for(model: str) -> SwapperContract:
    try:
        return SWAPPER_CONTRACTS[model]
    except KeyError:
        known = ", ".join(SWAPPER_CONTRACTS)
        raise ModelError(f"'{model}' is not an ONNX face swapper this version can run: choose one of {known}") from None


def boost_problem(model: str, contract: SwapperContract, pixel_boost: int | None) -> str | None:
    """Why ``pixel_boost`` does not suit the model (it must be a multiple of the model's size), or None."""
    if pixel_boost is None or (pixel_boost >= contract.size and pixel_boost % contract.size == 0):
        return None
    sizes = ", ".join(str(contract.size * k) for k in range(1, 1024 // contract.size + 1))
    return f"pixel boost {pixel_boost} does not suit {model} ({contract.size} px): choose {sizes}"


# pixels ----------------------------------------------------------------------------------------------------
def to_blob(image: Frame, mean: Triple, std: Triple) -> np.ndarray:
    """A BGR uint8 image as a 1x3xHxW RGB float32 blob, ``(pixel / 255 - mean) / std``."""
    rgb = image[:, :, ::-1].astype(np.float32) / 255.0
    normalised = (rgb - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return np.ascontiguousarray(normalised.transpose(2, 0, 1)[None], dtype=np.float32)


def from_output(output: np.ndarray, contract: SwapperContract) -> Frame:
    """A model's 1x3xSxS (or 3xSxS) RGB output as a BGR uint8 image."""
    rgb = np.asarray(output, dtype=np.float32).reshape(3, *np.shape(output)[-2:]).transpose(1, 2, 0)
    if contract.denormalise:
        rgb = rgb * np.asarray(contract.std, np.float32) + np.asarray(contract.mean, np.float32)
    pixels = np.clip(rgb, 0.0, 1.0) * 255.0 + 0.5
    return np.ascontiguousarray(pixels.astype(np.uint8)[:, :, ::-1])


def implode(crop: Frame, tiles: int) -> list[Frame]:
    """The k*k interleaved tiles of a crop whose side is k times the model's size."""
    return [np.ascontiguousarray(crop[a::tiles, b::tiles]) for a in range(tiles) for b in range(tiles)]


def explode(parts: Sequence[Frame], tiles: int) -> Frame:
    """The crop woven back from its tiles (the inverse of ``implode``)."""
    size = parts[0].shape[0]
    crop = np.empty((size * tiles, size * tiles, 3), dtype=np.uint8)
    for index, part in enumerate(parts):
        crop[index // tiles :: tiles, index % tiles :: tiles] = part
    return crop


# sources ---------------------------------------------------------------------------------------------------
def normed(vector: np.ndarray) -> np.ndarray:
    flat = np.asarray(vector, dtype=np.float32).reshape(1, -1)
    result: np.ndarray = flat / (np.linalg.norm(flat) or 1.0)
    return result.astype(np.float32)


def mean_of_normed(embeddings: Sequence[Embedding]) -> np.ndarray:
    """The mean of the normed embeddings of every source photo (1x512; its norm is under 1 where they
    differ)."""
    mean: np.ndarray = np.mean(np.stack([normed(e).reshape(-1) for e in embeddings]), axis=0).reshape(1, -1)
    return mean.astype(np.float32)


def mean_normed(embeddings: Sequence[Embedding]) -> np.ndarray:
    """The normed mean of the normed embeddings of every source photo."""
    return normed(mean_of_normed(embeddings))


def convert_embedding(embeddings: Sequence[Embedding], converter: Any, then_norm: bool) -> np.ndarray:
    """The mean ArcFace embedding through the converter (its input ``input``, 1x512)."""
    mean = np.mean(np.stack([np.asarray(e, np.float32).reshape(-1) for e in embeddings]), axis=0)
    name = converter.get_inputs()[0].name
    converted = np.asarray(converter.run(None, {name: mean.reshape(1, -1).astype(np.float32)})[0], np.float32)
    return normed(converted) if then_norm else converted.reshape(1, -1)


def source_crop(image: Frame, kps: Points, contract: SwapperContract) -> np.ndarray:
    """The source face aligned to the family's source template, RGB in [0, 1], 1x3xSxS."""
    assert contract.source_template is not None
    crop, _ = warp_to_template(image, kps, contract.source_template, contract.source_size)
    return to_blob(crop, ZERO, ONE)


# running -----------------------------------------------------------------------------------------------------
def _feed(session: Any, contract: SwapperContract, target: np.ndarray, source: np.ndarray) -> dict[str, np.ndarray]:
    values = {contract.target_input: target, contract.source_input: source}
    feed = {}
    for model_input in session.get_inputs():
        if model_input.name not in values:
            raise ModelError(
                f"the swapper's input '{model_input.name}' is not one its family ({contract.family}) feeds: "
                "the file is not the model its name says; delete it and download it again"
            )
        dtype = np.float16 if "float16" in model_input.type else np.float32
        feed[model_input.name] = values[model_input.name].astype(dtype)
    return feed


def swap_crop(
    session: Any, contract: SwapperContract, frame: Frame, kps: Points, source: np.ndarray, pixel_boost: int | None
) -> tuple[Frame, Matrix]:
    """The swapped aligned crop (BGR, side ``pixel_boost`` or the model's size) and its alignment matrix."""
    side = max(pixel_boost or contract.size, contract.size)
    tiles = side // contract.size
    crop, matrix = warp_to_template(frame, kps, contract.template, tiles * contract.size)
    swapped = []
    for tile in implode(crop, tiles):
        output = session.run(None, _feed(session, contract, to_blob(tile, contract.mean, contract.std), source))[0]
        swapped.append(from_output(output, contract))
    return explode(swapped, tiles), matrix

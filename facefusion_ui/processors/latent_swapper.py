"""The ONNX face swappers (``swapper_families.py``: each family's crop, normalisation and source input):
the source person as the input the model takes, each target face swapped in its aligned crop and pasted
back through the mask stage."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.recognizer import embed_arcface
from facefusion_ui.faces.source import SourceIdentity
from facefusion_ui.models import require_model
from facefusion_ui.processors.base import missing_models
from facefusion_ui.processors.inswapper import read_emap, source_latent
from facefusion_ui.processors.mask_outlines import box_outline
from facefusion_ui.processors.swapper_families import (
    SwapperContract,
    boost_problem,
    contract_for,
    convert_embedding,
    mean_normed,
    mean_of_normed,
    source_crop,
    swap_crop,
)
from facefusion_ui.processors.swapping import Swapper
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

ARCFACE = "arcface_w600k_r50"


@dataclass(frozen=True)
class SourceLatent:
    """What the model's ``source`` input takes (latent, embedding or source crop), made once per set of
    source photos."""

    latent: np.ndarray


class LatentSwapper(Swapper[SourceLatent]):
    @property
    def contract(self) -> SwapperContract:
        return contract_for(self.model)

    def own_models(self) -> tuple[str, ...]:
        contract = self.contract
        own = (self.model, ARCFACE) if contract.needs_embedding else (self.model,)
        return own + ((contract.converter,) if contract.converter else ())

    def pre_check(self) -> list[str]:
        problems = missing_models(self.runtime, self.required_models())
        boost = boost_problem(self.model, self.contract, self.settings.face_swapper_pixel_boost)
        return problems + ([boost] if boost else [])

    def mask_outline(self, face: Face) -> list[Points]:
        """The box mask on the 128 px ArcFace crop."""
        return box_outline(face, "arcface_128", 128, self.settings)

    def prepare_source(self, sources: SourceIdentity) -> SourceLatent:
        """The source input the model's family takes, from every source photo (embedding families) or
        from the most frontal one (families that take the source face itself)."""
        contract = self.contract
        if contract.source == "source_crop":
            best = sources.best_frontal()
            return SourceLatent(source_crop(best.image, best.face.kps, contract))
        arcface_spec, arcface = self.runtime.onnx_session(ARCFACE)
        embeddings = [embed_arcface(s.image, s.face, arcface, arcface_spec) for s in sources.faces]
        if contract.converter is not None:
            _, converter = self.runtime.onnx_session(contract.converter)
            return SourceLatent(convert_embedding(embeddings, converter, contract.source == "converted_normed"))
        if contract.source == "arcface_normed":
            # HyperSwap is FaceFusion's own model, and FaceFusion feeds it the average face's
            # ``embedding_norm``: the mean of the photos' normed embeddings, not normed again
            # (face_analyser.get_average_face, face_swapper prepare_source_embedding).
            return SourceLatent(mean_of_normed(embeddings))
        # inswapper as its authors' INSwapper.get: the normed embedding times emap, then normed; the
        # mean of several photos is normed first, which the norm after emap makes no matter. (FaceFusion
        # divides by the embedding's norm instead of the latent's: a scale insightface does not use.)
        spec = self.runtime.resolve(self.model)
        emap = read_emap(require_model(spec, self.runtime.folder))
        return SourceLatent(source_latent(mean_normed(embeddings).reshape(-1), emap))

    def swap_face(self, frame: Frame, face: Face, prepared: SourceLatent, settings: Settings) -> Frame | None:
        _, session = self.runtime.onnx_session(self.model)
        boost = settings.face_swapper_pixel_boost
        crop, matrix = swap_crop(session, self.contract, frame, face.kps, prepared.latent, boost)
        return paste_back(frame, crop, matrix, self.masks.crop_mask(frame, face, matrix, crop.shape[0]))

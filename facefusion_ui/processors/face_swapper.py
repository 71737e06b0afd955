"""The face swapper: the ONNX swapper families (``swapper_families``), or the embedded ``mesh_warp``."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.faces.alignment import paste_back
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.landmarker import face_mesh, face_mesh_at, mesh_roi
from facefusion_ui.faces.recognizer import embed_arcface
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceIdentity
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.models import require_model
from facefusion_ui.processors.base import FrameContext, missing_models
from facefusion_ui.processors.inswapper import read_emap, source_latent
from facefusion_ui.processors.mask_outlines import box_outline, mesh_outline
from facefusion_ui.processors.mesh_warp import (
    IRIS_POINTS,
    WarpSource,
    mesh_warp_swap,
    turned_too_far,
    with_irises,
)
from facefusion_ui.processors.swapper_families import (
    SwapperContract,
    boost_problem,
    contract_for,
    convert_embedding,
    mean_normed,
    source_crop,
    swap_crop,
)
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

logger = logging.getLogger(__name__)
PREPARED_SOURCES_LIMIT = 8
ARCFACE = "arcface_w600k_r50"


@dataclass(frozen=True)
class PreparedSource:
    """What a swapper needs of the source person, computed once per set of source photos."""

    warp: WarpSource | None = None
    """The embedded path: the source face's crop, mesh and trust map."""
    latent: np.ndarray | None = None
    """The ONNX path: what the model's ``source`` input takes (latent, embedding or source crop)."""


class FaceSwapper:
    name = "face_swapper"
    needs_68_landmarks = False

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.model = settings.face_swapper_model
        self._prepared: OrderedDict[str, PreparedSource] = OrderedDict()
        self._lock = threading.Lock()
        self.faces_swapped = 0
        self.faces_skipped = 0
        self.faces_skipped_pose = 0
        """Faces the embedded swapper left as they were, turned too far (also in ``faces_skipped``)."""
        self.masks = MaskStage(settings, runtime)

    @property
    def needs_smoothed_mesh(self) -> bool:
        """The embedded swapper draws with the faces' meshes."""
        return self.model == "mesh_warp"

    def mask_outline(self, face: Face) -> list[Points]:
        """The mesh's hull (the embedded swapper); the box on the 128 px ArcFace crop (the others)."""
        if self.model == "mesh_warp":
            return mesh_outline(face)
        return box_outline(face, "arcface_128", 128, self.settings)

    @property
    def contract(self) -> SwapperContract:
        return contract_for(self.model)

    def required_models(self) -> tuple[str, ...]:
        if self.model == "mesh_warp":
            own: tuple[str, ...] = ("mesh_warp", "mediapipe_face_mesh")
        else:
            contract = self.contract
            own = (self.model, ARCFACE) if contract.needs_embedding else (self.model,)
            own += (contract.converter,) if contract.converter else ()
        return tuple(dict.fromkeys((*own, *self.masks.required_models())))

    def pre_check(self) -> list[str]:
        problems = missing_models(self.runtime, self.required_models())
        if self.model != "mesh_warp":
            boost = boost_problem(self.model, self.contract, self.settings.face_swapper_pixel_boost)
            problems += [boost] if boost else []
        return problems

    def release(self) -> None:
        with self._lock:
            self._prepared.clear()
        for name in self.required_models():
            self.runtime.sessions.release(name)

    def counts(self) -> dict[str, int]:
        with self._lock:
            if self.model != "mesh_warp":
                return {"faces_swapped": self.faces_swapped}
            return {"faces_swapped": self.faces_swapped, "faces_skipped_pose": self.faces_skipped_pose}

    def mask_counts(self) -> dict[str, int]:
        return self.masks.counts()

    # sources ---------------------------------------------------------------------------------------------
    def prepare(self, sources: SourceIdentity) -> PreparedSource:
        with self._lock:
            prepared = self._prepared.get(sources.key)
            if prepared is not None:
                self._prepared.move_to_end(sources.key)
                return prepared
        prepared = self._prepare_mesh(sources) if self.model == "mesh_warp" else self._prepare_latent(sources)
        with self._lock:
            self._prepared[sources.key] = prepared
            while len(self._prepared) > PREPARED_SOURCES_LIMIT:
                self._prepared.popitem(last=False)
        return prepared

    def _prepare_mesh(self, sources: SourceIdentity) -> PreparedSource:
        """The embedded path copies one photo: the most frontal source face."""
        best = sources.best_frontal()
        mesh = self._warp_mesh(best.image, best.face)
        if mesh is None:
            raise InputError(f"the face in {best.path} cannot be mapped: use a sharper, more frontal photo")
        return PreparedSource(warp=WarpSource.of(best.image, mesh, self.settings.keep_source_glasses))

    def _prepare_latent(self, sources: SourceIdentity) -> PreparedSource:
        """The ONNX path: the source input the model's family takes, from every source photo (embedding
        families) or from the most frontal one (families that take the source face itself)."""
        contract = self.contract
        if contract.source == "source_crop":
            best = sources.best_frontal()
            return PreparedSource(latent=source_crop(best.image, best.face.kps, contract))
        arcface_spec, arcface = self.runtime.onnx_session(ARCFACE)
        embeddings = [embed_arcface(s.image, s.face, arcface, arcface_spec) for s in sources.faces]
        if contract.converter is not None:
            _, converter = self.runtime.onnx_session(contract.converter)
            return PreparedSource(
                latent=convert_embedding(embeddings, converter, contract.source == "converted_normed")
            )
        mean = mean_normed(embeddings)
        if contract.source == "arcface_normed":
            return PreparedSource(latent=mean)
        spec = self.runtime.resolve(self.model)
        emap = read_emap(require_model(spec, self.runtime.folder))
        return PreparedSource(latent=source_latent(mean.reshape(-1), emap))

    # frames ------------------------------------------------------------------------------------------------
    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if context.sources is None or not context.faces:
            return frame
        prepared = self.prepare(context.sources)
        for face in context.faces:
            swapped = self.swap_face(frame, face, prepared, context.settings)
            with self._lock:
                if swapped is None:
                    self.faces_skipped += 1
                else:
                    self.faces_swapped += 1
            frame = swapped if swapped is not None else frame
        return frame

    def swap_face(self, frame: Frame, face: Face, prepared: PreparedSource, settings: Settings) -> Frame | None:
        if self.model == "mesh_warp":
            return self._swap_mesh(frame, face, prepared, settings)
        _, session = self.runtime.onnx_session(self.model)
        assert prepared.latent is not None
        boost = settings.face_swapper_pixel_boost
        crop, matrix = swap_crop(session, self.contract, frame, face.kps, prepared.latent, boost)
        return paste_back(frame, crop, matrix, self.masks.crop_mask(frame, face, matrix, crop.shape[0]))

    def _warp_mesh(self, frame: Frame, face: Face) -> FaceMesh | None:
        """The mesh the embedded swapper draws with: the face's plain mesh (from the analysis, or made
        here) with the irises of the swapper's own mesh model (refined landmarks: the gaze) put in its
        eyes. The refined model's other points are not used: on some faces (eyes cast down) they carried
        less of the source's likeness across."""
        plain = face.mesh
        if plain is None:
            with self.runtime.using("mediapipe_face_mesh") as model:
                plain = face_mesh(frame, face.bbox, model)
        if plain is None or len(plain.points) >= IRIS_POINTS:
            return plain
        # read in the region the plain mesh gives (smoothed over time in a video), not around the
        # detector's box, which jumps on a still face: the irises found there stay as still as the mesh
        with self.runtime.using("mesh_warp") as model:
            refined = face_mesh_at(frame, mesh_roi(plain.points), model)
        return plain if refined is None else with_irises(plain, refined)

    def _swap_mesh(self, frame: Frame, face: Face, prepared: PreparedSource, settings: Settings) -> Frame | None:
        assert prepared.warp is not None
        target_mesh = self._warp_mesh(frame, face)
        if target_mesh is None:
            logger.debug("no mesh for the face at %s: left as it is", face.bbox.astype(int).tolist())
            return None
        if turned_too_far(target_mesh):
            with self._lock:
                self.faces_skipped_pose += 1
            return None
        face_mask = self.masks.blend_mask(frame, face, target_mesh.points)
        return mesh_warp_swap(frame, target_mesh, prepared.warp, settings.face_mask_blur, face_mask).frame

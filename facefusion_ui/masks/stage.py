"""The mask stage: the maskers the settings name, run on one face's view and combined by keeping the
smallest value per pixel. Every swapper and the enhancer paste back through it.

A masker is anything that follows ``Masker``; ``MASKERS`` maps a name to its factory, so a model-backed
masker (an ONNX occluder or face parser) plugs in by name beside or instead of the embedded ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.landmarker import face_mesh
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.maskers import AreaMasker, BoxMasker, MouthMasker, RegionMasker
from facefusion_ui.masks.model_maskers import ParserRegionMasker, XsegOcclusionMasker
from facefusion_ui.masks.occlusion import OcclusionMasker
from facefusion_ui.masks.view import FaceView, Region, crop_view, region_view
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Mask, Matrix, Points

MESH_MODEL = "mediapipe_face_mesh"
OCCLUDED_BELOW = 0.5
"""A pixel counts as occluded (in the report) where the occlusion mask is below this."""


class Masker(Protocol):
    """One kind of paste-back mask."""

    name: str
    needs_mesh: bool
    """Whether it reads ``FaceView.points`` (the stage then makes the mesh where the face has none)."""

    def required_models(self) -> tuple[str, ...]:
        """Manifest names of the models it runs."""
        ...

    def mask(self, view: FaceView) -> Mask:
        """0..1 over the view (shape ``view.shape``): 1 where the swapped face may show."""
        ...


MaskerFactory = Callable[[Settings, ModelRuntime], Masker]


def occlusion_masker(settings: Settings, runtime: ModelRuntime) -> Masker:
    """The occlusion mask by ``face_occluder_model``: the embedded one (``mediapipe``) or an XSeg model."""
    if settings.face_occluder_model == "mediapipe":
        return OcclusionMasker(settings, runtime)
    return XsegOcclusionMasker(settings, runtime)


def region_masker(settings: Settings, runtime: ModelRuntime) -> Masker:
    """The region mask by ``face_parser_model``: the embedded mesh's regions (``mediapipe``) or a BiSeNet."""
    if settings.face_parser_model == "mediapipe":
        return RegionMasker(settings, runtime)
    return ParserRegionMasker(settings, runtime)


MASKERS: Mapping[str, MaskerFactory] = MappingProxyType(
    {
        "box": BoxMasker,
        "occlusion": occlusion_masker,
        "area": AreaMasker,
        "region": region_masker,
        "mouth": MouthMasker,
    }
)
"""Maskers by name: the ``face_mask_types`` and ``mouth`` (``--mouth-mask``)."""

BlendMask = Callable[[Region], Mask]
"""What the embedded swapper asks for: the combined mask over a rectangle of the frame."""


def masker_names(settings: Settings) -> tuple[str, ...]:
    return (*settings.face_mask_types, *(("mouth",) if settings.mouth_mask else ()))


class MaskStage:
    """The maskers of one processor, with what they did (faces masked, occluded pixels)."""

    def __init__(
        self, settings: Settings, runtime: ModelRuntime, factories: Mapping[str, MaskerFactory] = MASKERS
    ) -> None:
        self.runtime = runtime
        self.maskers: Sequence[Masker] = [factories[name](settings, runtime) for name in masker_names(settings)]
        self.needs_mesh = any(masker.needs_mesh for masker in self.maskers)
        self._lock = threading.Lock()
        self.faces_masked = 0
        self.occluded_pixels = 0.0

    def required_models(self) -> tuple[str, ...]:
        names = [MESH_MODEL] if self.needs_mesh else []
        for masker in self.maskers:
            names.extend(masker.required_models())
        return tuple(dict.fromkeys(names))

    def mesh_of(self, frame: Frame, face: Face) -> Points | None:
        """The face's mesh points in the frame, made here when the face has none and a masker needs it."""
        if not self.needs_mesh:
            return None
        if face.mesh is not None:
            return face.mesh.points
        with self.runtime.using(MESH_MODEL) as model:
            mesh = face_mesh(frame, face.bbox, model)
        return mesh.points if mesh is not None else None

    def mask(self, view: FaceView) -> Mask:
        """Every masker's mask of ``view``, combined by the smallest value."""
        combined = np.ones(view.shape, dtype=np.float32)
        occluded = 0.0
        for masker in self.maskers:
            mask = masker.mask(view)
            if masker.name == "occlusion":
                occluded = float(np.count_nonzero(mask < OCCLUDED_BELOW)) * view.frame_pixels_per_pixel
            np.minimum(combined, mask, out=combined)
        with self._lock:
            self.faces_masked += 1
            self.occluded_pixels += occluded
        return combined

    def crop_mask(self, frame: Frame, face: Face, matrix: Matrix, size: int) -> Mask:
        """The mask of an aligned ``size`` px crop (``matrix``: frame to crop) for ``paste_back``."""
        return self.mask(crop_view(frame, face, self.mesh_of(frame, face), matrix, size))

    def blend_mask(self, frame: Frame, face: Face, mesh: Points) -> BlendMask:
        """The mask over a rectangle of ``frame`` (``mesh``: the face's mesh in frame pixels), for the
        embedded swapper, which blends in the frame itself."""

        def over(region: Region) -> Mask:
            return self.mask(region_view(frame, face, mesh, region))

        return over

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"faces_masked": self.faces_masked, "occlusion_pixels": round(self.occluded_pixels)}


@runtime_checkable
class MaskingProcessor(Protocol):
    """Optional beside ``Processor``: one that pastes back through a ``MaskStage`` says what it did."""

    def mask_counts(self) -> Mapping[str, int]: ...


def masks_summary(settings: Settings, processors: Sequence[Any]) -> dict[str, Any]:
    """For a job's JSON summary: which masks ran, on how many faces, how many frame pixels they found
    occluded (summed over the processors that paste back through the stage)."""
    faces, occluded = 0, 0
    for processor in processors:
        if isinstance(processor, MaskingProcessor):
            counts = processor.mask_counts()
            faces += counts["faces_masked"]
            occluded += counts["occlusion_pixels"]
    return {
        "types": list(settings.face_mask_types),
        "mouth_mask": settings.mouth_mask,
        "faces_masked": faces,
        "occlusion_pixels": occluded if "occlusion" in settings.face_mask_types else None,
    }

"""The face swapper's entry point (``face_swapper``): the swapper of the chosen model's kind, the embedded
``mesh_warp`` (``mesh_warp_swapper.py``) or an ONNX swapper family (``latent_swapper.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.latent_swapper import LatentSwapper
from facefusion_ui.processors.mesh_warp_swapper import MESH_WARP, MeshWarpSwapper
from facefusion_ui.processors.options import ProcessorOption
from facefusion_ui.state_manager import Settings


@dataclass(frozen=True)
class SwapperFactory:
    """Makes the swapper of ``settings.face_swapper_model``'s kind (a ``ProcessorFactory``)."""

    options: Sequence[ProcessorOption] = ()
    """The options every swapper kind takes (``ConfigurableProcessor``): none yet."""
    summary: str = "puts the source person's face onto the target's faces"
    needs_source_face: bool = True
    reads_settings: Sequence[str] = ("face_swapper_model", "face_swapper_pixel_boost", "keep_source_glasses")

    def __call__(self, settings: Settings, runtime: ModelRuntime) -> MeshWarpSwapper | LatentSwapper:
        if settings.face_swapper_model == MESH_WARP:
            return MeshWarpSwapper(settings, runtime)
        return LatentSwapper(settings, runtime)


FaceSwapper = SwapperFactory()
"""What the entry point names: ``face_swapper = "facefusion_ui.processors.face_swapper:FaceSwapper"``."""

"""The embedded face swapper (``mesh_warp``, no download): the most frontal source face moved onto each
target face's mesh (``mesh_warp.py``); a face turned too far is left as it is."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.landmarker import face_mesh, face_mesh_at, mesh_roi, roi_bounds
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceIdentity
from facefusion_ui.processors.base import missing_models
from facefusion_ui.processors.mask_outlines import mesh_outline
from facefusion_ui.processors.mesh_warp import IRIS_POINTS, WarpSource, mesh_warp_swap, turned_too_far, with_irises
from facefusion_ui.processors.swapping import Swapper
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

logger = logging.getLogger(__name__)
MESH_WARP = "mesh_warp"


class MeshWarpSwapper(Swapper[WarpSource]):
    needs_smoothed_mesh = True
    """It draws with the faces' meshes: a video's are smoothed over time for it."""

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        super().__init__(settings, runtime)
        self.faces_skipped_pose = 0
        """Faces left as they were, turned too far."""

    def own_models(self) -> tuple[str, ...]:
        return (MESH_WARP, "mediapipe_face_mesh")

    def pre_check(self) -> list[str]:
        return missing_models(self.runtime, self.required_models())

    def counts(self) -> dict[str, int]:
        with self._lock:
            skipped = self.faces_skipped_pose
        return {**super().counts(), "faces_skipped_pose": skipped}

    def mask_outline(self, face: Face) -> list[Points]:
        """The hull of the face's mesh."""
        return mesh_outline(face)

    def frame_region(self, face: Face, width: int, height: int) -> tuple[int, int, int, int] | None:
        """What the swap of ``face`` reads and writes (``RegionalProcessor``): the square its irises are read
        in (``warp_mesh``: turned with the head, ``roi_bounds``). It holds the mesh (its inscribed circle,
        three quarters of the mesh's longer side from its box's centre, reaches past the box's corners) and
        so the region blended (``mesh_warp.region_of``). None when the mesh is found here (no mesh from the
        analysis: found round the box) or a mask other than the box may read further (the occluder's crop)."""
        if face.mesh is None or tuple(self.settings.face_mask_types) != ("box",) or self.settings.mouth_mask:
            return None
        return roi_bounds(mesh_roi(face.mesh.points), width, height)

    def prepare_source(self, sources: SourceIdentity) -> WarpSource:
        """One photo is copied: the most frontal source face."""
        best = sources.best_frontal()
        prepared = self.prepare_face(best.image, best.face)
        if prepared is None:
            raise InputError(f"the face in {best.path} cannot be mapped: use a sharper, more frontal photo")
        return prepared

    def prepare_face(self, image: Frame, face: Face) -> WarpSource | None:
        """What is drawn from ``face`` in ``image``, None where it cannot be mapped; a turned face with its
        mirror image (``mirror_source``)."""
        mesh = self.warp_mesh(image, face)
        if mesh is None:
            return None
        source = WarpSource.of(image, mesh, self.settings.keep_source_glasses)
        if not source.turned:
            return source
        # the fallback, flipped pixel for pixel, needs its own smaller copies (``WarpSource.at_size``)
        mirror = self.mirror_source(image, face) or source.flipped().with_smaller_copies()
        return replace(source, mirror=mirror)

    def mirror_source(self, image: Frame, face: Face) -> WarpSource | None:
        """A turned source's mirror image (``WarpSource.mirror``): the photo flipped left to right and its
        face mapped anew there (the mesh model does not see a flipped face as the flip of its mesh: on Tom
        Hanks's photo the mesh found anew carried him on more faces), or None where it is not found."""
        flipped = np.ascontiguousarray(image[:, ::-1])
        x1, y1, x2, y2 = face.bbox
        width = image.shape[1]
        box = np.array([width - x2, y1, width - x1, y2], dtype=np.float32)
        mesh = self.warp_mesh(flipped, replace(face, bbox=box, mesh=None))
        if mesh is None:
            return None
        return WarpSource.of(flipped, mesh, self.settings.keep_source_glasses)

    def warp_mesh(self, frame: Frame, face: Face) -> FaceMesh | None:
        """The mesh it draws with: the face's plain mesh (from the analysis, or made here) with the irises
        of its own mesh model (refined landmarks: the gaze) put in its eyes. The refined model's other
        points are not used: on some faces (eyes cast down) they carried less of the source's likeness."""
        plain = face.mesh
        if plain is None:
            with self.runtime.using("mediapipe_face_mesh") as model:
                plain = face_mesh(frame, face.bbox, model)
        if plain is None or len(plain.points) >= IRIS_POINTS:
            return plain
        # read in the region the plain mesh gives (smoothed over time in a video), not around the
        # detector's box, which jumps on a still face: the irises found there stay as still as the mesh
        with self.runtime.using(MESH_WARP) as model:
            refined = face_mesh_at(frame, mesh_roi(plain.points), model)
        return plain if refined is None else with_irises(plain, refined)

    def swap_face(self, frame: Frame, face: Face, prepared: WarpSource, settings: Settings) -> Frame | None:
        target_mesh = self.warp_mesh(frame, face)
        if target_mesh is None:
            logger.debug("no mesh for the face at %s: left as it is", face.bbox.astype(int).tolist())
            return None
        if turned_too_far(target_mesh):
            with self._lock:
                self.faces_skipped_pose += 1
            return None
        face_mask = self.masks.blend_mask(frame, face, target_mesh.points)
        return mesh_warp_swap(frame, target_mesh, prepared, settings.face_mask_blur, face_mask).frame

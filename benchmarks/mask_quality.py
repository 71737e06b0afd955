"""What the paste-back masks keep and what they cost, with the embedded swapper (``mesh_warp``).

Quality: an object from scikit-image's photos (the coffee cup, coins) is held over the lower face of
Grace Hopper's portrait and the astronaut's face is swapped on. Printed per mask setting:
- occluder kept: the share of the object's pixels the swap left unchanged (within 8 levels);
- face swapped: the share of the visible face (what the plain box swap changes on the portrait without
  the object, less the object) that the swap still changes.
Speed: the portrait scaled into a 1280x720 frame (face about 250 px wide); the swapper's time per face
without masks, and what each mask type adds (median of ``--repeat`` runs).

Run: ``.venv/bin/python benchmarks/mask_quality.py [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.mesh_warp import WarpSource, mesh_warp_swap
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media, occluders

UNCHANGED = 8
"""Largest difference (any channel) a pixel may show and still count as unchanged."""
SETTINGS = {
    "box": {"face_mask_types": ("box",)},
    "box occlusion": {"face_mask_types": ("box", "occlusion")},
    "box region": {"face_mask_types": ("box", "region")},
    "box area": {"face_mask_types": ("box", "area")},
    "box + mouth mask": {"face_mask_types": ("box",), "mouth_mask": True},
}


class Swapper:
    """The embedded swap of one source onto the first face of a frame, through a mask stage."""

    def __init__(self, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.analyser = FaceAnalyser(runtime)
        source_image = media.astronaut()
        source = self.face(source_image)
        assert source.mesh is not None
        self.source = WarpSource.of(source_image, source.mesh)

    def face(self, frame: Frame) -> Face:
        return self.analyser.analyse(frame, Settings(), embeddings=False, mesh=True)[0]

    def swap(self, frame: Frame, face: Face, stage: MaskStage) -> Frame:
        assert face.mesh is not None
        hook = stage.blend_mask(frame, face, face.mesh.points)
        return mesh_warp_swap(frame, face.mesh, self.source, Settings().face_mask_blur, hook).frame


def changed(before: Frame, after: Frame) -> np.ndarray:
    return np.asarray(np.abs(before.astype(np.int16) - after.astype(np.int16)).max(axis=2) > UNCHANGED)


@dataclass(frozen=True)
class OccluderSwap:
    """One swap of the portrait with an occluder held over its mouth, under one mask setting."""

    occluder: str
    label: str
    values: dict[str, Any]
    held: Frame
    held_face: Face
    output: Frame
    kept: float
    """Share of the occluder's pixels left as they were."""
    swapped: float
    """Share of the visible face's pixels the swap changed."""


def occluder_swaps(swapper: Swapper, runtime: ModelRuntime) -> Iterator[OccluderSwap]:
    """The cup and the coins held over Grace Hopper's mouth, swapped under each of ``SETTINGS``."""
    portrait = media.grace_hopper()
    face = swapper.face(portrait)
    assert face.mesh is not None
    face_area = changed(portrait, swapper.swap(portrait, face, MaskStage(Settings(), runtime)))
    mesh = face.mesh.points
    mouth = mesh[14] + (mesh[14] - mesh[168]) * 0.15
    for name, occluder in (("cup", occluders.cup()), ("coins", occluders.coins())):
        held, covered = occluders.held_over(portrait, occluder, mouth, face.width * 0.7)
        held_face = swapper.face(held)
        visible = face_area & ~covered
        for label, values in SETTINGS.items():
            output = swapper.swap(held, held_face, MaskStage(Settings().with_items(**values), runtime))
            moved = changed(held, output)
            kept, swapped = 1.0 - float(moved[covered].mean()), float(moved[visible].mean())
            yield OccluderSwap(name, label, values, held, held_face, output, kept, swapped)


def quality(swapper: Swapper, runtime: ModelRuntime) -> None:
    print(f"{'occluder':<8} {'masks':<18} {'occluder kept':>14} {'face swapped':>13}")
    for swap in occluder_swaps(swapper, runtime):
        print(f"{swap.occluder:<8} {swap.label:<18} {100 * swap.kept:>13.1f}% {100 * swap.swapped:>12.1f}%")


def frame_720p() -> Frame:
    """The portrait scaled into a 1280x720 frame (face about 250 px wide)."""
    portrait = media.grace_hopper()
    scale = 720 / portrait.shape[0] * 1.2
    scaled = cv2.resize(portrait, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)
    frame = np.zeros((720, 1280, 3), dtype=np.uint8)
    top = (scaled.shape[0] - 720) // 2
    frame[:, 400 : 400 + scaled.shape[1]] = scaled[top : top + 720, : min(scaled.shape[1], 880)]
    return frame


def swap_ms(
    swapper: Swapper, runtime: ModelRuntime, frame: Frame, face: Face, values: dict[str, Any], repeat: int
) -> float:
    """Median ms of one swap with the mask settings ``values`` (its models warmed first)."""
    stage = MaskStage(Settings().with_items(**values), runtime)
    swapper.swap(frame, face, stage)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        swapper.swap(frame, face, stage)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def speed(swapper: Swapper, runtime: ModelRuntime, repeat: int) -> None:
    frame = frame_720p()
    face = swapper.face(frame)
    settings = {"none": {"face_mask_types": ("box",)}, **SETTINGS}
    timings = {label: swap_ms(swapper, runtime, frame, face, values, repeat) for label, values in settings.items()}
    print(f"\n720p frame, face {face.width:.0f} px wide: swap + masks, ms per face")
    base = timings.pop("none")
    for label, ms in timings.items():
        print(f"{label:<18} {ms:7.1f} ms  (masks {ms - base:+6.1f} ms; swapper fps x{base / ms:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    runtime = ModelRuntime.create(Settings())
    swapper = Swapper(runtime)
    quality(swapper, runtime)
    speed(swapper, runtime, args.repeat)
    runtime.release_all()


if __name__ == "__main__":
    main()

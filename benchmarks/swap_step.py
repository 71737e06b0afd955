"""The embedded swapper's swap step alone (``mesh_warp_swap``), CPU time per face on one thread: t1.jpg's
six faces with each packaged source (Grace Hopper, the astronaut, Tom Hanks), prepared once. Prints
milliseconds per face. To compare two trees side by side, run it alternately from each, e.g.
``PYTHONPATH=OTHER python benchmarks/swap_step.py`` then ``PYTHONPATH=. python benchmarks/swap_step.py``."""

from __future__ import annotations

import argparse
import time

import cv2

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.mesh_warp import WarpSource, mesh_warp_swap
from facefusion_ui.state_manager import Settings
from tests.support import media


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="times every source goes onto every face")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    analyser = FaceAnalyser(runtime)
    target = media.t1()
    meshes = [face.mesh for face in analyser.analyse(target, settings, embeddings=False, mesh=True) if face.mesh]
    sources = []
    for image in (media.grace_hopper(), media.astronaut(), media.read(media.tom_hanks_path())):
        mesh = analyser.analyse(image, settings, embeddings=False, mesh=True)[0].mesh
        assert mesh is not None
        sources.append(WarpSource.of(image, mesh))
    for source in sources:  # warm-up
        for target_mesh in meshes:
            mesh_warp_swap(target, target_mesh, source, settings.face_mask_blur)
    count, started = 0, time.process_time()
    for _ in range(args.rounds):
        for source in sources:
            for target_mesh in meshes:
                mesh_warp_swap(target, target_mesh, source, settings.face_mask_blur)
                count += 1
    print(f"{1000 * (time.process_time() - started) / count:.2f} ms/face ({count} swaps)")
    runtime.release_all()


if __name__ == "__main__":
    main()

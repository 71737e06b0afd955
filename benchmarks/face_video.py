"""What swapping costs on a video with a face in every frame, next to a plain transcode of the same clip.

The clip: 720p, 10 s at 30 fps, Grace Hopper's head drifting and growing (``tests/support/videos``), with
the embedded default stack (HOG, dlib landmarks, mediapipe mesh, ``mesh_warp``). Printed: our wall time
and fps against ``ffmpeg -i clip -c:v libx264 -preset veryfast`` (shortest of ``--repeat`` runs each,
interleaved), once per paste-back mask setting (box alone, then with occlusion, region, area: the whole
pipeline's fps with each, against the box mask's), and the embedded swapper's own time per face on one
frame of the clip.

Run: ``.venv/bin/python benchmarks/face_video.py [--seconds 10] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from facefusion_ui.core import process
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.presets import apply_preset
from facefusion_ui.processors.mesh_warp import WarpSource, mesh_warp_swap
from facefusion_ui.state_manager import StateManager
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos

MASK_SETTINGS = (("box",), ("box", "occlusion"), ("box", "region"), ("box", "area"))
"""The paste-back masks each run uses: the embedded fps with each, against the box mask alone."""
SAME_AS_X264_DEFAULT = 55
"""output_video_quality 55 is CRF 23, what the plain transcode gets from x264 by default."""


def swap_ms_per_face(runtime: ModelRuntime, clip: Path) -> tuple[float, float]:
    """Median time of ``mesh_warp_swap`` on the face of the clip's middle frame, and that face's width."""
    settings = StateManager().snapshot()
    analyser = FaceAnalyser(runtime)
    source_image = media.astronaut()
    source = analyser.analyse(source_image, settings, embeddings=False, mesh=True)[0]
    frames = videos.decode_all(clip)
    target = analyser.analyse(frames[len(frames) // 2], settings, embeddings=False, mesh=True)[0]
    assert source.mesh is not None and target.mesh is not None
    warp_source = WarpSource.of(source_image, source.mesh)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        mesh_warp_swap(frames[len(frames) // 2], target.mesh, warp_source, settings.face_mask_blur)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), target.width


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-face-video-"))
    fps, frames = 30, args.seconds * 30
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    clip = videos.write_video(work / "clip.mp4", videos.moving_face(1280, 720, frames), frames, fps=Fraction(fps))
    ffmpeg = resolve_ffmpeg().path
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"output_video_quality": SAME_AS_X264_DEFAULT})
    settings = state.snapshot()
    runtime = ModelRuntime.create(settings)
    warm = videos.write_video(work / "warm.mp4", videos.moving_face(320, 240, fps), fps, fps=Fraction(fps))
    process(
        SwapJob.of(settings, [face], warm, work / "warm_out.mp4"),
        RunContext(runtime=runtime, work_dir=work / "warm_work"),
    )

    def plain() -> None:
        transcode = ["-c:v", "libx264", "-preset", "veryfast", "-y", str(work / "plain.mp4")]
        subprocess.run([ffmpeg, "-loglevel", "error", "-i", str(clip), *transcode], check=True)

    summaries: dict[str, dict[str, object]] = {}

    def ours(masks: tuple[str, ...]) -> None:
        shutil.rmtree(work / "work", ignore_errors=True)
        job = SwapJob.of(settings.with_items(face_mask_types=masks), [face], clip, work / "ours.mp4")
        summaries[" ".join(masks)] = process(job, RunContext(runtime=runtime, work_dir=work / "work")).stats

    contenders: dict[str, Callable[[], None]] = {"plain": plain}
    for masks in MASK_SETTINGS:
        contenders[" ".join(masks)] = functools.partial(ours, masks)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeat):
        for name, action in contenders.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    base = min(times.pop("plain"))
    print(f"clip: 1280x720, {frames} frames, one face in every frame; ffmpeg {ffmpeg}")
    print(f"  plain transcode            {base:5.1f} s")
    box_rate = frames / min(times["box"])
    for name, runs in times.items():
        swapped = min(runs)
        ratio, rate = swapped / base, frames / swapped
        print(
            f"  ours, masks {name:<14} {swapped:5.1f} s  {ratio:4.1f} x the transcode, {rate:5.1f} fps"
            f" ({rate / box_rate:.2f} x the box mask's fps)"
        )
    stats = summaries["box"]
    print(f"  faces swapped {stats['faces_swapped']}, face detection {stats['face_detection']}")
    milliseconds, width = swap_ms_per_face(runtime, clip)
    print(f"  embedded swapper alone: {milliseconds:.1f} ms per face ({width:.0f} px wide), median of 20")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

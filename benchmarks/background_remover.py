"""The background remover with its embedded model (mediapipe's selfie segmentation, no download).

Quality: on the skimage astronaut photo against a mask drawn by hand, and on freshly made composites (the
astronaut cut along that mask, at a random size and place on a random background: there the mask is the
exact truth), the share of the person's pixels left opaque and of the background's made transparent
(alpha >= 0.5 / < 0.5, and the stricter >= 0.9 / <= 0.1), a band of a few pixels round the outline left
out. Speed: a 720p clip (the astronaut gliding over a random background) through the whole video
pipeline (decode, matte, green screen, encode, chunked as a job is), side by side with a plain ffmpeg
transcode of the same clip (x264 veryfast, what the pipeline's encoder uses), shortest of ``--repeat``.

Run: ``.venv/bin/python benchmarks/background_remover.py [--frames 300] [--composites 20] [--repeat 2]``.
Writes the astronaut's result to ``--look`` (a PNG with alpha) to look at.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.presets import apply_preset
from facefusion_ui.processors.background_remover import BackgroundRemover
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.state_manager import Settings, StateManager
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import matting, media, videos

BAND = 6
SAME_AS_X264_DEFAULT = 55
"""output_video_quality 55 is CRF 23, what the plain transcode gets from x264 by default."""


def settings() -> Settings:
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"processors": ("background_remover",), "output_video_quality": SAME_AS_X264_DEFAULT})
    return state.snapshot()


def alpha_of(remover: BackgroundRemover, frame: np.ndarray) -> np.ndarray:
    context = FrameContext(0, 0.0, remover_settings(), extras={"keep_alpha": True})
    return np.asarray(remover.process_frame(frame, context), dtype=np.uint8)


def remover_settings() -> Settings:
    return Settings(processors=("background_remover",))


def quality(remover: BackgroundRemover, composites: int, look: Path) -> None:
    result = alpha_of(remover, media.astronaut())
    cv2.imwrite(str(look), result)
    shown = matting.scores(result[:, :, 3], matting.astronaut_person(), BAND)
    print("astronaut photo (512x512, hand-drawn mask):")
    print("  " + "  ".join(f"{key} {value:.1%}" for key, value in shown.items()))
    seed = time.time_ns() % 2**32
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(composites):
        frame, truth = matting.composite(640, 480, rng)
        runs.append(matting.scores(alpha_of(remover, frame)[:, :, 3], truth, BAND))
    print(f"{composites} fresh composites (640x480, seed {seed}), mean / worst:")
    for key in runs[0]:
        values = [run[key] for run in runs]
        print(f"  {key:20s} {np.mean(values):6.1%} / {min(values):6.1%}")


def per_frame(remover: BackgroundRemover, frames: int) -> None:
    frame = np.ascontiguousarray(cv2.resize(media.astronaut(), (1280, 720)))
    context = FrameContext(0, 0.0, remover_settings())
    remover.process_frame(frame, context)
    started = time.perf_counter()
    for _ in range(frames):
        remover.process_frame(frame, context)
    print(f"processor alone, one 720p frame: {(time.perf_counter() - started) / frames * 1000:.1f} ms (green screen)")


def clip_maker(width: int, height: int) -> videos.FrameMaker:
    rng = np.random.default_rng(11)
    ground = matting.random_background(width, height, rng)
    side = int(height * 0.8)
    person = cv2.resize(media.astronaut(), (side, side))
    mask = cv2.resize(matting.astronaut_person(), (side, side), interpolation=cv2.INTER_NEAREST) > 0

    def make(index: int) -> np.ndarray:
        frame = ground.copy()
        x = (index * 3) % (width - side)
        frame[height - side :, x : x + side][mask] = person[mask]
        return frame

    return make


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its finished children (the ffmpeg processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def speed(work: Path, frames: int, repeat: int) -> None:
    clip = videos.write_video(work / "clip.mp4", clip_maker(1280, 720), frames, fps=Fraction(30))
    ffmpeg = resolve_ffmpeg().path
    job_settings = settings()
    runtime = ModelRuntime.create(job_settings)
    face = media.grace_hopper_path()
    warm = videos.write_video(work / "warm.mp4", clip_maker(320, 240), 10, fps=Fraction(30))
    process(SwapJob.of(job_settings, [face], warm, work / "warm_out.mp4"), RunContext(runtime=runtime))

    def plain() -> None:
        command = [ffmpeg, "-loglevel", "error", "-i", str(clip), "-c:v", "libx264", "-preset", "veryfast"]
        subprocess.run([*command, "-y", str(work / "plain.mp4")], check=True)

    def ours() -> None:
        shutil.rmtree(work / "work", ignore_errors=True)
        job = SwapJob.of(job_settings, [face], clip, work / "ours.mp4")
        process(job, RunContext(runtime=runtime, work_dir=work / "work"))

    times: dict[str, list[tuple[float, float]]] = {"ffmpeg transcode": [], "background_remover": []}
    for _ in range(repeat):
        for name, action in (("ffmpeg transcode", plain), ("background_remover", ours)):
            started, cpu = time.perf_counter(), cpu_seconds()
            action()
            times[name].append((time.perf_counter() - started, cpu_seconds() - cpu))
    base = min(wall for wall, _ in times["ffmpeg transcode"])
    print(f"720p clip, {frames} frames at 30 fps, whole pipeline (shortest of {repeat}):")
    for name, runs in times.items():
        wall, cpu = min(wall for wall, _ in runs), min(cpu for _, cpu in runs)
        print(
            f"  {name:20s} {wall:6.2f} s  {frames / wall:6.1f} fps  {wall / base:5.2f}x the transcode;  "
            f"CPU {cpu / frames * 1000:5.1f} ms a frame ({2 * frames / cpu:5.1f} fps if 2 cores were its own)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--composites", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--look", type=Path, default=Path(tempfile.gettempdir()) / "background_remover_astronaut.png")
    args = parser.parse_args()
    remover = BackgroundRemover(remover_settings(), ModelRuntime.create(remover_settings()))
    quality(remover, args.composites, args.look)
    per_frame(remover, 30)
    with tempfile.TemporaryDirectory(prefix="ffui-bgr-") as folder:
        speed(Path(folder), args.frames, args.repeat)


if __name__ == "__main__":
    main()

"""Our streaming pipeline vs (a) a plain ffmpeg transcode and (b) extract-all-frames-to-JPEG + merge,
side by side in one run, on the same 720p clips with no faces (30 s by default): a flat synthetic one
(a gradient and a moving dot: the cheapest possible encode, so our own costs weigh the most) and a
camera panning over textured photos (what a real shot without faces costs to encode).

(c) is the floor of any design that hands raw frames between two ffmpeg processes: the same transcode
with the frames crossing one pipe and no Python (ours has two pipes, the decoder's and the encoder's).

Ours encodes with the same x264 settings as (a) and (b) (CRF 23 = x264's default, ``veryfast``), so the
ratios measure the pipeline, not a choice of quality. Detection runs with the default schedule (a
full-frame detection every ``face_detector_interval`` frames; groups without faces are skipped).

Each contender runs ``--repeat`` times, interleaved, and its shortest time counts (this machine's timings
wander by 10-20 % from run to run; the shortest is the one least disturbed). CPU seconds (all processes,
user + system) are printed too: on 2 busy cores they follow the wall time and wander less.

Run: ``.venv/bin/python benchmarks/video_pipeline.py [--seconds 30] [--repeat 3]``. Prints wall times and ratios.
"""

from __future__ import annotations

import argparse
import resource
import shutil
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
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.presets import apply_preset
from facefusion_ui.state_manager import Settings, StateManager
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from tests.support import media, videos


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its finished children (the ffmpeg processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """Wall and CPU seconds of ``action``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    action()
    return time.perf_counter() - start, cpu_seconds() - cpu


SAME_AS_X264_DEFAULT = 55
"""output_video_quality 55 is CRF 23 (``commands.crf_for``), what (a) and (b) get from x264 by default."""


def compare(work: Path, clip: Path, face: Path, fps: int, repeat: int) -> dict[str, tuple[float, float]]:
    ffmpeg = resolve_ffmpeg().path

    def plain() -> None:
        subprocess.run(
            [
                ffmpeg,
                "-loglevel",
                "error",
                "-i",
                str(clip),
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-y",
                str(work / "plain.mp4"),
            ],
            check=True,
        )

    def temp_frames() -> None:
        frames_dir = work / "frames"
        shutil.rmtree(frames_dir, ignore_errors=True)
        frames_dir.mkdir()
        subprocess.run(
            [ffmpeg, "-loglevel", "error", "-i", str(clip), "-q:v", "2", str(frames_dir / "%06d.jpg")], check=True
        )
        subprocess.run(
            [
                ffmpeg,
                "-loglevel",
                "error",
                "-framerate",
                str(fps),
                "-i",
                str(frames_dir / "%06d.jpg"),
                "-i",
                str(clip),
                "-map",
                "0:v",
                "-map",
                "1:a",
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-y",
                str(work / "merged.mp4"),
            ],
            check=True,
        )

    info = probe_video(clip)  # outside the timed run: (c) is the transcode alone

    def piped() -> None:
        decoder = subprocess.Popen(
            [ffmpeg, "-loglevel", "error", "-i", str(clip), "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
            stdout=subprocess.PIPE,
        )
        subprocess.run(
            [
                ffmpeg,
                "-loglevel",
                "error",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "yuv420p",
                "-s",
                f"{info.width}x{info.height}",
                "-r",
                str(fps),
                "-i",
                "-",
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-y",
                str(work / "piped.mp4"),
            ],
            stdin=decoder.stdout,
            check=True,
        )
        assert decoder.wait() == 0

    contenders: dict[str, Callable[[], None]] = {
        "(a) ffmpeg transcode": plain,
        "(b) frames to jpg + merge": temp_frames,
        "(c) ffmpeg | raw | ffmpeg": piped,
    }
    for detector in ("dlib_hog", "mediapipe_blazeface"):
        state = StateManager()
        apply_preset(state, "balanced")
        state.update({"face_detector_model": detector, "output_video_quality": SAME_AS_X264_DEFAULT})
        settings = state.snapshot()
        runtime = ModelRuntime.create(settings)
        # models load once per worker process, not per clip: warm them with a one-second job first
        warm = videos.write_video(work / "warm.mp4", videos.moving_face(320, 240, fps), fps, fps=Fraction(fps))
        process(
            SwapJob.of(settings, [face], warm, work / "warm_out.mp4"),
            RunContext(runtime=runtime, work_dir=work / "warm_work"),
        )
        work_dir = work / f"work_{detector}"

        def ours(settings: Settings = settings, runtime: ModelRuntime = runtime, work_dir: Path = work_dir) -> None:
            shutil.rmtree(work_dir, ignore_errors=True)
            process(
                SwapJob.of(settings, [face], clip, work / "ours.mp4"), RunContext(runtime=runtime, work_dir=work_dir)
            )

        contenders[f"ours, {detector}"] = ours
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, action in contenders.items():
            times[name].append(timed(action))
    return {name: (min(wall for wall, _ in runs), min(cpu for _, cpu in runs)) for name, runs in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-bench-"))
    fps = 30
    frames = args.seconds * fps
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    scenes = {
        "flat": videos.blank(1280, 720),
        "scenery": videos.panning_scene(1280, 720, frames),
    }
    print(f"clips: 1280x720, {frames} frames, {args.seconds} s, no faces, with audio; ffmpeg {resolve_ffmpeg().path}")
    for scene, maker in scenes.items():
        clip = videos.write_video(work / f"{scene}.mp4", maker, frames, fps=Fraction(fps), audio=True)
        results = compare(work, clip, face, fps, args.repeat)
        base, base_cpu = results["(a) ffmpeg transcode"]
        merged = results["(b) frames to jpg + merge"][0]
        print(f"\n{scene}:{'wall':>32s}{'CPU':>34s}")
        for name, (seconds, cpu) in results.items():
            print(
                f"  {name:28s} {seconds:5.1f} s {seconds / base:5.2f} x (a)  (b) / it = {merged / seconds:4.2f}"
                f"   {cpu:5.1f} s {cpu / base_cpu:5.2f} x (a)"
            )
    held = 3 * 32 + 2 + largest_group(5) + 1
    print(
        f"\nframes in memory: at most 3 x queue + threads + largest detection group + 1 = {held} "
        f"(one 720p frame = {1280 * 720 * 1.5 / 2**20:.1f} MiB as YUV 4:2:0)"
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

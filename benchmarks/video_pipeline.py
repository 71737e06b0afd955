"""Our streaming pipeline vs (a) a plain ffmpeg transcode and (b) extract-all-frames-to-JPEG + merge,
side by side in one run, on the same 720p clip with no faces (30 s by default).

Run: ``.venv/bin/python benchmarks/video_pipeline.py [--seconds 30]``. Prints wall times and ratios.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import cv2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.state_manager import StateManager
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos


def timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    ffmpeg = resolve_ffmpeg().path
    work = Path(tempfile.mkdtemp(prefix="ffui-bench-"))
    fps = 30
    frames = args.seconds * fps
    clip = videos.write_video(work / "clip.mp4", videos.blank(1280, 720), frames, fps=Fraction(fps), audio=True)
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    print(f"clip: 1280x720, {frames} frames, {args.seconds} s, no faces; ffmpeg {ffmpeg}")

    def plain() -> None:
        subprocess.run([ffmpeg, "-loglevel", "error", "-i", str(clip), "-c:v", "libx264", "-preset", "veryfast",
                        "-y", str(work / "plain.mp4")], check=True)  # fmt: skip

    def temp_frames() -> None:
        frames_dir = work / "frames"
        shutil.rmtree(frames_dir, ignore_errors=True)
        frames_dir.mkdir()
        subprocess.run([ffmpeg, "-loglevel", "error", "-i", str(clip), "-q:v", "2", str(frames_dir / "%06d.jpg")],
                       check=True)  # fmt: skip
        subprocess.run([ffmpeg, "-loglevel", "error", "-framerate", str(fps), "-i", str(frames_dir / "%06d.jpg"),
                        "-i", str(clip), "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "veryfast",
                        "-pix_fmt", "yuv420p", "-c:a", "aac", "-y", str(work / "merged.mp4")], check=True)  # fmt: skip

    results = {"(a) ffmpeg transcode": timed(plain), "(b) frames to jpg + merge": timed(temp_frames)}
    for detector in ("dlib_hog", "mediapipe_blazeface"):
        state = StateManager()
        state.apply_preset("balanced")
        state.set_item("face_detector_model", detector)
        settings = state.snapshot()
        runtime = ModelRuntime.create(settings)
        runtime.embedded_model(detector)  # loading models is start-up, not per-clip work

        def ours(settings: object = settings, runtime: ModelRuntime = runtime, name: str = detector) -> None:
            process(settings, [face], clip, work / f"ours_{name}.mp4", runtime=runtime,  # type: ignore[arg-type]
                    work_dir=work / f"work_{name}")  # fmt: skip

        results[f"ours, {detector}"] = timed(ours)
    base = results["(a) ffmpeg transcode"]
    for name, seconds in results.items():
        print(f"{name:28s} {seconds:7.1f} s   {seconds / base:5.2f} x (a)")
    ratio_b = results["(b) frames to jpg + merge"] / base
    print(f"(b)/(a) = {ratio_b:.2f}")
    for detector in ("dlib_hog", "mediapipe_blazeface"):
        ours_s = results[f"ours, {detector}"]
        merged = results["(b) frames to jpg + merge"]
        print(f"ours ({detector}) / (a) = {ours_s / base:.2f}; (b) / ours = {merged / ours_s:.2f}")
    print(f"peak frames in memory: bounded by 3 x frame_queue_size + threads + 1 = {3 * 32 + 3}; "
          f"one 720p frame = {1280 * 720 * 3 / 2**20:.1f} MiB")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Peak RSS of ``run.py process`` on a 1-minute and a 10-minute 720p clip (the same content looped),
balanced preset, each run in its own process; prints both and the ratio (goal: at most 1.10).

Run: ``.venv/bin/python benchmarks/memory_flat.py [--minutes 1 10] [--detector mediapipe_blazeface]``.
The content has no faces so the run measures what grows with length (decode, queues, encode, chunks,
manifest), not the detector; pass ``--detector dlib_hog`` to measure with the default detector.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos


def looped(source: Path, minutes: int, work: Path) -> Path:
    """``minutes`` of video made of ``source`` (1 minute) repeated, by stream copy."""
    listing = work / f"loop{minutes}.txt"
    listing.write_text("".join(f"file '{source}'\n" for _ in range(minutes)))
    output = work / f"clip_{minutes}min.mp4"
    subprocess.run(
        [
            resolve_ffmpeg().path,
            "-loglevel",
            "error",
            "-f",
            "concat",
            "-safe",
            "0",
            "-i",
            str(listing),
            "-c",
            "copy",
            "-y",
            str(output),
        ],
        check=True,
    )
    return output


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--detector", default="mediapipe_blazeface")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-memory-"))
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    minute = videos.write_video(work / "minute.mp4", videos.blank(1280, 720), 60 * 30, fps=Fraction(30), audio=True)
    peaks = {}
    for minutes in args.minutes:
        clip = looped(minute, minutes, work)
        completed = subprocess.run(
            [
                sys.executable,
                str(ROOT / "run.py"),
                "process",
                "-s",
                str(face),
                "-t",
                str(clip),
                "-o",
                str(work / f"out_{minutes}.mp4"),
                "--preset",
                "balanced",
                "--face-detector-model",
                args.detector,
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "FACEFUSION_UI_HOME": str(work / "home")},
        )
        summary = json.loads(completed.stdout)
        peaks[minutes] = summary["peak_rss_mb"]
        print(
            f"{minutes:3d} min: {summary['frames']} frames in {summary['seconds']:.0f} s, "
            f"{summary['chunks_total']} chunks, peak RSS {summary['peak_rss_mb']:.0f} MiB"
        )
    if len(peaks) >= 2:
        low, high = min(peaks), max(peaks)
        print(f"peak RSS {high} min / {low} min = {peaks[high] / peaks[low]:.3f}")


if __name__ == "__main__":
    main()

"""Peak RSS of ``run.py process`` on a 1-minute and a 10-minute 720p clip (the same content looped), balanced
preset, each run in its own process; prints both and the ratio (goal: at most 1.10).

Run: ``.venv/bin/python benchmarks/memory_flat.py [--minutes 1 10] [--detector mediapipe_blazeface] [--content
blank|talking-head] [--footage first|second]``. The blank content has no faces so the run measures what grows
with length (decode, queues, encode, chunks, manifest), not the detector; pass ``--detector dlib_hog`` to
measure with the default detector. ``--content talking-head`` (the astronaut's head, about 200 px wide, at 25
fps) swaps a face in every frame in reference mode (the reference face from the first frame) with the default
settings otherwise: what grows on a long swap (heaps, caches, the identity cache, the mesh smoother), with the
recognizer calls per face (goal: at most 10 %) and the fps beside the peaks (goal: at most 1.05x). ``--footage
second`` makes the talking head from fresh_footage's second set instead (Grace Hopper's photo tilting before a
blurred backdrop, Tom Hanks' photo as the source), to check that the figure does not hold on the first clip
only.
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
import numpy as np

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


def minute_of(content: str, footage: str, work: Path) -> Path:
    """One minute of 720p video: a moving dot on a gradient (30 fps), or a talking head of fresh_footage's
    ``footage`` set (25 fps)."""
    if content == "blank":
        return videos.write_video(work / "minute.mp4", videos.blank(1280, 720), 60 * 30, fps=Fraction(30), audio=True)
    from benchmarks.fresh_footage import FOOTAGE

    maker = FOOTAGE[footage]["talking head"](60 * 25)
    return videos.write_video(work / "minute.mp4", maker, 60 * 25, fps=Fraction(25), audio=True)


def source_photo(content: str, footage: str) -> np.ndarray:
    """The source face: the astronaut on blank content; Grace Hopper, or Tom Hanks on the second set."""
    if content == "blank":
        return media.astronaut()
    return media.grace_hopper() if footage == "first" else media.read(media.tom_hanks_path())


def run_clip(clip: Path, face: Path, output: Path, work: Path, options: list[str]) -> dict[str, object]:
    command = [sys.executable, str(ROOT / "run.py"), "process", "-s", str(face), "-t", str(clip), "-o", str(output)]
    completed = subprocess.run(
        [*command, "--preset", "balanced", *options, "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "FACEFUSION_UI_HOME": str(work / "home")},
    )
    summary: dict[str, object] = json.loads(completed.stdout)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--detector", default="mediapipe_blazeface")
    parser.add_argument("--content", choices=("blank", "talking-head"), default="blank")
    parser.add_argument("--footage", choices=("first", "second"), default="first", help="the talking head's set")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-memory-"))
    face = work / "face.png"
    cv2.imwrite(str(face), source_photo(args.content, args.footage))
    minute = minute_of(args.content, args.footage, work)
    options = ["--face-detector-model", args.detector]
    if args.content == "talking-head":
        options = ["--face-selector-mode", "reference"]  # the default detector: the user's settings
    summaries = {}
    for minutes in args.minutes:
        clip = looped(minute, minutes, work)
        summary = summaries[minutes] = run_clip(clip, face, work / f"out_{minutes}.mp4", work, options)
        faces = summary["faces_detected"]
        calls = f", recognizer calls {summary['recognizer_calls']} of {faces} faces" if faces else ""
        print(
            f"{minutes:3d} min: {summary['frames']} frames in {summary['seconds']:.0f} s ({summary['fps']} fps), "
            f"{summary['chunks_total']} chunks, peak RSS {summary['peak_rss_mb']:.0f} MiB{calls}",
            flush=True,
        )
    if len(summaries) >= 2:
        low, high = min(summaries), max(summaries)
        peak_ratio = float(summaries[high]["peak_rss_mb"]) / float(summaries[low]["peak_rss_mb"])  # type: ignore[arg-type]
        fps_ratio = float(summaries[low]["fps"]) / float(summaries[high]["fps"])  # type: ignore[arg-type]
        print(f"peak RSS {high} min / {low} min = {peak_ratio:.3f}; fps {low} min / {high} min = {fps_ratio:.3f}")


if __name__ == "__main__":
    main()

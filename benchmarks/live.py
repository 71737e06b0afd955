"""Live mode on a camera-like input: a clip of one face (a packaged photo moving over a background),
25 fps, read in real time by ``run.py live`` (``--loop``), the embedded swapper, the default settings.

Prints, for 640x480 and 1280x720: the share of frames shown (goal at 640x480: at least 90 %), latency
from a frame's arrival to its swapped frame being ready (goal: median at most 100 ms, 95th percentile at
most 200 ms) and frames per second shown; then the peak memory of a 1-minute run and of a 10-minute run,
side by side in two processes at once, and their ratio (goal: at most 1.10). The machine's load average
is printed with each figure: on a shared machine the share of frames shown falls with it.

Also: how many frames after a face comes back into view (elsewhere, after 2 s without it) it is swapped again.

Run: ``.venv/bin/python benchmarks/live.py [--seconds 60] [--memory-minutes 1 10] [--parts speed reacquire memory]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from tests.support import media, videos

SIZES = {"480p": (640, 480), "720p": (1280, 720)}


def live_command(source: Path, clip: Path, size: str, seconds: float) -> list[str]:
    return [
        *(sys.executable, str(ROOT / "run.py"), "live", "-s", str(source), "--input", str(clip)),
        *("--size", size, "--loop", "--duration", f"{seconds:g}", "--json"),
    ]


def run_live(source: Path, clip: Path, size: str, seconds: float) -> dict[str, Any]:
    completed = subprocess.run(
        live_command(source, clip, size, seconds), capture_output=True, text=True, cwd=ROOT, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"run.py live failed: {completed.stderr.strip()[-500:]}")
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def speed_part(source: Path, work: Path, seconds: float) -> None:
    for size, (width, height) in SIZES.items():
        clip = videos.write_video(work / f"face_{size}.mp4", videos.moving_face(width, height, 250), 250)
        before = load()
        report = run_live(source, clip, size, seconds)
        shown = 100 * report["frames_shown"] / max(report["frames_in"], 1)
        latency = report["latency_ms"]
        print(
            f"{size} ({width}x{height}, 25 fps, {seconds:g} s): {shown:.1f} % of {report['frames_in']} frames shown, "
            f"latency median {latency['median']} ms, p95 {latency['p95']} ms, {report['fps']} fps shown "
            f"(load average before {before}, after {load()})",
            flush=True,
        )


def memory_part(source: Path, work: Path, minutes: list[float]) -> None:
    clip = videos.write_video(work / "face_memory.mp4", videos.moving_face(640, 480, 250), 250)
    runs = [
        subprocess.Popen(live_command(source, clip, "480p", 60 * length), stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for length in minutes
    ]
    peaks = []
    for length, process in zip(minutes, runs, strict=True):
        out, _ = process.communicate()
        report = json.loads(out)
        peaks.append(report["peak_rss_mb"])
        print(
            f"{length:g} min of live input at 640x480: peak RSS {report['peak_rss_mb']} MB, "
            f"{report['frames_in']} frames in, {report['frames_shown']} shown",
            flush=True,
        )
    print(f"peak after {minutes[-1]:g} min / after {minutes[0]:g} min: {peaks[-1] / peaks[0]:.3f} (goal <= 1.10)")


def reacquire_part(source: Path, rounds: int = 3) -> None:
    """A face followed, then 2 s (50 frames) without it, then back further right: frames (at 25 fps) until
    it is swapped again."""
    import time

    import numpy as np

    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.live.engine import LiveEngine
    from facefusion_ui.state_manager import Settings

    settings = Settings()
    engine = LiveEngine.build(settings, ModelRuntime.create(settings), [source])
    engine.warm_up(engine.pipeline.sources.best_frontal().image)
    face, empty = videos.moving_face(640, 480, 60), videos.blank(640, 480)
    found = []
    for _ in range(rounds):
        frames = [face(index) for index in range(30)] + [empty(index) for index in range(50)] + [face(55)] * 100
        start, back = time.perf_counter(), None
        for index, frame in enumerate(frames):
            time.sleep(max(0.0, start + index / 25 - time.perf_counter()))
            swapped = not np.array_equal(engine.process(frame.copy()), frame)
            if index >= 80 and swapped:
                back = index - 79
                break
        found.append(back)
    engine.close()
    print(
        f"a face back in view, elsewhere, after 2 s without it: swapped again after {found} frames at 25 fps "
        f"(load average {load()})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each speed run")
    parser.add_argument("--memory-minutes", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument(
        "--parts", nargs="+", choices=("speed", "reacquire", "memory"), default=["speed", "reacquire", "memory"]
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-live-"))
    source = work / "astronaut.png"
    cv2.imwrite(str(source), media.astronaut())
    print(f"{os.cpu_count()} CPUs; load average at the start {load()}", flush=True)
    if "speed" in args.parts:
        speed_part(source, work, args.seconds)
    if "reacquire" in args.parts:
        reacquire_part(source)
    if "memory" in args.parts and args.memory_minutes[0] > 0:
        memory_part(source, work, sorted(args.memory_minutes))


if __name__ == "__main__":
    main()

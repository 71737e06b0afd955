"""How long a new user waits for a video's first frame: ``run.py process -s FACE -t CLIP -o OUT --json``
with the default settings on ``fresh_footage.py``'s talking heads (both sets: the astronaut's head with
Grace Hopper as the source, Grace Hopper's photo tilting with Tom Hanks as the source), ``first_frame_s``
``since_process_start`` (the interpreter's start and the imports included), taken ``--runs`` times in
turn with ``--baseline DIR`` (another checkout, such as the release before). Each run starts from an empty
data folder, as a first run does. The clips are short (the first frame does not depend on the length).

On a machine shared with other work the wall times follow the load: compare the two checkouts side by
side. ``--realtime`` runs each contender under ``chrt -f 10`` (SCHED_FIFO, root only), ahead of every
ordinary process, which is what the figure is on a quiet machine. Run:
``.venv/bin/python benchmarks/first_frame.py [--runs 5] [--baseline DIR] [--realtime]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2
import fresh_footage

from tests.support import media

ROOT = Path(__file__).resolve().parent.parent
SECONDS = 4


def first_frame(checkout: Path, face: Path, clip: Path, work: Path, realtime: bool) -> float:
    """One run of ``checkout``'s command on ``clip``, from an empty data folder: seconds to the first frame."""
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    command = [sys.executable, str(checkout / "run.py"), "process", "-s", str(face), "-t", str(clip)]
    command += ["-o", str(work / "out.mp4"), "--json"]
    if realtime:
        command = ["chrt", "-f", "10", *command]
    environment = {**os.environ, "FACEFUSION_UI_HOME": str(home), "PYTHONPATH": str(checkout)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules compiled once, not at every start
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return float(summary["first_frame_s"]["since_process_start"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. the release before) run beside ours")
    parser.add_argument("--realtime", action="store_true", help="each run under chrt -f 10 (root only)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-first-"))
    checkouts = {"ours": ROOT, **({"baseline": args.baseline} if args.baseline is not None else {})}
    try:
        for footage, photo in (("first", media.grace_hopper()), ("second", media.read(media.tom_hanks_path()))):
            face = work / f"source_{footage}.jpg"
            cv2.imwrite(str(face), photo)
            frames = SECONDS * fresh_footage.FPS
            maker = fresh_footage.FOOTAGE[footage]["talking head"](frames)
            clip = fresh_footage.camera_clip(work, f"talking_head_{footage}", maker, frames)
            for checkout in checkouts.values():  # compiles each checkout's modules once, as an install does
                first_frame(checkout, face, clip, work, args.realtime)
            times: dict[str, list[float]] = {label: [] for label in checkouts}
            for _ in range(args.runs):
                for label, checkout in checkouts.items():
                    times[label].append(first_frame(checkout, face, clip, work, args.realtime))
            shown = ", ".join(
                f"{label} median {statistics.median(values):.2f} s ({' '.join(f'{v:.2f}' for v in values)})"
                for label, values in times.items()
            )
            print(f"talking head, {footage} set: {shown}  (load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

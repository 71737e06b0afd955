"""People and the face map on a generated clip with three people (two crossing, one leaving and coming
back, a cut), side by side in one run: ``process`` alone with two people mapped (it finds the people
itself), then the ``people`` pass and a ``process`` right after it (the pass reused), and whether every
sampled face of a mapped person carries its own source (the recognizer on every 10th frame of the output,
against both sources and the unmapped person), with the swaps at the crossing, and how much the unmapped
person's pixels moved (the encoder's loss alone) against the mapped people's.

Run: ``.venv/bin/python benchmarks/people.py [--seconds 120] [--width 1280 --height 720]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from facefusion_ui.core import process
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import embedding_distance
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.people_job import find_people
from facefusion_ui.state_manager import Settings
from tests.support import media, videos


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="people-bench-"))
    os.environ["FACEFUSION_UI_HOME"] = str(folder / "home")  # no pass cached from an earlier run
    frames = int(args.seconds * args.fps)
    width, height = args.width, args.height
    clip = videos.write_video(folder / "three.mp4", videos.three_people(width, height, frames), frames)
    tom, astronaut = folder / "tom.jpg", folder / "astronaut.png"
    tom.write_bytes(media.tom_hanks_path().read_bytes())
    cv2.imwrite(str(astronaut), media.astronaut())
    runtime = ModelRuntime.create(Settings())
    settings = Settings()

    analyser = FaceAnalyser(runtime)
    analyser.analyse(media.read(tom), settings, embeddings=True)
    face_map = [f"1={tom}", f"2={astronaut}"]
    os.environ["FACEFUSION_UI_HOME"] = str(folder / "home-warm")  # every model loaded before a run is timed
    warm = videos.write_video(folder / "warm.mp4", videos.three_people(width, height, 10), 10)
    process(SwapJob.of(settings, [], warm, folder / "warm-out.mp4", face_map), RunContext(runtime=runtime))
    alone = SwapJob.of(settings, [], clip, folder / "alone.mp4", face_map)
    os.environ["FACEFUSION_UI_HOME"] = str(folder / "home-alone")  # no pass cached: process finds the people
    started = time.perf_counter()
    process(alone, RunContext(runtime=runtime))
    alone_seconds = time.perf_counter() - started
    print(f"clip: {frames} frames {width}x{height}; process alone (it finds the people itself): {alone_seconds:.1f} s")

    os.environ["FACEFUSION_UI_HOME"] = str(folder / "home")
    started = time.perf_counter()
    found = find_people(clip, settings, runtime)
    pass_seconds = time.perf_counter() - started
    print(f"people pass {pass_seconds:.1f} s, {len(found.people)} people, recognizer calls {found.recognizer_calls}")
    for person in found.people:
        print(f"  person {person.id}: frames {person.first_frame}-{person.last_frame} ({person.frames} seen)")

    job = SwapJob.of(settings, [], clip, folder / "out.mp4", face_map)
    started = time.perf_counter()
    result = process(job, RunContext(runtime=runtime))
    process_seconds = time.perf_counter() - started
    print(
        f"process with 1=tom, 2=astronaut right after: {process_seconds:.1f} s (people pass reused), "
        f"people {result.stats['people']}, recognizer calls {result.stats['recognizer_calls']}"
    )
    print(
        f"people pass / process alone = {pass_seconds / alone_seconds:.2f}; "
        f"(people then process) / process alone = {(pass_seconds + process_seconds) / alone_seconds:.2f}"
    )

    metric = analyser.recognizer_scale(settings).metric
    known = {}
    for name, path in (("A", tom), ("B", astronaut), ("C", media.grace_hopper_path())):
        faces = analyser.analyse(media.read(path), settings, embeddings=True)
        known[name] = faces[0].embedding
    output = videos.decode_all(folder / "out.mp4", every=10)  # frames 0, 10, 20, ...
    crossing = range(frames // 3 - frames // 10, frames // 3 + frames // 10)  # A and B pass each other
    right = wrong = crossing_wrong = 0
    for index in range(0, frames, 10):
        for face in analyser.analyse(output[index // 10], settings, embeddings=True):
            embedding = face.embedding
            assert embedding is not None
            who = videos.three_people_who(width, height, frames, index, *face.center)
            nearest = min(known, key=lambda name: embedding_distance(known[name], embedding, metric))
            if who == "C":
                continue
            if nearest == who:
                right += 1
            else:
                wrong += 1
                crossing_wrong += index in crossing
    share = right / max(right + wrong, 1)
    print(
        f"mapped faces carrying their own source (every 10th frame): {right} of {right + wrong} = {share:.1%}; "
        f"wrong at the crossing: {crossing_wrong}"
    )
    print(f"pixels moved (mean abs difference, input to output): {moved_by_person(clip, folder / 'out.mp4', args)}")


def moved_by_person(clip: Path, output: Path, args: argparse.Namespace) -> str:
    """How much each person's region changed from the input to the output, over every 10th frame before
    the cut: the unmapped person (C) by the encoder alone, the mapped ones (A, B) by their swap too."""
    before, after = videos.decode_all(clip, every=10), videos.decode_all(output, every=10)
    width, height, frames = args.width, args.height, int(args.seconds * args.fps)
    size = int(height * 0.4)
    sums = {"A": 0.0, "B": 0.0, "C": 0.0}
    counts = {"A": 0, "B": 0, "C": 0}
    for index in range(0, frames * 2 // 3, 10):
        for name, (x, y) in person_corners(width, height, frames, index, size).items():
            if name == "C" and frames // 3 <= index < frames // 2:
                continue  # C is away
            region = (slice(y, y + size), slice(x, x + size))
            diff = cv2.absdiff(before[index // 10][region], after[index // 10][region])
            sums[name] += float(diff.mean())
            counts[name] += 1
    return ", ".join(f"{name} {sums[name] / max(counts[name], 1):.1f}" for name in ("A", "B", "C")) + " (C unmapped)"


def person_corners(width: int, height: int, frames: int, index: int, size: int) -> dict[str, tuple[int, int]]:
    """Where ``videos.three_people`` put each person's square in frame ``index`` (before the cut)."""
    head = videos.grace_head()
    c_width = int(size * head.shape[1] / head.shape[0])
    lane = width - c_width - 8
    xa, xb = videos.crossing_positions(lane, frames * 2 // 3, size)[index]
    return {"A": (xa, int(height * 0.02)), "B": (xb, int(height * 0.55)), "C": (width - c_width, int(height * 0.3))}


if __name__ == "__main__":
    main()

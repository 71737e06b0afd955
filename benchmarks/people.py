"""People and the face map on a generated clip with three people (two crossing, one leaving and coming
back, a cut), side by side in one run: the people pass against the process run with two people mapped,
and whether every sampled face of a mapped person carries its own source (the recognizer on every 10th
frame of the output, against both sources and the unmapped person), with the swaps at the crossing.

Run: ``.venv/bin/python benchmarks/people.py [--seconds 8] [--width 640 --height 384]``.
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
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=384)
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
    analyser.analyse(media.read(tom), settings, embeddings=True)  # the models loaded before either run is timed
    started = time.perf_counter()
    found = find_people(clip, settings, runtime)
    pass_seconds = time.perf_counter() - started
    print(
        f"clip: {frames} frames {width}x{height}; people pass {pass_seconds:.1f} s, {len(found.people)} people, "
        f"recognizer calls {found.recognizer_calls}"
    )
    for person in found.people:
        print(f"  person {person.id}: frames {person.first_frame}-{person.last_frame} ({person.frames} seen)")

    job = SwapJob.of(settings, [], clip, folder / "out.mp4", [f"1={tom}", f"2={astronaut}"])
    started = time.perf_counter()
    result = process(job, RunContext(runtime=runtime))
    process_seconds = time.perf_counter() - started
    print(
        f"process with 1=tom, 2=astronaut: {process_seconds:.1f} s (people pass reused), "
        f"people {result.stats['people']}, recognizer calls {result.stats['recognizer_calls']}"
    )

    metric = analyser.recognizer_scale(settings).metric
    known = {}
    for name, path in (("A", tom), ("B", astronaut), ("C", media.grace_hopper_path())):
        faces = analyser.analyse(media.read(path), settings, embeddings=True)
        known[name] = faces[0].embedding
    output = videos.decode_all(folder / "out.mp4")
    crossing = range(frames // 3 - frames // 10, frames // 3 + frames // 10)  # A and B pass each other
    right = wrong = crossing_wrong = 0
    for index in range(0, frames, 10):
        for face in analyser.analyse(output[index], settings, embeddings=True):
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
    print(f"people pass / process = {pass_seconds / process_seconds:.2f}")


if __name__ == "__main__":
    main()

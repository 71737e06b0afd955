"""Identity cache on a 20 s talking-head clip made from a package photo: hit rate, recognizer calls,
and wall time with the cache on vs off (reference mode, where every face needs an identity).

Run: ``.venv/bin/python benchmarks/identity_cache.py [--fps 25]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.state_manager import Settings
from tests.support import media, videos


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--seconds", type=int, default=20)
    args = parser.parse_args()
    face = Path(tempfile.mkdtemp()) / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    count = args.fps * args.seconds
    make = videos.talking_head(640, 480, count)
    frames = [make(index) for index in range(count)]
    runtime = ModelRuntime.create(Settings())
    settings = Settings(face_selector_mode="reference")
    results = {}
    for label, enabled in (("cache on", True), ("cache off", False)):
        pipeline = FramePipeline.build(settings.with_items(face_identity_cache=enabled), runtime, [face])
        pipeline.set_reference_from(frames[0])
        started = time.perf_counter()
        for index, frame in enumerate(frames):
            pipeline.analyse(frame, index, index / args.fps)
        seconds = time.perf_counter() - started
        summary = pipeline.summary()
        results[label] = seconds
        print(
            f"{label:9s}: {seconds:6.1f} s for {count} frames, faces {summary['faces_detected']}, "
            f"recognizer calls {summary['recognizer_calls']}, cache {summary['identity_cache']}"
        )
    print(f"wall time cache on / off = {results['cache on'] / results['cache off']:.2f}")


if __name__ == "__main__":
    main()

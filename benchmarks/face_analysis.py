"""Time each face-analysis stage on a 512 px photo, and the embedded detectors' speed and recall.

Run: ``.venv/bin/python benchmarks/face_analysis.py`` (from the checkout). Prints medians of N runs
after one warm-up; recall is faces found / faces present on package photos and altered copies.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.detection_schedule import DetectionSchedule
from facefusion_ui.faces.landmarker import dlib_landmarks, face_mesh
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.frames import BgrImage
from facefusion_ui.state_manager import Settings
from tests.support import media

RUNS = 15


def median_ms(action: Callable[[], object], runs: int = RUNS) -> float:
    action()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def altered_t1() -> list[tuple[str, np.ndarray, int]]:
    image = media.t1()
    height, width = image.shape[:2]
    rotated = cv2.warpAffine(image, cv2.getRotationMatrix2D((width / 2, height / 2), 8, 1.0), (width, height))
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 35])
    assert ok
    return [
        ("t1", image, 6),
        ("t1 flipped", np.ascontiguousarray(image[:, ::-1]), 6),
        ("t1 rotated 8", rotated, 6),
        ("t1 scaled 0.75", cv2.resize(image, None, fx=0.75, fy=0.75), 6),
        ("t1 jpeg 35", cv2.imdecode(data, cv2.IMREAD_COLOR), 6),
        ("astronaut", media.astronaut(), 1),
        ("grace_hopper", media.grace_hopper(), 1),
    ]


def main() -> None:
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    analyser = FaceAnalyser(runtime)
    photo = media.astronaut()  # 512 x 512
    rgb = np.ascontiguousarray(photo[:, :, ::-1])
    face = analyser.analyse(photo, settings)[0]
    predictor = runtime.embedded_model("dlib_68")
    mesh_model = runtime.embedded_model("mediapipe_face_mesh")
    print(f"per-stage time on a 512x512 photo (astronaut), median of {RUNS}:")
    for name in ("dlib_hog", "mediapipe_blazeface"):
        detector_settings = settings.with_items(face_detector_model=name)
        print(f"  detection {name:22s} {median_ms(lambda s=detector_settings: analyser.detect(photo, s)):7.1f} ms")
    print(f"  landmarks dlib_68              {median_ms(lambda: dlib_landmarks(rgb, predictor, face.bbox)):7.1f} ms")
    print(f"  mesh on crop (468 points)      {median_ms(lambda: face_mesh(photo, face.bbox, mesh_model)):7.1f} ms")
    embed_ms = median_ms(lambda: analyser.embedding(photo, rgb, face, settings))
    print(f"  embedding dlib_resnet          {embed_ms:7.1f} ms")
    print(f"  whole analyse (1 face)         {median_ms(lambda: analyser.analyse(photo, settings)):7.1f} ms")
    print("\ndetector speed and recall on package photos (found/present, median ms per image):")
    images = altered_t1()
    for name in ("dlib_hog", "mediapipe_blazeface"):
        detector_settings = settings.with_items(face_detector_model=name)
        found = present = 0
        times = []
        for _, image, count in images:
            times.append(median_ms(lambda i=image, s=detector_settings: analyser.detect(i, s), runs=5))
            found += min(len(analyser.detect(image, detector_settings)), count)
            present += count
        print(f"  {name:22s} recall {found}/{present} = {found / present:.0%}, {statistics.median(times):6.1f} ms")
    print_cheap_probe(analyser, settings, images)


def print_cheap_probe(analyser: FaceAnalyser, settings: Settings, images: list[tuple[str, np.ndarray, int]]) -> None:
    """The probe a video's faceless stretch uses three times in four (``DetectionSchedule.probe_cheaply``):
    its recall alone, and its time beside the full-frame HOG search, side by side on the same images."""
    schedule = DetectionSchedule(analyser, settings)
    found = present = 0
    ratios = []
    for _, image, count in images:
        frame = BgrImage(image)
        view = analyser.search_view(frame, settings)
        full_ms = median_ms(lambda v=view: analyser.detect_view(v, settings), runs=5)
        cheap_ms = median_ms(lambda f=frame, v=view: schedule.probe_cheaply(f, v), runs=5)
        ratios.append(cheap_ms / full_ms)
        found += min(len(schedule.probe_cheaply(frame, view)), count)
        present += count
    print(
        f"  cheap probe (HOG without upsampling + BlazeFace candidates confirmed by HOG) recall {found}/{present}"
        f" = {found / present:.0%}, {statistics.median(ratios):.2f}x the full search's time (median of the images)"
    )


if __name__ == "__main__":
    main()

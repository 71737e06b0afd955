"""Time per 720p frame of each processor added from FaceFusion's set, with stand-in ONNX models in the real
signatures (``tests/support``): what our side costs (crops, colour conversions, paste-back, mattes) on
the CPU, the part a GPU would not take away; a real model adds its own time on top. The background
remover runs its real embedded model (mediapipe's selfie segmentation); the lip syncer's edtalk_256 reads
the mel window of a generated tone.

Run: ``.venv/bin/python benchmarks/new_processors.py [--frames 10]``. One face for the face processors
(the astronaut photo scaled into the middle of the frame, its width printed), found by the default
detector; fran also runs the face classifier (a stand-in) on it, as it must for each face. Prints the
median milliseconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import import_model, load_manifest
from facefusion_ui.processors.base import FrameContext, Processor
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings
from tests.support import media
from tests.support.colorizer_models import build_ddcolor, build_deoldify
from tests.support.face_edit_models import build_deep_swapper, build_face_editor_parts, build_fran, build_styleganex_age
from tests.support.onnx_models import build_edtalk, build_fairface

CASES: dict[str, dict[str, object]] = {
    "background_remover (embedded model)": {"processors": ("background_remover",)},
    "age_modifier fran": {"processors": ("age_modifier",), "age_modifier_direction": 40},
    "age_modifier styleganex_age": {
        "processors": ("age_modifier",),
        "age_modifier_model": "styleganex_age",
        "age_modifier_direction": 40,
    },
    "frame_colorizer ddcolor 256": {"processors": ("frame_colorizer",)},
    "frame_colorizer deoldify 256": {"processors": ("frame_colorizer",), "frame_colorizer_model": "deoldify"},
    "expression_restorer": {"processors": ("expression_restorer",)},
    "face_editor (smile 0.5, eyes open 0.5)": {
        "processors": ("face_editor",),
        "face_editor_mouth_smile": 0.5,
        "face_editor_eye_open_ratio": 0.5,
    },
    "deep_swapper (a 224 px model)": {"processors": ("deep_swapper",), "deep_swapper_model": "mine_224"},
    "lip_syncer edtalk_256": {
        "processors": ("lip_syncer",),
        "processor_options": {"lip_syncer": {"model": "edtalk_256"}},
        "source_audio": "tone.wav",  # in the stand-ins' folder
    },
}


def stand_ins(folder: Path) -> None:
    build_fran(folder / "fran.onnx")
    build_styleganex_age(folder / "styleganex_age.onnx")
    build_fairface(folder / "fairface.onnx")
    build_ddcolor(folder / "ddcolor.onnx")
    build_deoldify(folder / "deoldify.onnx")
    build_face_editor_parts(folder)
    import_model(build_deep_swapper(folder / "dfm.onnx"), "mine_224", folder=folder)
    build_edtalk(folder / "edtalk_256.onnx")
    samples = np.round(0.4 * np.sin(2 * np.pi * 440 * np.arange(16000) / 16000) * 32767).astype(np.int16)
    with wave.open(str(folder / "tone.wav"), "wb") as tone:  # one second of 440 Hz for the lip syncer
        tone.setnchannels(1)
        tone.setsampwidth(2)
        tone.setframerate(16000)
        tone.writeframes(samples.tobytes())


def median_ms(processor: Processor, frame: np.ndarray, context: FrameContext, frames: int) -> float:
    processor.process_frame(frame, context)  # warm: sessions loaded
    times = []
    for _ in range(frames):
        started = time.perf_counter()
        processor.process_frame(frame, context)
        times.append(time.perf_counter() - started)
    return float(np.median(times)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=10)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ffui-standins-"))
    stand_ins(folder)
    frame = np.zeros((720, 1280, 3), np.uint8)
    frame[:, 384:896] = cv2.resize(media.astronaut(), (512, 720))
    registry = ProcessorRegistry.discover()
    runtime = ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))
    faces = FaceAnalyser(runtime).analyse(frame, Settings())  # dlib's HOG and 68 landmarks (the defaults)
    print(f"one 720p frame, {len(faces)} face ({faces[0].width:.0f} px wide), median of {args.frames}:")
    for name, values in CASES.items():
        audio = {"source_audio": str(folder / str(values["source_audio"]))} if "source_audio" in values else {}
        settings = Settings(**{**values, **audio})  # type: ignore[arg-type]
        processor: Processor = registry.create(str(settings.processors[0]), settings, runtime)
        context = FrameContext(0, 0.0, settings, faces=faces, extras={"target_frame": frame})
        print(f"  {name:38s} {median_ms(processor, frame, context, args.frames):7.1f} ms")


if __name__ == "__main__":
    main()

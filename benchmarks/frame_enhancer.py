"""The frame enhancer with a stand-in ONNX upscaler (3x3 conv + depth-to-space, ``tests/support``): time
per 720p frame with tiles vs the whole frame at once, and peak memory (RSS) for one 4K frame, each
measured in its own process, beside what the lightweight preset leaves for frames.

Run: ``.venv/bin/python benchmarks/frame_enhancer.py [--frames 5] [--whole-4k]``. The stand-in is far
lighter than Real-ESRGAN, so the times show the tiling's own cost (tile copies, weights, the join), and
the memory the frame buffers and the join take; a real model adds its activations per tile (tiled) or
per frame (whole), which is where tiling matters most.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.memory import peak_rss_mb, plan_budget, process_rss_mb
from facefusion_ui.models import load_manifest
from facefusion_ui.presets import load_presets
from facefusion_ui.processors.frame_enhancer import FrameEnhancer
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media
from tests.support.onnx_models import build_upscaler

SIZES = {"720p": (1280, 720), "4k": (3840, 2160)}


def enhancer(folder: Path, model: str, output_size: str) -> FrameEnhancer:
    options = {"frame_enhancer": {"model": model, "output_size": output_size}}
    settings = Settings(processors=("frame_enhancer",), processor_options=options)
    return FrameEnhancer(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def whole(processor: FrameEnhancer, frame: Frame) -> Frame:
    _, session = processor.runtime.onnx_session(processor.model)
    blob = (frame[:, :, ::-1].transpose(2, 0, 1)[None] / 255.0).astype(np.float32)
    output = np.asarray(session.run(None, {"input": blob})[0])[0].transpose(1, 2, 0)
    return np.clip(output * 255.0 + 0.5, 0, 255).astype(np.uint8)[:, :, ::-1]


def child(folder: Path, size: str, model: str, output_size: str, mode: str, frames: int) -> None:
    """One measurement in this process: JSON with seconds per frame and peak RSS."""
    width, height = SIZES[size]
    frame = np.ascontiguousarray(cv2.resize(media.astronaut(), (width, height)))
    processor = enhancer(folder, model, output_size)
    processor.runtime.onnx_session(processor.model)  # loaded before timing
    baseline = process_rss_mb()
    times = []
    for _ in range(frames):
        started = time.perf_counter()
        result = processor.enhance(frame, 0.8) if mode == "tiled" else whole(processor, frame)
        times.append(time.perf_counter() - started)
        del result
    print(json.dumps({"seconds": float(np.median(times)), "peak_mb": peak_rss_mb(), "baseline_mb": baseline}))


def measure(folder: Path, *args: str) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(folder), *args]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--whole-4k", action="store_true", help="also the whole 4K frame at once (x2: ~2 GB)")
    parser.add_argument("--child", nargs=5, metavar=("FOLDER", "SIZE", "MODEL", "OUTPUT", "MODE"))
    args = parser.parse_args()
    if args.child:
        folder, size, model, output_size, mode = args.child
        child(Path(folder), size, model, output_size, mode, args.frames)
        return
    folder = Path(tempfile.mkdtemp(prefix="ffui-upscaler-"))
    build_upscaler(folder / "real_esrgan_x2.onnx", 2)
    build_upscaler(folder / "real_esrgan_x4.onnx", 4)
    print("time per 720p frame (stand-in x2 model, enhanced size, median):")
    for mode in ("tiled", "whole"):
        result = measure(folder, "720p", "real_esrgan_x2", "enhanced", mode, f"--frames={args.frames}")
        print(f"  {mode:5s}: {result['seconds'] * 1000:7.1f} ms   peak RSS {result['peak_mb']:6.0f} MiB")
    print("one 4K frame, peak RSS of the process (model loaded: baseline):")
    cases = [("real_esrgan_x2", "enhanced", "tiled"), ("real_esrgan_x2", "target", "tiled")]
    cases += [("real_esrgan_x4", "target", "tiled"), ("real_esrgan_x4", "enhanced", "tiled")]
    cases += [("real_esrgan_x2", "enhanced", "whole")] if args.whole_4k else []
    for model, output_size, mode in cases:
        result = measure(folder, "4k", model, output_size, mode, "--frames=1")
        print(
            f"  {model} {output_size:8s} {mode:5s}: peak {result['peak_mb']:6.0f} MiB "
            f"(baseline {result['baseline_mb']:.0f}), {result['seconds']:.1f} s"
        )
    preset = next(item for item in load_presets() if item.name == "lightweight").values
    budget = plan_budget(
        3840,
        2160,
        30.0,
        preset["frame_queue_size"],
        preset["execution_threads"],
        30,
        preset["memory_threshold_mb"],
        available_mb=8192,
        output_scale=4.0,
    )
    print(
        f"lightweight preset on an 8 GB machine, 4K frames upscaled x2 (4x the area): queue {budget.queue_size}, "
        f"{budget.usable_mb} MiB above the threshold, a quarter of it for frames in flight"
    )


if __name__ == "__main__":
    main()

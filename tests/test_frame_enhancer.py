"""The frame enhancer with a stand-in ONNX upscaler: tiles joined without seams, blend and output size,
the memory budget for larger frames, and a video whose output size follows."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.memory import plan_budget
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.base import FrameContext, ResizingProcessor
from facefusion_ui.processors.frame_enhancer import FrameEnhancer
from facefusion_ui.processors.tiles import TileGrid
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.probe import probe_video
from tests.conftest import RunCli
from tests.support import media
from tests.support.onnx_models import build_upscaler
from tests.support.videos import moving_face, write_video


@pytest.fixture
def upscalers(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_upscaler(folder / "real_esrgan_x2.onnx", 2)
    build_upscaler(folder / "real_esrgan_x4.onnx", 4)
    return folder


def enhancer(folder: Path, **options: object) -> FrameEnhancer:
    settings = Settings(processors=("frame_enhancer",), processor_options={"frame_enhancer": dict(options)})
    runtime = ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",)))
    return FrameEnhancer(settings, runtime)


def whole_frame(processor: FrameEnhancer, frame: Frame) -> Frame:
    """The model on the whole frame at once (no tiles)."""
    _, session = processor.runtime.onnx_session(processor.model)
    blob = (frame[:, :, ::-1].transpose(2, 0, 1)[None] / 255.0).astype(np.float32)
    output = np.asarray(session.run(None, {"input": blob})[0])[0].transpose(1, 2, 0)
    return np.ascontiguousarray(np.clip(output * 255.0 + 0.5, 0, 255).astype(np.uint8)[:, :, ::-1])


def photo(width: int = 230, height: int = 170) -> Frame:
    return np.ascontiguousarray(cv2.resize(media.astronaut(), (width, height), interpolation=cv2.INTER_AREA))


def test_tile_grid_covers_every_pixel_and_weights_are_zero_at_inner_edges() -> None:
    grid = TileGrid(64, 8, 2)
    starts = grid.starts(230)
    assert starts[0] == 0 and starts[-1] == 230 - 64
    covered = np.zeros(230, dtype=np.float32)
    for start in starts:
        weight = grid.weights(start, 230, starts)
        covered[start : start + 64] += weight
        if start > 0:
            assert weight[:2].max() == 0.0
        if start < starts[-1]:
            assert weight[-2:].max() == 0.0
    assert covered.min() > 0.0


@pytest.mark.parametrize(("model", "tile"), [("real_esrgan_x2", 64), ("real_esrgan_x4", 48), ("real_esrgan_x2", 300)])
def test_tiles_join_to_the_whole_frame_result(upscalers: Path, model: str, tile: int) -> None:
    processor = enhancer(upscalers, model=model)
    frame = photo()
    tiled = processor.enhance(frame, 1.0, tile=tile)
    whole = whole_frame(processor, frame)
    assert tiled.shape == whole.shape == (frame.shape[0] * processor.scale, frame.shape[1] * processor.scale, 3)
    difference = np.abs(tiled.astype(int) - whole.astype(int))
    assert difference.max() <= 1, "within rounding: no tile seams"


def test_tiles_without_trimmed_edges_would_show_seams(upscalers: Path) -> None:
    """The check above can see seams: a plain cut between tiles leaves the blur's zero padding visible."""
    processor = enhancer(upscalers)
    frame = photo()
    whole = whole_frame(processor, frame)
    cut = np.concatenate([whole_frame(processor, frame[:, :100]), whole_frame(processor, frame[:, 100:])], axis=1)
    assert np.abs(cut.astype(int) - whole.astype(int)).max() > 10


def test_output_size_target_and_blend(upscalers: Path) -> None:
    frame = photo()
    enhanced = enhancer(upscalers, model="real_esrgan_x4")
    back = enhancer(upscalers, model="real_esrgan_x4", output_size="target")
    assert isinstance(back, ResizingProcessor)
    assert enhanced.output_size(230, 170) == (920, 680) and back.output_size(230, 170) == (230, 170)
    whole = whole_frame(enhanced, frame)
    small = back.enhance(frame, 1.0, tile=64)
    expected = cv2.resize(whole, (230, 170), interpolation=cv2.INTER_AREA)
    assert small.shape == frame.shape
    assert np.abs(small.astype(int) - expected.astype(int)).max() <= 1
    assert np.array_equal(back.enhance(frame, 0.0, tile=64), frame)  # blend 0: the target as it was
    plain = cv2.resize(frame, (920, 680), interpolation=cv2.INTER_LINEAR)
    assert np.abs(enhanced.enhance(frame, 0.0, tile=64).astype(int) - plain.astype(int)).max() <= 1


def test_process_frame_counts_and_uses_the_blend_option(upscalers: Path) -> None:
    processor = enhancer(upscalers, blend=100)
    frame = photo()
    context = FrameContext(0, 0.0, Settings(), options={"blend": 100, "model": "real_esrgan_x2"})
    result = processor.process_frame(frame, context)
    assert result.shape == (340, 460, 3)
    assert processor.counts() == {"frames_enhanced": 1}


def test_budget_counts_the_larger_frames() -> None:
    same = plan_budget(3840, 2160, 30.0, 32, 1, 30, 768, available_mb=8192)
    larger = plan_budget(3840, 2160, 30.0, 32, 1, 30, 768, available_mb=8192, output_scale=4.0)
    assert larger.queue_size < same.queue_size
    assert plan_budget(1280, 720, 30.0, 32, 2, 30, 1024, available_mb=4096, output_scale=1.0) == plan_budget(
        1280, 720, 30.0, 32, 2, 30, 1024, available_mb=4096
    )


def test_video_output_size_follows_the_enhancer(tmp_path: Path, run_cli: RunCli, upscalers: Path) -> None:
    target = write_video(tmp_path / "clip.mp4", moving_face(160, 120, 12), 12, audio=True)
    face = tmp_path / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    output = tmp_path / "out.mp4"
    command = ["process", "-s", str(face), "-t", str(target), "-o", str(output), "--json"]
    command += ["--processors", "frame_enhancer", "--frame-enhancer-model", "real_esrgan_x2"]
    completed = run_cli(command, env={"FACEFUSION_UI_MODELS": str(upscalers)}, timeout=300)
    assert completed.returncode == 0, completed.stderr
    stats = json.loads(completed.stdout)
    assert stats["frames_enhanced"] == 12
    info = probe_video(output)
    assert (info.width, info.height, info.frame_count) == (320, 240, 12)
    assert info.has_audio  # the target's audio, as without an upscaler

"""The output's own frame size and rate (--output-video-resolution, --output-video-fps): the settings'
checks, the encoder's arguments, the rate grid, and real jobs on short clips read back with the
project's probe."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import InputError, SettingsError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.commands import encode_args
from facefusion_ui.video.output_format import (
    OutputFormat,
    asked_fps,
    asked_size,
    changed_reason,
    output_slots,
    repeats,
)
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.yuv import ColourMatrix
from tests.conftest import RunCli
from tests.support import media, videos
from tests.test_video_pipeline import audio_seconds

FAST = Settings(execution_threads=2, frame_queue_size=4, output_video_preset="ultrafast")


def test_resolution_is_width_x_height_and_fps_a_positive_rate() -> None:
    assert Settings(output_video_resolution=" 1280 X 720 ").output_video_resolution == "1280x720"
    assert Settings().output_video_resolution is None and Settings().output_video_fps is None
    bad_values: tuple[Any, ...] = ("720p", "1280x", "0x720", "1280x99999", 1280)
    for bad in bad_values:
        with pytest.raises(SettingsError, match=r"WIDTHxHEIGHT, e\.g\. 1280x720"):
            Settings(output_video_resolution=bad)
    assert Settings(output_video_fps=25).output_video_fps == 25.0
    for bad_rate in (0, -5, 1000):
        with pytest.raises(SettingsError, match="output_video_fps"):
            Settings(output_video_fps=bad_rate)


def test_sizes_are_made_even_and_ntsc_rates_exact() -> None:
    assert asked_size(Settings(output_video_resolution="641x361")) == (642, 362)
    assert asked_fps(Settings(output_video_fps=29.97)) == Fraction(30000, 1001)
    assert asked_fps(Settings(output_video_fps=23.976)) == Fraction(24000, 1001)
    assert asked_fps(Settings(output_video_fps=12.5)) == Fraction(25, 2)
    same = Settings(output_video_resolution="320x240", output_video_fps=25)
    assert changed_reason(same, (320, 240), Fraction(25)) is None
    smaller = same.with_items(output_video_resolution="160x120")
    assert changed_reason(smaller, (320, 240), Fraction(25)) == (
        "the output size differs from the source (--output-video-resolution)"
    )
    slower = same.with_items(output_video_fps=10)
    assert "the output frame rate differs" in str(changed_reason(slower, (320, 240), Fraction(25)))


@pytest.mark.parametrize(("source", "output"), [(25, 10), (24, 60), (Fraction(30000, 1001), 25), (25, 25)])
def test_rate_grid_adds_up_whatever_the_chunks(source: Fraction | int, output: int) -> None:
    source_fps, fps = Fraction(source), Fraction(output)
    total = sum(repeats(position, source_fps, fps) for position in range(97))
    assert total == output_slots(97, source_fps, fps)
    # chunks of any length add up to the same count: no rounding piles up at chunk ends
    for chunk in (1, 7, 40):
        counts = [
            sum(repeats(position, source_fps, fps) for position in range(start, min(start + chunk, 97)))
            for start in range(0, 97, chunk)
        ]
        assert sum(counts) == total


def test_encoder_scales_only_when_asked() -> None:
    tags = ColourMatrix("bt709").output_tags()
    scaled = OutputFormat((160, 120), Fraction(10))
    args = encode_args(
        "ffmpeg", 320, 240, Fraction(10), "libx264", 80, "veryfast", tags, Path("o.mp4"), scaled.scale_filter()
    )
    output = args[args.index("-i") :]
    assert output[output.index("-vf") + 1] == "scale=160:120:flags=bicubic"
    assert args[args.index("-framerate") + 1] == "10/1" and args[args.index("-s") + 1] == "320x240"
    assert OutputFormat().scale_filter() == ""


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import cv2

    folder = tmp_path_factory.mktemp("output-format")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    talking = videos.write_video(folder / "faces.mp4", videos.moving_face(320, 240, 40), 40, audio=True)
    return {"face": face, "talking": talking}


def run(clips: dict[str, Path], runtime: ModelRuntime, output: Path, settings: Settings) -> dict[str, object]:
    job = SwapJob.of(settings, [clips["face"]], clips["talking"], output)
    return process(job, RunContext(runtime=runtime)).to_json()


@pytest.mark.parametrize("frames_on_disk", [False, True])
def test_output_has_the_asked_size_and_rate_with_audio_in_sync(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path, frames_on_disk: bool
) -> None:
    output = tmp_path / "small.mp4"
    settings = FAST.with_items(
        output_video_resolution="160x120",
        output_video_fps=10,
        video_chunk_size=1,
        video_temp_frame_format="png" if frames_on_disk else None,
    )
    summary = run(clips, shared_runtime, output, settings)
    info = probe_video(output)
    assert (info.width, info.height, info.fps) == (160, 120, Fraction(10))
    assert info.frame_count == 16  # 40 frames at 25 fps are 1.6 s: 16 frames at 10 fps
    assert abs((audio_seconds(output) or 0) - 1.6) < 0.05
    assert summary["frames"] == 40 and summary["chunks_total"] == 2


def test_copy_unchanged_falls_back_with_the_reason(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    output = tmp_path / "faster.mp4"
    summary = run(clips, shared_runtime, output, FAST.with_items(output_video_fps=50))
    copy = summary["copy"]
    assert isinstance(copy, dict)
    assert copy["fallback_reason"] == "the output frame rate differs from the source (--output-video-fps)"
    info = probe_video(output)
    assert info.fps == Fraction(50) and info.frame_count == 80 and (info.width, info.height) == (320, 240)
    with pytest.raises(InputError, match="the output size differs from the source"):
        strict = FAST.with_items(output_video_resolution="640x480", video_copy_unchanged="on")
        run(clips, shared_runtime, tmp_path / "strict.mp4", strict)


def test_command_line_flags_say_what_is_wrong_in_one_line(run_cli: RunCli) -> None:
    for flag, value, expected in (
        ("--output-video-resolution", "720p", "allowed WIDTHxHEIGHT, e.g. 1280x720"),
        ("--output-video-fps", "0", "allowed a number from 1 to 240 or none"),
    ):
        completed = run_cli(["process", flag, value, "-s", "a.png", "-t", "b.mp4", "-o", "c.mp4"])
        assert completed.returncode == 2 and "Traceback" not in completed.stderr
        (line,) = completed.stderr.strip().splitlines()
        assert expected in line, line

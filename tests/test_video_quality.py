"""The quality a video job encodes at (``video/quality.py``): the user's ``output_video_quality`` when set,
else the default's no finer than 5 CRF steps below the source's own CRF; the command builders that carry
it; and jobs on an x264 CRF 30 source, encoded whole and spliced, whose output streams say the CRF their
encoder used (x264 writes its settings into the stream) and whose ``--json`` says how it was chosen."""

from __future__ import annotations

import re
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.commands import crf_for, encode_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.quality import (
    DEFAULT_VIDEO_QUALITY,
    VideoQuality,
    choose_quality,
    planned_quality,
    quality_of_crf,
    read_source_crf,
)
from facefusion_ui.video.splice import EarlyProbes, SpliceParams
from tests.support import media, videos

FRAMES = 50
GOP = 25
SOURCE_CRF = 30
X264_CRF = re.compile(rb"x264 - core[^\0]*?\scrf=(\d+(?:\.\d+)?)")


def value_after(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_a_quality_set_is_used_as_given_whatever_the_source() -> None:
    assert choose_quality(80, "libx264", 23.0) == VideoQuality(80, 10, "setting", 23.0)
    assert choose_quality(40, "libx264", 23.0).crf == 31  # coarser than the source when asked
    assert choose_quality(100, "libx265", 28.0).crf == 0
    assert choose_quality(70, "libvpx-vp9", 23.0) == VideoQuality(70, None, "setting", 23.0)


def test_with_no_quality_set_frames_are_encoded_no_finer_than_five_crf_steps_below_the_source() -> None:
    at_23 = choose_quality(None, "libx264", 23.0)
    assert (at_23.crf, at_23.chosen, crf_for(at_23.quality)) == (18, "source", 18)
    assert choose_quality(None, "libx265", 28.0).crf == 23
    assert choose_quality(None, "libx264", 51.0).crf == 46
    # the default quality where that is finer than the source allows, or the source's CRF is unknown
    assert choose_quality(None, "libx264", 14.0) == VideoQuality(DEFAULT_VIDEO_QUALITY, 10, "default", 14.0)
    assert choose_quality(None, "libx264", None) == VideoQuality(DEFAULT_VIDEO_QUALITY, 10, "default", None)
    # encoders without x264's CRF scale: the default quality
    assert choose_quality(None, "libvpx-vp9", 23.0) == VideoQuality(DEFAULT_VIDEO_QUALITY, None, "default", 23.0)
    assert choose_quality(None, "h264_nvenc", 23.0).quality == DEFAULT_VIDEO_QUALITY
    assert choose_quality(None, "libx264", 23.0).to_json() == {
        "quality": at_23.quality,
        "crf": 18,
        "chosen_by": "source",
        "source_crf": 23.0,
    }


def test_every_crf_has_a_quality() -> None:
    assert [crf_for(quality_of_crf(crf)) for crf in range(52)] == list(range(52))
    assert quality_of_crf(0) == 100 and quality_of_crf(51) == 0


def test_the_command_builders_carry_the_planned_quality() -> None:
    chosen = choose_quality(None, "libx264", 23.0).quality
    whole = encode_args("ffmpeg", 640, 480, Fraction(25), "libx264", chosen, "veryfast", [], Path("o.mp4"))
    assert value_after(whole, "-crf") == "18"
    splice = SpliceParams("h264", "high", "3.1", False, [], None, Fraction(1, 12800), 2, source_crf=23.0)
    assert value_after(splice.encoder_args(chosen, "veryfast"), "-crf") == "18"
    assert value_after(splice.encoder_args(80, "veryfast"), "-crf") == "10"  # a quality set: as given
    assert planned_quality(None) == DEFAULT_VIDEO_QUALITY and planned_quality(55) == 55
    assert Settings().output_video_quality is None  # the default: chosen with the source


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A face drifting over 2 s, stored by x264 at CRF 30 with GOPs of 1 s."""
    folder = tmp_path_factory.mktemp("quality")
    raw = videos.write_video(folder / "raw.mkv", videos.moving_face(320, 240, FRAMES), FRAMES)
    path = folder / "crf30.mp4"
    gop = ["-g", str(GOP), "-keyint_min", str(GOP), "-sc_threshold", "0"]
    command = [resolve_ffmpeg().path, "-hide_banner", "-loglevel", "error", "-i", str(raw), "-c:v", "libx264"]
    encode = [*command, "-preset", "veryfast", "-crf", str(SOURCE_CRF), *gop, "-pix_fmt", "yuv420p"]
    subprocess.run([*encode, "-y", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quality-face") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def run(face: Path, clip: Path, output: Path, runtime: ModelRuntime, **values: Any) -> dict[str, Any]:
    settings = Settings(output_video_preset="ultrafast").with_items(**values)
    job = SwapJob.of(settings, [face], clip, output)
    return dict(process(job, RunContext(runtime=runtime, work_dir=output.parent / f"work-{output.stem}")).stats)


def crfs_in(path: Path) -> set[float]:
    """The CRFs x264 wrote into the stream (each encoder run writes its settings once)."""
    return {float(found) for found in X264_CRF.findall(path.read_bytes())}


@pytest.mark.parametrize(
    ("values", "crf", "chosen"),
    [({}, SOURCE_CRF - 5, "source"), ({"output_video_quality": 80}, 10, "setting")],
    ids=["no quality set", "quality set"],
)
def test_a_video_encoded_whole_gets_the_chosen_crf(
    face: Path, clip: Path, tmp_path: Path, shared_runtime: ModelRuntime, values: dict[str, Any], crf: int, chosen: str
) -> None:
    output = tmp_path / "out.mp4"
    stats = run(face, clip, output, shared_runtime, video_copy_unchanged="off", **values)
    assert stats["faces_swapped"] > 0
    assert stats["encoding"]["crf"] == crf and stats["encoding"]["chosen_by"] == chosen, stats["encoding"]
    # the source's CRF is read from its stream only when it is needed
    assert stats["encoding"]["source_crf"] == (SOURCE_CRF if chosen == "source" else None)
    assert stats["encoding"]["encoder"] == "libx264"
    assert crfs_in(output) == {float(crf)}


@pytest.mark.parametrize(
    ("values", "crf"), [({}, SOURCE_CRF - 5), ({"output_video_quality": 80}, 10)], ids=["no quality set", "quality set"]
)
def test_the_gops_re_encoded_between_copied_ones_get_the_chosen_crf(
    face: Path, clip: Path, tmp_path: Path, shared_runtime: ModelRuntime, values: dict[str, Any], crf: int
) -> None:
    output = tmp_path / "out.mp4"
    stats = run(face, clip, output, shared_runtime, **values)
    assert stats["copy"]["fallback_reason"] is None and stats["copy"]["gops_encoded"] >= 1, stats["copy"]
    assert stats["encoding"]["crf"] == crf
    assert float(crf) in crfs_in(output)
    assert crfs_in(output) <= {float(crf), float(SOURCE_CRF)}  # the re-encoded GOPs' and the copied ones'


def test_a_plan_for_processors_that_resize_reads_the_source_crf_no_more(
    clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from facefusion_ui import video_job

    reads: list[Path] = []

    def counted(ffmpeg: str, source: Path, early: EarlyProbes | None = None) -> float | None:
        reads.append(source)
        return read_source_crf(ffmpeg, source, early)

    monkeypatch.setattr(video_job, "read_source_crf", counted)
    settings = Settings(video_copy_unchanged="off")
    plan = video_job.VideoPlan.make(settings, clip, tmp_path / "out.mp4", resolve_ffmpeg().path)
    doubled = plan.resized(settings, lambda width, height: (width * 2, height * 2), tmp_path / "out.mp4", "ffmpeg")
    assert len(reads) == 1  # the first plan read it; the plan for the larger frames took it from there
    assert doubled.quality == plan.quality and doubled.quality is not None and doubled.quality.chosen == "source"

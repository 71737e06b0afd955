"""The streaming video pipeline on real files with real ffmpeg: frame-exact chunks, audio, trims,
rotation, odd sizes, variable frame rate, bad files, bounded queues, no leaked threads or processes."""

from __future__ import annotations

import subprocess
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import FfmpegError, InputError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from tests.support import media, videos

FAST = Settings(execution_threads=2, frame_queue_size=4, output_video_preset="ultrafast")
LOSSLESS = FAST.with_items(output_video_quality=100)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clips")
    face = folder / "astronaut.png"
    import cv2

    cv2.imwrite(str(face), media.astronaut())
    made = {
        "face": face,
        "talking": videos.write_video(
            folder / "faces.mp4", videos.moving_face(320, 240, 40, cut_at=28), 40, audio=True
        ),
        "silent": videos.write_video(folder / "silent.mp4", videos.moving_face(320, 240, 30), 30),
        "blank": videos.write_video(
            folder / "blank.mp4", videos.blank(320, 240), 30, fps=Fraction(30000, 1001), audio=True
        ),
        "rotated": videos.write_video(folder / "rotated.mp4", videos.moving_face(240, 320, 12), 12, rotation=90),
        "odd": videos.write_video(folder / "odd.mp4", videos.blank(641, 479), 10),
        "one": videos.write_video(folder / "one.mp4", videos.moving_face(320, 240, 1), 1),
        "vfr": videos.write_video(
            folder / "vfr.mp4", videos.blank(320, 240), 20, frame_durations=[0.04] * 10 + [0.1] * 10
        ),
    }
    return made


def audio_seconds(path: Path) -> float | None:
    ffmpeg = resolve_ffmpeg().path
    command = [
        ffmpeg,
        "-hide_banner",
        "-loglevel",
        "error",
        "-i",
        str(path),
        "-map",
        "0:a:0",
        "-c",
        "copy",
        "-f",
        "framecrc",
        "-",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        return None
    base = Fraction(1)
    total = 0
    for line in completed.stdout.splitlines():
        if line.startswith("#tb 0:"):
            base = Fraction(line.split(":", 1)[1].strip())
        elif line and line[0].isdigit():
            total += int(line.split(",")[3])
    return float(total * base) if total else None


def run(
    clips: dict[str, Path],
    runtime: ModelRuntime,
    target: str,
    output: Path,
    settings: Settings = FAST,
    **options: object,
) -> dict[str, Any]:
    return process(
        SwapJob.of(settings, [clips["face"]], clips[target], output),
        RunContext(runtime=runtime, **options),  # type: ignore[arg-type]
    ).to_json()


@pytest.mark.parametrize("chunk", [1, 2, 1000])
def test_frames_fps_and_audio_are_kept_for_any_chunk_size(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path, chunk: int
) -> None:
    output = tmp_path / "out.mp4"
    summary = run(clips, shared_runtime, "talking", output, FAST.with_items(video_chunk_size=chunk))
    source, result = probe_video(clips["talking"]), probe_video(output)
    assert result.frame_count == source.frame_count == 40 and result.fps == source.fps
    assert summary["chunks_total"] == {1: 2, 2: 1, 1000: 1}[chunk]  # 25 fps, 1 s: 20 + 20 frames (on the grid)
    assert summary["faces_swapped"] >= 40 and summary["frames"] == 40
    first = summary["first_frame_s"]
    assert 0 < first["since_job_start"] <= first["since_process_start"]
    assert result.has_audio
    assert abs((audio_seconds(output) or 0) - 40 / 25) < 0.05


def test_no_audio_in_means_no_audio_out(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    output = tmp_path / "out.mp4"
    run(clips, shared_runtime, "silent", output)
    assert not probe_video(output).has_audio and probe_video(output).frame_count == 30


def test_trims_cut_frames_and_audio(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    output = tmp_path / "out.mp4"
    settings = FAST.with_items(trim_frame_start=7, trim_frame_end=29, video_chunk_size=1)
    summary = run(clips, shared_runtime, "blank", output, settings)
    info = probe_video(output)
    assert info.frame_count == 22 and summary["frames"] == 22 and info.fps == Fraction(30000, 1001)
    assert abs((audio_seconds(output) or 0) - 22 * 1001 / 30000) < 0.05
    decoded, source = videos.decode_all(output), videos.decode_all(clips["blank"])
    for index in (0, 21):  # the first and last kept frames are the source's 7 and 28
        errors = [np.abs(decoded[index].astype(int) - frame.astype(int)).mean() for frame in source]
        assert int(np.argmin(errors)) == 7 + index


def test_frames_without_faces_pass_through(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    output = tmp_path / "out.mp4"
    summary = run(clips, shared_runtime, "blank", output)
    assert summary["faces_detected"] == 0
    # one more BGR -> 4:2:0 -> BGR round trip through swscale: measured ~1.1-2.2 levels of shift
    for before, after in zip(videos.decode_all(clips["blank"]), videos.decode_all(output), strict=True):
        assert np.abs(before.astype(int) - after.astype(int)).mean() < 3.0


@pytest.mark.parametrize("interval", [1, 5])
@pytest.mark.parametrize("chunk", [1, 2])
def test_chunked_equals_unchunked_frame_for_frame(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path, chunk: int, interval: int
) -> None:
    """Face tracking, the detection schedule and identities carry across chunk borders. At interval 5
    chunks are cut on the detection groups' grid (1 s at 25 fps: 20 frames, not 25); at interval 1 they
    are not (25 + 15 frames)."""
    chunked, whole = tmp_path / "chunked.mp4", tmp_path / "whole.mp4"
    settings = LOSSLESS.with_items(face_detector_interval=interval)
    summary = run(clips, shared_runtime, "talking", chunked, settings.with_items(video_chunk_size=chunk))
    run(clips, shared_runtime, "talking", whole, settings.with_items(video_chunk_size=1000))
    assert summary["chunks_total"] == {1: 2, 2: 1}[chunk]
    assert summary["chunk_frames"] == {(1, 1): 25, (1, 5): 20, (2, 1): 50, (2, 5): 60}[(chunk, interval)]
    for a, b in zip(videos.decode_all(chunked), videos.decode_all(whole), strict=True):
        assert np.array_equal(a, b)


def test_temp_frames_mode_gives_the_same_frames(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    streamed, framed = tmp_path / "streamed.mp4", tmp_path / "framed.mp4"
    streamed_stats = run(clips, shared_runtime, "silent", streamed, LOSSLESS)
    work = tmp_path / "work"
    settings = LOSSLESS.with_items(video_temp_frame_format="png", keep_temp=True)
    framed_stats = run(clips, shared_runtime, "silent", framed, settings, work_dir=work)
    assert streamed_stats["faces_swapped"] == framed_stats["faces_swapped"] == 30
    # the same analysis and processors; temp frames only add a YUV -> BGR -> YUV round trip on every pixel
    # (streaming converts back only the area the swapper changed): rounding and chroma resampling
    for a, b in zip(videos.decode_all(streamed), videos.decode_all(framed), strict=True):
        difference = np.abs(a.astype(np.int16) - b.astype(np.int16))
        assert difference.mean() < 0.5 and np.percentile(difference, 99) <= 8  # a wrong matrix: mean > 1
    assert len(list((work / "frames_00000").glob("*.png"))) == 30  # --keep-temp keeps them


def test_rotated_input_comes_out_upright(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    source = probe_video(clips["rotated"])
    assert source.rotation == 90 and (source.width, source.height) == (240, 320)
    output = tmp_path / "out.mp4"
    summary = run(clips, shared_runtime, "rotated", output)
    result = probe_video(output)
    assert (result.width, result.height, result.rotation) == (240, 320, 0)
    assert result.frame_count == 12 and summary["faces_swapped"] == 12  # faces were found: upright frames


def test_odd_size_is_padded_by_one_pixel(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    output = tmp_path / "out.mp4"
    run(clips, shared_runtime, "odd", output)
    result = probe_video(output)
    assert (result.width, result.height, result.frame_count, result.pix_fmt) == (642, 480, 10, "yuv420p")
    first_in, first_out = videos.decode_all(clips["odd"])[0], videos.decode_all(output)[0]
    assert np.abs(first_out[:479, :641].astype(int) - first_in.astype(int)).mean() < 3


def test_variable_frame_rate_keeps_every_frame(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    source = probe_video(clips["vfr"])
    assert source.vfr and source.frame_count == 20
    output = tmp_path / "out.mp4"
    run(clips, shared_runtime, "vfr", output)
    result = probe_video(output)
    assert result.frame_count == 20 and not result.vfr
    assert abs(result.duration - source.duration) < 0.1  # the average rate keeps the length


def test_single_frame_video(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    output = tmp_path / "out.mp4"
    summary = run(clips, shared_runtime, "one", output)
    assert probe_video(output).frame_count == 1 and summary["faces_swapped"] == 1


def test_bad_files_fail_clearly_and_leave_no_output(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all")
    with pytest.raises(InputError, match=r"cannot read .* as a video"):
        run({**clips, "text": text}, shared_runtime, "text", tmp_path / "a.mp4")
    assert not (tmp_path / "a.mp4").exists()
    data = clips["talking"].read_bytes()
    cut = tmp_path / "cut.mp4"  # the moov atom sits at the end: cut it off
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError):
        run({**clips, "cut": cut}, shared_runtime, "cut", tmp_path / "b.mp4")
    assert not (tmp_path / "b.mp4").exists()


def test_truncated_stream_is_an_ffmpeg_error(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    ffmpeg = resolve_ffmpeg().path
    fast_start = tmp_path / "faststart.mp4"
    subprocess.run(
        [
            ffmpeg,
            "-loglevel",
            "error",
            "-i",
            str(clips["silent"]),
            "-c",
            "copy",
            "-movflags",
            "+faststart",
            "-y",
            str(fast_start),
        ],
        check=True,
    )
    data = fast_start.read_bytes()
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(data[: int(len(data) * 0.6)])  # header intact, frames missing
    output = tmp_path / "out.mp4"
    with pytest.raises((FfmpegError, InputError)) as caught:
        run({**clips, "broken": broken}, shared_runtime, "broken", output)
    assert "truncated" in str(caught.value) or "corrupt" in str(caught.value) or "cannot read" in str(caught.value)
    assert not output.exists()


def test_queues_stay_within_their_bounds(clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    settings = FAST.with_items(frame_queue_size=3, execution_threads=2)
    queues: Any = run(clips, shared_runtime, "talking", tmp_path / "out.mp4", settings)["queues"]
    for name in ("inputs", "analysed", "outputs"):
        assert 1 <= queues[name]["high_water"] <= queues[name]["maxsize"] == 3
    # three queues, one frame per worker, the largest detection group (4 intervals), the writer's frame
    assert queues["in_flight_most"] <= queues["in_flight_limit"] == 3 * 3 + 2 + 4 * settings.face_detector_interval + 1


def ffmpeg_children() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True) if "ffmpeg" in child.name()]


def test_no_thread_or_process_left_after_success_or_error(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    before = {thread.ident for thread in threading.enumerate()}
    run(clips, shared_runtime, "silent", tmp_path / "ok.mp4")
    calls = [0]

    def failing(state: dict[str, object]) -> None:
        calls[0] += 1
        if int(state["frames_done"]) >= 5:  # type: ignore[call-overload]
            raise RuntimeError("boom in the middle")

    with pytest.raises(RuntimeError, match="boom"):
        run(
            clips,
            shared_runtime,
            "silent",
            tmp_path / "failed.mp4",
            FAST.with_items(video_chunk_size=1000),
            progress=failing,
        )
    assert not (tmp_path / "failed.mp4").exists()
    leftover = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert leftover == [], leftover
    assert ffmpeg_children() == []

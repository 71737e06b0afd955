"""The decoder (FrameReader) and the encoder (FrameWriter) on their own, with real ffmpeg on a tiny clip:
exact frame counts, frames as decoded, ffmpeg's own words in their errors, no process left behind."""

from __future__ import annotations

import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import psutil
import pytest

from facefusion_ui.errors import FfmpegError
from facefusion_ui.video.commands import decode_args, encode_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.queues import BoundedQueue, Stopped
from facefusion_ui.video.reader import END, FrameItem, FrameReader
from facefusion_ui.video.writer import FrameWriter
from facefusion_ui.video.yuv import ColourMatrix
from tests.support import stream_clips
from tests.support.stream_clips import HEIGHT, WIDTH

FRAMES = 20
SHAPE = (HEIGHT * 3 // 2, WIDTH)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stream_clips.write_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", FRAMES)


def ffmpeg_children() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True) if "ffmpeg" in child.name()]


def read_all(command: list[str], first: int, expected: int) -> tuple[list[FrameItem], FrameReader]:
    """Run a FrameReader to its end, taking its frames as the pipeline does (a slot freed per frame)."""
    stop = threading.Event()
    output: BoundedQueue[FrameItem] = BoundedQueue(2)
    slots = threading.Semaphore(3)
    reader = FrameReader(command, SHAPE, first, expected, output, stop, slots)
    items: list[FrameItem] = []
    reader.start()
    try:
        while True:
            item = output.get(stop)
            if item is END:
                break
            items.append(item)
            slots.release()
    except Stopped:  # the reader failed: the frames it had queued before still count
        reader.join()
        while output.qsize():
            item = output.get(threading.Event())
            if item is not END:
                items.append(item)
    finally:
        stop.set()
        reader.join()
    return items, reader


def test_reader_yields_the_exact_frames(clip: Path) -> None:
    command = decode_args(resolve_ffmpeg().path, clip, 0.0, FRAMES, "")
    items, reader = read_all(command, 0, FRAMES)
    assert reader.error is None
    assert [item.index for item in items] == list(range(FRAMES))
    expected = stream_clips.decode_yuv(clip)
    assert len(expected) == FRAMES
    for item, frame in zip(items, expected, strict=True):
        assert item.frame.shape == SHAPE
        assert np.array_equal(item.frame, frame)
    assert ffmpeg_children() == []


def test_reader_starts_at_a_frame_and_stops_after_the_count(clip: Path) -> None:
    info = probe_video(clip)
    command = decode_args(resolve_ffmpeg().path, clip, info.seek_time(7), 9, "")
    items, reader = read_all(command, 7, 9)
    assert reader.error is None
    assert [item.index for item in items] == list(range(7, 16))
    expected = stream_clips.decode_yuv(clip)
    for item in items:
        assert np.array_equal(item.frame, expected[item.index])


def test_reader_names_a_short_file_with_ffmpeg_reason(clip: Path, tmp_path: Path) -> None:
    command = decode_args(resolve_ffmpeg().path, clip, 0.0, FRAMES + 5, "")
    items, reader = read_all(command, 0, FRAMES + 5)
    assert len(items) == FRAMES
    assert isinstance(reader.error, FfmpegError)
    assert f"decoded {FRAMES} of {FRAMES + 5} frames" in str(reader.error)
    missing = decode_args(resolve_ffmpeg().path, tmp_path / "missing.mp4", 0.0, FRAMES, "")
    items, reader = read_all(missing, 0, FRAMES)
    assert items == []
    assert isinstance(reader.error, FfmpegError)
    assert "No such file" in str(reader.error)  # ffmpeg's stderr, not swallowed
    assert ffmpeg_children() == []


def encoder(ffmpeg: str, output: Path, preset: str = "ultrafast") -> list[str]:
    tags = ColourMatrix("bt601").output_tags()
    return encode_args(ffmpeg, WIDTH, HEIGHT, Fraction(25), "libx264", 100, preset, tags, output)


def test_writer_makes_a_decodable_segment_with_every_frame(clip: Path, tmp_path: Path) -> None:
    frames = stream_clips.decode_yuv(clip)
    segment = tmp_path / "segment.mp4"
    writer = FrameWriter(encoder(resolve_ffmpeg().path, segment))
    for frame in frames:
        writer.write(frame)
    writer.close()
    assert writer.frames_written == FRAMES
    assert probe_video(segment).frame_count == FRAMES
    for written, frame in zip(stream_clips.decode_yuv(segment), frames, strict=True):
        assert np.array_equal(written, frame)  # quality 100 is lossless: frames come back bit for bit
    assert ffmpeg_children() == []


def test_writer_failure_carries_ffmpeg_words(tmp_path: Path) -> None:
    segment = tmp_path / "segment.mp4"
    writer = FrameWriter(encoder(resolve_ffmpeg().path, segment, preset="no-such-preset"))
    with pytest.raises(FfmpegError, match="exit code") as caught:
        for _ in range(FRAMES):
            writer.write(np.zeros(SHAPE, np.uint8))
        writer.close()
    assert "libx264" in str(caught.value)
    assert ffmpeg_children() == []


def test_writer_abort_ends_the_encoder(tmp_path: Path) -> None:
    writer = FrameWriter(encoder(resolve_ffmpeg().path, tmp_path / "segment.mp4"))
    writer.write(np.zeros(SHAPE, np.uint8))
    writer.abort()
    assert writer.process.returncode is not None
    assert ffmpeg_children() == []

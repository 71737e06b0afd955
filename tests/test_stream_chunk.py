"""One chunk through the streaming pipeline with real ffmpeg and fake frame stages (no models): frames
stay in order with several workers, untouched frames pass bit for bit, errors and cancel stop every
thread and both ffmpeg processes, and the queues and in-flight frames stay within their bounds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from facefusion_ui.errors import CancelledError, FfmpegError
from facefusion_ui.frames import FrameImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video import stream
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.stream import ChunkTask, StreamedChunk, in_flight_limit, run_chunk
from tests.support import stream_clips

FRAMES = 24
DEADLINE_S = 60.0
SETTINGS = Settings(
    execution_threads=3,
    frame_queue_size=2,
    face_detector_interval=1,
    output_video_preset="ultrafast",
    output_video_quality=100,  # lossless: untouched frames come back bit for bit
)
MARK = (slice(8, 24), slice(16, 32))
"""Rows and columns the marking stage paints (even borders: the changed box is exactly this)."""


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class FakeStages:
    """FrameStages without models: the analysis of a frame is its index; ``changed`` says which frames the
    processors change (they paint ``MARK`` when ``mark``); ``fail_at`` raises in ``apply``,
    ``fail_analysis_at`` in ``analyse_group``; ``hold`` (index -> condition) keeps a frame's worker
    waiting until the condition holds."""

    def __init__(
        self,
        changed: Callable[[int], bool] = lambda index: True,
        group: int = 1,
        mark: bool = False,
        fail_at: int | None = None,
        fail_analysis_at: int | None = None,
    ) -> None:
        self.changed = changed
        self.group = group
        self.mark = mark
        self.fail_at = fail_at
        self.fail_analysis_at = fail_analysis_at
        self.hold: dict[int, Callable[[], bool]] = {}
        self._lock = threading.Lock()
        self.analysed: list[int] = []
        self.finished: list[int] = []
        self.workers: set[str] = set()

    def group_size_from(self, index: int) -> int:
        return self.group

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]
    ) -> Sequence[Any]:
        if self.fail_analysis_at in indices:
            raise RuntimeError(f"analysis failed at frame {self.fail_analysis_at}")
        self.analysed.extend(indices)
        return list(indices)

    def changes(self, analysis: Any) -> bool:
        return self.changed(int(analysis))

    def apply(self, frame: Frame, analysis: Any, index: int, timestamp: float) -> Frame:
        if index == self.fail_at:
            raise RuntimeError(f"stage failed at frame {index}")
        if index in self.hold:
            wait_for(self.hold[index], f"the hold on frame {index}")
        if self.mark:
            frame[MARK] = (40, 200, 90)
        with self._lock:
            self.finished.append(index)
            self.workers.add(threading.current_thread().name)
        return frame


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stream_clips.write_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", FRAMES)


@pytest.fixture(scope="module")
def source(clip: Path) -> list[np.ndarray]:
    return stream_clips.decode_yuv(clip)


def make_task(
    clip: Path,
    segment: Path,
    stages: FakeStages,
    settings: Settings = SETTINGS,
    chunk: Chunk | None = None,
    frame_done: Callable[[], None] = lambda: None,
    cancel: threading.Event | None = None,
) -> ChunkTask:
    info = probe_video(clip)
    chunk = chunk or Chunk(0, 0, FRAMES)
    return ChunkTask(resolve_ffmpeg().path, info, chunk, segment, settings, stages, frame_done, cancel)


def ffmpeg_children() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True) if "ffmpeg" in child.name()]


def pipeline_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("frame-") and thread.is_alive()]


def assert_all_ended(segment: Path) -> None:
    assert not segment.exists()
    assert ffmpeg_children() == []
    assert pipeline_threads() == []


def hold_each_odd_frame_until_the_next_is_done(stages: FakeStages) -> None:
    """Frame 1 waits for frame 2, 3 for 4...: the workers finish out of order, whatever the machine's speed."""

    def finished(index: int) -> Callable[[], bool]:
        return lambda: index in stages.finished

    for index in range(1, FRAMES - 1, 2):
        stages.hold[index] = finished(index + 1)


def test_frames_stay_in_order_with_several_workers(clip: Path, source: list[np.ndarray], tmp_path: Path) -> None:
    stages = FakeStages(group=3)  # groups of 3: 24 frames, and a last group cut short in the 20-frame chunk
    hold_each_odd_frame_until_the_next_is_done(stages)
    segment = tmp_path / "segment.mp4"
    written: list[int] = []
    run = run_chunk(make_task(clip, segment, stages, frame_done=lambda: written.append(1)))
    assert (run.frames, run.frames_converted, len(written)) == (FRAMES, FRAMES, FRAMES)
    assert stages.finished != sorted(stages.finished)
    assert stages.finished.index(2) < stages.finished.index(1)
    assert len(stages.workers) >= 2
    assert stages.analysed == list(range(FRAMES))
    output = stream_clips.decode_yuv(segment)
    assert len(output) == FRAMES
    for index, (written_frame, frame) in enumerate(zip(output, source, strict=True)):
        assert np.array_equal(written_frame, frame), f"frame {index} is not in its place"
    assert ffmpeg_children() == []


def test_a_chunk_in_the_middle_keeps_its_frames(clip: Path, source: list[np.ndarray], tmp_path: Path) -> None:
    stages = FakeStages(group=3)
    segment = tmp_path / "segment.mp4"
    run = run_chunk(make_task(clip, segment, stages, chunk=Chunk(1, 6, 20)))
    assert run.frames == 14
    assert stages.analysed == list(range(6, 20))
    for written_frame, frame in zip(stream_clips.decode_yuv(segment), source[6:20], strict=True):
        assert np.array_equal(written_frame, frame)


def test_untouched_frames_pass_bit_for_bit(clip: Path, source: list[np.ndarray], tmp_path: Path) -> None:
    marked = {3, 4, 10, 17}
    stages = FakeStages(changed=lambda index: index in marked, mark=True)
    segment = tmp_path / "segment.mp4"
    run = run_chunk(make_task(clip, segment, stages))
    assert (run.frames, run.frames_converted) == (FRAMES, len(marked))
    assert sorted(stages.finished) == sorted(marked)
    rows, columns = MARK
    for index, (written_frame, frame) in enumerate(zip(stream_clips.decode_yuv(segment), source, strict=True)):
        if index not in marked:
            assert np.array_equal(written_frame, frame), f"untouched frame {index} changed"
            continue
        luma, before = written_frame[: stream_clips.HEIGHT], frame[: stream_clips.HEIGHT]
        assert not np.array_equal(luma[rows, columns], before[rows, columns])
        luma_outside, before_outside = luma.copy(), before.copy()
        luma_outside[rows, columns] = before_outside[rows, columns] = 0
        assert np.array_equal(luma_outside, before_outside), f"frame {index} changed outside its mark"


@pytest.mark.parametrize("where", ["worker", "analysis", "writer"])
def test_an_error_stops_the_chunk_and_every_process(clip: Path, tmp_path: Path, where: str) -> None:
    stages = FakeStages(fail_at=7 if where == "worker" else None, fail_analysis_at=7 if where == "analysis" else None)
    done: list[int] = []

    def frame_done() -> None:
        done.append(1)
        if where == "writer" and len(done) == 7:
            raise RuntimeError("stage failed at frame 7 (progress)")

    segment = tmp_path / "segment.mp4"
    with pytest.raises(RuntimeError, match="failed at frame 7"):
        run_chunk(make_task(clip, segment, stages, frame_done=frame_done))
    assert len(done) <= 7
    assert_all_ended(segment)


def test_a_decoder_error_stops_the_chunk(clip: Path, tmp_path: Path) -> None:
    stages = FakeStages()
    segment = tmp_path / "segment.mp4"
    with pytest.raises(FfmpegError, match=f"decoded {FRAMES} of {FRAMES + 4} frames"):
        run_chunk(make_task(clip, segment, stages, chunk=Chunk(0, 0, FRAMES + 4)))
    assert_all_ended(segment)


def test_cancel_stops_promptly(clip: Path, tmp_path: Path) -> None:
    cancel = threading.Event()
    done: list[int] = []

    def frame_done() -> None:
        done.append(1)
        if len(done) == 4:
            cancel.set()  # the user cancels while the chunk runs

    segment = tmp_path / "segment.mp4"
    stages = FakeStages()
    with pytest.raises(CancelledError):
        run_chunk(make_task(clip, segment, stages, frame_done=frame_done, cancel=cancel))
    # frames already analysed when the cancel came may still be written, no more
    assert len(done) <= 4 + in_flight_limit(SETTINGS) < FRAMES
    assert len(stages.analysed) < FRAMES
    assert_all_ended(segment)


def test_cancel_before_the_start_writes_nothing(clip: Path, tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    done: list[int] = []
    segment = tmp_path / "segment.mp4"
    with pytest.raises(CancelledError):
        run_chunk(make_task(clip, segment, FakeStages(), frame_done=lambda: done.append(1), cancel=cancel))
    assert done == []
    assert_all_ended(segment)


def test_queues_fill_to_their_bound_and_no_further(clip: Path, tmp_path: Path) -> None:
    """One worker held on frame 0: the analysis fills the workers' queue, the decoder the analysis's."""
    settings = SETTINGS.with_items(execution_threads=1)
    stages = FakeStages()
    chunk = StreamedChunk(make_task(clip, tmp_path / "segment.mp4", stages, settings=settings))
    stages.hold[0] = lambda: chunk.inputs.qsize() == chunk.analysed.qsize() == settings.frame_queue_size
    run = chunk.run()
    assert run.frames == FRAMES
    for name in ("inputs", "analysed"):
        assert run.queues[name] == {"maxsize": 2, "high_water": 2}
    assert 1 <= run.queues["outputs"]["high_water"] <= 2
    assert run.queues["in_flight_most"] <= run.queues["in_flight_limit"] == in_flight_limit(settings)


def test_frames_in_flight_stop_at_the_limit(clip: Path, tmp_path: Path) -> None:
    """Frames 0 and 12 held in a worker, the others untouched: the writer keeps the frames after a held one
    until it comes, and the decoder stops when every slot is taken, twice (a written frame frees one slot)."""
    stages = FakeStages(changed=lambda index: index in (0, 12))
    chunk = StreamedChunk(make_task(clip, tmp_path / "segment.mp4", stages))
    limit = in_flight_limit(SETTINGS)
    assert 12 + limit <= FRAMES
    stages.hold[0] = stages.hold[12] = lambda: chunk.in_flight.now >= limit
    run = chunk.run()
    assert run.frames == FRAMES
    assert run.queues["in_flight_most"] == limit


def test_temp_frames_mode_keeps_count_and_order(clip: Path, tmp_path: Path) -> None:
    stages = FakeStages(changed=lambda index: index % 5 == 0, group=4)
    segment = tmp_path / "segment.mp4"
    settings = SETTINGS.with_items(video_temp_frame_format="png")
    run = run_chunk(make_task(clip, segment, stages, settings=settings))
    assert (run.frames, run.frames_converted) == (FRAMES, 5)
    assert stages.analysed == list(range(FRAMES))
    assert probe_video(segment).frame_count == FRAMES
    assert not (tmp_path / "frames_00000").exists()
    assert ffmpeg_children() == []


def test_the_writer_gives_free_heap_back_every_so_many_frames(
    clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``TRIM_EVERY_FRAMES`` frames written, the C heap's free pages go back to the system, so a long
    chunk's heaps do not keep growing between the trims the video workflow makes between chunks."""
    trims: list[int] = []
    monkeypatch.setattr(stream, "TRIM_EVERY_FRAMES", 5)

    def trim() -> bool:
        trims.append(1)
        return True

    monkeypatch.setattr(stream, "return_free_memory", trim)
    run = run_chunk(make_task(clip, tmp_path / "segment.mp4", FakeStages(group=3)))
    assert run.frames == FRAMES
    assert len(trims) == FRAMES // 5

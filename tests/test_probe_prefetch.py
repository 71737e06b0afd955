"""Work the video analysis does ahead on its helper threads: a probe's full search (``ProbePrefetch``: at
most one in flight, taken only for its own frame, otherwise discarded, its error raised where the probe
takes it) and a frame's colour conversion (``YuvFrame.convert_on``: the same pixels). Through a chunk with
real ffmpeg and fake stages that use them as the detection schedule does: the searches ahead are taken in
their groups with the frame's own result, wrong guesses are discarded, errors stop the chunk, and the
frames in flight stay within the limit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.probe_prefetch import FrameAt, ProbePrefetch
from facefusion_ui.frames import BgrImage, FrameImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.stream import ChunkTask, StreamedChunk, in_flight_limit
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame
from tests.support import stream_clips
from tests.test_stream_chunk import assert_all_ended, wait_for

FRAMES = 24
GROUP = 4
SETTINGS = Settings(
    execution_threads=2,
    frame_queue_size=8,
    face_detector_interval=2,  # groups never cross 8 frames: the next group's frames are within reach
    output_video_preset="ultrafast",
    output_video_quality=100,
)


def mean_search(image: FrameImage) -> list[Detection]:
    """A stand-in for a full search: a pure function of the frame (its mean luma as the box)."""
    grey, _ = image.luma(max(image.width, image.height))
    return [Detection(np.full(4, float(np.mean(grey)), dtype=np.float32), 1.0)]


def failing_at(index: int, frames: dict[int, float]) -> Callable[[FrameImage], list[Detection]]:
    def search(image: FrameImage) -> list[Detection]:
        found = mean_search(image)
        if frames.get(index) == float(found[0].bbox[0]):
            raise RuntimeError(f"search failed at frame {index}")
        return found

    return search


def image_of(value: int) -> BgrImage:
    return BgrImage(np.full((8, 8, 3), value, dtype=np.uint8))


@pytest.fixture
def executor() -> Any:
    with ThreadPoolExecutor(2, thread_name_prefix="test-ahead") as pool:
        yield pool


def test_one_search_at_a_time_taken_only_for_its_frame(executor: Executor) -> None:
    images = {5: image_of(50), 9: image_of(90)}
    prefetch = ProbePrefetch(executor, images.get)
    assert prefetch.start(5, mean_search)
    assert not prefetch.start(9, mean_search)  # the bound: one in flight
    assert prefetch.pending_index == 5
    assert prefetch.take(4) is None  # another frame's probe: searched by the caller
    found = prefetch.take(5)
    assert found is not None and float(found[0].bbox[0]) == 50.0
    assert prefetch.pending_index is None
    assert prefetch.start(9, mean_search)
    assert prefetch.stats.to_json() == {"started": 2, "used": 1, "discarded": 0}


def test_a_frame_not_decoded_yet_is_not_searched(executor: Executor) -> None:
    prefetch = ProbePrefetch(executor, lambda index: None)
    assert not prefetch.start(3, mean_search)
    assert prefetch.pending_index is None and prefetch.stats.started == 0


def test_a_search_not_asked_for_is_discarded_once_its_group_went_by(executor: Executor) -> None:
    prefetch = ProbePrefetch(executor, {7: image_of(70)}.get)
    prefetch.start(7, mean_search)
    prefetch.discard_through(6)  # a group before its frame: kept
    assert prefetch.pending_index == 7
    prefetch.discard_through(7)
    assert prefetch.pending_index is None
    assert prefetch.take(7) is None
    assert prefetch.stats.to_json() == {"started": 1, "used": 0, "discarded": 1}


def test_discard_waits_for_a_running_search(executor: Executor) -> None:
    """After ``discard`` no thread reads the frame any more: a running search is waited for."""
    running, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow(image: FrameImage) -> list[Detection]:
        running.set()
        assert release.wait(timeout=60)
        order.append("search ended")
        return []

    prefetch = ProbePrefetch(executor, {2: image_of(1)}.get)
    prefetch.start(2, slow)
    assert running.wait(timeout=60)

    def discard() -> None:
        prefetch.discard()
        order.append("discard returned")

    discarding = threading.Thread(target=discard)
    discarding.start()
    release.set()
    discarding.join(timeout=60)
    assert order == ["search ended", "discard returned"]


def test_errors_surface_where_the_search_is_taken_and_not_when_discarded(executor: Executor) -> None:
    def broken(image: FrameImage) -> list[Detection]:
        raise RuntimeError("the detector broke")

    prefetch = ProbePrefetch(executor, {1: image_of(1), 2: image_of(2)}.get)
    prefetch.start(1, broken)
    with pytest.raises(RuntimeError, match="the detector broke"):
        prefetch.take(1)
    prefetch.start(2, broken)
    prefetch.discard()  # never asked for: its error goes with it
    assert prefetch.stats.to_json() == {"started": 2, "used": 1, "discarded": 1}


def test_colours_converted_ahead_are_the_same_pixels(executor: Executor) -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, (48 * 3 // 2, 64), dtype=np.uint8)
    matrix = ColourMatrix("bt709")
    ahead, on_demand = YuvFrame(data, 64, 48, matrix), YuvFrame(data, 64, 48, matrix)
    ahead.convert_on(executor)
    assert np.array_equal(ahead.bgr(), on_demand.bgr())
    following = YuvFrame(data, 64, 48, matrix)
    ahead.forget_bgr()
    ahead.after_bgr = lambda: following.convert_on(executor)
    ahead.bgr()  # asks the next frame's conversion to start
    assert np.array_equal(following.bgr(), on_demand.bgr())


class AheadStages:
    """Fake frame stages that search each group's last frame as the detection schedule probes it: taken
    from the search ahead when it is that frame's, then the next group's probe frame searched ahead
    (``guess`` frames after this one); each frame's colours read, in order. ``searched`` keeps each
    probe's result and ``direct`` the same search made on the analysis thread, for comparison."""

    def __init__(self, guess: int = GROUP, search: Callable[[FrameImage], list[Detection]] = mean_search) -> None:
        self.guess = guess
        self.search = search
        self.prefetch: ProbePrefetch | None = None
        self.chunk: StreamedChunk | None = None
        self.searched: dict[int, float] = {}
        self.direct: dict[int, float] = {}
        self.beyond_reach: list[int] = []
        self.stats: list[dict[str, int]] = []

    def prefetch_with(self, executor: Executor | None, frame_at: FrameAt | None) -> None:
        if self.prefetch is not None:
            self.prefetch.discard()
            self.stats.append(self.prefetch.stats.to_json())
        self.prefetch = ProbePrefetch(executor, frame_at) if executor is not None and frame_at is not None else None

    def converts_next_group(self) -> bool:
        return True

    def group_size_from(self, index: int) -> int:
        return GROUP

    def decoded(self, index: int) -> bool:
        chunk = self.chunk
        assert chunk is not None
        following = chunk.ahead[-1].index + 1 if chunk.ahead else chunk.analysing_to
        return index >= FRAMES or index < following + chunk.inputs.qsize()

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]
    ) -> Sequence[Any]:
        assert self.prefetch is not None and self.chunk is not None
        last = indices[-1]
        self.prefetch.discard_through(indices[0] - 1)
        found = self.prefetch.take(last)
        found = self.search(images[-1]) if found is None else found
        self.searched[last] = float(found[0].bbox[0])
        self.direct[last] = float(mean_search(images[-1])[0].bbox[0])
        self.prefetch.discard_through(last)
        self.beyond_reach += [index for index in (last + 2 * 8,) if self.chunk.frame_ahead(index) is not None]
        wait_for(lambda: self.decoded(last + self.guess), f"frame {last + self.guess} decoded")
        self.prefetch.start(last + self.guess, self.search)
        for image in images:
            image.bgr()
        return list(indices)

    def changes(self, analysis: Any) -> bool:
        return True

    def apply(self, frame: Frame, analysis: Any, index: int, timestamp: float) -> Frame:
        return frame


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stream_clips.write_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", FRAMES)


def chunk_of(clip: Path, segment: Path, stages: AheadStages) -> StreamedChunk:
    task = ChunkTask(
        resolve_ffmpeg().path, probe_video(clip), Chunk(0, 0, FRAMES), segment, SETTINGS, stages, lambda: None
    )
    chunk = StreamedChunk(task)
    stages.chunk = chunk
    return chunk


def test_probes_searched_ahead_are_taken_with_the_frames_own_result(clip: Path, tmp_path: Path) -> None:
    stages = AheadStages()
    run = chunk_of(clip, tmp_path / "segment.mp4", stages).run()
    assert run.frames == FRAMES
    # groups 0-3, ..., 20-23: each of the first five searches the next one's last frame ahead
    assert stages.stats == [{"started": 5, "used": 5, "discarded": 0}]
    assert stages.searched == stages.direct and len(set(stages.searched.values())) == FRAMES // GROUP
    assert stages.beyond_reach == []  # never more than a group's grid ahead
    assert run.queues["in_flight_most"] <= in_flight_limit(SETTINGS)
    written, source = stream_clips.decode_yuv(tmp_path / "segment.mp4"), stream_clips.decode_yuv(clip)
    assert len(written) == FRAMES and all(np.array_equal(a, b) for a, b in zip(written, source, strict=True))


def test_wrong_guesses_are_discarded(clip: Path, tmp_path: Path) -> None:
    stages = AheadStages(guess=GROUP - 1)  # a frame no probe asks for
    run = chunk_of(clip, tmp_path / "segment.mp4", stages).run()
    assert run.frames == FRAMES
    assert stages.stats == [{"started": 5, "used": 0, "discarded": 5}]
    assert stages.searched == stages.direct


def test_an_error_of_a_search_ahead_stops_the_chunk_where_the_probe_takes_it(
    source_means: dict[int, float], clip: Path, tmp_path: Path
) -> None:
    stages = AheadStages(search=failing_at(11, source_means))
    segment = tmp_path / "segment.mp4"
    with pytest.raises(RuntimeError, match="search failed at frame 11"):
        chunk_of(clip, segment, stages).run()
    assert 11 not in stages.searched and 7 in stages.searched
    assert_all_ended(segment)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("analysis-ahead")]


def test_an_error_of_a_search_discarded_is_dropped(source_means: dict[int, float], clip: Path, tmp_path: Path) -> None:
    stages = AheadStages(guess=GROUP - 1, search=failing_at(10, source_means))
    run = chunk_of(clip, tmp_path / "segment.mp4", stages).run()
    assert run.frames == FRAMES and stages.stats[0]["discarded"] == 5


@pytest.fixture(scope="module")
def source_means(clip: Path) -> dict[int, float]:
    matrix = ColourMatrix("bt601")
    frames = stream_clips.decode_yuv(clip)
    return {
        index: float(mean_search(YuvFrame(frame, stream_clips.WIDTH, stream_clips.HEIGHT, matrix))[0].bbox[0])
        for index, frame in enumerate(frames)
    }

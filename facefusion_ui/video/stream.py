"""One chunk through the streaming pipeline:
decoder thread -> analysis thread (frames in order, in groups) -> frame workers (processors) -> ordered
encoder. The analysis thread, the serial step, hands work it can do ahead to two helper threads
(``AheadStages``): the next group's probe (a full-frame search, ``faces/probe_prefetch.py``) and the
colour conversion of the frame after the one it analyses.

Frames stay YUV (``video/yuv.py``): a frame the processors would not change (no face selected) goes
from decoder to encoder untouched; the others are converted to BGR for the processors and only their
changed area is converted back.

Bounds: the decoder waits for a free slot before reading each frame, and a slot is freed only when the
frame has been written, so at most ``in_flight_limit`` frames are in memory whatever the video's length.
Every thread and ffmpeg process is ended on success, error or Ctrl-C.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import cv2
import numpy as np

from facefusion_ui.errors import CancelledError, FfmpegError, InputError
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.frames import BgrImage, FrameImage
from facefusion_ui.memory import return_free_memory
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.commands import decode_args, decode_filter, encode_args
from facefusion_ui.video.ffmpeg import stderr_tail
from facefusion_ui.video.output_format import OutputFormat, repeats
from facefusion_ui.video.pieces import ChunkCopy, CopyCounts, PieceSink
from facefusion_ui.video.probe import VideoInfo
from facefusion_ui.video.quality import planned_quality
from facefusion_ui.video.queues import BoundedQueue, InFlight, Stopped
from facefusion_ui.video.reader import FrameItem, FrameReader
from facefusion_ui.video.sparse import SparsePlan, SparseReader, SparseSource, SparseStages, is_decoded
from facefusion_ui.video.writer import FrameWriter
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame, even_size, frame_bytes, matrix_for

FrameDone = Callable[[], None]


TRIM_EVERY_FRAMES = 250
"""The writer gives the C heap's free pages back every this many frames, as the video workflow does
between chunks (``memory.return_free_memory``): the heaps keep large free blocks between frames (the
speed of ``process_environment``'s settings), and from chunk to chunk the peak crept up. A 720p talking
head swapped in reference mode with 10 s chunks, 20 s vs 80 s of it (a shared 2-core VM): peak RSS
561 -> 605 MiB (1.078) without, 560 -> 581 MiB (1.037) with. Each trim costs the page faults of the
free blocks given back, well under 0.1 ms a frame spread over 250 frames."""


class FrameStages(Protocol):
    """``analyse_group`` sees the frames in order, in groups of ``group_size_from`` their first frame
    (tracking state); ``apply`` may run on several threads, and only for frames ``changes`` says it can change."""

    def group_size_from(self, index: int) -> int: ...

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]
    ) -> Sequence[Any]: ...

    def changes(self, analysis: Any) -> bool: ...

    def apply(self, frame: Frame, analysis: Any, index: int, timestamp: float) -> Frame: ...


@runtime_checkable
class AheadStages(Protocol):
    """Frame stages whose analysis can be done partly ahead, on helper threads, with the same results."""

    def prefetch_with(self, executor: Executor | None, frame_at: Callable[[int], FrameImage | None] | None) -> None:
        """Compute searches ahead on ``executor`` from now on, of the decoded frames ``frame_at`` gives
        (called on the analysis thread); None: stop (nothing pending left running)."""
        ...

    def converts_next_group(self) -> bool:
        """Whether the analysis will convert each frame of the next group to BGR (converted ahead)."""
        ...


@runtime_checkable
class RegionalStages(Protocol):
    """Frame stages that say which rectangle of a frame ``apply`` reads and writes (``FramePipeline``)."""

    def frame_region(self, analysis: Any, width: int, height: int) -> tuple[int, int, int, int] | None: ...

    def apply_within(
        self, crop: Frame, analysis: Any, origin: tuple[int, int], index: int, timestamp: float
    ) -> Frame: ...


AHEAD_THREADS = 2
"""The analysis' helper threads: one for the probe searched ahead, one for the colour converted ahead."""


def convert_ahead(images: Sequence[YuvFrame], executor: Executor) -> None:
    """Convert ``images`` (a group, analysed in order) to BGR one frame ahead of the analysis: the first
    now, each next one when the analysis asks for the one before. When it asks for a frame, the frame
    before has been analysed: its BGR is dropped (made again if asked again), so the group holds two BGR
    frames at a time, not one per frame. At most one conversion runs at a time."""
    for position, image in enumerate(images):
        done = images[position - 1] if position > 0 else None
        following = images[position + 1] if position + 1 < len(images) else None
        image.after_bgr = _moved_on(done, following, executor)
    if images:
        images[0].convert_on(executor)


def _moved_on(done: YuvFrame | None, following: YuvFrame | None, executor: Executor) -> Callable[[], None]:
    def moved_on() -> None:
        if done is not None:
            done.forget_bgr()
        if following is not None:
            following.convert_on(executor)

    return moved_on


@dataclass(frozen=True)
class FrameFormat:
    """How a video's frames travel through the pipeline: even size, colour matrix, decoder filter."""

    width: int
    height: int
    matrix: ColourMatrix
    decode_filter: str

    @classmethod
    def of(cls, info: VideoInfo) -> FrameFormat:
        matrix = ColourMatrix(matrix_for(info.colour_space, info.width, info.height))
        width, height = even_size(info.width, info.height)
        video_filter = decode_filter(info.width, info.height, info.pix_fmt, matrix.name, info.full_range)
        return cls(width, height, matrix, video_filter)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.height * 3 // 2, self.width)

    def image(self, data: Frame) -> YuvFrame:
        return YuvFrame(data, self.width, self.height, self.matrix)


@dataclass
class ChunkRun:
    frames: int
    seconds: float
    queues: dict[str, Any] = field(default_factory=dict)
    frames_converted: int = 0
    """Frames converted to BGR for the processors (the others went from decoder to encoder untouched)."""
    copy: dict[str, int] = field(default_factory=dict)
    """GOPs copied and encoded, frames copied, and frames the pipeline never read (``sparse.py``: ffmpeg
    decoded them only as references), those it read (a rewind's read twice) and the decoder runs it
    started; empty when the chunk was encoded whole."""


def in_flight_limit(settings: Settings) -> int:
    """Three queues, a frame per worker, the detection group the analysis holds, the writer's frame."""
    held = largest_group(settings.face_detector_interval)
    return 3 * settings.frame_queue_size + settings.execution_threads + held + 1


def raise_if_cancelled(cancel: threading.Event | None) -> None:
    """A job's cancel, seen: the job ends as cancelled (``CancelledError``)."""
    if cancel is not None and cancel.is_set():
        raise CancelledError("the job was cancelled")


@dataclass(frozen=True)
class ChunkTask:
    """One chunk to run: what it is (ffmpeg, the video, the frame range, the segment file to write, the
    settings) and what runs it (the frame stages, a call after each written frame, the job's cancel event)."""

    ffmpeg: str
    info: VideoInfo
    chunk: Chunk
    segment: Path
    settings: Settings
    stages: FrameStages
    frame_done: FrameDone
    cancel: threading.Event | None = None
    output_size: tuple[int, int] | None = None
    """The size of the frames the stages return when it is not the video's (an upscaler)."""
    copy: ChunkCopy | None = None
    """Copy the GOPs no processor changes (``pieces.py``); None: encode every frame."""
    output: OutputFormat = field(default_factory=OutputFormat)
    """The output's own size and frame rate, where they are not the frames'."""

    def timestamp(self, index: int) -> float:
        return float(self.info.frame_times[index])

    def check_cancel(self) -> None:
        raise_if_cancelled(self.cancel)


def run_chunk(task: ChunkTask) -> ChunkRun:
    if task.settings.video_temp_frame_format is not None:
        return run_chunk_with_frames(task)
    return StreamedChunk(task).run()


def _encoder(task: ChunkTask, frames: FrameFormat) -> list[str]:
    settings = task.settings
    width, height = task.output_size or (frames.width, frames.height)
    return encode_args(
        task.ffmpeg,
        width,
        height,
        task.output.fps or task.info.fps,
        settings.output_video_encoder,
        planned_quality(settings.output_video_quality),
        settings.output_video_preset,
        frames.matrix.output_tags(),
        task.segment,
        task.output.scale_filter(),
    )


def _decoder(ffmpeg: str, info: VideoInfo, frames: FrameFormat, start: int, count: int) -> list[str]:
    return decode_args(ffmpeg, Path(info.path), info.seek_time(start), count, frames.decode_filter)


def apply_to(
    stages: FrameStages, image: YuvFrame, analysis: Any, index: int, timestamp: float
) -> tuple[YuvFrame, bool]:
    """Run the processors on ``image`` (a frame ``stages.changes`` said they can change), store the result.
    The frame to write (``image``, or a new one when the processors changed the size: an upscaler), and
    whether any pixel changed: a face the swapper left as it was (no mesh, turned too far) changes none,
    and its GOP can still be copied. Only the rectangle the processors read and write is converted to BGR
    and back when they say which (``RegionalStages``)."""
    if isinstance(stages, RegionalStages):
        region = stages.frame_region(analysis, image.width, image.height)
        if region is not None:
            x1, y1 = region[:2]
            crop = image.bgr_region(region)
            result = stages.apply_within(crop.copy(), analysis, (x1, y1), index, timestamp)
            return image, image.store(result, crop, (x1, y1))
    before = image.bgr()
    result = stages.apply(before.copy(), analysis, index, timestamp)
    if result.shape != before.shape:
        return YuvFrame.from_bgr(np.ascontiguousarray(result), image.matrix), True
    return image, image.store(result, before)


class FrameSink(Protocol):
    """Where the writer puts each frame, in order, with whether a processor changed it."""

    def put(self, index: int, data: Frame, changed: bool) -> None: ...

    def close(self) -> object: ...

    def abort(self) -> None: ...


class EncoderSink:
    """Every frame into one encoder (the chunk's segment)."""

    def __init__(self, command: list[str]) -> None:
        self.writer = FrameWriter(command)

    def put(self, index: int, data: Frame, changed: bool) -> None:
        self.writer.write(data)

    def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


class RateSink:
    """Frames at the output's own rate: each source frame put as many times as output times fall on it
    (``output_format.repeats``: none when dropped, more than once when repeated)."""

    def __init__(self, inner: FrameSink, task: ChunkTask) -> None:
        self.inner = inner
        self.source_fps = task.info.fps
        self.output = task.output

    def put(self, index: int, data: Frame, changed: bool) -> None:
        fps = self.output.fps
        count = 1 if fps is None else repeats(index - self.output.origin, self.source_fps, fps)
        for _ in range(count):
            self.inner.put(index, data, changed)

    def close(self) -> object:
        return self.inner.close()

    def abort(self) -> None:
        self.inner.abort()


def sparse_reader(
    task: ChunkTask,
    frames: FrameFormat,
    output: BoundedQueue[FrameItem],
    stop: threading.Event,
    slots: threading.Semaphore,
    in_flight: InFlight,
) -> SparseReader | None:
    """The chunk's decoder when its face-free stretches may be decoded sparsely (``sparse.py``): GOPs
    copied, and stages that can probe ahead; None: every frame is decoded (``FrameReader``)."""
    stages = task.stages
    if task.copy is None or task.copy.encode_all or not isinstance(stages, SparseStages):
        return None
    chunk = task.chunk
    plan = SparsePlan(chunk.start, chunk.end, task.copy.gops, *stages.probe_grid())
    source = SparseSource(task.ffmpeg, task.info, frames.decode_filter, frames.shape)
    return SparseReader(source, plan, output, stop, slots, in_flight, stages.skips_unseen())


def sink_for(task: ChunkTask, frames: FrameFormat) -> FrameSink:
    if task.copy is None:
        encoder = EncoderSink(_encoder(task, frames))
        return encoder if task.output.fps is None else RateSink(encoder, task)
    return PieceSink(task.ffmpeg, task.info, task.chunk, task.segment, task.settings, task.copy)


WorkerItem = tuple[int, YuvFrame | None, Any]
"""A frame for the workers: (index, image, analysis); ``NO_MORE_WORK`` after the last."""
NO_MORE_WORK: WorkerItem = (-1, None, None)
WriterItem = tuple[int, YuvFrame, bool, bool]
"""A frame for the writer: (index, image, converted for the processors, a pixel changed)."""


class StreamedChunk:
    """A chunk streamed through its threads: the decoder (``FrameReader``), the analysis (frames in order,
    in groups), ``execution_threads`` frame workers, and the writer (frames back in order, into the encoder).

    An error in any thread stops the others; ``run`` then ends both ffmpeg processes, removes the partial
    segment and raises the first error. Made for one ``run``; the encoder starts when it is made."""

    def __init__(self, task: ChunkTask) -> None:
        self.task = task
        self.started = time.perf_counter()
        self.stop = threading.Event()
        self.frames = FrameFormat.of(task.info)
        size = task.settings.frame_queue_size
        self.inputs: BoundedQueue[FrameItem] = BoundedQueue(size)
        self.analysed: BoundedQueue[WorkerItem] = BoundedQueue(size)
        self.outputs: BoundedQueue[WriterItem] = BoundedQueue(size)
        self.slots = threading.Semaphore(in_flight_limit(task.settings))
        self.in_flight = InFlight()
        chunk = task.chunk
        self.sparse = sparse_reader(task, self.frames, self.inputs, self.stop, self.slots, self.in_flight)
        self.reader: FrameReader | SparseReader = self.sparse or FrameReader(
            _decoder(task.ffmpeg, task.info, self.frames, chunk.start, chunk.frames),
            self.frames.shape,
            chunk.start,
            chunk.frames,
            self.inputs,
            self.stop,
            self.slots,
            self.in_flight,
        )
        self.sink = sink_for(task, self.frames)
        self.copy_counts: dict[str, int] = {}
        self.errors: list[BaseException] = []
        self.written = 0
        self.converted = 0
        stages = task.stages
        self.ahead_stages: AheadStages | None = stages if isinstance(stages, AheadStages) else None
        self.helpers: ThreadPoolExecutor | None = None
        self.ahead: collections.deque[FrameItem] = collections.deque()
        """Decoded frames taken from the queue before their group (``frame_ahead``): the analysis thread's."""
        self.reach = largest_group(task.settings.face_detector_interval)
        self.analysing_to = task.chunk.start
        """The frames up to this one (excluded) are in a group being analysed or done."""
        self.not_read = 0

    def run(self) -> ChunkRun:
        if self.ahead_stages is not None:
            self.helpers = ThreadPoolExecutor(AHEAD_THREADS, thread_name_prefix="analysis-ahead")
            self.ahead_stages.prefetch_with(self.helpers, self.frame_ahead)
        workers = [self._thread(self.work, f"frame-worker-{i}") for i in range(self.task.settings.execution_threads)]
        workers.append(self._thread(self.analyse, "frame-analysis"))
        write_thread = self._thread(self.write, "frame-writer")
        try:
            self._supervise(workers, write_thread)
        except BaseException:
            self.stop.set()  # Ctrl-C in the main thread: end everything below, then let it propagate
            raise
        finally:
            problem = self._finish(workers, write_thread)
        if problem is not None:
            raise problem
        if self.written != self.task.chunk.frames:
            raise FfmpegError(f"chunk {self.task.chunk.index} wrote {self.written} of {self.task.chunk.frames} frames")
        seconds = time.perf_counter() - self.started
        return ChunkRun(self.written, seconds, self._queue_stats(), self.converted, self.copy_counts)

    def _thread(self, body: Callable[[], None], name: str) -> threading.Thread:
        """A pipeline thread: a stop ends it quietly, any error is handed to ``run`` and stops the rest."""

        def guarded() -> None:
            try:
                body()
            except Stopped:
                pass
            except BaseException as error:  # handed to the owner in run
                self.errors.append(error)
                self.stop.set()

        return threading.Thread(target=guarded, name=name, daemon=True)

    def _supervise(self, workers: list[threading.Thread], write_thread: threading.Thread) -> None:
        self.reader.start()
        for worker in workers:
            worker.start()
        write_thread.start()
        while write_thread.is_alive():
            write_thread.join(timeout=0.2)
            if self.reader.error is not None:
                self.stop.set()

    def _finish(self, workers: list[threading.Thread], write_thread: threading.Thread) -> BaseException | None:
        """Stop and join every thread, then finish the segment, or end the encoder and remove it."""
        self.stop.set()
        self.reader.join()
        for worker in workers:
            worker.join()
        write_thread.join()
        if self.ahead_stages is not None:
            self.ahead_stages.prefetch_with(None, None)
        if self.helpers is not None:
            self.helpers.shutdown(wait=True, cancel_futures=True)
        problem = self.reader.error or (self.errors[0] if self.errors else None)
        if problem is None and self.written == self.task.chunk.frames:
            counts = self.sink.close()
            self.copy_counts = counts.to_json() if isinstance(counts, CopyCounts) else {}
            if self.sparse is not None:
                self.copy_counts["frames_not_read"] = self.not_read
                self.copy_counts["frames_read"] = self.sparse.frames_decoded
                self.copy_counts["decoder_runs"] = self.sparse.runs
        else:
            self.sink.abort()
            self.task.segment.unlink(missing_ok=True)
        return problem

    def _queue_stats(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs.stats(),
            "analysed": self.analysed.stats(),
            "outputs": self.outputs.stats(),
            "in_flight_limit": in_flight_limit(self.task.settings),
            "in_flight_most": self.in_flight.most,
        }

    def analyse(self) -> None:
        """The analysis thread: decoded frames in order, analysed a group at a time (with frames of the
        next group, already decoded, taken from the queue ahead of it: ``frame_ahead``)."""
        group: list[tuple[int, YuvFrame]] = []
        ahead = self.ahead
        while True:
            item = ahead.popleft() if ahead else self.inputs.get(self.stop)
            if self.sparse is not None and not self.sparse.current(item):
                self.sparse.dropped(item)  # handed on before a rewind: it comes again
                continue
            if item.index < 0:  # the end, unless the last group is decoded again (a rewind)
                if group:
                    self.analysing_to = group[-1][0] + 1
                if group and not self._flush(group):
                    continue
                self.analysed.put(NO_MORE_WORK, self.stop)
                return
            group.append((item.index, self.frames.image(item.frame)))
            if len(group) >= self.task.stages.group_size_from(group[0][0]):
                self.analysing_to = group[-1][0] + 1
                self._flush(group)

    def frame_ahead(self, index: int) -> YuvFrame | None:
        """Frame ``index`` of the group after the one being analysed, if already decoded (the analysis
        thread's call, from its stages): frames up to it are moved from the queue to ``ahead`` without
        waiting. They keep their slots, so the frames in memory stay within the in-flight limit; None
        when it is not decoded yet, past the chunk, or further than a group ahead."""
        ahead = self.ahead
        if not self.analysing_to <= index < min(self.task.chunk.end, self.analysing_to + self.reach):
            return None
        while not ahead or 0 <= ahead[-1].index < index:
            item = self.inputs.get_nowait()
            if item is None:
                return None
            ahead.append(item)
        found = next((item for item in ahead if item.index == index and self._current(item)), None)
        return None if found is None else self.frames.image(found.frame)

    def _current(self, item: FrameItem) -> bool:
        """Whether ``item`` is a decoded frame of the decoder's current pass (sparse decoding hands on frames
        it did not decode, and after a rewind frames of the pass before, which the analysis drops)."""
        return is_decoded(item.frame) and (self.sparse is None or self.sparse.current(item))

    def _flush(self, group: list[tuple[int, YuvFrame]]) -> bool:
        """Analyse ``group`` and hand its frames on; False when it needs frames sparse decoding left out:
        the decoder starts again at its first frame (``SparseReader.rewind``) and the group is dropped."""
        self.task.check_cancel()
        if self.sparse is not None and not self._decoded_enough(group):
            self.sparse.rewind(group[0][0])  # the group again, every frame decoded
            for _ in group:
                self.in_flight.remove()
                self.slots.release()
            group.clear()
            return False
        stages = self.task.stages
        indices = [index for index, _ in group]
        timestamps = [self.task.timestamp(index) for index in indices]
        images = [image for _, image in group]
        if self.helpers is not None and self.ahead_stages is not None and self.ahead_stages.converts_next_group():
            convert_ahead(images, self.helpers)
        analyses = stages.analyse_group(images, indices, timestamps)
        for (index, image), analysis in zip(group, analyses, strict=True):
            image.forget_bgr()  # queues hold YUV only (the memory budget counts them so); workers convert again
            if stages.changes(analysis):
                self.analysed.put((index, image, analysis), self.stop)
            else:  # nothing for the workers to do: straight to the writer, which puts frames back in order
                self.outputs.put((index, image, False, False), self.stop)
        group.clear()
        if self.sparse is not None:
            self.sparse.want_sparse(self._sparse_stages().skips_unseen())
        return True

    def _sparse_stages(self) -> SparseStages:
        stages = self.task.stages
        assert isinstance(stages, SparseStages)
        return stages

    def _decoded_enough(self, group: list[tuple[int, YuvFrame]]) -> bool:
        """Whether ``group`` can be analysed: every frame decoded, or only its probe (the last frame) and
        the group is skipped (no face before, and none in the probe, made now: ``probe_ahead``)."""
        if all(is_decoded(image.data) for _, image in group):
            return True
        index, last = group[-1]
        stages = self._sparse_stages()
        return is_decoded(last.data) and stages.skips_unseen() and stages.probe_ahead(last, index)

    def work(self) -> None:
        """A frame worker: the processors on each frame the analysis says they change."""
        while True:
            index, image, analysis = self.analysed.get(self.stop)
            if image is None:
                self.analysed.put(NO_MORE_WORK, self.stop)  # let the other workers see the end too
                return
            done, changed = apply_to(self.task.stages, image, analysis, index, self.task.timestamp(index))
            self.outputs.put((index, done, True, changed), self.stop)

    def write(self) -> None:
        """The writer thread: frames put back in order and encoded; each written frame frees a slot."""
        pending: dict[int, tuple[YuvFrame, bool]] = {}
        next_index = self.task.chunk.start
        while next_index < self.task.chunk.end:
            index, image, converted, changed = self.outputs.get(self.stop)
            pending[index] = (image, changed)
            self.converted += converted
            self.not_read += not is_decoded(image.data)
            while next_index in pending:
                image, changed = pending.pop(next_index)
                self.sink.put(next_index, image.data, changed)
                self.in_flight.remove()
                next_index += 1
                self.written += 1
                self.slots.release()
                self.task.frame_done()
                if self.written % TRIM_EVERY_FRAMES == 0:
                    return_free_memory()


def run_chunk_with_frames(task: ChunkTask) -> ChunkRun:
    """The temp-frames mode: the chunk's frames written to image files, processed, then encoded.

    Frames come from the same decoder and go to the same encoder as in streaming, converted to and from
    BGR with the same matrix; every frame makes that round trip here (streaming converts only the area
    a processor changed), so frames differ from streaming's by conversion rounding, plus JPEG's loss."""
    started = time.perf_counter()
    frames = FrameFormat.of(task.info)
    suffix = f".{task.settings.video_temp_frame_format}"
    extracted = task.segment.parent / f"frames_{task.chunk.index:05d}"
    processed = task.segment.parent / f"processed_{task.chunk.index:05d}"
    for folder in (extracted, processed):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    files = extract_frames(task, frames, extracted, suffix)
    converted = process_frame_files(task, files, processed)
    encode_frame_files(task, frames, len(files), processed)
    if not task.settings.keep_temp:
        shutil.rmtree(extracted, ignore_errors=True)
        shutil.rmtree(processed, ignore_errors=True)
    return ChunkRun(len(files), time.perf_counter() - started, frames_converted=converted)


def process_frame_files(task: ChunkTask, files: list[Path], processed: Path) -> int:
    """Analyse the frame files in order, a group at a time, and run the processors on them in parallel,
    writing each result to ``processed`` as ``%08d.png``; the number of frames the processors changed."""
    threads = task.settings.execution_threads
    converted = 0
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="frame-file") as pool:
        pending: list[Future[bool]] = []
        first = 0
        while first < len(files):
            task.check_cancel()
            group_size = max(1, task.stages.group_size_from(task.chunk.start + first))
            paths = files[first : first + group_size]
            images = [BgrImage(read_image(path)) for path in paths]
            indices = [task.chunk.start + first + offset for offset in range(len(paths))]
            timestamps = [task.timestamp(index) for index in indices]
            analyses = task.stages.analyse_group(images, indices, timestamps)
            for offset, (image, analysis) in enumerate(zip(images, analyses, strict=True)):
                pending.append(pool.submit(apply_to_file, task, processed, first + offset, image.frame, analysis))
            first += len(paths)
            while len(pending) > 2 * threads + group_size:
                converted += pending.pop(0).result()
        for future in pending:
            converted += future.result()
    return converted


def apply_to_file(task: ChunkTask, processed: Path, position: int, image: Frame, analysis: Any) -> bool:
    """Run the processors on one frame (when they change it) and write it to ``processed``; whether they did."""
    index = task.chunk.start + position
    changes = task.stages.changes(analysis)
    result = task.stages.apply(image, analysis, index, task.timestamp(index)) if changes else image
    cv2.imwrite(str(processed / f"{position:08d}.png"), result)
    task.frame_done()
    return changes


def encode_frame_files(task: ChunkTask, frames: FrameFormat, count: int, processed: Path) -> None:
    sink = sink_for(replace(task, copy=None), frames)
    try:
        for position in range(count):
            bgr = read_image(processed / f"{position:08d}.png")
            sink.put(task.chunk.start + position, YuvFrame.from_bgr(bgr, frames.matrix).data, True)
        sink.close()
    except BaseException:
        sink.abort()
        task.segment.unlink(missing_ok=True)
        raise


def read_image(path: Path) -> Frame:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise InputError(f"cannot read the frame file {path}")
    return np.asarray(image, dtype=np.uint8)


def extract_frames(task: ChunkTask, frames: FrameFormat, folder: Path, suffix: str) -> list[Path]:
    """Decode the chunk (as streaming does) and write each frame, as BGR, to ``%08d`` + ``suffix``."""
    chunk = task.chunk
    stop = threading.Event()
    decode = _decoder(task.ffmpeg, task.info, frames, chunk.start, chunk.frames)
    queue: BoundedQueue[FrameItem] = BoundedQueue(8)
    slots = threading.Semaphore(16)
    reader = FrameReader(decode, frames.shape, chunk.start, chunk.frames, queue, stop, slots)
    files: list[Path] = []
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if suffix == ".jpg" else []
    reader.start()
    try:
        while True:
            item = queue.get(stop)
            if item.index < 0:  # the end
                break
            path = folder / f"{item.index - chunk.start:08d}{suffix}"
            cv2.imwrite(str(path), frames.image(item.frame).bgr(), params)
            files.append(path)
            slots.release()
    except Stopped:
        pass
    finally:
        stop.set()
        reader.join()
    if reader.error is not None:
        raise reader.error
    return files


def read_frame(ffmpeg: str, info: VideoInfo, index: int) -> Frame:
    """One decoded frame (the reference frame, previews), upright, as BGR made as the pipeline makes it."""
    frames = FrameFormat.of(info)
    command = _decoder(ffmpeg, info, frames, index, 1)
    completed = subprocess.run(command, capture_output=True, check=False, stdin=subprocess.DEVNULL, timeout=300)
    size = frame_bytes(frames.width, frames.height)
    if completed.returncode != 0 or len(completed.stdout) < size:
        raise FfmpegError(f"cannot decode frame {index}: {stderr_tail(completed.stderr.decode('utf-8', 'replace'))}")
    data = np.frombuffer(completed.stdout[:size], dtype=np.uint8).reshape(frames.shape)
    frame: Frame = frames.image(data).bgr()[: info.height, : info.width].copy()
    return frame

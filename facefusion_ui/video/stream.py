"""One chunk through the streaming pipeline:
decoder thread -> analysis thread (frames in order, in groups) -> frame workers (processors) -> ordered
encoder.

Frames stay YUV (``video/yuv.py``): a frame the processors would not change (no face selected) goes
from decoder to encoder untouched; the others are converted to BGR for the processors and only their
changed area is converted back.

Bounds: the decoder waits for a free slot before reading each frame, and a slot is freed only when the
frame has been written, so at most ``in_flight_limit`` frames are in memory whatever the video's length.
Every thread and ffmpeg process is ended on success, error or Ctrl-C.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from facefusion_ui.errors import CancelledError, FfmpegError, InputError
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.frames import BgrImage, FrameImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.commands import decode_args, decode_filter, encode_args
from facefusion_ui.video.ffmpeg import stderr_tail
from facefusion_ui.video.probe import VideoInfo
from facefusion_ui.video.queues import BoundedQueue, InFlight, Stopped
from facefusion_ui.video.reader import END, FrameItem, FrameReader
from facefusion_ui.video.writer import FrameWriter
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame, even_size, frame_bytes, matrix_for

FrameDone = Callable[[], None]


class FrameStages(Protocol):
    """``analyse_group`` sees the frames in order, in groups of ``group_size_from`` their first frame
    (tracking state); ``apply`` may run on several threads, and only for frames ``changes`` says it can change."""

    def group_size_from(self, index: int) -> int: ...

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]
    ) -> Sequence[Any]: ...

    def changes(self, analysis: Any) -> bool: ...

    def apply(self, frame: Frame, analysis: Any, index: int, timestamp: float) -> Frame: ...


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


def in_flight_limit(settings: Settings) -> int:
    """Three queues, a frame per worker, the detection group the analysis holds, the writer's frame."""
    held = largest_group(settings.face_detector_interval)
    return 3 * settings.frame_queue_size + settings.execution_threads + held + 1


def run_chunk(
    ffmpeg: str,
    info: VideoInfo,
    chunk: Chunk,
    segment: Path,
    stages: FrameStages,
    settings: Settings,
    frame_done: FrameDone,
    cancel: threading.Event | None = None,
) -> ChunkRun:
    if settings.video_temp_frame_format is not None:
        return run_chunk_with_frames(ffmpeg, info, chunk, segment, stages, settings, frame_done, cancel)
    return run_streamed_chunk(ffmpeg, info, chunk, segment, stages, settings, frame_done, cancel)


def _encoder(ffmpeg: str, info: VideoInfo, frames: FrameFormat, settings: Settings, segment: Path) -> list[str]:
    return encode_args(
        ffmpeg,
        frames.width,
        frames.height,
        info.fps,
        settings.output_video_encoder,
        settings.output_video_quality,
        settings.output_video_preset,
        frames.matrix.output_tags(),
        segment,
    )


def _decoder(ffmpeg: str, info: VideoInfo, frames: FrameFormat, start: int, count: int) -> list[str]:
    return decode_args(ffmpeg, Path(info.path), info.seek_time(start), count, frames.decode_filter)


def apply_to(stages: FrameStages, image: YuvFrame, analysis: Any, index: int, timestamp: float) -> None:
    """Run the processors on ``image`` (a frame ``stages.changes`` said they can change), store the result."""
    before = image.bgr()
    image.store(stages.apply(before.copy(), analysis, index, timestamp), before)


def run_streamed_chunk(
    ffmpeg: str,
    info: VideoInfo,
    chunk: Chunk,
    segment: Path,
    stages: FrameStages,
    settings: Settings,
    frame_done: FrameDone,
    cancel: threading.Event | None = None,
) -> ChunkRun:
    started = time.perf_counter()
    stop = threading.Event()
    frames = FrameFormat.of(info)
    inputs: BoundedQueue[FrameItem] = BoundedQueue(settings.frame_queue_size)
    analysed: BoundedQueue[tuple[int, YuvFrame | None, Any]] = BoundedQueue(settings.frame_queue_size)
    outputs: BoundedQueue[tuple[int, YuvFrame, bool]] = BoundedQueue(settings.frame_queue_size)
    slots = threading.Semaphore(in_flight_limit(settings))
    in_flight = InFlight()
    decode = _decoder(ffmpeg, info, frames, chunk.start, chunk.frames)
    reader = FrameReader(decode, frames.shape, chunk.start, chunk.frames, inputs, stop, slots, in_flight)
    writer = FrameWriter(_encoder(ffmpeg, info, frames, settings, segment))
    errors: list[BaseException] = []
    written = [0]
    converted = [0]

    def guarded(body: Callable[[], None]) -> Callable[[], None]:
        """A pipeline thread: a stop ends it quietly, any error is handed to the owner and stops the rest."""

        def run() -> None:
            try:
                body()
            except Stopped:
                pass
            except BaseException as error:  # handed to the owner below
                errors.append(error)
                stop.set()

        return run

    def flush(group: list[tuple[int, YuvFrame]]) -> None:
        if cancel is not None and cancel.is_set():
            raise CancelledError("the job was cancelled")
        indices = [index for index, _ in group]
        timestamps = [float(info.frame_times[index]) for index in indices]
        analyses = stages.analyse_group([image for _, image in group], indices, timestamps)
        for (index, image), analysis in zip(group, analyses, strict=True):
            image.forget_bgr()  # queues hold YUV only (the memory budget counts them so); workers convert again
            if stages.changes(analysis):
                analysed.put((index, image, analysis), stop)
            else:  # nothing for the workers to do: straight to the writer, which puts frames back in order
                outputs.put((index, image, False), stop)
        group.clear()

    def analyse() -> None:
        group: list[tuple[int, YuvFrame]] = []
        while True:
            item = inputs.get(stop)
            if item is END:
                if group:
                    flush(group)
                analysed.put((-1, None, None), stop)
                return
            group.append((item.index, frames.image(item.frame)))
            if len(group) >= stages.group_size_from(group[0][0]):
                flush(group)

    def work() -> None:
        while True:
            index, image, analysis = analysed.get(stop)
            if image is None:
                analysed.put((-1, None, None), stop)  # let the other workers see the end too
                return
            apply_to(stages, image, analysis, index, float(info.frame_times[index]))
            outputs.put((index, image, True), stop)

    def write() -> None:
        pending: dict[int, YuvFrame] = {}
        next_index = chunk.start
        while next_index < chunk.end:
            index, image, changed = outputs.get(stop)
            pending[index] = image
            converted[0] += changed
            while next_index in pending:
                writer.write(pending.pop(next_index).data)
                in_flight.remove()
                next_index += 1
                written[0] += 1
                slots.release()
                frame_done()

    workers = [
        threading.Thread(target=guarded(work), name=f"frame-worker-{i}", daemon=True)
        for i in range(settings.execution_threads)
    ]
    workers.append(threading.Thread(target=guarded(analyse), name="frame-analysis", daemon=True))
    write_thread = threading.Thread(target=guarded(write), name="frame-writer", daemon=True)
    try:
        reader.start()
        for worker in workers:
            worker.start()
        write_thread.start()
        while write_thread.is_alive():
            write_thread.join(timeout=0.2)
            if reader.error is not None:
                stop.set()
    except BaseException:
        stop.set()  # Ctrl-C in the main thread: end everything below, then let it propagate
        raise
    finally:
        stop.set()
        reader.join()
        for worker in workers:
            worker.join()
        write_thread.join()
        problem = reader.error or (errors[0] if errors else None)
        if problem is None and written[0] == chunk.frames:
            writer.close()
        else:
            writer.abort()
            segment.unlink(missing_ok=True)
    if problem is not None:
        raise problem
    if written[0] != chunk.frames:
        raise FfmpegError(f"chunk {chunk.index} wrote {written[0]} of {chunk.frames} frames")
    queues = {
        "inputs": inputs.stats(),
        "analysed": analysed.stats(),
        "outputs": outputs.stats(),
        "in_flight_limit": in_flight_limit(settings),
        "in_flight_most": in_flight.most,
    }
    return ChunkRun(written[0], time.perf_counter() - started, queues, converted[0])


def run_chunk_with_frames(
    ffmpeg: str,
    info: VideoInfo,
    chunk: Chunk,
    segment: Path,
    stages: FrameStages,
    settings: Settings,
    frame_done: FrameDone,
    cancel: threading.Event | None = None,
) -> ChunkRun:
    """The temp-frames mode: the chunk's frames written to image files, processed, then encoded.

    Frames come from the same decoder and go to the same encoder as in streaming, converted to and from
    BGR with the same matrix; every frame makes that round trip here (streaming converts only the area
    a processor changed), so frames differ from streaming's by conversion rounding, plus JPEG's loss."""
    started = time.perf_counter()
    frames = FrameFormat.of(info)
    suffix = f".{settings.video_temp_frame_format}"
    extracted = segment.parent / f"frames_{chunk.index:05d}"
    processed = segment.parent / f"processed_{chunk.index:05d}"
    for folder in (extracted, processed):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    files = extract_frames(ffmpeg, info, frames, chunk, extracted, suffix)
    converted = 0

    def apply(position: int, image: Frame, analysis: Any) -> bool:
        index = chunk.start + position
        changes = stages.changes(analysis)
        result = stages.apply(image, analysis, index, float(info.frame_times[index])) if changes else image
        cv2.imwrite(str(processed / f"{position:08d}.png"), result)
        frame_done()
        return changes

    with ThreadPoolExecutor(max_workers=settings.execution_threads, thread_name_prefix="frame-file") as pool:
        pending: list[Future[bool]] = []
        first = 0
        while first < len(files):  # analysis in frame order, processors in parallel
            if cancel is not None and cancel.is_set():
                raise CancelledError("the job was cancelled")
            group_size = max(1, stages.group_size_from(chunk.start + first))
            paths = files[first : first + group_size]
            images = [BgrImage(read_image(path)) for path in paths]
            indices = [chunk.start + first + offset for offset in range(len(paths))]
            timestamps = [float(info.frame_times[index]) for index in indices]
            analyses = stages.analyse_group(images, indices, timestamps)
            for offset, (image, analysis) in enumerate(zip(images, analyses, strict=True)):
                pending.append(pool.submit(apply, first + offset, image.frame, analysis))
            first += len(paths)
            while len(pending) > 2 * settings.execution_threads + group_size:
                converted += pending.pop(0).result()
        for future in pending:
            converted += future.result()
    writer = FrameWriter(_encoder(ffmpeg, info, frames, settings, segment))
    try:
        for position in range(len(files)):
            bgr = read_image(processed / f"{position:08d}.png")
            writer.write(YuvFrame.from_bgr(bgr, frames.matrix).data)
        writer.close()
    except BaseException:
        writer.abort()
        segment.unlink(missing_ok=True)
        raise
    if not settings.keep_temp:
        shutil.rmtree(extracted, ignore_errors=True)
        shutil.rmtree(processed, ignore_errors=True)
    return ChunkRun(len(files), time.perf_counter() - started, frames_converted=converted)


def read_image(path: Path) -> Frame:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise InputError(f"cannot read the frame file {path}")
    return np.asarray(image, dtype=np.uint8)


def extract_frames(
    ffmpeg: str, info: VideoInfo, frames: FrameFormat, chunk: Chunk, folder: Path, suffix: str
) -> list[Path]:
    """Decode the chunk (as streaming does) and write each frame, as BGR, to ``%08d`` + ``suffix``."""
    stop = threading.Event()
    decode = _decoder(ffmpeg, info, frames, chunk.start, chunk.frames)
    queue: BoundedQueue[FrameItem] = BoundedQueue(8)
    slots = threading.Semaphore(16)
    reader = FrameReader(decode, frames.shape, chunk.start, chunk.frames, queue, stop, slots)
    files: list[Path] = []
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if suffix == ".jpg" else []
    reader.start()
    try:
        while True:
            item = queue.get(stop)
            if item is END:
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

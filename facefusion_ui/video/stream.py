"""One chunk through the streaming pipeline:
decoder thread -> analysis thread (in frame order) -> frame workers (processors) -> ordered encoder.

Bounds: the decoder waits for a free slot before reading each frame, and a slot is freed only when the
frame has been written, so at most ``3 * frame_queue_size + execution_threads + 1`` frames are in memory
whatever the video's length. Every thread and ffmpeg process is ended on success, error or Ctrl-C.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from facefusion_ui.errors import CancelledError, FfmpegError, InputError
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.commands import decode_args, encode_args
from facefusion_ui.video.ffmpeg import stderr_tail
from facefusion_ui.video.probe import VideoInfo
from facefusion_ui.video.queues import BoundedQueue, InFlight, Stopped
from facefusion_ui.video.reader import END, FrameItem, FrameReader
from facefusion_ui.video.writer import FrameWriter

FrameDone = Callable[[], None]


class FrameStages(Protocol):
    """``analyse`` sees the frames in order (tracking state); ``apply`` may run on several threads."""

    def analyse(self, frame: Frame, index: int, timestamp: float) -> Any: ...

    def apply(self, frame: Frame, analysis: Any, index: int, timestamp: float) -> Frame: ...


@dataclass
class ChunkRun:
    frames: int
    seconds: float
    queues: dict[str, Any] = field(default_factory=dict)


def in_flight_limit(settings: Settings) -> int:
    return 3 * settings.frame_queue_size + settings.execution_threads + 1


def run_chunk(
    ffmpeg: str, info: VideoInfo, chunk: Chunk, segment: Path, stages: FrameStages, settings: Settings,
    frame_done: FrameDone, cancel: threading.Event | None = None,
) -> ChunkRun:  # fmt: skip
    if settings.video_temp_frame_format is not None:
        return run_chunk_with_frames(ffmpeg, info, chunk, segment, stages, settings, frame_done, cancel)
    return run_streamed_chunk(ffmpeg, info, chunk, segment, stages, settings, frame_done, cancel)


def _encoder(ffmpeg: str, info: VideoInfo, settings: Settings, segment: Path, pattern: str = "-") -> list[str]:
    return encode_args(
        ffmpeg, info.width, info.height, info.fps, settings.output_video_encoder, settings.output_video_quality,
        settings.output_video_preset, segment, pattern,
    )  # fmt: skip


def run_streamed_chunk(
    ffmpeg: str, info: VideoInfo, chunk: Chunk, segment: Path, stages: FrameStages, settings: Settings,
    frame_done: FrameDone, cancel: threading.Event | None = None,
) -> ChunkRun:  # fmt: skip
    started = time.perf_counter()
    stop = threading.Event()
    inputs: BoundedQueue[FrameItem] = BoundedQueue(settings.frame_queue_size)
    analysed: BoundedQueue[tuple[FrameItem, Any]] = BoundedQueue(settings.frame_queue_size)
    outputs: BoundedQueue[FrameItem] = BoundedQueue(settings.frame_queue_size)
    slots = threading.Semaphore(in_flight_limit(settings))
    decode = decode_args(ffmpeg, Path(info.path), info.seek_time(chunk.start), chunk.frames)
    in_flight = InFlight()
    reader = FrameReader(decode, info.width, info.height, chunk.start, chunk.frames, inputs, stop, slots, in_flight)
    writer = FrameWriter(_encoder(ffmpeg, info, settings, segment))
    errors: list[BaseException] = []
    written = [0]

    def analyse() -> None:
        try:
            while True:
                item = inputs.get(stop)
                if item is END:
                    analysed.put((END, None), stop)
                    return
                if cancel is not None and cancel.is_set():
                    raise CancelledError("the job was cancelled")
                analysis = stages.analyse(item.frame, item.index, float(info.frame_times[item.index]))
                analysed.put((item, analysis), stop)
        except Stopped:
            pass
        except BaseException as error:  # handed to the owner below
            errors.append(error)
            stop.set()

    def work() -> None:
        try:
            while True:
                item, analysis = analysed.get(stop)
                if item is END:
                    analysed.put((END, None), stop)  # let the other workers see the end too
                    return
                frame = stages.apply(item.frame, analysis, item.index, float(info.frame_times[item.index]))
                outputs.put(FrameItem(item.index, frame), stop)
        except Stopped:
            pass
        except BaseException as error:  # handed to the owner below
            errors.append(error)
            stop.set()

    def write() -> None:
        pending: dict[int, Frame] = {}
        next_index = chunk.start
        try:
            while next_index < chunk.end:
                item = outputs.get(stop)
                pending[item.index] = item.frame
                while next_index in pending:
                    writer.write(pending.pop(next_index))
                    in_flight.remove()
                    next_index += 1
                    written[0] += 1
                    slots.release()
                    frame_done()
        except Stopped:
            pass
        except BaseException as error:
            errors.append(error)
            stop.set()

    workers = [threading.Thread(target=work, name=f"frame-worker-{i}", daemon=True)
               for i in range(settings.execution_threads)]  # fmt: skip
    workers.append(threading.Thread(target=analyse, name="frame-analysis", daemon=True))
    write_thread = threading.Thread(target=write, name="frame-writer", daemon=True)
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
    return ChunkRun(written[0], time.perf_counter() - started, queues)


def run_chunk_with_frames(
    ffmpeg: str, info: VideoInfo, chunk: Chunk, segment: Path, stages: FrameStages, settings: Settings,
    frame_done: FrameDone, cancel: threading.Event | None = None,
) -> ChunkRun:  # fmt: skip
    """The temp-frames mode: the chunk's frames written to files, processed, then encoded.

    Frames come from the same decoder and go to the same encoder as in streaming, so with PNG files the
    result is the streaming result frame for frame; JPEG files add their compression."""
    started = time.perf_counter()
    suffix = f".{settings.video_temp_frame_format}"
    extracted = segment.parent / f"frames_{chunk.index:05d}"
    processed = segment.parent / f"processed_{chunk.index:05d}"
    for folder in (extracted, processed):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    files = extract_frames(ffmpeg, info, chunk, extracted, suffix)

    def apply(position: int, image: Frame, analysis: Any) -> None:
        index = chunk.start + position
        result = stages.apply(image, analysis, index, float(info.frame_times[index]))
        cv2.imwrite(str(processed / f"{position:08d}.png"), result)
        frame_done()

    with ThreadPoolExecutor(max_workers=settings.execution_threads, thread_name_prefix="frame-file") as pool:
        pending = []
        for position, path in enumerate(files):  # analysis in frame order, processors in parallel
            if cancel is not None and cancel.is_set():
                raise CancelledError("the job was cancelled")
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                raise InputError(f"cannot read the extracted frame {path}")
            frame = np.asarray(image, dtype=np.uint8)
            index = chunk.start + position
            analysis = stages.analyse(frame, index, float(info.frame_times[index]))
            pending.append(pool.submit(apply, position, frame, analysis))
            if len(pending) > 2 * settings.execution_threads:
                pending.pop(0).result()
        for future in pending:
            future.result()
    writer = FrameWriter(_encoder(ffmpeg, info, settings, segment))
    try:
        for position in range(len(files)):
            writer.write(np.asarray(cv2.imread(str(processed / f"{position:08d}.png"), cv2.IMREAD_COLOR)))
        writer.close()
    except BaseException:
        writer.abort()
        segment.unlink(missing_ok=True)
        raise
    if not settings.keep_temp:
        shutil.rmtree(extracted, ignore_errors=True)
        shutil.rmtree(processed, ignore_errors=True)
    return ChunkRun(len(files), time.perf_counter() - started)


def extract_frames(ffmpeg: str, info: VideoInfo, chunk: Chunk, folder: Path, suffix: str) -> list[Path]:
    """Decode the chunk (as streaming does) and write each frame as ``%08d`` + ``suffix``."""
    stop = threading.Event()
    frames: BoundedQueue[FrameItem] = BoundedQueue(8)
    slots = threading.Semaphore(16)
    decode = decode_args(ffmpeg, Path(info.path), info.seek_time(chunk.start), chunk.frames)
    reader = FrameReader(decode, info.width, info.height, chunk.start, chunk.frames, frames, stop, slots)
    files: list[Path] = []
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if suffix == ".jpg" else []
    reader.start()
    try:
        while True:
            item = frames.get(stop)
            if item is END:
                break
            path = folder / f"{item.index - chunk.start:08d}{suffix}"
            cv2.imwrite(str(path), item.frame, params)
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
    """One decoded frame (the reference frame), upright, as BGR."""
    import subprocess

    command = decode_args(ffmpeg, Path(info.path), info.seek_time(index), 1)
    completed = subprocess.run(command, capture_output=True, check=False, stdin=subprocess.DEVNULL, timeout=300)
    size = info.width * info.height * 3
    if completed.returncode != 0 or len(completed.stdout) < size:
        raise FfmpegError(f"cannot decode frame {index}: {stderr_tail(completed.stderr.decode('utf-8', 'replace'))}")
    frame: Frame = np.frombuffer(completed.stdout[:size], dtype=np.uint8).reshape(info.height, info.width, 3).copy()
    return frame

"""A chunk written as pieces: GOPs in which no frame changes are copied from the source as packets, the
others decoded frames go through an encoder that splices into them (``splice.py``); the pieces are
joined into the chunk's segment, which is checked frame for frame before it counts.

The writer sees the frames in order with whether a processor changed them. An encoder opens at the last
clean split (``gops.split_points``) at or before a GOP's first changed frame: the GOP's head before the
split is copied like an untouched GOP, and the encoder starts a new keyframe there, with the untouched
frames from the split on (at most ``HELD_FRAMES``, kept as they passed; decoded again from the source
where they were not all decoded). It stays open while each next GOP starts with a changed frame; a GOP
that starts untouched closes it. Each decision depends only on the frames, so a rerun of the chunk
(a resume) makes the same pieces, byte for byte.

A copied piece is copied as soon as it is whole (an encoder opened after it), on a thread beside the
pipeline, and the pieces still to copy at the chunk's end are copied side by side: the copies are ffmpeg
runs that would otherwise stand, one after another, between the chunk's last frame and its segment. An
encoder that closes finishes on those threads too: the frames x264 still holds (its lookahead, B-frames
and frame threads: about 20) took 0.6 s to flush on a busy 2-core machine, while the writer, and behind
it the pipeline, waited.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from facefusion_ui.errors import FfmpegError
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.commands import (
    concat_list,
    copy_piece_args,
    decode_args,
    join_pieces_args,
    packets_args,
    splice_encode_args,
)
from facefusion_ui.video.ffmpeg import ffmpeg_failure, run_tool, stderr_tail
from facefusion_ui.video.gops import Gop, parse_packets
from facefusion_ui.video.probe import VideoInfo
from facefusion_ui.video.quality import planned_quality
from facefusion_ui.video.reader import StderrTail, read_exactly, start_process, stop_process
from facefusion_ui.video.splice import CopySource
from facefusion_ui.video.writer import FrameWriter
from facefusion_ui.video.yuv import frame_bytes

COPIERS = 2
"""Pieces copied (stream copies: reading and writing, little CPU) or encoders finishing at the same moment."""
HELD_FRAMES = 4
"""The untouched frames since the last split that the writer keeps for an encoder that may open at it:
x264's and x265's default B-frames split a GOP every 4 or 5 frames (further apart, the frames are decoded
again). The memory budget counts them (``video_job``)."""


class SpliceFailed(FfmpegError):
    """A chunk's joined pieces failed the check (frame count, timestamps): it is encoded whole instead."""


@dataclass(frozen=True)
class ChunkCopy:
    """The chunk's GOPs and the source they are copied from; ``encode_all``: encode every GOP (the
    chunk's fallback, still spliceable into its neighbours)."""

    source: CopySource
    gops: list[Gop]
    encode_all: bool = False


@dataclass
class Piece:
    start: int
    end: int
    copied: bool
    path: Path


@dataclass
class CopyCounts:
    gops_copied: int = 0
    gops_encoded: int = 0
    frames_copied: int = 0

    def to_json(self) -> dict[str, int]:
        return {"gops_copied": self.gops_copied, "gops_encoded": self.gops_encoded, "frames_copied": self.frames_copied}


@dataclass
class PieceSink:
    """The writer's end for a chunk that copies what it can (see the module's docstring)."""

    ffmpeg: str
    info: VideoInfo
    chunk: Chunk
    segment: Path
    settings: Settings
    copy: ChunkCopy
    pieces: list[Piece] = field(default_factory=list)
    counts: CopyCounts = field(default_factory=CopyCounts)
    encoder: FrameWriter | None = None
    gop_index: int = 0
    gop_encoded: bool = False
    copies: dict[int, Future[None]] = field(default_factory=dict)
    """The copies started, by the piece's first frame."""
    copier: ThreadPoolExecutor | None = None
    finishing: list[tuple[FrameWriter, Future[None]]] = field(default_factory=list)
    """The encoders closed, finishing their pieces on the copier's threads."""
    split: int = 0
    """The last split at or before the frame being put, while no encoder is open (where one would open)."""
    held: list[np.ndarray] | None = field(default_factory=list)
    """The untouched frames from ``split`` on, as they passed; None when they were more than
    ``HELD_FRAMES`` or not all decoded (``sparse.py``'s placeholders)."""

    def put(self, index: int, data: np.ndarray, changed: bool) -> None:
        gop = self.copy.gops[self.gop_index]
        if index == gop.end:
            self._end_gop(gop)
            self.gop_index += 1
            gop = self.copy.gops[self.gop_index]
        must_encode = changed or not gop.whole or self.copy.encode_all
        if index == gop.start and self.encoder is not None and not must_encode:
            self._close_encoder(index)
        if self.encoder is None:
            if index == gop.start or bool(self.copy.source.splits[index]):
                self.split, self.held = index, []
            if must_encode:
                self._open_at_split(gop, index)
            elif self.held is not None:
                keep = data.size > 0 and len(self.held) < HELD_FRAMES
                self.held = [*self.held, data] if keep else None
        self.gop_encoded = self.gop_encoded or must_encode
        if self.encoder is not None:
            if data.size == 0:  # not decoded (``sparse.py``: never in a GOP that is encoded): decoded now
                data = next(self._decode(index, 1))
            self.encoder.write(data)

    def _end_gop(self, gop: Gop) -> None:
        if self.encoder is not None or self.gop_encoded:
            self.counts.gops_encoded += 1
        else:
            self.counts.gops_copied += 1
            self._copied(gop.start, gop.end)
        self.gop_encoded = False

    def _open_at_split(self, gop: Gop, index: int) -> None:
        """Open an encoder at the last split before ``index``, the GOP's first changed frame: the GOP's
        head before the split is copied, the untouched frames from it on are encoded first."""
        split = self.split
        if split > gop.start:
            self._copied(gop.start, split)
        encoder = self._open_encoder(split)
        held = self.held if self.held is not None and len(self.held) == index - split else None
        for frame in held if held is not None else self._decode(split, index - split):
            encoder.write(frame)
        self.held = []

    def _copied(self, start: int, end: int) -> None:
        """Frames ``[start, end)`` are copied: the last piece extended when it is a copy that ends there."""
        self.counts.frames_copied += end - start
        last = self.pieces[-1] if self.pieces else None
        if last is not None and last.copied and last.end == start:
            last.end = end
        else:
            self.pieces.append(Piece(start, end, True, self._piece_path(start, "copy")))

    def _piece_path(self, start: int, kind: str) -> Path:
        return self.segment.parent / f"piece_{self.chunk.index:05d}_{start:09d}_{kind}.mp4"

    def _open_encoder(self, start: int) -> FrameWriter:
        if self.pieces and self.pieces[-1].copied:  # whole now: nothing extends it any more
            self._copy_soon(self.pieces[-1])
        params = self.copy.source.params
        path = self._piece_path(start, "encoded")
        command = splice_encode_args(
            self.ffmpeg,
            self.info.width,
            self.info.height,
            self.info.fps,
            params.encoder_args(planned_quality(self.settings.output_video_quality), self.settings.output_video_preset),
            params.colour_tags,
            params.timescale,
            path,
        )
        self.encoder = FrameWriter(command)
        self.pieces.append(Piece(start, start, False, path))
        return self.encoder

    def _close_encoder(self, end: int) -> None:
        assert self.encoder is not None
        encoder, self.encoder = self.encoder, None
        self.pieces[-1].end = end
        self.finishing.append((encoder, self._copier().submit(encoder.close)))

    def _decode(self, start: int, count: int) -> Iterator[np.ndarray]:
        """Frames ``[start, start + count)`` decoded again, exactly as the pipeline's decoder gave them."""
        if count <= 0:
            return
        command = decode_args(self.ffmpeg, Path(self.info.path), self.info.seek_time(start), count, "")
        process = start_process(command, stdout=True)
        tail = StderrTail(process.stderr)
        size = frame_bytes(self.info.width, self.info.height)
        try:
            for _ in range(count):
                data = read_exactly(process.stdout, size)
                if data is None:
                    process.wait()
                    tail.join()
                    raise FfmpegError(f"decoding frames {start}-{start + count - 1} again ended early: {tail.text()}")
                yield data
        finally:
            stop_process(process)
            tail.join()

    def close(self) -> CopyCounts:
        """Finish the last piece, copy the untouched ones, join them into the segment and check it."""
        self._end_gop(self.copy.gops[self.gop_index])
        if self.encoder is not None:
            self._close_encoder(self.chunk.end)
        try:
            for piece in self.pieces:
                if piece.copied:
                    self._copy_soon(piece)
            for running in [*self.copies.values(), *(finished for _, finished in self.finishing)]:
                running.result()
            self._join()
            self._check()
        finally:
            self._stop_copier()
            self._remove_pieces()
        return self.counts

    def abort(self) -> None:
        if self.encoder is not None:
            self.encoder.abort()
            self.encoder = None
        for encoder, finished in self.finishing:
            if not finished.done():
                encoder.abort()  # its close, on the copier's thread, then fails: nobody waits for it
        self._stop_copier()
        self._remove_pieces()

    def _copy_soon(self, piece: Piece) -> None:
        """Start copying ``piece`` (once) on the copier's threads."""
        if piece.start not in self.copies:
            self.copies[piece.start] = self._copier().submit(self._copy, piece)

    def _copier(self) -> ThreadPoolExecutor:
        if self.copier is None:
            self.copier = ThreadPoolExecutor(max_workers=COPIERS, thread_name_prefix="piece-copy")
        return self.copier

    def _stop_copier(self) -> None:
        """Wait for the copies and encoders under way (an ffmpeg run each), drop those not started."""
        if self.copier is not None:
            self.copier.shutdown(wait=True, cancel_futures=True)
            self.copier = None

    def _remove_pieces(self) -> None:
        for piece in self.pieces:
            piece.path.unlink(missing_ok=True)
        (self.segment.parent / f"pieces_{self.chunk.index:05d}.txt").unlink(missing_ok=True)

    def _copy(self, piece: Piece) -> None:
        source = self.copy.source
        times = self.info.frame_times
        half_frame = float(times[1] - times[0]) / 2 if len(times) > 1 else 0.0
        command = copy_piece_args(
            self.ffmpeg,
            Path(self.info.path),
            self.info.codec,
            float(times[piece.start]) + half_frame,
            int(source.packets.pts[piece.start]),
            piece.end - piece.start,
            source.params.timescale,
            piece.path,
        )
        completed = run_tool(command)
        if completed.returncode != 0:
            raise ffmpeg_failure("copying the untouched frames failed", completed.stderr, piece.path.parent)

    def _join(self) -> None:
        if len(self.pieces) == 1:
            os.replace(self.pieces[0].path, self.segment)
            return
        list_file = self.segment.parent / f"pieces_{self.chunk.index:05d}.txt"
        list_file.write_text(concat_list([piece.path for piece in self.pieces]), encoding="utf-8")
        completed = run_tool(join_pieces_args(self.ffmpeg, list_file, self.copy.source.params.timescale, self.segment))
        if completed.returncode != 0:
            raise ffmpeg_failure("joining the copied and encoded pieces failed", completed.stderr, self.segment.parent)

    def _check(self) -> None:
        """The segment holds the chunk's frames, each a frame apart, decode timestamps increasing."""
        listed = run_tool(packets_args(self.ffmpeg, self.segment))
        packets = parse_packets(listed.stdout)
        expected = self.chunk.frames
        problem = None
        if packets.count != expected:
            problem = f"{packets.count} of {expected} frames ({stderr_tail(listed.stderr, 1)})"
        elif expected > 1 and packets.frame_ticks() is None:
            problem = "frame timestamps are not evenly spaced"
        elif expected > 1 and bool(np.any(np.diff(packets.dts) <= 0)):
            problem = "decode timestamps do not increase"
        if problem is not None:
            raise SpliceFailed(f"the joined chunk {self.chunk.index + 1} failed the check: {problem}")

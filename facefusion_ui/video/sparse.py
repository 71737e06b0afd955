"""Sparse decoding of face-free stretches: where the detection schedule skips its groups (no face before,
none in the probe), only each group's probe frame comes out of the decoder; the frames between go on as
placeholders (``NOT_DECODED``), which the copy path never reads (a GOP without a changed frame is copied
as packets).

The decoder (``SparseReader``) decodes every frame until the analysis says the next groups are skipped
unless their probe finds a face (``SparseStages.skips_unseen``); it then switches, at the next whole GOP,
to an ffmpeg run whose ``select`` filter passes only the probe frames (the groups at their longest end on
a grid, ``faces/schedule.py``, and the chunk's last frame ends a group). ffmpeg still decodes every
packet (a probe frame references the frames before it) but none of the others is converted, piped or
held. The analysis probes a group with placeholders ahead (``probe_ahead``): no face, the group is
skipped as with every frame decoded; a face, the decoder starts again, every frame, from the group's first
(``rewind``), and the group is analysed, with that same probe, as if nothing had been skipped. Frames
handed on before a rewind carry an older ``generation`` and are dropped. The probe frames are bit-exact
the full decoder's (same filter after the select), so faces found, swapped and copied are the same.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from facefusion_ui.errors import FfmpegError
from facefusion_ui.frames import FrameImage
from facefusion_ui.video.commands import decode_args
from facefusion_ui.video.gops import Gop
from facefusion_ui.video.probe import VideoInfo
from facefusion_ui.video.queues import POLL_S, BoundedQueue, InFlight, Stopped
from facefusion_ui.video.reader import FrameItem, StderrTail, read_exactly, start_process, stop_process

DECODER_THREADS = 1
"""A sparse run decodes on one thread: ffmpeg's frame threads (one more than the cores) cost about a fifth
more CPU for the same frames (3000 frames of a 720p camera clip: 2.8 s of CPU on its default threads, 2.3 s
on one, a shared 2-core machine), and each holds a frame decoded ahead, which a rewind decodes again. A
probe is due only every ``grid`` frames, and the analysis probes it slower than one thread decodes them."""
NOT_DECODED = np.zeros((0, 0), dtype=np.uint8)
"""A placeholder frame: not read from the decoder (between two probes of a face-free stretch)."""


def is_decoded(frame: np.ndarray) -> bool:
    return frame.size > 0


@runtime_checkable
class SparseStages(Protocol):
    """What sparse decoding asks of the frame stages (the pipeline), beside ``stream.FrameStages``."""

    def skips_unseen(self) -> bool:
        """Whether the next group, if its probe finds no face, needs no other frame of it."""
        ...

    def probe_ahead(self, image: FrameImage, index: int) -> bool:
        """Probe the next group's last frame (``index``): whether the group is skipped."""
        ...

    def probe_grid(self) -> tuple[int, int]:
        """The job's first frame and the longest group (groups at their longest end on this grid)."""
        ...


def probe_frames(start: int, end: int, first: int, grid: int, chunk_end: int) -> list[int]:
    """The frames of ``[start, end)`` that end a group at its longest: the last of each grid cell counted
    from ``first`` (the job's first frame), and the chunk's last frame (``chunk_end - 1``)."""
    probes = [frame for frame in range(start, end) if (frame - first + 1) % grid == 0]
    if start <= chunk_end - 1 < end and (not probes or probes[-1] != chunk_end - 1):
        probes.append(chunk_end - 1)
    return probes


def whole_run_end(gops: Sequence[Gop], position: int) -> int | None:
    """Where the whole GOPs from ``position`` end, when a whole GOP starts there (a part cut by the trim
    range is encoded, so every frame of it is needed); None when none starts there."""
    end: int | None = None
    for gop in gops:
        if gop.whole and gop.start == (position if end is None else end):
            end = gop.end
    return end


def select_filter(start: int, probes: Sequence[int]) -> str:
    """An ffmpeg ``select`` passing exactly ``probes`` of the frames decoded from ``start`` (``n`` counts
    from the seek point): the evenly spaced ones (the grid's) as one term, the others one term each. ffmpeg
    refuses an expression of a term per probe past about a hundred (a face-free chunk of 120 s, probes every
    20 frames, failed with "Error while parsing expression ... Cannot allocate memory")."""
    offsets = [probe - start for probe in probes]
    spaced = evenly_spaced(offsets)
    terms = [f"eq(n\\,{offset})" for offset in offsets[spaced:]]
    if spaced:
        first, last, step = offsets[0], offsets[spaced - 1], offsets[1] - offsets[0]
        terms.insert(0, f"between(n\\,{first}\\,{last})*not(mod(n-{first}\\,{step}))")
    return f"select={'+'.join(terms)}"


def evenly_spaced(offsets: Sequence[int]) -> int:
    """How many of ``offsets`` (increasing), from the first, are evenly spaced, when three or more are;
    else 0 (a term each is as short)."""
    count = 2
    while count < len(offsets) and offsets[count] - offsets[count - 1] == offsets[1] - offsets[0]:
        count += 1
    return count if count >= 3 and len(offsets) >= 3 else 0


def sparse_decode_args(
    ffmpeg: str, source: Path, start_time: float, start: int, probes: Sequence[int], video_filter: str
) -> list[str]:
    """``commands.decode_args`` passing only ``probes`` (frames counted from ``start``, at ``start_time``)
    on stdout; the pipeline's own filter after the select, so each frame is the full decoder's, bit for bit.
    ffmpeg decodes ahead as far as its queues let it (a rewind loses that): one probe queued to its output,
    not eight, halves it (about 150 frames ahead instead of 300 on a 720p camera clip), and one decoder
    thread (``DECODER_THREADS``) holds no frames of its own ahead."""
    chain = ",".join(part for part in (select_filter(start, probes), video_filter) if part)
    return decode_args(ffmpeg, source, start_time, len(probes), chain, output_queue=1, threads=DECODER_THREADS)


@dataclass(frozen=True)
class SparseSource:
    """The chunk's video and how its frames are decoded: every frame (``commands.decode_args``) or only
    the probes (``sparse_decode_args``), both with the pipeline's filter and frame shape."""

    ffmpeg: str
    info: VideoInfo
    video_filter: str
    shape: tuple[int, int]

    def full(self, start: int, count: int) -> list[str]:
        return decode_args(self.ffmpeg, Path(self.info.path), self.info.seek_time(start), count, self.video_filter)

    def sparse(self, start: int, probes: Sequence[int]) -> list[str]:
        seek = self.info.seek_time(start)
        return sparse_decode_args(self.ffmpeg, Path(self.info.path), seek, start, probes, self.video_filter)


class Decoding:
    """One ffmpeg decoder run: frames read in order from ``first``, its stderr kept."""

    def __init__(self, command: list[str], shape: tuple[int, int], first: int, count: int) -> None:
        self.process = start_process(command, stdout=True)
        self.tail = StderrTail(self.process.stderr)
        self.size = int(np.prod(shape))
        self.shape = shape
        self.first = first
        self.count = count
        self.read = 0

    def next_frame(self) -> np.ndarray:
        data = read_exactly(self.process.stdout, self.size)
        if data is None:
            code = self.process.wait()
            self.tail.join()
            raise FfmpegError(
                f"ffmpeg decoded {self.read} of {self.count} frames from frame {self.first} (exit code {code}): "
                f"{self.tail.text() or 'the file ends early'}; the video may be truncated or corrupt"
            )
        self.read += 1
        return data.reshape(self.shape)

    def close(self) -> None:
        stop_process(self.process)
        self.tail.join()


@dataclass(frozen=True)
class SparsePlan:
    """A chunk's frames ``[start, end)``, its GOPs, and the grid of the groups at their longest."""

    start: int
    end: int
    gops: Sequence[Gop]
    first: int
    grid: int

    def probes_from(self, position: int) -> list[int] | None:
        """The probes a sparse run from ``position`` decodes (up to the end of the whole GOPs from there);
        None where no sparse run can start (not a whole GOP's start, or no probe ahead)."""
        end = whole_run_end(self.gops, position)
        if end is None or self.grid <= 1:
            return None
        probes = probe_frames(position, min(end, self.end), self.first, self.grid, self.end)
        return probes or None


class SparseReader:
    """The decoder of a chunk that may decode face-free stretches sparsely (see the module's docstring);
    the same bounds as ``reader.FrameReader``: a slot taken for each frame or placeholder handed on."""

    def __init__(
        self,
        source: SparseSource,
        plan: SparsePlan,
        output: BoundedQueue[FrameItem],
        stop: threading.Event,
        slots: threading.Semaphore,
        in_flight: InFlight,
        sparse_now: bool,
    ) -> None:
        self.source = source
        self.plan = plan
        self.output = output
        self.stop = stop
        self.slots = slots
        self.in_flight = in_flight
        self.error: BaseException | None = None
        self.frames_decoded = 0
        """Frames decoded and handed on (a rewind hands some on twice)."""
        self.runs = 0
        """The ffmpeg decoder runs started (each a process start-up, and a seek)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._wanted = sparse_now
        self._rewind_to: int | None = None
        self.generation = 0
        self.thread = threading.Thread(target=self._run, name="frame-reader", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()

    def want_sparse(self, wanted: bool) -> None:
        """The analysis, after each group: whether the next groups are skipped unless their probe finds a face."""
        with self._lock:
            self._wanted = wanted

    def rewind(self, frame: int) -> None:
        """The analysis needs every frame from ``frame`` on (a probe found a face): what was handed on from
        there is dropped (``current``), and decoding starts again there, every frame."""
        with self._lock:
            self.generation += 1
            self._rewind_to = frame
            self._wanted = False
        self._wake.set()

    def current(self, item: FrameItem) -> bool:
        """Whether ``item`` was handed on after the last rewind (else the analysis drops it)."""
        with self._lock:
            return item.generation == self.generation

    def dropped(self, item: FrameItem) -> None:
        """The analysis dropped ``item`` (a rewind): its slot is free again."""
        if item.index >= 0:
            self.in_flight.remove()
            self.slots.release()

    def _run(self) -> None:
        try:
            self._loop()
        except Stopped:
            pass
        except BaseException as error:  # handed to the pipeline's owner
            self.error = error
            self.stop.set()

    def _loop(self) -> None:
        position, ended = self.plan.start, False
        decoding: Decoding | None = None
        probes: collections.deque[int] | None = None  # a sparse run's probes still to come
        try:
            while True:
                if self.stop.is_set():
                    raise Stopped
                with self._lock:
                    rewind, self._rewind_to, wanted, generation = self._rewind_to, None, self._wanted, self.generation
                if rewind is not None or (probes is not None and not probes):  # every frame (again) from here
                    self._close(decoding)
                    decoding, probes, ended = None, None, False
                    position = position if rewind is None else rewind
                if position >= self.plan.end:
                    if not ended:
                        self.output.put(FrameItem(-1, NOT_DECODED, generation), self.stop)
                        self._close(decoding)
                        decoding, ended = None, True
                    self._wake.wait(0.1)  # a rewind may still come until the analysis has seen the end
                    self._wake.clear()
                    continue
                if probes is None and wanted and (ahead := self.plan.probes_from(position)) is not None:
                    self._close(decoding)
                    probes = collections.deque(ahead)
                    self.runs += 1
                    decoding = Decoding(self.source.sparse(position, ahead), self.source.shape, position, len(ahead))
                if decoding is None:
                    count = self.plan.end - position
                    self.runs += 1
                    decoding = Decoding(self.source.full(position, count), self.source.shape, position, count)
                if probes is not None and position < probes[0]:
                    self._hand_on(FrameItem(position, NOT_DECODED, generation))
                elif probes is not None and not self._analysis_caught_up():
                    continue  # a rewind came meanwhile
                else:
                    self._hand_on(FrameItem(position, decoding.next_frame(), generation))
                    self.frames_decoded += 1
                    if probes is not None:
                        probes.popleft()
                position += 1
        finally:
            self._close(decoding)

    def _analysis_caught_up(self) -> bool:
        """Before a sparse run's next probe is read: wait until the analysis has taken every frame handed
        on (it is then probing the group before); False when a rewind came meanwhile. ffmpeg, blocked on
        the pipe until the probe is read, so decodes at most one probe past the group being probed: a face
        found there rewinds to the group's start, and every frame decoded past it is decoded again (with
        the input queue's 32 frames of lead, about 40 more on a 720p camera clip, 2 face entries of 30 s)."""
        while not self.output.drained(POLL_S):
            if self.stop.is_set():
                raise Stopped
            if self._rewinding():
                return False
        return not self._rewinding()

    def _rewinding(self) -> bool:
        with self._lock:
            return self._rewind_to is not None

    @staticmethod
    def _close(decoding: Decoding | None) -> None:
        """End ``decoding``'s ffmpeg (None: no run): the next frame needs another run."""
        if decoding is not None:
            decoding.close()

    def _hand_on(self, item: FrameItem) -> None:
        while not self.slots.acquire(timeout=0.1):
            if self.stop.is_set():
                raise Stopped
        self.in_flight.add()
        self.output.put(item, self.stop)

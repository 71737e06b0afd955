"""The source's packets in decode order (``framecrc`` of a stream copy: no decoding), where it can be cut
without re-encoding (closed-GOP keyframes), its GOPs over a frame range, and chunks cut on keyframes.

A keyframe is a clean cut when every packet before it in decode order shows before it and every packet
after it shows after it: an open GOP (leading pictures that show before the keyframe but reference the
GOP before) is no cut, so the copied stretch never loses a reference.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from facefusion_ui.video.chunks import Chunk


@dataclass(frozen=True)
class Packets:
    """A video stream's packets in decode order, with the stream's time base and sample aspect ratio."""

    time_base: Fraction
    dts: np.ndarray
    pts: np.ndarray
    key: np.ndarray
    sar: Fraction | None = None
    """None when the stream declares none (``0/1``)."""

    @property
    def count(self) -> int:
        return len(self.pts)

    def frame_ticks(self) -> int | None:
        """One frame's duration in time-base ticks when every frame lasts the same whole number of ticks."""
        steps = np.diff(np.sort(self.pts))
        if len(steps) == 0 or int(steps.min()) != int(steps.max()) or int(steps[0]) <= 0:
            return None
        return int(steps[0])

    def reorder_delay(self) -> int:
        """How many frames decoding runs ahead of display (B-frames): the first packet's pts - dts, in frames."""
        ticks = self.frame_ticks()
        if ticks is None or self.count == 0:
            return 0
        return max(0, round(int(self.pts[0] - self.dts[0]) / ticks))


def parse_packets(text: str) -> Packets:
    """``-f framecrc`` output: ``#tb 0: 1/12800``, ``#sar 0: 1/1``, then per packet
    ``0, dts, pts, duration, size, crc[, F=0x0]`` (``F=`` only when the packet is not just a keyframe)."""
    time_base = Fraction(1, 1)
    sar: Fraction | None = None
    dts: list[int] = []
    pts: list[int] = []
    key: list[bool] = []
    for line in text.splitlines():
        if line.startswith("#tb 0:"):
            time_base = Fraction(line.split(":", 1)[1].strip())
        elif line.startswith("#sar 0:"):
            value = line.split(":", 1)[1].strip()
            numerator, _, denominator = value.partition("/")
            if numerator.strip() not in ("0", "") and denominator.strip() not in ("0", ""):
                sar = Fraction(int(numerator), int(denominator))
        elif line and line[0].isdigit():
            fields = [field.strip() for field in line.split(",")]
            if len(fields) >= 6 and fields[0] == "0":
                flags = next((int(f[2:], 16) for f in fields[6:] if f.startswith("F=")), 1)
                dts.append(int(fields[1]))
                pts.append(int(fields[2]))
                key.append(bool(flags & 1) and not flags & 4)  # a key packet, not one to discard
    as_array = np.asarray
    return Packets(time_base, as_array(dts, np.int64), as_array(pts, np.int64), as_array(key, bool), sar)


def split_points(packets: Packets) -> np.ndarray:
    """Whether the stream splits cleanly before each frame (presentation numbering): every packet before
    it in decode order shows before every packet from it on. The packets before such a split are then
    exactly the frames before it, and decode by themselves (a packet references only packets decoded
    before it), so a GOP's head up to a split can be copied and the rest encoded from a new keyframe:
    with B-frames the splits fall between mini-GOPs (every 4 frames or fewer for x264's default 3
    B-frames), without them before every frame. Frame 0 is a split; frames past the last packet are not."""
    pts = packets.pts
    splits = np.zeros(packets.count, dtype=bool)
    if packets.count:
        splits[0] = True
        splits[1:] = np.maximum.accumulate(pts)[:-1] < np.minimum.accumulate(pts[::-1])[::-1][1:]
    return splits


def cut_points(packets: Packets) -> list[int]:
    """Frames (presentation numbering) where the stream can be cut: clean keyframes, frame 0 included.

    For closed GOPs the decode position of a cut keyframe equals its presentation number: the frames
    before it, in either order, are the same set."""
    count = packets.count
    if count == 0:
        return []
    pts = packets.pts
    shown_before_next = np.minimum.accumulate(pts[::-1])[::-1]  # the least pts from each packet on
    shown_by_now = np.maximum.accumulate(pts)
    cuts = [0]
    for index in np.flatnonzero(packets.key):
        if index == 0:
            continue
        if shown_before_next[index] == pts[index] and shown_by_now[index - 1] < pts[index]:
            cuts.append(int(index))
    return cuts


@dataclass(frozen=True)
class Gop:
    """Frames ``[start, end)`` of the job between two cuts; ``whole`` when it is a whole source GOP (both
    ends on cuts) that can be copied; a part cut by the trim range must be encoded."""

    start: int
    end: int
    whole: bool

    @property
    def frames(self) -> int:
        return self.end - self.start


def gops_in(cuts: list[int], first: int, last: int, source_frames: int) -> list[Gop]:
    """The GOPs covering ``[first, last)``, the parts at either end cut by the range marked not whole."""
    edges = sorted({*cuts, source_frames})
    gops = []
    for start, end in itertools.pairwise(edges):
        low, high = max(start, first), min(end, last)
        if low < high:
            gops.append(Gop(low, high, low == start and high == end))
    return gops


def plan_chunks_on_cuts(first: int, last: int, frames_per_chunk: int, cuts: list[int]) -> list[Chunk]:
    """Chunks of about ``frames_per_chunk`` frames, each starting on a cut (the first on ``first``): a
    GOP never spans two chunks, so a chunk copies or encodes whole GOPs."""
    size = max(1, frames_per_chunk)
    inside = sorted(cut for cut in cuts if first < cut < last)
    starts = [first]
    for cut in inside:
        if cut - starts[-1] >= size:
            starts.append(cut)
    ends = [*starts[1:], last]
    return [Chunk(index, start, end) for index, (start, end) in enumerate(zip(starts, ends, strict=True))]

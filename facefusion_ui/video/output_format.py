"""The output video's own frame size and frame rate (``--output-video-resolution``, ``--output-video-fps``).

The size is the encoder's: it scales the frames the processors return (``commands.encode_args``). The rate
is kept on one grid over the whole job: source frame ``i`` (its time ``(i - first) / source fps``) is
written once for every output time ``k / fps`` that falls before the next source frame, so a frame is
dropped or repeated where the rates differ, and chunks joined end to end keep the audio in sync (no
rounding piles up from chunk to chunk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from facefusion_ui.state_manager import Settings

NTSC_RATES = (24, 30, 48, 60, 120)
"""Rates whose 1000/1001 versions (23.976, 29.97...) are written as decimals."""


@dataclass(frozen=True)
class OutputFormat:
    """What the encoder makes when it is not what the frames are: a size (even sides) and a rate."""

    size: tuple[int, int] | None = None
    fps: Fraction | None = None
    origin: int = 0
    """The job's first frame: time 0 of the output rate's grid."""

    def scale_filter(self) -> str:
        """The ffmpeg filter that scales the frames to ``size`` ('' when the size stays)."""
        return "" if self.size is None else f"scale={self.size[0]}:{self.size[1]}:flags=bicubic"


def asked_size(settings: Settings) -> tuple[int, int] | None:
    """``--output-video-resolution`` as even sides (4:2:0), None when not set."""
    if settings.output_video_resolution is None:
        return None
    width, height = (int(side) for side in settings.output_video_resolution.split("x"))
    return width + width % 2, height + height % 2


def asked_fps(settings: Settings) -> Fraction | None:
    """``--output-video-fps`` as an exact rate (29.97 is 30000/1001), None when not set."""
    value = settings.output_video_fps
    if value is None:
        return None
    for rate in NTSC_RATES:
        ntsc = Fraction(rate * 1000, 1001)
        if abs(float(ntsc) - value) < 0.0015:
            return ntsc
    return Fraction(value).limit_denominator(1001)


def output_format(
    settings: Settings, frame_size: tuple[int, int], source_fps: Fraction, origin: int = 0
) -> OutputFormat:
    """The size and rate to encode, each None where it is what the frames already have."""
    size, fps = asked_size(settings), asked_fps(settings)
    return OutputFormat(
        None if size in (None, frame_size) else size, None if fps in (None, source_fps) else fps, origin
    )


def changed_reason(settings: Settings, source_size: tuple[int, int], source_fps: Fraction) -> str | None:
    """Why no GOP of the source fits the output when the asked size or rate is not the source's."""
    if asked_size(settings) not in (None, source_size):
        return "the output size differs from the source (--output-video-resolution)"
    if asked_fps(settings) not in (None, source_fps):
        return "the output frame rate differs from the source (--output-video-fps)"
    return None


def output_slots(frames: int, source_fps: Fraction, fps: Fraction) -> int:
    """How many output frames the first ``frames`` source frames make (the output times before theirs)."""
    return math.ceil(Fraction(frames) * fps / source_fps)


def repeats(position: int, source_fps: Fraction, fps: Fraction) -> int:
    """How many times the source frame ``position`` frames after the job's first is written (0: dropped)."""
    return output_slots(position + 1, source_fps, fps) - output_slots(position, source_fps, fps)

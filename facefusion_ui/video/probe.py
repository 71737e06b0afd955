"""What a video is: size as decoded (upright), exact frame rate, frame count and frame times, rotation,
pixel format, codec, audio, variable frame rate. Works with imageio-ffmpeg's ffmpeg alone (no ffprobe):
the header comes from ``ffmpeg -i`` and the frame times from a ``framecrc`` stream copy (no decoding);
ffprobe, when present, reads the header instead.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.media_files import file_problem
from facefusion_ui.video.commands import ffprobe_args, header_args, packets_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg, resolve_ffprobe, run_tool, stderr_tail

VFR_TOLERANCE = 0.02
"""Relative spread of frame durations above which a video counts as variable frame rate."""


@dataclass(frozen=True, eq=False)
class VideoInfo:
    path: str
    width: int
    """Width of the decoded (upright) frames."""
    height: int
    fps: Fraction
    """The exact rate for constant-rate video; the average rate (frames / span) for variable rate."""
    frame_count: int
    duration: float
    rotation: int
    pix_fmt: str
    codec: str
    has_audio: bool
    vfr: bool
    frame_times: np.ndarray
    """Start of each frame in seconds from the first frame, in presentation order."""
    audio_codec: str | None = None
    colour_space: str | None = None
    """The colour matrix the file declares (ffmpeg's name, e.g. bt709, smpte170m), None when untagged."""
    full_range: bool = False
    """Whether the file declares full-range (``pc``, JPEG) levels; most video is limited range."""

    def seek_time(self, frame: int) -> float:
        """A time that makes ffmpeg's input seek start exactly at ``frame`` (half a frame before it)."""
        if frame <= 0:
            return 0.0
        previous = float(self.frame_times[frame - 1])
        return (previous + float(self.frame_times[frame])) / 2

    def to_json(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "height": self.height,
            "fps": f"{self.fps.numerator}/{self.fps.denominator}",
            "frame_count": self.frame_count,
            "duration": round(self.duration, 6),
            "rotation": self.rotation,
            "pix_fmt": self.pix_fmt,
            "codec": self.codec,
            "has_audio": self.has_audio,
            "vfr": self.vfr,
            "colour_space": self.colour_space,
            "full_range": self.full_range,
            "audio_codec": self.audio_codec,
        }


@dataclass(frozen=True)
class Header:
    width: int
    height: int
    rotation: int
    pix_fmt: str
    codec: str
    has_audio: bool
    duration: float | None
    colour_space: str | None = None
    audio_codec: str | None = None
    full_range: bool = False


VIDEO_STREAM = re.compile(
    r"Stream #\d+:\d+.*?: Video: (?P<codec>\w+)[^,]*, (?P<pix>\w+)(?:\((?P<props>[^)]*)\))?[^,]*?, "
    r"(?P<w>\d+)x(?P<h>\d+)"
)
AUDIO_STREAM = re.compile(r"Stream #\d+:\d+.*?: Audio: (?P<codec>\w+)")
ROTATION = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees", re.IGNORECASE)
DURATION = re.compile(r"Duration: (\d+):(\d+):(\d+(?:\.\d+)?)")


COLOUR_SPACES = ("bt709", "smpte170m", "bt470bg", "bt2020nc", "bt2020c", "smpte240m", "fcc", "ycgco")


def colour_space_of(props: str | None) -> str | None:
    """The matrix in ``ffmpeg -i``'s pixel format details, e.g. ``tv, bt709/bt709/bt709, progressive``."""
    for part in (props or "").split(","):
        name = part.strip().split("/")[0]
        if name in COLOUR_SPACES:
            return name
    return None


def full_range_of(pix_fmt: str, props: str | None) -> bool:
    """``yuvj*`` formats, or ``pc`` first in ``ffmpeg -i``'s details (``pc, bt709/...``)."""
    return pix_fmt.startswith("yuvj") or (props or "").split(",")[0].strip() == "pc"


def normalise_rotation(degrees: float) -> int:
    return round(degrees) % 360


def parse_ffmpeg_header(text: str) -> Header | None:
    """The first video stream of ``ffmpeg -i`` output; None when there is no video stream."""
    match = VIDEO_STREAM.search(text)
    if match is None:
        return None
    rotation_match = ROTATION.search(text[match.end() :])
    # the display matrix belongs to this stream only if no other stream starts before it
    rotation = 0
    if rotation_match is not None:
        between = text[match.end() : match.end() + rotation_match.start()]
        if "Stream #" not in between:
            rotation = normalise_rotation(float(rotation_match.group(1)))
    duration_match = DURATION.search(text)
    duration = None
    if duration_match is not None:
        hours, minutes, seconds = duration_match.groups()
        duration = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return Header(
        width=int(match.group("w")),
        height=int(match.group("h")),
        rotation=rotation,
        pix_fmt=match.group("pix"),
        codec=match.group("codec"),
        has_audio=" Audio: " in text,
        duration=duration,
        colour_space=colour_space_of(match.group("props")),
        audio_codec=audio.group("codec") if (audio := AUDIO_STREAM.search(text)) else None,
        full_range=full_range_of(match.group("pix"), match.group("props")),
    )


def parse_ffprobe_header(text: str) -> Header | None:
    data = json.loads(text or "{}")
    streams = data.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    if video is None:
        return None
    rotation = 0
    for side in video.get("side_data_list", []) or []:
        if "rotation" in side:
            rotation = normalise_rotation(float(side["rotation"]))
    duration = data.get("format", {}).get("duration")
    return Header(
        width=int(video["width"]),
        height=int(video["height"]),
        rotation=rotation,
        pix_fmt=str(video.get("pix_fmt", "unknown")),
        codec=str(video.get("codec_name", "unknown")),
        has_audio=any(s.get("codec_type") == "audio" for s in streams),
        duration=float(duration) if duration not in (None, "N/A") else None,
        colour_space=video.get("color_space") if video.get("color_space") in COLOUR_SPACES else None,
        audio_codec=next((str(s.get("codec_name")) for s in streams if s.get("codec_type") == "audio"), None),
        full_range=str(video.get("pix_fmt", "")).startswith("yuvj") or video.get("color_range") == "pc",
    )


def parse_framecrc(text: str) -> tuple[Fraction, list[int], list[int]]:
    """(time base, pts, durations) of every packet listed by ``-f framecrc``."""
    time_base = Fraction(1, 1)
    pts: list[int] = []
    durations: list[int] = []
    for line in text.splitlines():
        if line.startswith("#tb 0:"):
            time_base = Fraction(line.split(":", 1)[1].strip())
        elif line and line[0].isdigit():
            fields = [field.strip() for field in line.split(",")]
            if len(fields) >= 4 and fields[0] == "0":
                pts.append(int(fields[2]))
                durations.append(int(fields[3]))
    return time_base, pts, durations


def frame_timing(time_base: Fraction, pts: list[int], durations: list[int]) -> tuple[np.ndarray, Fraction, bool, float]:
    """(frame times, fps, variable rate?, duration) from packet timestamps in presentation order."""
    order = np.sort(np.asarray(pts, dtype=np.int64))
    times = (order - order[0]).astype(np.float64) * float(time_base)
    steps = np.diff(order)
    if len(steps) == 0:
        step = durations[0] if durations and durations[0] > 0 else 1
        return times, Fraction(1, 1) / (time_base * step) if step else Fraction(25), False, float(time_base * step)
    median = int(np.median(steps))
    vfr = bool(np.abs(steps - median).max() > max(1, VFR_TOLERANCE * median))
    last = durations[int(np.argmax(pts))] if durations else median
    span_ticks = int(order[-1] - order[0]) + (last if last > 0 else median)
    if vfr:
        fps = (Fraction(len(order)) / (time_base * span_ticks)).limit_denominator(1001)
    else:
        fps = Fraction(1) / (time_base * median)
    return times, fps, vfr, float(time_base * span_ticks)


def upright(width: int, height: int, rotation: int) -> tuple[int, int]:
    return (height, width) if rotation in (90, 270) else (width, height)


def probe_header(path: Path) -> Header:
    """The container header only (fast: no packet scan), or an InputError saying why it is no video."""
    ffmpeg = resolve_ffmpeg().path
    ffprobe = resolve_ffprobe()
    if ffprobe:
        completed = run_tool(ffprobe_args(ffprobe, path), timeout_s=120)
        header = parse_ffprobe_header(completed.stdout) if completed.returncode == 0 else None
    else:
        completed = run_tool(header_args(ffmpeg, path), timeout_s=120)
        header = parse_ffmpeg_header(completed.stderr)
    if header is None:
        if has_only_audio(completed.stdout + completed.stderr):
            raise InputError(f"{path} has no video stream (only audio): choose a video file", paths=(path,))
        raise InputError(
            f"cannot read {path} as a video ({_reason(completed.stderr)}): use an MP4, MOV, MKV, AVI or WebM file",
            paths=(path,),
        )
    return header


def has_only_audio(text: str) -> bool:
    """Whether ``ffmpeg -i`` (or ffprobe's JSON) lists an audio stream and no video stream."""
    return bool(AUDIO_STREAM.search(text) or '"codec_type": "audio"' in text) and '"codec_type": "video"' not in text


def probe_video(path: Path) -> VideoInfo:
    """Probe ``path``; an InputError (one line, with ffmpeg's reason) when it is not a readable video."""
    return probe_video_listing(path)[0]


def probe_video_listing(path: Path) -> tuple[VideoInfo, str]:
    """``probe_video``, and the video stream's packets as ``framecrc`` listed them (the copy path reads
    them again with ``gops.parse_packets``: listing them a second time would read the whole file again),
    listed beside the header's probe."""
    problem = file_problem(path)
    if problem is not None:
        raise InputError(f"video {path} {problem}: check the path", paths=(path,))
    ffmpeg = resolve_ffmpeg().path
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="packets") as pool:  # beside the header
        listing = pool.submit(run_tool, packets_args(ffmpeg, path))
        header = probe_header(path)
        packets = listing.result()
    time_base, pts, durations = parse_framecrc(packets.stdout)
    if not pts:
        raise InputError(
            f"{path} has no video frames ({_reason(packets.stderr)}): the file may be truncated", paths=(path,)
        )
    times, fps, vfr, duration = frame_timing(time_base, pts, durations)
    width, height = upright(header.width, header.height, header.rotation)
    info = VideoInfo(
        path=str(path),
        width=width,
        height=height,
        fps=fps,
        frame_count=len(pts),
        duration=duration,
        rotation=header.rotation,
        pix_fmt=header.pix_fmt,
        codec=header.codec,
        has_audio=header.has_audio,
        vfr=vfr,
        frame_times=times,
        colour_space=header.colour_space,
        audio_codec=header.audio_codec,
        full_range=header.full_range,
    )
    return info, packets.stdout


def _reason(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and "At least one output file" not in line]
    return stderr_tail("\n".join(lines), 1) or "ffmpeg gave no reason"

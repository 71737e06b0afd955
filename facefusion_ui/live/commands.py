"""Pure ffmpeg command builders for live mode (argument lists): the input read as a camera delivers it
(a device as it comes, a file or a served stream at its own frame rate), scaled and padded to the live
size as raw BGR frames; and the encoder of ``--output`` / Record."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from facefusion_ui.errors import UsageError
from facefusion_ui.types import LiveSize

LIVE_SIZES: dict[LiveSize, tuple[int, int]] = {"480p": (640, 480), "720p": (1280, 720)}
"""Frames are scaled (aspect kept, padded) to this width x height before the swapper sees them."""
QUIET = ["-hide_banner", "-nostdin", "-loglevel", "error"]
LIVE_PROTOCOLS = ("rtsp://", "rtsps://", "rtmp://", "rtmps://", "udp://", "srt://", "tcp://", "rtp://")
"""Inputs that deliver in real time by themselves (no pacing by ffmpeg)."""

InputKind = Literal["camera", "stream", "file"]


@dataclass(frozen=True)
class LiveInput:
    """Where live frames come from, as ffmpeg opens it."""

    kind: InputKind
    args: tuple[str, ...]
    """ffmpeg's input options and ``-i`` argument."""
    label: str


def camera_args(device: str, platform: str) -> tuple[str, ...]:
    """A camera by index (``0``) or device path (``/dev/video0``, DirectShow's ``video=NAME``)."""
    if device.startswith("video="):
        return ("-f", "dshow", "-i", device)
    if platform.startswith("linux"):
        path = f"/dev/video{device}" if device.isdigit() else device
        return ("-f", "v4l2", "-i", path)
    if platform == "darwin":
        return ("-f", "avfoundation", "-framerate", "30", "-i", f"{device}:none")
    raise UsageError(f"camera '{device}': on Windows give the camera by name, --input 'video=CAMERA NAME'")


def pace_args(ffmpeg_version: str) -> tuple[str, ...]:
    """Read at the input's own frame rate; with ffmpeg 6.1 and later also without the half-second burst
    at the start that ``-re`` allows (a camera has no backlog)."""
    found = re.search(r"version n?(\d+)\.(\d+)", ffmpeg_version)
    if found and (int(found.group(1)), int(found.group(2))) >= (6, 1):
        return ("-readrate", "1", "-readrate_initial_burst", "0")
    return ("-re",)


def live_input(text: str, platform: str, ffmpeg_version: str, loop: bool = False) -> LiveInput:
    """``--input`` as ffmpeg reads it: a camera index or device, a stream URL, or a video file."""
    if text.isdigit() or text.startswith(("/dev/video", "video=")):
        return LiveInput("camera", camera_args(text, platform), f"camera {text}")
    if text.lower().startswith(LIVE_PROTOCOLS):
        return LiveInput("stream", ("-fflags", "nobuffer", "-i", text), text)
    looped = ("-stream_loop", "-1") if loop else ()
    kind: InputKind = "stream" if "://" in text else "file"
    return LiveInput(kind, (*pace_args(ffmpeg_version), *looped, "-i", text), text)


def fit_filter(width: int, height: int) -> str:
    """Scale into ``width`` x ``height`` keeping the aspect ratio, padded with black to the exact size."""
    return (
        f"scale={width}:{height}:force_original_aspect_ratio=decrease,pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,setsar=1"
    )


def read_args(ffmpeg: str, source: LiveInput, width: int, height: int) -> list[str]:
    """Decode ``source`` into raw BGR frames of ``width`` x ``height`` on stdout, as they arrive."""
    return [
        ffmpeg,
        *QUIET,
        *source.args,
        *("-map", "0:v:0", "-an", "-sn", "-vf", fit_filter(width, height)),
        *("-f", "rawvideo", "-pix_fmt", "bgr24", "pipe:1"),
    ]


def record_args(ffmpeg: str, width: int, height: int, fps: float, output: str) -> list[str]:
    """Encode raw BGR frames from stdin (the shown frames, at the input's rate) into ``output``
    (H.264 in 4:2:0 for any player; a fast preset: the encoder shares the CPU with the swapper)."""
    return [
        ffmpeg,
        *QUIET,
        *("-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-framerate", f"{fps:.6g}"),
        *("-i", "pipe:0", "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p"),
        *("-movflags", "+faststart", "-y", output),
    ]

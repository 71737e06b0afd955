"""Whether a video's untouched stretches can be copied instead of re-encoded, and how the changed
stretches are encoded so that they splice into the copied ones.

Copying needs an encoder here for the source's codec (H.264 with libx264, HEVC with libx265, VP9 with
libvpx-vp9), frames that reach the pipeline as they are stored (8-bit 4:2:0, limited range, even size,
no rotation), a constant frame rate on a whole number of time-base ticks, and an output container that
takes the codec. The changed stretches then get the source's profile, level, colour tags, sample aspect
ratio, time base and B-frame delay (the same delay keeps decode timestamps increasing at every join).

Their quality is the job's (``quality.py``: the user's setting, else no finer than a few CRF steps below
the CRF the source was itself encoded with, which ``source_crf_of`` reads from the stream).
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from facefusion_ui.state_manager import Settings
from facefusion_ui.video.commands import (
    RAW_PIXELS,
    crf_for,
    encoders_args,
    packets_args,
    preset_args,
    quality_args,
    trace_headers_args,
)
from facefusion_ui.video.ffmpeg import run_tool, stderr_tail
from facefusion_ui.video.gops import Packets, cut_points, parse_packets, split_points
from facefusion_ui.video.probe import VideoInfo

SPLICE_ENCODERS = {"h264": "libx264", "hevc": "libx265", "vp9": "libvpx-vp9"}
ENCODER_CODECS = {
    "libx264": "h264",
    "libopenh264": "h264",
    "h264_nvenc": "h264",
    "libx265": "hevc",
    "hevc_nvenc": "hevc",
    "libvpx-vp9": "vp9",
    "mpeg4": "mpeg4",
}
CONTAINERS = {
    "h264": (".mp4", ".m4v", ".mov", ".mkv"),
    "hevc": (".mp4", ".mov", ".mkv"),
    "vp9": (".mp4", ".mkv", ".webm"),
}
H264_PROFILES = {66: "baseline", 77: "main", 100: "high"}
TRACE_FIELD = re.compile(r"^\[trace_headers[^\]]*\]\s+\d+\s+(\w+)(?:\[[\d\]\[]+)?\s+[01]+\s+=\s+(-?\d+)", re.MULTILINE)
USER_DATA_BYTE = re.compile(r"^\[trace_headers[^\]]*\]\s+\d+\s+user_data_payload_byte\[\d+\]\s+[01]+\s+=\s+(\d+)", re.M)
ENCODER_CRF = re.compile(rb"(?:x264 - core|x265 \(build)[^\0]*?\scrf=(\d+(?:\.\d+)?)")


def trace_fields(text: str) -> dict[str, int]:
    """The first value of each field ``trace_headers`` printed (the parameter sets come first)."""
    fields: dict[str, int] = {}
    for name, value in TRACE_FIELD.findall(text):
        fields.setdefault(name, int(value))
    return fields


def source_crf_of(text: str) -> float | None:
    """The CRF the source's encoder wrote in its first frame (x264's or x265's settings in an SEI
    message: ``trace_headers`` prints its bytes), None when there is none (another encoder, a bitrate)."""
    payload = bytes(int(value) & 0xFF for value in USER_DATA_BYTE.findall(text))
    found = ENCODER_CRF.search(payload)
    return float(found.group(1)) if found else None


def colour_tags_of(fields: dict[str, int]) -> list[str]:
    """The source's colour description as ffmpeg options (numbers as the standards number them)."""
    tags = []
    if fields.get("colour_description_present_flag"):
        tags += ["-color_primaries", str(fields.get("colour_primaries", 2))]
        tags += ["-color_trc", str(fields.get("transfer_characteristics", 2))]
        tags += ["-colorspace", str(fields.get("matrix_coefficients", 2))]
    return [*tags, "-color_range", "tv"]


@dataclass(frozen=True)
class SpliceParams:
    """What the changed stretches must share with the source to splice into its copied packets."""

    codec: str
    profile: str
    level: str | None
    high_tier: bool
    colour_tags: list[str]
    sar: Fraction | None
    time_base: Fraction
    delay: int
    """The source's B-frame delay in frames (decode ahead of display)."""
    source_crf: float | None = None
    """The CRF the source was encoded with, where its encoder wrote it (``source_crf_of``)."""

    @property
    def encoder(self) -> str:
        return SPLICE_ENCODERS[self.codec]

    @property
    def timescale(self) -> int:
        return self.time_base.denominator // self.time_base.numerator

    def crf(self, quality: int) -> int:
        """The CRF for the changed stretches: the job's quality (chosen with the source's CRF, ``quality.py``)."""
        return crf_for(quality)

    def encoder_args(self, quality: int, preset: str) -> list[str]:
        encoder = self.encoder
        rate = quality_args(encoder, quality) if encoder == "libvpx-vp9" else ["-crf", str(self.crf(quality))]
        args = ["-c:v", encoder, *rate, *preset_args(encoder, preset)]
        args += ["-profile:v", self.profile] + (["-level:v", self.level] if self.level and encoder == "libx264" else [])
        b_frames = {0: "bframes=0", 1: "bframes=1:b-pyramid=none"}.get(self.delay, "bframes=3:b-pyramid=normal")
        if encoder == "libx264":
            args += ["-x264-params", b_frames]
        elif encoder == "libx265":
            b_frames = b_frames.replace("b-pyramid=none", "b-pyramid=0").replace("b-pyramid=normal", "b-pyramid=1")
            level = f":level-idc={self.level}:high-tier={int(self.high_tier)}" if self.level else ""
            args += ["-x265-params", f"{b_frames}:open-gop=0:repeat-headers=1{level}:log-level=error"]
        if self.sar is not None:
            args += ["-vf", f"setsar={self.sar.numerator}/{self.sar.denominator}"]
        encoded_delay = min(self.delay, 2) if encoder != "libvpx-vp9" else 0
        if self.delay > encoded_delay:  # decode timestamps as far ahead as the copied packets' (frames of 1/fps)
            args += ["-bsf:v", f"setts=dts=DTS-{self.delay - encoded_delay}"]
        return args


def params_of(
    codec: str, fields: dict[str, int], packets: Packets, source_crf: float | None = None
) -> SpliceParams | str:
    """The splice parameters, or why the stream cannot be spliced."""
    level: str | None = None
    high_tier = False
    if codec == "h264":
        profile = H264_PROFILES.get(fields.get("profile_idc", -1))
        if profile is None:
            return f"the H.264 profile {fields.get('profile_idc')} is not one libx264 makes in 8-bit 4:2:0"
        if "level_idc" in fields:
            level = f"{fields['level_idc'] / 10:.1f}"
    elif codec == "hevc":
        if fields.get("general_profile_idc") != 1:
            return f"the HEVC profile {fields.get('general_profile_idc')} is not Main"
        profile = "main"
        if "general_level_idc" in fields:
            level = f"{fields['general_level_idc'] / 30:.1f}"
        high_tier = bool(fields.get("general_tier_flag"))
    else:
        if fields.get("profile_low_bit", 0) or fields.get("profile_high_bit", 0):
            return "only VP9 profile 0 is spliced"
        profile = "0"
    colour, delay = colour_tags_of(fields), packets.reorder_delay()
    return SpliceParams(codec, profile, level, high_tier, colour, packets.sar, packets.time_base, delay, source_crf)


@dataclass(frozen=True)
class CopySource:
    """A source whose untouched GOPs can be copied: its packets, cuts and splice parameters, and where a
    GOP's head can be split off and copied (``gops.split_points``)."""

    packets: Packets
    cuts: list[int]
    params: SpliceParams
    splits: np.ndarray


def static_reason(settings: Settings, info: VideoInfo, output: Path) -> str | None:
    """Why copying cannot work for this job from what the settings and the header say, None when it can."""
    codec = info.codec
    if settings.video_temp_frame_format is not None:
        return "frames go through files on disk (--video-temp-frame-format)"
    if codec not in SPLICE_ENCODERS:
        return f"no encoder here makes {codec} to splice into the source"
    chosen = ENCODER_CODECS.get(settings.output_video_encoder)
    if chosen != codec:
        return (
            f"--output-video-encoder {settings.output_video_encoder} makes {chosen}, the source is {codec} "
            f"(choose {SPLICE_ENCODERS[codec]} to copy)"
        )
    quality = settings.output_video_quality
    if codec == "h264" and quality is not None and crf_for(quality) == 0:
        return "quality 100 is lossless H.264 (High 4:4:4), which cannot splice into the source's profile"
    if output.suffix.lower() not in CONTAINERS[codec]:
        return f"a {output.suffix or 'suffix-less'} output cannot hold {codec}"
    if info.vfr:
        return "the frame rate is variable"
    if info.rotation:
        return f"the video is stored rotated ({info.rotation} degrees)"
    if info.pix_fmt != RAW_PIXELS or info.full_range or info.width % 2 or info.height % 2:
        return f"its frames ({info.pix_fmt}, {info.width}x{info.height}) are converted for the pipeline"
    return None


@dataclass(frozen=True)
class EarlyProbes:
    """The ffmpeg runs planning a copy needs besides probing the video, started beside that probe (each
    run stands between the command and the first frame): the first frame's headers (``trace_headers``:
    the splice parameters and the source's CRF, ``quality.py``) and this ffmpeg's encoders."""

    traced: Future[subprocess.CompletedProcess[str]]
    encoders: Future[subprocess.CompletedProcess[str]]

    @classmethod
    def start(cls, pool: Executor, ffmpeg: str, source: Path) -> EarlyProbes:
        traced = pool.submit(run_tool, trace_headers_args(ffmpeg, source), 120)
        return cls(traced, pool.submit(run_tool, encoders_args(ffmpeg), 60))

    def has_encoder(self, encoder: str) -> bool:
        listed = self.encoders.result().stdout.splitlines()
        return any(line.split()[1:2] == [encoder] for line in listed if line.strip())


def probe_copy_source(
    ffmpeg: str, info: VideoInfo, listing: str | None = None, early: EarlyProbes | None = None
) -> CopySource | str:
    """Packets, cuts and splice parameters of the source, or why it cannot be spliced. ``listing``: the
    packets as ``probe.probe_video_listing`` listed them (None: listed here); ``early``: the headers and
    encoders runs already started (None: started here, side by side)."""
    encoder = SPLICE_ENCODERS[info.codec]
    source = Path(info.path)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="copy-probe") as pool:
        runs = early or EarlyProbes.start(pool, ffmpeg, source)
        available = runs.has_encoder(encoder)
        listed = run_tool(packets_args(ffmpeg, source)) if listing is None and available else None
        traced = runs.traced.result()
    if not available:
        return f"this ffmpeg has no {encoder} to encode {info.codec}"
    packets = parse_packets(listed.stdout if listed is not None else listing or "")
    if packets.count != info.frame_count:
        reason = stderr_tail(listed.stderr, 1) if listed is not None else ""
        return f"the packets could not be listed ({reason or 'count differs'})"
    if packets.frame_ticks() is None:
        return "frames do not last a whole, equal number of time-base ticks"
    params = params_of(info.codec, trace_fields(traced.stderr), packets, source_crf_of(traced.stderr))
    if isinstance(params, str):
        return params
    return CopySource(packets, cut_points(packets), params, split_points(packets))

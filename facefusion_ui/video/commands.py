"""Pure ffmpeg command builders: each returns an argument list (never a shell string).

Odd sizes: yuv420p needs even width and height, so the encoder pads one black column or row on the
right or bottom (no source pixel is lost); the output is then one pixel larger on that side.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

QUIET = ["-hide_banner", "-nostdin", "-loglevel", "error"]
SWS = ["-sws_flags", "accurate_rnd+full_chroma_int"]
# Convert BGR to YUV with BT.709 and say so in the file: an untagged file is decoded with another matrix
# by some players (and ffmpeg), which shifted every pixel by ~2 levels per pass in our measurements.
COLOUR_TAGS = ["-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv"]


def fraction_text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def crf_for(quality: int, top: int = 51) -> int:
    """Quality 0-100 (100 best) onto an encoder's CRF scale (0 best); 100 is lossless for x264."""
    return round(top * (100 - quality) / 100)


def quality_args(encoder: str, quality: int) -> list[str]:
    if encoder in ("libx264", "libx265"):
        return ["-crf", str(crf_for(quality))]
    if encoder == "libvpx-vp9":
        return ["-crf", str(crf_for(quality, 63)), "-b:v", "0"]
    if encoder in ("h264_nvenc", "hevc_nvenc"):
        return ["-rc", "vbr", "-cq", str(max(crf_for(quality), 1))]
    if encoder == "libopenh264":
        return ["-b:v", f"{max(quality, 1) * 80}k"]
    return ["-q:v", str(max(1, round(31 * (100 - quality) / 100)))]  # mpeg4: qscale 1 (best) to 31


def preset_args(encoder: str, preset: str) -> list[str]:
    if encoder in ("libx264", "libx265"):
        return ["-preset", preset]
    if encoder in ("h264_nvenc", "hevc_nvenc"):
        nvenc = {
            "ultrafast": "p1",
            "superfast": "p2",
            "veryfast": "p3",
            "faster": "p3",
            "fast": "p4",
            "medium": "p5",
            "slow": "p6",
            "slower": "p7",
            "veryslow": "p7",
        }
        return ["-preset", nvenc[preset]]
    return []


def video_filter_args(width: int, height: int) -> list[str]:
    """BGR -> BT.709 limited-range YUV, padded to even sizes when needed."""
    chain = ["scale=out_color_matrix=bt709:out_range=tv"]
    if width % 2 or height % 2:
        chain.append("pad=ceil(iw/2)*2:ceil(ih/2)*2")
    return ["-vf", ",".join(chain)]


def seek_args(start_time: float) -> list[str]:
    return ["-ss", f"{start_time:.6f}"] if start_time > 0 else []


def decode_args(ffmpeg: str, source: Path, start_time: float, frames: int) -> list[str]:
    """Decode ``frames`` frames from ``start_time`` as raw BGR on stdout, upright (autorotate), one
    output frame per input frame (no duplication or dropping, also for variable frame rate)."""
    return [
        ffmpeg, *QUIET, *SWS, *seek_args(start_time), "-i", str(source), "-map", "0:v:0", "-frames:v", str(frames),
        "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "bgr24", "-",
    ]  # fmt: skip


def encode_args(
    ffmpeg: str,
    width: int,
    height: int,
    fps: Fraction,
    encoder: str,
    quality: int,
    preset: str,
    output: Path,
    input_pattern: str = "-",
) -> list[str]:
    """Encode raw BGR frames from stdin (or an image sequence pattern) into a video-only segment."""
    if input_pattern == "-":
        source = ["-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-framerate", fraction_text(fps)]
    else:
        source = ["-framerate", fraction_text(fps), "-start_number", "0"]
    return [
        ffmpeg, *QUIET, *SWS, *source, "-i", input_pattern, "-an", *video_filter_args(width, height),
        "-c:v", encoder, *quality_args(encoder, quality), *preset_args(encoder, preset),
        "-pix_fmt", "yuv420p", *COLOUR_TAGS, "-y", str(output),
    ]  # fmt: skip


def concat_list(segments: list[Path]) -> str:
    """The concat demuxer's list file: one ``file '...'`` line per segment, quotes escaped."""
    lines = []
    for segment in segments:
        escaped = str(segment.resolve()).replace("'", "'\\''")
        lines.append(f"file '{escaped}'")
    return "\n".join(lines) + "\n"


def assemble_args(
    ffmpeg: str,
    list_file: Path,
    source: Path,
    with_audio: bool,
    audio_start: float,
    duration: float,
    comment: str,
    output: Path,
) -> list[str]:
    """Concatenate the segments (stream copy) and mux the source's audio once over the trimmed range."""
    audio_input = [*seek_args(audio_start), "-t", f"{duration:.6f}", "-i", str(source)] if with_audio else []
    audio_map = ["-map", "1:a:0", "-c:a", "aac", "-b:a", "192k"] if with_audio else []
    return [
        ffmpeg, *QUIET, "-f", "concat", "-safe", "0", "-i", str(list_file), *audio_input,
        "-map", "0:v:0", "-c:v", "copy", *audio_map, "-movflags", "+faststart",
        "-metadata", f"comment={comment}", "-y", str(output),
    ]  # fmt: skip


def header_args(ffmpeg: str, source: Path) -> list[str]:
    """``ffmpeg -i`` alone: it prints the container and stream header on stderr (and exits 1)."""
    return [ffmpeg, "-hide_banner", "-nostdin", "-i", str(source)]


def packets_args(ffmpeg: str, source: Path) -> list[str]:
    """Every video packet's timestamps without decoding (``framecrc`` of a stream copy)."""
    return [ffmpeg, *QUIET, "-i", str(source), "-map", "0:v:0", "-c", "copy", "-f", "framecrc", "-"]


def ffprobe_args(ffprobe: str, source: Path) -> list[str]:
    """Streams and container duration as JSON (the packet timestamps come from ``packets_args``)."""
    return [
        ffprobe, "-v", "error", "-show_entries",
        "stream=index,codec_type,codec_name,width,height,pix_fmt,r_frame_rate:stream_side_data=rotation"
        ":format=duration", "-of", "json", str(source),
    ]  # fmt: skip

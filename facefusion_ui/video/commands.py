"""Pure ffmpeg command builders: each returns an argument list (never a shell string).

Frames travel between ffmpeg and the pipeline as raw 8-bit 4:2:0 limited-range YUV (``video/yuv.py``):
the decoder converts only what is not already that (full range, 10 bits, 4:4:4, RGB), the encoder takes
it as is. Odd sizes: 4:2:0 needs even width and height, so the decoder pads one black column or row on
the right or bottom (no source pixel is lost); the output is then one pixel larger on that side.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

QUIET = ["-hide_banner", "-nostdin", "-loglevel", "error"]
SWS = ["-sws_flags", "accurate_rnd+full_chroma_int"]
RAW_PIXELS = "yuv420p"
RGB_FAMILY = ("rgb", "bgr", "gbr", "argb", "abgr", "0rgb", "0bgr", "pal8")


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


def decode_filter(width: int, height: int, pix_fmt: str, matrix: str, full_range: bool = False) -> str:
    """Nothing for 8-bit limited-range 4:2:0 of even size (most videos: frames leave the decoder untouched);
    else limited range, an RGB source converted with ``matrix`` (YUV sources keep their values: no matrix
    conversion), odd sides padded to even."""
    if pix_fmt == RAW_PIXELS and not full_range and width % 2 == 0 and height % 2 == 0:
        return ""
    scale = "scale=out_range=tv"
    if pix_fmt.startswith(RGB_FAMILY):
        scale += f":out_color_matrix={matrix}"
    chain = ["pad=ceil(iw/2)*2:ceil(ih/2)*2"] if width % 2 or height % 2 else []
    return ",".join([*chain, scale])


def seek_args(start_time: float) -> list[str]:
    return ["-ss", f"{start_time:.6f}"] if start_time > 0 else []


def decode_args(
    ffmpeg: str,
    source: Path,
    start_time: float,
    frames: int,
    video_filter: str,
    output_queue: int | None = None,
    threads: int | None = None,
) -> list[str]:
    """Decode ``frames`` frames from ``start_time`` as raw YUV on stdout, upright (autorotate), one output
    frame per input frame (no duplication or dropping, also for variable frame rate); ``output_queue``:
    how many decoded frames ffmpeg may queue to its output (its own default when None); ``threads``: the
    decoder's threads (ffmpeg's own choice when None)."""
    return [
        ffmpeg,
        *QUIET,
        *SWS,
        *seek_args(start_time),
        *(["-threads", str(threads)] if threads is not None else []),
        "-i",
        str(source),
        "-map",
        "0:v:0",
        "-frames:v",
        str(frames),
        *(["-vf", video_filter] if video_filter else []),
        *(["-thread_queue_size", str(output_queue)] if output_queue is not None else []),
        "-fps_mode",
        "passthrough",
        "-f",
        "rawvideo",
        "-pix_fmt",
        RAW_PIXELS,
        "-",
    ]


def raw_frames_input(width: int, height: int, fps: Fraction, colour_tags: list[str]) -> list[str]:
    """The input side of an encoder fed raw YUV frames on stdin, tagged with their colour matrix."""
    size = ["-s", f"{width}x{height}", "-framerate", fraction_text(fps)]
    return ["-f", "rawvideo", "-pix_fmt", RAW_PIXELS, *size, *colour_tags, "-i", "-"]


def encode_args(
    ffmpeg: str,
    width: int,
    height: int,
    fps: Fraction,
    encoder: str,
    quality: int,
    preset: str,
    colour_tags: list[str],
    output: Path,
    video_filter: str = "",
) -> list[str]:
    """Encode raw YUV frames (even ``width`` x ``height``) from stdin into a video-only segment, tagged with
    the colour matrix the frames were made with (an untagged file is decoded with another matrix by some
    players and by ffmpeg). The tags go on the input too: tagged only on the output, ffmpeg would convert
    every frame from the matrix it assumes for untagged input (slower, and shifted colours).
    ``video_filter``: applied before encoding (the output size's scale), '' for none."""
    return [
        ffmpeg,
        *QUIET,
        *raw_frames_input(width, height, fps, colour_tags),
        "-an",
        *(["-vf", video_filter] if video_filter else []),
        "-c:v",
        encoder,
        *quality_args(encoder, quality),
        *preset_args(encoder, preset),
        "-pix_fmt",
        RAW_PIXELS,
        *colour_tags,
        "-y",
        str(output),
    ]


MP4_FAMILY = (".mp4", ".m4v", ".mov")


def concat_list(segments: list[Path]) -> str:
    """The concat demuxer's list file: one ``file '...'`` line per segment, quotes escaped."""
    lines = []
    for segment in segments:
        escaped = str(segment.resolve()).replace("'", "'\\''")
        lines.append(f"file '{escaped}'")
    return "\n".join(lines) + "\n"


COPYABLE_AUDIO = {
    ".mp4": ("aac", "mp3", "alac", "ac3", "eac3", "opus", "flac"),
    ".m4v": ("aac", "mp3", "alac", "ac3", "eac3"),
    ".mov": ("aac", "mp3", "alac", "ac3", "eac3", "pcm_s16le", "pcm_s24le"),
    ".mkv": ("aac", "mp3", "alac", "ac3", "eac3", "opus", "flac", "vorbis", "pcm_s16le", "pcm_s24le"),
    ".webm": ("opus", "vorbis"),
}
"""Source audio codecs each output container takes as they are."""


def audio_codec_args(source_codec: str | None, output: Path, trimmed: bool) -> list[str]:
    """The whole source audio is copied when the output container takes its codec; trimmed audio is
    re-encoded so it starts and ends on the exact sample (a copy cuts at packet boundaries)."""
    suffix = output.suffix.lower()
    if not trimmed and source_codec in COPYABLE_AUDIO.get(suffix, ()):
        return ["-c:a", "copy"]
    if suffix == ".webm":
        return ["-c:a", "libopus", "-b:a", "160k"]
    return ["-c:a", "aac", "-b:a", "192k"]


def concat_input(list_file: Path) -> list[str]:
    """The concat demuxer reading ``list_file`` (absolute paths allowed)."""
    return ["-f", "concat", "-safe", "0", "-i", str(list_file)]


def assemble_args(
    ffmpeg: str,
    list_file: Path,
    source: Path,
    audio: list[str] | None,
    audio_start: float,
    duration: float,
    comment: str,
    output: Path,
    audio_filter: str = "",
    timescale: int | None = None,
) -> list[str]:
    """Concatenate the segments (stream copy) and mux the source's audio once over the trimmed range;
    ``audio``: the codec arguments (``audio_codec_args``), None when the source has no audio;
    ``audio_filter``: applied to the audio (it needs re-encoding codec arguments);
    ``timescale``: the video track's time base (MP4 and MOV outputs) when it must stay the source's."""
    audio_input = [*seek_args(audio_start), "-t", f"{duration:.6f}", "-i", str(source)] if audio is not None else []
    audio_map = ["-map", "1:a:0", *audio, *(["-af", audio_filter] if audio_filter else [])] if audio is not None else []
    return [
        ffmpeg,
        *QUIET,
        *concat_input(list_file),
        *audio_input,
        "-map",
        "0:v:0",
        "-c:v",
        "copy",
        *(["-video_track_timescale", str(timescale)] if timescale and output.suffix.lower() in MP4_FAMILY else []),
        *audio_map,
        "-movflags",
        "+faststart",
        "-metadata",
        f"comment={comment}",
        "-y",
        str(output),
    ]


def header_args(ffmpeg: str, source: Path) -> list[str]:
    """``ffmpeg -i`` alone: it prints the container and stream header on stderr (and exits 1)."""
    return [ffmpeg, "-hide_banner", "-nostdin", "-i", str(source)]


def packets_args(ffmpeg: str, source: Path) -> list[str]:
    """Every video packet's timestamps without decoding (``framecrc`` of a stream copy)."""
    return [ffmpeg, *QUIET, "-i", str(source), "-map", "0:v:0", "-c", "copy", "-f", "framecrc", "-"]


def ffprobe_args(ffprobe: str, source: Path) -> list[str]:
    """Streams and container duration as JSON (the packet timestamps come from ``packets_args``)."""
    return [
        ffprobe,
        "-v",
        "error",
        "-show_entries",
        "stream=index,codec_type,codec_name,width,height,pix_fmt,color_space,r_frame_rate:stream_side_data=rotation"
        ":format=duration",
        "-of",
        "json",
        str(source),
    ]


def trace_headers_args(ffmpeg: str, source: Path) -> list[str]:
    """The stream's parameter sets and first frame header, field by field (``trace_headers``) on stderr."""
    return [
        ffmpeg,
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "info",
        "-i",
        str(source),
        "-map",
        "0:v:0",
        "-c",
        "copy",
        "-bsf:v",
        "trace_headers",
        "-frames:v",
        "1",
        "-f",
        "null",
        "-",
    ]


IN_BAND_PARAMETERS = {"h264": "h264_mp4toannexb", "hevc": "hevc_mp4toannexb"}
"""The filter that repeats a codec's parameter sets before every keyframe, so that stretches encoded
with other parameter sets can follow and precede it (VP9 carries everything in its frame headers)."""


def copy_piece_args(
    ffmpeg: str, source: Path, codec: str, start_time: float, start_pts: int, packets: int, timescale: int, output: Path
) -> list[str]:
    """``packets`` packets of the source's video from the keyframe shown at ``start_time``, copied as they
    are. The seek may land on an earlier keyframe (some demuxers seek a little before the time asked), so
    the packets shown before the keyframe's own ``start_pts`` are dropped: at a clean cut those are exactly
    the packets before it. Original timestamps (``-copyts``) move back by ``start_pts``: the piece starts at 0."""
    filters = [f"noise=drop=lt(pts\\,{start_pts})"]
    filters += [IN_BAND_PARAMETERS[codec]] if codec in IN_BAND_PARAMETERS else []
    filters.append(f"setts=pts=PTS-{start_pts}:dts=DTS-{start_pts}")
    return [
        ffmpeg,
        *QUIET,
        *seek_args(start_time),
        "-copyts",
        "-i",
        str(source),
        "-map",
        "0:v:0",
        "-c:v",
        "copy",
        "-frames:v",
        str(packets),
        "-bsf:v",
        ",".join(filters),
        "-video_track_timescale",
        str(timescale),
        "-f",
        "mp4",
        "-y",
        str(output),
    ]


def splice_encode_args(
    ffmpeg: str,
    width: int,
    height: int,
    fps: Fraction,
    codec_args: list[str],
    colour_tags: list[str],
    timescale: int,
    output: Path,
) -> list[str]:
    """Encode raw YUV frames from stdin into a piece that splices into copied ones: ``codec_args`` (the
    source's codec, profile, level, B-frame delay, SAR; ``splice.SpliceParams.encoder_args``), the source's
    colour tags (on the input too, so that no conversion happens) and its time base."""
    return [
        ffmpeg,
        *QUIET,
        *raw_frames_input(width, height, fps, colour_tags),
        "-an",
        *codec_args,
        "-pix_fmt",
        RAW_PIXELS,
        *colour_tags,
        "-video_track_timescale",
        str(timescale),
        "-f",
        "mp4",
        "-y",
        str(output),
    ]


def join_pieces_args(ffmpeg: str, list_file: Path, timescale: int, output: Path) -> list[str]:
    """Join a chunk's copied and encoded pieces (concat demuxer, stream copy) into its segment."""
    return [
        ffmpeg,
        *QUIET,
        *concat_input(list_file),
        "-map",
        "0:v:0",
        "-c",
        "copy",
        "-video_track_timescale",
        str(timescale),
        "-f",
        "mp4",
        "-y",
        str(output),
    ]


def encoders_args(ffmpeg: str) -> list[str]:
    return [ffmpeg, "-hide_banner", "-nostdin", "-encoders"]

"""The pure ffmpeg command builders: argument lists checked as data, plus the header parser they rely on."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from facefusion_ui.video.commands import (
    assemble_args,
    audio_codec_args,
    crf_for,
    decode_args,
    decode_filter,
    encode_args,
    quality_args,
)
from facefusion_ui.video.probe import colour_space_of, parse_ffmpeg_header
from facefusion_ui.video.yuv import ColourMatrix


def value_after(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_decoder_gives_raw_yuv_frames_one_per_source_frame() -> None:
    args = decode_args("ffmpeg", Path("in.mp4"), 2.5, 40, "scale=out_range=tv")
    assert args[0] == "ffmpeg" and value_after(args, "-ss") == "2.500000"
    assert args.index("-ss") < args.index("-i")  # input seeking
    assert value_after(args, "-frames:v") == "40" and value_after(args, "-fps_mode") == "passthrough"
    assert value_after(args, "-pix_fmt") == "yuv420p" and value_after(args, "-f") == "rawvideo" and args[-1] == "-"
    assert "-ss" not in decode_args("ffmpeg", Path("in.mp4"), 0.0, 1, "null")
    assert "-vf" not in decode_args("ffmpeg", Path("in.mp4"), 0.0, 1, "")  # frames leave the decoder as they are
    assert "-thread_queue_size" not in args  # ffmpeg's own output queue unless asked
    queued = decode_args("ffmpeg", Path("in.mp4"), 0.0, 1, "", output_queue=1)
    assert value_after(queued, "-thread_queue_size") == "1" and queued.index("-thread_queue_size") > queued.index("-i")


def test_decoder_filter_converts_only_what_must_be() -> None:
    assert decode_filter(1280, 720, "yuv420p", "bt709") == ""  # most videos: nothing to convert
    assert decode_filter(1280, 720, "yuv420p", "bt709", full_range=True) == "scale=out_range=tv"
    assert decode_filter(1280, 720, "yuvj420p", "bt709") == "scale=out_range=tv"
    assert decode_filter(1280, 720, "yuv420p10le", "bt709") == "scale=out_range=tv"
    assert decode_filter(641, 479, "yuv444p", "bt601") == "pad=ceil(iw/2)*2:ceil(ih/2)*2,scale=out_range=tv"
    # YUV sources keep their values (no matrix conversion); RGB ones are converted with our matrix
    assert decode_filter(640, 480, "rgb24", "bt601") == "scale=out_range=tv:out_color_matrix=bt601"
    assert decode_filter(640, 480, "gbrp", "bt709").endswith("out_color_matrix=bt709")


def test_encoder_takes_raw_yuv_tagged_on_input_and_output() -> None:
    tags = ColourMatrix("bt709").output_tags()
    args = encode_args("ffmpeg", 640, 480, Fraction(30000, 1001), "libx264", 80, "veryfast", tags, Path("o.mp4"))
    source = args[: args.index("-i")]
    assert value_after(source, "-pix_fmt") == "yuv420p" and value_after(source, "-s") == "640x480"
    assert value_after(source, "-framerate") == "30000/1001"
    # tagged on the input too, else ffmpeg converts from the matrix it assumes for untagged frames
    assert value_after(source, "-colorspace") == "bt709" and value_after(source, "-color_range") == "tv"
    output = args[args.index("-i") :]
    assert value_after(output, "-colorspace") == "bt709" and value_after(output, "-crf") == str(crf_for(80))
    assert "-an" in output and args[-1] == "o.mp4"
    assert "-vf" not in args  # frames arrive in the output format: no conversion in the encoder
    assert value_after(ColourMatrix("bt601").output_tags(), "-colorspace") == "smpte170m"


def test_quality_maps_onto_each_encoder_scale() -> None:
    assert crf_for(100) == 0 and crf_for(0) == 51 and crf_for(55) == 23
    assert quality_args("libvpx-vp9", 100) == ["-crf", "0", "-b:v", "0"]
    assert quality_args("h264_nvenc", 100)[-1] == "1"  # nvenc's cq 0 means automatic, not lossless
    assert quality_args("mpeg4", 100) == ["-q:v", "1"]


@pytest.mark.parametrize(
    ("codec", "output", "trimmed", "expected"),
    [
        ("aac", "out.mp4", False, ["-c:a", "copy"]),
        ("aac", "out.mp4", True, ["-c:a", "aac", "-b:a", "192k"]),  # sample-exact cut
        ("pcm_s16le", "out.mp4", False, ["-c:a", "aac", "-b:a", "192k"]),  # mp4 does not take PCM
        ("pcm_s16le", "out.mov", False, ["-c:a", "copy"]),
        ("aac", "out.webm", False, ["-c:a", "libopus", "-b:a", "160k"]),
        ("opus", "OUT.WEBM", False, ["-c:a", "copy"]),
        (None, "out.mkv", False, ["-c:a", "aac", "-b:a", "192k"]),
    ],
)
def test_audio_is_copied_when_the_container_takes_it(
    codec: str | None, output: str, trimmed: bool, expected: list[str]
) -> None:
    assert audio_codec_args(codec, Path(output), trimmed) == expected


def test_assembly_copies_video_and_maps_audio_once() -> None:
    args = assemble_args("ffmpeg", Path("list.txt"), Path("in.mp4"), ["-c:a", "copy"], 1.25, 10.0, "c", Path("o.mp4"))
    assert value_after(args, "-f") == "concat" and value_after(args, "-c:v") == "copy"
    second_input = args[args.index("list.txt") :]
    assert value_after(second_input, "-ss") == "1.250000" and value_after(second_input, "-t") == "10.000000"
    assert value_after(args, "-c:a") == "copy" and value_after(args, "-movflags") == "+faststart"
    silent = assemble_args("ffmpeg", Path("list.txt"), Path("in.mp4"), None, 0.0, 10.0, "c", Path("o.mp4"))
    assert silent.count("-i") == 1 and "-c:a" not in silent


def test_header_parser_reads_colour_space_and_audio_codec() -> None:
    text = (
        "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'a.mp4':\n  Duration: 00:00:03.00, start: 0.000000\n"
        "  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, progressive), "
        "1920x1080 [SAR 1:1 DAR 16:9], 30 fps\n  Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 48000 Hz"
    )
    header = parse_ffmpeg_header(text)
    assert header is not None and (header.width, header.height) == (1920, 1080)
    assert header.colour_space == "bt709" and header.audio_codec == "aac" and header.pix_fmt == "yuv420p"
    assert colour_space_of("pc, bt470bg/unknown/unknown") == "bt470bg"
    assert not header.full_range
    full = parse_ffmpeg_header(text.replace("yuv420p(tv,", "yuv420p(pc,"))
    assert full is not None and full.full_range
    assert colour_space_of("progressive") is None and colour_space_of(None) is None
    untagged = text.replace("(tv, bt709, progressive)", "(progressive)").split("\n  Stream #0:1")[0]
    parsed = parse_ffmpeg_header(untagged)
    assert parsed is not None and parsed.colour_space is None and parsed.audio_codec is None

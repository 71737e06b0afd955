"""Untouched GOPs copied, not re-encoded: generated clips (H.264 in MP4 and MKV, HEVC, VP9) with a face
only in the middle come out with the source's frame count and timestamps, no decode error, every frame
outside the re-encoded GOPs bit-exact, the face frames swapped; a killed run resumes to the same bytes;
Chromium plays past every boundary; a codec without a splicing encoder falls back and says why; a
camera pan with face-like shapes and no face is copied whole. Also
the pure parts: packet parsing, clean cuts, GOPs, chunks on keyframes, the command builders."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import FfmpegError, InputError
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.pipeline import FrameAnalysis, FramePipeline
from facefusion_ui.presets import apply_preset
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.registry import ProcessorEntry, ProcessorRegistry
from facefusion_ui.state_manager import Settings, StateManager
from facefusion_ui.types import Frame
from facefusion_ui.video.chunks import Chunk
from facefusion_ui.video.commands import copy_piece_args, join_pieces_args, splice_encode_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.gops import Packets, cut_points, gops_in, parse_packets, plan_chunks_on_cuts, split_points
from facefusion_ui.video.pieces import ChunkCopy, PieceSink
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.sparse import NOT_DECODED
from facefusion_ui.video.splice import SpliceParams, probe_copy_source, source_crf_of, trace_fields
from facefusion_ui.video.writer import FrameWriter
from facefusion_ui.video_job import VideoPlan
from tests.conftest import ROOT
from tests.support import media, videos

FRAMES = 150  # 6 GOPs of 25 frames at 25 fps; the face is in view for frames 60-89 (GOPs 2 and 3)
FACE = (60, 90)
GOP = 25
ENCODERS = {
    "libx264": [
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-g",
        str(GOP),
        "-keyint_min",
        str(GOP),
        "-sc_threshold",
        "0",
    ],
    "libx265": [
        "-c:v",
        "libx265",
        "-preset",
        "veryfast",
        "-x265-params",
        f"keyint={GOP}:min-keyint={GOP}:open-gop=0:scenecut=0:log-level=error",
    ],
    "libvpx-vp9": ["-c:v", "libvpx-vp9", "-g", str(GOP), "-deadline", "realtime", "-cpu-used", "8"],
    "mpeg4": ["-c:v", "mpeg4", "-g", str(GOP)],
}


def ffmpeg() -> str:
    return resolve_ffmpeg().path


def has_encoder(name: str) -> bool:
    listed = subprocess.run([ffmpeg(), "-hide_banner", "-encoders"], capture_output=True, text=True, check=True)
    return any(line.split()[1:2] == [name] for line in listed.stdout.splitlines() if line.strip())


def face_in_the_middle(index: int) -> np.ndarray:
    face, blank = videos.moving_face(320, 240, FRAMES), videos.blank(320, 240)
    return face(index) if FACE[0] <= index < FACE[1] else blank(index)


def make_clip(folder: Path, name: str, encoder: str) -> Path:
    """A clip as a camera or an editor writes it: fixed GOPs of 1 s, B-frames, audio."""
    raw = videos.write_video(folder / f"{name}.raw.mkv", face_in_the_middle, FRAMES, audio=True)
    path = folder / name
    audio = ["-c:a", "libopus"] if path.suffix == ".webm" else ["-c:a", "copy"]
    command = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-i", str(raw), *ENCODERS[encoder]]
    subprocess.run([*command, "-pix_fmt", "yuv420p", *audio, "-y", str(path)], check=True)
    raw.unlink()
    return path


def frame_md5s(path: Path) -> list[str]:
    listed = subprocess.run(
        [ffmpeg(), "-hide_banner", "-loglevel", "error", "-i", str(path), "-map", "0:v:0", "-f", "framemd5", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split(",")[-1].strip() for line in listed.splitlines() if line and not line.startswith("#")]


def split_before(clip: Path, frame: int) -> int:
    """The last clean split at or before ``frame`` (``gops.split_points``): where the face's encoder opens."""
    source = probe_copy_source(ffmpeg(), probe_video(clip))
    assert not isinstance(source, str)
    return max(index for index in range(frame + 1) if source.splits[index])


def decode_errors(path: Path) -> str:
    completed = subprocess.run(
        [ffmpeg(), "-hide_banner", "-v", "error", "-i", str(path), "-f", "null", "-"], capture_output=True, text=True
    )
    assert completed.returncode == 0
    return completed.stderr


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("copy-face") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def settings(**values: Any) -> Settings:
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"output_video_preset": "ultrafast", **values})
    return state.snapshot()


SPARSE_COUNTED = ("frames_not_read", "frames_read", "decoder_runs")
"""What sparse decoding counts (``test_sparse_decoding.py``)."""


def copy_counts(stats: dict[str, Any]) -> dict[str, Any]:
    """The copy path's counts, without those of sparse decoding (``SPARSE_COUNTED``)."""
    return {key: value for key, value in stats["copy"].items() if key not in SPARSE_COUNTED}


def run(face: Path, clip: Path, output: Path, runtime: ModelRuntime, **values: Any) -> dict[str, Any]:
    job = SwapJob.of(settings(**values), [face], clip, output)
    result = process(job, RunContext(runtime=runtime, work_dir=output.parent / f"work-{output.stem}"))
    return dict(result.stats)


CASES = [("clip.mp4", "libx264", "out.mp4"), ("clip.mkv", "libx264", "out.mkv"), ("hevc.mp4", "libx265", "out.mp4")]
CASES += [("vp9.webm", "libvpx-vp9", "out.webm")]


@pytest.mark.parametrize(("name", "encoder", "output_name"), CASES)
def test_untouched_gops_are_copied_bit_exact(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path, name: str, encoder: str, output_name: str
) -> None:
    if not has_encoder(encoder):
        pytest.skip(f"this ffmpeg has no {encoder}")
    clip = make_clip(tmp_path, name, encoder)
    output = tmp_path / output_name
    stats = run(face, clip, output, shared_runtime, output_video_encoder=encoder)
    split = split_before(clip, FACE[0])
    assert 2 * GOP < split <= FACE[0], "the head of the face's first GOP is copied"
    head = split - 2 * GOP
    assert copy_counts(stats) == {
        "gops_copied": 4,
        "gops_encoded": 2,
        "frames_copied": 100 + head,
        "fallback_reason": None,
    }
    assert stats["faces_swapped"] == FACE[1] - FACE[0]
    source, result = probe_video(clip), probe_video(output)
    assert result.frame_count == source.frame_count == FRAMES
    assert np.allclose(result.frame_times, source.frame_times, atol=1e-6)
    assert result.codec == source.codec and (result.width, result.height) == (source.width, source.height)
    assert decode_errors(output) == ""
    want, got = frame_md5s(clip), frame_md5s(output)
    encoded = range(split, 4 * GOP)
    assert [i for i in range(FRAMES) if want[i] != got[i]] != []
    assert all(want[i] == got[i] for i in range(FRAMES) if i not in encoded), "untouched frames are bit-exact"
    assert all(want[i] != got[i] for i in range(*FACE)), "the face frames are swapped"
    assert result.has_audio


class LeavesFacesAlone:
    """A face processor that is called on every face frame and changes no pixel (as the swapper does with
    a face it cannot map or one turned too far)."""

    name = "leaves_faces_alone"
    calls = 0

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings

    def required_models(self) -> tuple[str, ...]:
        return ()

    def pre_check(self) -> list[str]:
        return []

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        LeavesFacesAlone.calls += 1
        return np.array(frame, copy=True)

    def release(self) -> None:
        pass


def test_gops_whose_frames_no_processor_changed_are_copied(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    registry = ProcessorRegistry(
        [ProcessorEntry("leaves_faces_alone", f"{__name__}:LeavesFacesAlone", "plugin from test")]
    )
    job = SwapJob.of(settings(processors=["leaves_faces_alone"]), [face], clip, tmp_path / "out.mp4")
    LeavesFacesAlone.calls = 0
    stats = process(job, RunContext(runtime=shared_runtime, work_dir=tmp_path / "work", registry=registry)).stats
    assert LeavesFacesAlone.calls == FACE[1] - FACE[0]  # it was asked about every face frame
    assert copy_counts(stats) == {"gops_copied": 6, "gops_encoded": 0, "frames_copied": FRAMES, "fallback_reason": None}
    assert frame_md5s(tmp_path / "out.mp4") == frame_md5s(clip)


def test_the_face_debugger_draws_on_the_face_frames_alone(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The debugger is asked with the whole analysis: the frames without any face go straight to the
    writer (no colour conversion, no processor call) and their GOPs are copied."""
    applied: list[int] = []
    apply = FramePipeline.apply

    def counted(pipeline: FramePipeline, frame: Frame, analysis: FrameAnalysis, index: int = 0, *rest: Any) -> Frame:
        applied.append(index)
        return apply(pipeline, frame, analysis, index, *rest)

    monkeypatch.setattr(FramePipeline, "apply", counted)
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    stats = run(face, clip, tmp_path / "out.mp4", shared_runtime, processors=["face_debugger"])
    assert sorted(applied) == list(range(*FACE))
    assert stats["faces_annotated"] == FACE[1] - FACE[0]
    assert copy_counts(stats) == {
        "gops_copied": 4,
        "gops_encoded": 2,
        "frames_copied": 100 + split_before(clip, FACE[0]) - 2 * GOP,
        "fallback_reason": None,
    }


def test_a_camera_pan_without_faces_is_copied_whole_with_blazeface(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """The benchmark's panning shot past a rocket's nose cone and a galaxy, which BlazeFace alone takes for
    faces: confirmed in a crop, they are not, so no GOP is re-encoded and no frame drawn on."""
    scene = videos.panning_scene(1280, 720, 900)
    frames = 200
    raw = videos.write_video(tmp_path / "pan.raw.mkv", lambda index: scene(370 + index), frames)
    clip = tmp_path / "pan.mp4"
    command = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-i", str(raw), *ENCODERS["libx264"]]
    subprocess.run([*command, "-pix_fmt", "yuv420p", "-y", str(clip)], check=True)
    stats = run(face, clip, tmp_path / "out.mp4", shared_runtime, face_detector_model="mediapipe_blazeface")
    assert stats["faces_detected"] == 0 and stats["faces_swapped"] == 0
    assert copy_counts(stats) == {"gops_copied": 8, "gops_encoded": 0, "frames_copied": frames, "fallback_reason": None}
    assert frame_md5s(tmp_path / "out.mp4") == frame_md5s(clip)


def test_a_codec_without_a_splicing_encoder_falls_back_and_says_so(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    clip = make_clip(tmp_path, "mpeg4.mkv", "mpeg4")
    output = tmp_path / "out.mp4"
    stats = run(face, clip, output, shared_runtime)
    assert stats["copy"]["gops_copied"] == 0 and stats["copy"]["frames_copied"] == 0
    assert stats["copy"]["fallback_reason"] == "no encoder here makes mpeg4 to splice into the source"
    assert probe_video(output).frame_count == FRAMES
    with pytest.raises(InputError, match=r"no encoder here makes mpeg4.*--video-copy-unchanged on"):
        run(face, clip, tmp_path / "on.mp4", shared_runtime, video_copy_unchanged="on")


def test_off_encodes_everything_and_trimming_encodes_the_cut_gops(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    stats = run(face, clip, tmp_path / "off.mp4", shared_runtime, video_copy_unchanged="off")
    assert stats["copy"]["fallback_reason"] == "--video-copy-unchanged off" and stats["copy"]["gops_copied"] == 0
    trimmed = tmp_path / "trimmed.mp4"
    stats = run(face, clip, trimmed, shared_runtime, trim_frame_start=10, trim_frame_end=140)
    # frames 10-24 and 125-139 are parts of GOPs: encoded; GOPs 1 and 4 are copied, and GOP 2's head
    split = split_before(clip, FACE[0])
    counts = {"gops_copied": 2, "gops_encoded": 4, "frames_copied": 50 + split - 2 * GOP, "fallback_reason": None}
    assert copy_counts(stats) == counts
    want, got = frame_md5s(clip)[10:140], frame_md5s(trimmed)
    assert len(got) == 130 and decode_errors(trimmed) == ""
    assert got[15 : split - 10] == want[15 : split - 10] and got[90:115] == want[90:115]


def cli(face: Path, clip: Path, output: Path, home: Path, hold: str = "") -> subprocess.Popen[str]:
    command = [sys.executable, str(ROOT / "run.py"), "process", "-s", str(face), "-t", str(clip), "-o", str(output)]
    command += ["--video-chunk-size", "1", "--output-video-preset", "ultrafast", "--json"]
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), "FACEFUSION_UI_INJECT_FAULT": hold}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def finished_chunks(home: Path) -> int:
    for manifest in home.glob("work/*/manifest.json"):
        try:
            return len(json.loads(manifest.read_text())["done"])
        except (ValueError, KeyError, OSError):
            return 0
    return 0


def test_a_killed_run_resumes_to_the_same_bytes(face: Path, tmp_path: Path) -> None:
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    whole = tmp_path / "whole.mp4"
    first = cli(face, clip, whole, tmp_path / "home-whole")
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert json.loads(out)["chunks_total"] == 6  # 1 s chunks, cut on the 1 s GOPs
    home, output = tmp_path / "home", tmp_path / "resumed.mp4"
    release = tmp_path / "release"  # never created: the run is held at chunk 4 (3 finished) until killed
    running = cli(face, clip, output, home, hold=f"hold:chunk=4,until={release}")
    deadline = time.monotonic() + 300
    while not release.with_name("release.held").exists():
        assert running.poll() is None and time.monotonic() < deadline, running.communicate()
        time.sleep(0.05)
    running.send_signal(signal.SIGKILL)
    running.wait()
    kept = finished_chunks(home)
    assert kept == 3
    again = cli(face, clip, output, home)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    summary = json.loads(out)
    head = split_before(clip, FACE[0]) - 2 * GOP
    assert summary["chunks_skipped"] == kept and summary["copy"]["frames_copied"] == 100 + head
    assert hashlib.sha256(output.read_bytes()).hexdigest() == hashlib.sha256(whole.read_bytes()).hexdigest()


PLAYER = """<!doctype html><video id="v" muted playsinline src="{name}"></video>"""


def test_chromium_plays_past_every_boundary(face: Path, shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    """The page's player is a plain ``<video>``: it plays the spliced file through every copied/encoded
    boundary (frames 50 and 100), and seeking to just before each boundary plays on across it."""
    from playwright.sync_api import sync_playwright

    from tests.test_ui import BROWSER_ARGS, CHROMIUM

    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    output = tmp_path / "out.mp4"
    assert run(face, clip, output, shared_runtime)["copy"]["gops_copied"] == 4
    (tmp_path / "player.html").write_text(PLAYER.format(name=output.name), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page()
        page.goto((tmp_path / "player.html").as_uri())
        for start in (0.0, 1.9, 3.9):  # the boundaries are at 2 s and 4 s
            page.evaluate("t => { const v = document.getElementById('v'); v.currentTime = t; v.play(); }", start)
            page.wait_for_function(
                "t => { const v = document.getElementById('v'); return v.error || v.ended || v.currentTime > t; }",
                arg=min(start + 1.0, 5.5),
                timeout=60_000,
            )
            state = page.evaluate(
                "() => { const v = document.getElementById('v'); const q = v.getVideoPlaybackQuality();"
                " return {error: v.error && v.error.message, decoded: q.totalVideoFrames, t: v.currentTime}; }"
            )
            assert state["error"] is None, state
        page.evaluate("() => { const v = document.getElementById('v'); v.currentTime = 0; v.play(); }")
        page.wait_for_function("() => document.getElementById('v').ended", timeout=60_000)
        quality = page.evaluate("() => document.getElementById('v').getVideoPlaybackQuality().totalVideoFrames")
        assert quality >= FRAMES
        browser.close()


# the pure parts ------------------------------------------------------------------------------------

FRAMECRC = """#tb 0: 1/12800
#sar 0: 1/1
0,      -1024,          0,      512,     4739, 0xd120af3f
0,       -512,       2048,      512,     2193, 0xc0163ddb, F=0x0
0,          0,       1024,      512,     1281, 0x85e0729a, F=0x0
0,        512,        512,      512,      818, 0x47c6a8ef, F=0x0
0,       1024,       1536,      512,      932, 0x2fc3cd85, F=0x0
0,       1536,       2560,      512,      900, 0x2fc3cd85
0,       2048,       3072,      512,      100, 0x2fc3cd85, F=0x0
"""


def test_packets_are_parsed_with_keyframes_delay_and_aspect() -> None:
    packets = parse_packets(FRAMECRC)
    assert packets.time_base == Fraction(1, 12800) and packets.sar == Fraction(1)
    assert packets.count == 7 and packets.key.tolist() == [True, False, False, False, False, True, False]
    assert packets.frame_ticks() == 512 and packets.reorder_delay() == 2
    assert cut_points(packets) == [0, 5]


def test_an_open_gop_keyframe_is_no_cut() -> None:
    # the keyframe at pts 2048 is followed in decode order by a frame shown before it (pts 1536)
    pts = np.array([0, 1024, 512, 2048, 1536, 2560])
    packets = Packets(Fraction(1, 12800), pts - 1024, pts, np.array([1, 0, 0, 1, 0, 0], bool))
    assert cut_points(packets) == [0]
    # frames 0 | 2 1 | 4 3 | 5 in decode order: the splits fall between the groups
    assert split_points(packets).tolist() == [True, True, False, True, False, True]


def test_a_gop_splits_between_its_b_frame_groups() -> None:
    """Decode order 0 | 4 2 1 3 | 5 | 6 (frames): before frame 1 every packet so far shows first, and
    before 5 and 6; not inside the group of 4 whose B-frames show before it."""
    assert split_points(parse_packets(FRAMECRC)).tolist() == [True, True, False, False, False, True, True]
    assert split_points(Packets(Fraction(1, 25), np.arange(0), np.arange(0), np.zeros(0, bool))).tolist() == []


def test_gops_over_a_range_and_chunks_on_cuts() -> None:
    cuts = [0, 25, 50, 75]
    assert gops_in(cuts, 10, 90, 100) == [
        *[gop for gop in gops_in(cuts, 10, 25, 100)],
        *gops_in(cuts, 25, 75, 100),
        *gops_in(cuts, 75, 90, 100),
    ]
    parts = gops_in(cuts, 10, 90, 100)
    assert [(g.start, g.end, g.whole) for g in parts] == [
        (10, 25, False),
        (25, 50, True),
        (50, 75, True),
        (75, 90, False),
    ]
    chunks = plan_chunks_on_cuts(0, 100, 40, cuts)
    assert [(c.start, c.end) for c in chunks] == [(0, 50), (50, 100)]
    assert [(c.start, c.end) for c in plan_chunks_on_cuts(10, 90, 20, cuts)] == [(10, 50), (50, 75), (75, 90)]


def test_trace_headers_fields() -> None:
    text = (
        "[trace_headers @ 0x5] 8           profile_idc                                          01100100 = 100\n"
        "[trace_headers @ 0x5] 24          level_idc                                            00011111 = 31\n"
        "[trace_headers @ 0x5] 90          colour_description_present_flag                           1 = 1\n"
        "[trace_headers @ 0x5] 91          colour_primaries                                     00000001 = 1\n"
        "[trace_headers @ 0x5] 200         level_idc                                            00001101 = 13\n"
    )
    assert trace_fields(text) == {
        "profile_idc": 100,
        "level_idc": 31,
        "colour_description_present_flag": 1,
        "colour_primaries": 1,
    }


PARAMS = SpliceParams("h264", "high", "3.1", False, ["-color_range", "tv"], Fraction(1), Fraction(1, 12800), 2)


def test_splice_encoder_arguments_match_the_source() -> None:
    args = PARAMS.encoder_args(80, "veryfast")
    assert args[:2] == ["-c:v", "libx264"]
    assert args[args.index("-profile:v") : args.index("-profile:v") + 4] == ["-profile:v", "high", "-level:v", "3.1"]
    assert args[args.index("-x264-params") + 1] == "bframes=3:b-pyramid=normal"
    assert args[args.index("-vf") + 1] == "setsar=1/1"
    no_b = SpliceParams("hevc", "main", "2.0", False, [], None, Fraction(1, 1000), 0).encoder_args(80, "fast")
    assert "bframes=0:open-gop=0:repeat-headers=1:level-idc=2.0:high-tier=0:log-level=error" in no_b
    deep = SpliceParams("h264", "high", None, False, [], None, Fraction(1, 90000), 4).encoder_args(80, "fast")
    assert deep[deep.index("-bsf:v") + 1] == "setts=dts=DTS-2"


def trace_of_user_data(text: bytes) -> str:
    """``trace_headers``' lines for an SEI message's payload bytes, as ffmpeg prints them."""
    return "".join(
        f"[trace_headers @ 0x5] {168 + 8 * i}         user_data_payload_byte[{i}]       {byte:08b} = {byte}\n"
        for i, byte in enumerate(text)
    )


def test_the_sources_crf_is_read_from_its_encoders_settings() -> None:
    x264 = b"\x01x264 - core 164 r3095 - H.264/MPEG-4 AVC codec - options: cabac=1 rc=crf mbtree=1 crf=23.0 qcomp=0.60"
    assert source_crf_of(trace_of_user_data(x264)) == 23.0
    x265 = b"x265 (build 199) - 3.5:[Linux][GCC 11.2.0][64 bit] 8bit - options: cpuid=1 crf=28.0 qcomp=0.60"
    assert source_crf_of(trace_of_user_data(x265)) == 28.0
    assert source_crf_of(trace_of_user_data(b"x264 - core 164 - options: rc=abr bitrate=2000")) is None
    assert source_crf_of(trace_of_user_data(b"Lavc61.3.100 crf=20")) is None  # not an x264/x265 settings string
    assert source_crf_of("") is None


def test_changed_stretches_are_encoded_at_the_jobs_quality() -> None:
    """The quality is chosen with the source's CRF when the job is planned (``test_video_quality.py``)."""
    at_23 = SpliceParams("h264", "high", "3.1", False, [], None, Fraction(1, 12800), 2, source_crf=23.0)
    assert at_23.crf(80) == 10 and at_23.crf(40) == 31
    args = at_23.encoder_args(65, "veryfast")
    assert args[args.index("-crf") + 1] == "18"
    vp9_params = SpliceParams("vp9", "0", None, False, [], None, Fraction(1, 1000), 0, source_crf=30.0)
    vp9 = vp9_params.encoder_args(80, "fast")
    assert vp9[vp9.index("-crf") + 1 : vp9.index("-crf") + 4] == ["13", "-b:v", "0"]


def test_the_crf_of_a_real_x264_source_is_found(tmp_path: Path) -> None:
    clip = tmp_path / "crf30.mp4"
    command = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2"]
    subprocess.run([*command, *ENCODERS["libx264"], "-crf", "30", "-pix_fmt", "yuv420p", "-y", str(clip)], check=True)
    source = probe_copy_source(ffmpeg(), probe_video(clip))
    assert not isinstance(source, str)
    assert source.params.source_crf == 30.0


def test_planning_a_copy_lists_the_sources_packets_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ffmpeg run of the planning stands between the command and the first frame: the packets listed
    while probing the video are the ones the copy path reads (ffmpeg runs counted by a wrapper script)."""
    clip = tmp_path / "clip.mp4"
    command = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=3"]
    subprocess.run([*command, *ENCODERS["libx264"], "-pix_fmt", "yuv420p", "-y", str(clip)], check=True)
    log, wrapper = tmp_path / "runs.txt", tmp_path / "ffmpeg.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {ffmpeg()} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setenv("FACEFUSION_UI_FFMPEG", str(wrapper))
    plan = VideoPlan.make(settings(), clip, tmp_path / "out.mp4", str(wrapper))
    assert plan.copy is not None and plan.copy.cuts == [0, 25, 50] and plan.copy.params.source_crf == 23.0
    assert plan.quality is not None and (plan.quality.crf, plan.quality.chosen) == (18, "source")
    runs = log.read_text(encoding="utf-8").splitlines()
    assert len([run for run in runs if "framecrc" in run]) == 1, runs
    assert len([run for run in runs if "trace_headers" in run]) == 1, runs


@pytest.mark.parametrize("sparse", [False, True], ids=["decoded", "placeholders"])
def test_a_copied_piece_is_copied_once_it_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sparse: bool
) -> None:
    """The stretch before a face is copied while the frames after it are still coming (an encoder opened
    after it: nothing extends it any more), the rest at the chunk's end; the copied frames stay bit-exact.
    The face's GOP is split before its first face frame: its head copied with the stretch before, the
    encoder fed the untouched frames from the split as they passed, or (``sparse``: the frames before the
    face came as placeholders) decoded again from the split, never from the GOP's start."""
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    info = probe_video(clip)
    source = probe_copy_source(ffmpeg(), info)
    assert not isinstance(source, str)
    split = split_before(clip, FACE[0])
    copy = ChunkCopy(source, gops_in(source.cuts, 0, FRAMES, FRAMES))
    sink = PieceSink(ffmpeg(), info, Chunk(0, 0, FRAMES), tmp_path / "segment.mp4", settings(), copy)
    decoded_again: list[tuple[int, int]] = []
    decode = PieceSink._decode

    def counted(self: PieceSink, start: int, count: int) -> Any:
        decoded_again.append((start, count))
        return decode(self, start, count)

    monkeypatch.setattr(PieceSink, "_decode", counted)
    raw = subprocess.run(
        [ffmpeg(), "-v", "error", "-i", str(clip), "-map", "0:v:0", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
        capture_output=True,
        check=True,
    ).stdout
    size = 320 * 240 * 3 // 2
    started: dict[int, list[int]] = {}
    for index in range(FRAMES):
        frame = np.frombuffer(raw[index * size : (index + 1) * size], dtype=np.uint8).reshape(360, 320)
        sink.put(index, NOT_DECODED if sparse and index < FACE[0] else frame, FACE[0] <= index < FACE[1])
        started[index] = sorted(sink.copies)
    assert started[FACE[0] - 1] == [] and started[FACE[0]] == [0]  # frames 0 to the split, once the encoder opened
    assert decoded_again == ([(split, FACE[0] - split)] if sparse and split < FACE[0] else [])
    counts = sink.close()
    assert sorted(sink.copies) == [0, 100] and counts.gops_copied == 4 and counts.gops_encoded == 2
    assert counts.frames_copied == 100 + split - 2 * GOP
    kept = [i for i in range(FRAMES) if not split <= i < 100]
    source_md5s, segment_md5s = frame_md5s(clip), frame_md5s(tmp_path / "segment.mp4")
    assert len(segment_md5s) == FRAMES and decode_errors(tmp_path / "segment.mp4") == ""
    assert [segment_md5s[i] for i in kept] == [source_md5s[i] for i in kept]


def test_a_closed_encoder_finishes_beside_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer hands a closed encoder's flush (x264's lookahead and frame threads) to the copier's
    threads and goes on with the next frames; the chunk's end waits for it, and an encoder that fails
    while finishing fails the chunk there."""
    clip = make_clip(tmp_path, "clip.mp4", "libx264")
    info = probe_video(clip)
    source = probe_copy_source(ffmpeg(), info)
    assert not isinstance(source, str)
    raw = subprocess.run(
        [ffmpeg(), "-v", "error", "-i", str(clip), "-map", "0:v:0", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
        capture_output=True,
        check=True,
    ).stdout
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(FRAMES, 360, 320)
    started, flushed = threading.Event(), threading.Event()
    closes: list[str] = []
    close = FrameWriter.close

    def slow_close(writer: FrameWriter) -> None:
        closes.append(threading.current_thread().name)
        started.set()
        assert flushed.wait(timeout=60)
        close(writer)

    monkeypatch.setattr(FrameWriter, "close", slow_close)
    for fails in (False, True):
        copy = ChunkCopy(source, gops_in(source.cuts, 0, FRAMES, FRAMES))
        segment = tmp_path / f"segment_{fails}.mp4"
        sink = PieceSink(ffmpeg(), info, Chunk(0, 0, FRAMES), segment, settings(), copy)
        started.clear()
        flushed.clear()
        for index in range(FRAMES):
            sink.put(index, frames[index], FACE[0] <= index < FACE[1])
        assert started.wait(timeout=60)
        assert [name.startswith("piece-copy") for name in closes] == [True], "put went on while it flushed"
        if fails:
            sink.finishing[0][0].process.kill()
        flushed.set()
        if fails:
            with pytest.raises(FfmpegError, match="the encoder failed"):
                sink.close()
            assert not segment.exists() and list(tmp_path.glob("piece_*")) == []
        else:
            sink.close()
            assert frame_md5s(segment)[: 2 * GOP] == frame_md5s(clip)[: 2 * GOP]
        closes.clear()


def test_copy_piece_and_join_commands() -> None:
    command = copy_piece_args("ffmpeg", Path("/v/in.mp4"), "h264", 4.02, 51200, 100, 12800, Path("/w/p.mp4"))
    assert command[command.index("-ss") + 1] == "4.020000" and "-copyts" in command
    assert command[command.index("-frames:v") + 1] == "100"
    assert command[command.index("-bsf:v") + 1] == (
        "noise=drop=lt(pts\\,51200),h264_mp4toannexb,setts=pts=PTS-51200:dts=DTS-51200"
    )
    assert command[command.index("-video_track_timescale") + 1] == "12800"
    vp9 = copy_piece_args("ffmpeg", Path("/v/in.webm"), "vp9", 0.02, 0, 25, 1000, Path("/w/p.mp4"))
    assert vp9[vp9.index("-bsf:v") + 1] == "noise=drop=lt(pts\\,0),setts=pts=PTS-0:dts=DTS-0"
    join = join_pieces_args("ffmpeg", Path("/w/list.txt"), 1000, Path("/w/seg.mp4"))
    assert join[join.index("-f") + 1] == "concat" and join[join.index("-c") + 1] == "copy"
    encode = splice_encode_args(
        "ffmpeg", 320, 240, Fraction(25), ["-c:v", "libx264"], ["-color_range", "tv"], 12800, Path("/o.mp4")
    )
    assert encode.count("-color_range") == 2 and encode[encode.index("-framerate") + 1] == "25/1"

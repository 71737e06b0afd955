"""Sparse decoding of face-free stretches (``video/sparse.py``): the pure parts (which frames are probes,
where a sparse run may go, the ffmpeg arguments), then generated clips: the probe frames a sparse run
decodes are the full decoder's bit for bit; a clip without a face comes out bit-exact with most of its
frames never read from the decoder; a face walking in during a sparse stretch is found from its first frame and swapped
in as many frames as with every frame decoded."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import cv2
import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.video import stream
from facefusion_ui.video.commands import decode_args
from facefusion_ui.video.gops import Gop
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.queues import BoundedQueue, InFlight
from facefusion_ui.video.reader import FrameItem
from facefusion_ui.video.sparse import (
    SparsePlan,
    SparseReader,
    SparseSource,
    is_decoded,
    probe_frames,
    select_filter,
    sparse_decode_args,
    whole_run_end,
)
from facefusion_ui.video.yuv import frame_bytes
from tests.support import media, videos
from tests.test_copy_unchanged import ENCODERS, ffmpeg, frame_md5s, run

GOP = 25
FRAMES = 300  # 12 s at 25 fps, GOPs of 1 s


def test_probes_end_the_groups_on_the_grid_and_the_chunk() -> None:
    assert probe_frames(0, 100, 0, 20, 100) == [19, 39, 59, 79, 99]
    assert probe_frames(0, 90, 0, 20, 90) == [19, 39, 59, 79, 89]  # the chunk's last frame ends its last group
    assert probe_frames(50, 100, 5, 20, 130) == [64, 84]  # the grid counts from the job's first frame
    assert probe_frames(60, 61, 0, 20, 200) == []


def test_a_sparse_run_covers_whole_gops_only() -> None:
    gops = [Gop(10, 25, False), Gop(25, 50, True), Gop(50, 75, True), Gop(75, 90, False)]
    assert whole_run_end(gops, 25) == 75
    assert whole_run_end(gops, 50) == 75
    assert whole_run_end(gops, 10) is None  # a part cut by the trim range: every frame is encoded
    assert whole_run_end(gops, 30) is None  # not a GOP's start
    plan = SparsePlan(10, 90, gops, 0, 20)
    assert plan.probes_from(25) == [39, 59]
    assert plan.probes_from(12) is None
    assert SparsePlan(10, 90, gops, 0, 1).probes_from(25) is None  # interval 1: every frame is a probe


def test_the_sparse_decoder_selects_the_probes_then_filters_as_the_full_one() -> None:
    assert select_filter(40, [59, 79]) == "select=eq(n\\,19)+eq(n\\,39)"
    args = sparse_decode_args("ffmpeg", Path("in.mp4"), 1.62, 40, [59, 79], "scale=out_range=tv")
    assert args[args.index("-vf") + 1] == "select=eq(n\\,19)+eq(n\\,39),scale=out_range=tv"
    grid = select_filter(40, [59, 79, 99, 109])  # the grid's probes, then the chunk's last frame
    assert grid == "select=between(n\\,19\\,59)*not(mod(n-19\\,20))+eq(n\\,69)"
    assert len(select_filter(0, probe_frames(0, 30000, 0, 20, 30000))) < 100  # 1500 probes, one term
    assert args[args.index("-frames:v") + 1] == "2"
    assert args[args.index("-ss") + 1] == "1.620000"
    assert "passthrough" in args
    assert args[args.index("-thread_queue_size") + 1] == "1"  # little decoded ahead of the reader
    assert args[args.index("-threads") + 1] == "1"  # no frame threads: less CPU, nothing of theirs decoded ahead
    assert args.index("-threads") < args.index("-i")  # the decoder's option, not the encoder's


def face_at(frames: int, walk: tuple[int, int]) -> videos.FrameMaker:
    scene, face = videos.panning_scene(320, 240, frames), videos.moving_face(320, 240, frames)
    return lambda index: face(index) if walk[0] <= index < walk[1] else scene(index)


def camera_clip(folder: Path, maker: videos.FrameMaker) -> Path:
    raw = videos.write_video(folder / "raw.mkv", maker, FRAMES, audio=True)
    path = folder / "clip.mp4"
    command = [ffmpeg(), "-hide_banner", "-loglevel", "error", "-i", str(raw), *ENCODERS["libx264"]]
    subprocess.run([*command, "-pix_fmt", "yuv420p", "-c:a", "copy", "-y", str(path)], check=True)
    raw.unlink()
    return path


def raw_frames(command: list[str], count: int) -> list[bytes]:
    data = subprocess.run(command, capture_output=True, check=True).stdout
    size = frame_bytes(320, 240)
    assert len(data) == count * size
    return [data[i * size : (i + 1) * size] for i in range(count)]


@pytest.mark.parametrize("grid", [20, 2])  # 2: 124 probes, past what ffmpeg parses as a term each
def test_probe_frames_are_the_full_decoders_bit_for_bit(tmp_path: Path, grid: int) -> None:
    clip = camera_clip(tmp_path, face_at(FRAMES, (0, 0)))
    info = probe_video(clip)
    start, probes = 50, probe_frames(50, 299, 0, grid, 299)
    full = raw_frames(decode_args(ffmpeg(), clip, info.seek_time(start), 249, ""), 249)
    sparse = raw_frames(sparse_decode_args(ffmpeg(), clip, info.seek_time(start), start, probes, ""), len(probes))
    assert [full[probe - start] for probe in probes] == sparse


def started_reader(clip: Path) -> tuple[SparseReader, BoundedQueue[FrameItem], threading.Event]:
    """A sparse decoder of ``clip`` from its first frame, with the pipeline's queue and slots."""
    info = probe_video(clip)
    gops = [Gop(start, start + GOP, True) for start in range(0, FRAMES, GOP)]
    source = SparseSource(ffmpeg(), info, "", (240 * 3 // 2, 320))
    output: BoundedQueue[FrameItem] = BoundedQueue(32)
    stop = threading.Event()
    slots = threading.Semaphore(119)
    reader = SparseReader(source, SparsePlan(0, FRAMES, gops, 0, 20), output, stop, slots, InFlight(), True)
    reader.start()
    return reader, output, stop


def taken_until(output: BoundedQueue[FrameItem], stop: threading.Event, index: int) -> list[FrameItem]:
    items = [output.get(stop)]
    while items[-1].index != index:
        items.append(output.get(stop))
    return items


def test_the_sparse_decoder_reads_the_next_probe_only_when_the_analysis_has_caught_up(tmp_path: Path) -> None:
    clip = camera_clip(tmp_path, face_at(FRAMES, (0, 0)))
    reader, output, stop = started_reader(clip)
    try:
        taken = taken_until(output, stop, 19)  # the first group, its probe last
        assert [is_decoded(item.frame) for item in taken] == [False] * 19 + [True]
        time.sleep(0.5)  # the analysis probes frame 19: the placeholders up to 38 wait in the queue
        assert reader.frames_decoded == 1  # probe 39 not read, so ffmpeg decodes no further than it
        assert output.qsize() == 19
        taken = taken_until(output, stop, 39)
        assert is_decoded(taken[-1].frame) and reader.frames_decoded == 2
        reader.rewind(20)  # a face in probe 39: the group again, every frame, from its first
        again = [item for item in taken_until(output, stop, 20) if reader.current(item)]
        assert [item.index for item in again] == [20] and is_decoded(again[0].frame)
    finally:
        stop.set()
        reader.join()
    assert reader.error is None


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sparse-face") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def test_a_face_free_clip_is_copied_having_read_a_fraction_of_it(
    face: Path, shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    clip = camera_clip(tmp_path, face_at(FRAMES, (0, 0)))
    output = tmp_path / "out.mp4"
    stats = run(face, clip, output, shared_runtime)
    assert stats["faces_detected"] == 0
    assert stats["copy"]["frames_copied"] == FRAMES
    assert frame_md5s(output) == frame_md5s(clip)
    read = FRAMES - stats["copy"]["frames_not_read"]
    assert read <= FRAMES // 2, stats["copy"]  # the probes, and the frames before the first sparse run


@pytest.mark.parametrize(
    ("walk", "chunk_seconds"),
    [
        ((200, 235), 60),
        ((221, 260), 1),  # 1 s chunks: the face comes in during chunk 9's last group, 220-224 (a rewind at its end)
    ],
)
def test_a_face_walking_into_a_sparse_stretch_is_swapped_as_with_every_frame_decoded(
    face: Path,
    shared_runtime: ModelRuntime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    walk: tuple[int, int],
    chunk_seconds: int,
) -> None:
    clip = camera_clip(tmp_path, face_at(FRAMES, walk))
    sparse, full = tmp_path / "sparse.mp4", tmp_path / "full.mp4"
    stats = run(face, clip, sparse, shared_runtime, video_chunk_size=chunk_seconds)
    with monkeypatch.context() as patch:
        patch.setattr(stream, "sparse_reader", lambda *arguments: None)  # every frame decoded (FrameReader)
        every = run(face, clip, full, shared_runtime, video_chunk_size=chunk_seconds)
    assert stats["copy"]["frames_not_read"] > FRAMES // 3, stats["copy"]  # sparse before and after the walk
    assert every["copy"]["frames_not_read"] == 0
    read, not_read = stats["copy"]["frames_read"], stats["copy"]["frames_not_read"]
    assert FRAMES <= read + not_read <= FRAMES + 20, stats["copy"]  # a rewind reads a group again, at most
    assert stats["copy"]["decoder_runs"] >= 3  # every frame, the probes, every frame again from the walk's group
    assert stats["faces_swapped"] == every["faces_swapped"] == walk[1] - walk[0]
    assert stats["face_detection"] == every["face_detection"]  # the same schedule, probe for probe
    encoded = range(walk[0] // GOP * GOP, -(-walk[1] // GOP) * GOP)
    assert stats["copy"]["gops_encoded"] == every["copy"]["gops_encoded"] == len(encoded) // GOP
    source, result = frame_md5s(clip), frame_md5s(sparse)
    assert all(result[i] == source[i] for i in range(FRAMES) if i not in encoded)
    assert all(result[i] != source[i] for i in range(*walk))
    assert sparse.read_bytes() == full.read_bytes()

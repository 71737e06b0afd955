"""The detection schedule: groups without faces are skipped (and pass through untouched), faces are
followed between full-frame detections, and a face that appears mid-group is found from its first frame."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import ScheduleState, continues, group_size_at, plan_group, roi_box
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.chunks import chunk_length
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.yuv import YuvFrame
from tests.support import media, videos

LOSSLESS = Settings(execution_threads=2, frame_queue_size=4, output_video_preset="ultrafast", output_video_quality=100)
APPEARS_AT = 7
WALKS_IN_AT = 30
JOINS_AT = 7
PAN_JOINS_AT = 12


def box(x: float, y: float, size: float) -> np.ndarray:
    return np.array([x, y, x + size, y + size], dtype=np.float32)


def test_plan_of_a_group() -> None:
    assert plan_group(None, []) == "full"  # nothing known yet (a chunk's start)
    assert plan_group([], []) == "skip"
    assert plan_group([box(100, 100, 80)], [box(130, 110, 84)]) == "track"  # the same face, moved
    assert plan_group([box(100, 100, 80)], []) == "track"  # it left: searched where it was
    assert plan_group([], [box(100, 100, 80)]) == "full"  # a face appeared somewhere in the group
    assert plan_group([box(0, 0, 80)], [box(0, 0, 80), box(400, 0, 80)]) == "full"  # a second face came in
    assert not continues(box(100, 100, 200), box(100, 100, 60))  # too large a change of size


def test_groups_never_cross_the_grid_and_chunks_are_cut_on_it() -> None:
    # interval 5: the grid is 20 frames (the largest group); a group of 20 after 15 frames holds 5
    assert [group_size_at(position, 5, 4) for position in (0, 15, 20, 35)] == [20, 5, 20, 5]
    assert group_size_at(5, 5, 2) == 10 and group_size_at(0, 5, 1) == 5
    assert group_size_at(7, 1, 4) == 1  # interval 1: every frame alone
    assert chunk_length(60, 30, 20) == 1800 and chunk_length(60, 29.97, 20) == 1800  # 1798 frames
    assert chunk_length(1, 25, 20) == 20 and chunk_length(0.2, 25, 20) == 20 and chunk_length(1, 25, 1) == 25
    assert chunk_length(2, 25, 20) == 60  # 2.5 steps of the grid: half up


def test_schedule_state_survives_the_manifest_exactly() -> None:
    cells = np.arange(45 * 80, dtype=np.int16).reshape(45, 80) % 256
    box = np.array([10.25, 20.5, 110.125, 130.0625], dtype=np.float32)
    state = ScheduleState(((float(box[0]), float(box[1]), float(box[2]), float(box[3])),), 2, cells)
    back = ScheduleState.from_json(json.loads(json.dumps(state.to_json())))
    assert back.followed == state.followed and back.stretch == 2
    assert back.faceless is not None and np.array_equal(back.faceless, cells) and back.faceless.dtype == np.int16
    assert ScheduleState.from_json(ScheduleState().to_json()) == ScheduleState()


def test_search_area_around_a_face_stays_in_the_frame() -> None:
    assert roi_box(box(100, 100, 40), 640, 480) == (70, 70, 170, 170)
    assert roi_box(box(0, 0, 40), 640, 480) == (0, 0, 70, 70)
    assert roi_box(box(620, 460, 40), 640, 480) == (590, 430, 640, 480)


def panning_pair(frames: int) -> videos.FrameMaker:
    """A camera panning with a head in view throughout, a second one joining it at frame PAN_JOINS_AT."""
    pan = videos.panning_scene(320, 240, frames)
    walker = cv2.resize(videos.grace_head(), (140, 160))
    joiner = cv2.resize(videos.t1_pair()[1], (130, 130))

    def make(index: int) -> np.ndarray:
        canvas = pan(index)
        videos.paste(canvas, walker, 10, 40)
        if index >= PAN_JOINS_AT:
            videos.paste(canvas, joiner, 180, 50)
        return canvas

    return make


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("schedule")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    empty, person = videos.blank(320, 240), videos.moving_face(320, 240, 20)

    def appearing(index: int) -> np.ndarray:
        return person(index) if index >= APPEARS_AT else empty(index)

    scene = videos.background(640, 360)
    head = cv2.resize(videos.grace_head(), (61, 70))

    def entering(index: int) -> np.ndarray:
        """A small face sliding in from the right edge over frames 3-8 (half in at frame 5), then still."""
        canvas: np.ndarray = scene.copy()
        x = 640 - round(100 * min(max(index - 2, 0), 6) / 6)
        videos.paste(canvas, head, x, 140)
        return canvas

    first, second = (cv2.resize(face, (96, 96)) for face in videos.t1_pair())

    def joining(index: int) -> np.ndarray:
        """A face that sways a little (a talking head), joined by a second one from frame JOINS_AT."""
        canvas: np.ndarray = scene.copy()
        videos.paste(canvas, first, 80 + index % 3, 120 + index % 2)
        if index >= JOINS_AT:
            videos.paste(canvas, second, 470, 150)
        return canvas

    pan = videos.panning_scene(320, 240, 40)
    walker = cv2.resize(videos.grace_head(), (140, 160))

    def walking_in(index: int) -> np.ndarray:
        """A camera panning over a textured scene; a head comes in from the left at frame WALKS_IN_AT."""
        canvas = pan(index)
        if index >= WALKS_IN_AT:
            videos.paste(canvas, walker, -60 + 8 * (index - WALKS_IN_AT), 40)
        return canvas

    crosser = cv2.resize(videos.grace_head(), (100, 114))

    def crossing(index: int) -> np.ndarray:
        """A head crossing the frame at 5 px a frame: over a group of 20 frames it moves its own width."""
        canvas: np.ndarray = scene.copy()
        videos.paste(canvas, crosser, 20 + 5 * index, 120)
        return canvas

    return {
        "crossing": videos.write_video(folder / "crossing.mp4", crossing, 60),
        "panning_pair": videos.write_video(folder / "panning_pair.mp4", panning_pair(40), 40),
        "walking_in": videos.write_video(folder / "walking_in.mp4", walking_in, 40),
        "face": face,
        "still": videos.write_video(folder / "still.mp4", lambda _: scene, 20),
        "joining": videos.write_video(folder / "joining.mp4", joining, 20),
        "entering": videos.write_video(folder / "entering.mp4", entering, 30),
        "blank": videos.write_video(folder / "blank.mp4", empty, 20),
        "appearing": videos.write_video(folder / "appearing.mp4", appearing, 20),
        "moving": videos.write_video(folder / "moving.mp4", person, 20),
    }


def run(
    clips: dict[str, Path], runtime: ModelRuntime, name: str, output: Path, interval: int, detector: str = "dlib_hog"
) -> dict[str, Any]:
    settings = LOSSLESS.with_items(face_detector_interval=interval, face_detector_model=detector)
    return process(SwapJob.of(settings, [clips["face"]], clips[name], output), RunContext(runtime=runtime)).to_json()


def raw_frames(path: Path, width: int = 320, height: int = 240) -> np.ndarray:
    """The decoded 4:2:0 planes of every frame, for bit-exact comparisons."""
    command = [
        resolve_ffmpeg().path,
        "-hide_banner",
        "-loglevel",
        "error",
        "-i",
        str(path),
        "-f",
        "rawvideo",
        "-pix_fmt",
        "yuv420p",
        "-",
    ]
    data = subprocess.run(command, capture_output=True, check=True).stdout
    return np.frombuffer(data, np.uint8).reshape(-1, height * 3 // 2, width)


def test_frames_without_faces_pass_through_bit_for_bit(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    output = tmp_path / "out.mp4"
    summary = run(clips, shared_runtime, "blank", output, interval=5)
    detection = summary["face_detection"]
    # the first frame is detected in full (nothing known yet), then each group's last frame is probed:
    # nothing there nor before, so the group is skipped, and the next one is twice as long (up to 4x):
    # frames 1-5, 6-15, 16-19. Only the moving dot changed since the first frame: the probes search there.
    assert detection == {
        "interval": 5,
        "full": 1,
        "proposed": 0,
        "areas": 3,
        "unchanged": 0,
        "tracked": 0,
        "skipped": 4 + 9 + 3,
        "followed_by_mesh": 0,
        "probed_by_mesh": 0,
    }
    assert summary["frames_converted"] == 0 and summary["faces_detected"] == 0
    assert np.array_equal(raw_frames(output), raw_frames(clips["blank"]))  # lossless output: identical


def test_a_face_appearing_mid_group_is_swapped_from_its_first_frame(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    every, grouped = tmp_path / "every.mp4", tmp_path / "grouped.mp4"
    each_frame = run(clips, shared_runtime, "appearing", every, interval=1)
    in_groups = run(clips, shared_runtime, "appearing", grouped, interval=5)
    assert each_frame["faces_swapped"] == in_groups["faces_swapped"] == 20 - APPEARS_AT
    assert in_groups["frames_converted"] == 20 - APPEARS_AT
    # the face found by the probe at frame 15 is followed back to frame 7 in crops, not searched for in
    # full in frames 6-14: full-frame searches only at the start and in the probes with a face before
    assert in_groups["face_detection"]["full"] <= 3 and in_groups["face_detection"]["tracked"] >= 9, in_groups
    source, result = raw_frames(clips["appearing"]), raw_frames(grouped)
    assert np.array_equal(result[:APPEARS_AT], source[:APPEARS_AT])
    assert np.abs(result[APPEARS_AT].astype(int) - source[APPEARS_AT]).mean() > 1.0  # the swap shows


def test_a_followed_face_is_searched_around_its_last_place(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    each_frame = run(clips, shared_runtime, "moving", tmp_path / "every.mp4", interval=1)
    followed = run(clips, shared_runtime, "moving", tmp_path / "followed.mp4", interval=5)
    # groups 0-4, 5-14, 15-19: each group that only followed the same face doubles the next one (up to
    # the grid of 20); the first frame is detected in full, each group's last probed in what changed since
    # (nothing beside the face) and around the face followed (the fourth probe would search in full), the
    # rest followed: the embedded swapper's face by its mesh alone, read where the frame before's
    # smoothed mesh puts it; the probes' detection of that face is made from the same read (no landmarker)
    assert followed["face_detection"] == {
        "interval": 5,
        "full": 1,
        "proposed": 0,
        "areas": 3,
        "unchanged": 0,
        "tracked": 3 + 9 + 4,
        "skipped": 0,
        "followed_by_mesh": 3 + 9 + 4,
        "probed_by_mesh": 3,
    }
    assert each_frame["face_detection"]["full"] == 20
    assert followed["faces_swapped"] == each_frame["faces_swapped"] == 20


def test_a_face_crossing_the_frame_is_followed_over_long_groups(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """Over the groups of 20 frames (from frame 20) the face moves more than its width between the
    probes, which alone would be taken for a face that appeared: each such group is split at its middle
    frame (detected in full) and both halves are followed, as the shorter groups before them were. The
    same faces are swapped as with a full-frame detection on every frame."""
    each_frame = run(clips, shared_runtime, "crossing", tmp_path / "every.mp4", interval=1)
    followed = run(clips, shared_runtime, "crossing", tmp_path / "followed.mp4", interval=5)
    # groups 0 | 1-5 | 6-15 | 16-19 | 20-39 | 40-59: the first frame, the fourth probe (frame 39) and the
    # middle frames 29 and 49 in full, the other probes only where something changed beside the face
    # followed, or (the one where that was too much) cheaply; every other frame followed by its mesh
    detection = followed["face_detection"]
    assert detection["full"] == 1 + 1 + 2 and detection["proposed"] + detection["areas"] == 5 - 1, detection
    assert detection["tracked"] == 60 - 8, detection
    assert followed["faces_swapped"] == each_frame["faces_swapped"] == 60


def test_probes_of_a_still_shot_detect_nothing(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    summary = run(clips, shared_runtime, "still", tmp_path / "out.mp4", interval=5)
    assert summary["face_detection"] == {
        "interval": 5,
        "full": 1,
        "proposed": 0,
        "areas": 0,
        "unchanged": 3,
        "tracked": 0,
        "skipped": 16,
        "followed_by_mesh": 0,
        "probed_by_mesh": 0,
    }
    assert np.array_equal(raw_frames(tmp_path / "out.mp4", 640, 360), raw_frames(clips["still"], 640, 360))


def test_a_face_that_came_in_over_several_probes_and_stopped_is_found(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """The probe at frame 5 searches only what changed and sees half a face; the kept faceless frame is
    not replaced by that search, so the probe at frame 15 still searches the whole face, though it has
    stopped moving, and the group is detected in full: the same frames are swapped as with interval 1
    (their pixels differ a little: a followed face is found again in a crop, its box moves slightly)."""
    each_frame = run(clips, shared_runtime, "entering", tmp_path / "every.mp4", interval=1)
    grouped = run(clips, shared_runtime, "entering", tmp_path / "grouped.mp4", interval=5)
    assert grouped["face_detection"]["areas"] >= 2
    assert grouped["faces_swapped"] == each_frame["faces_swapped"] >= 20
    assert grouped["frames_converted"] == each_frame["frames_converted"]


def test_detectors_with_a_fixed_input_size_probe_changes_in_the_whole_frame(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """BlazeFace scales any crop to its input, so a part costs as much as the whole (and a small part
    would be searched far larger than the frame is): it probes the whole frame when something changed."""
    moving = run(clips, shared_runtime, "blank", tmp_path / "blank.mp4", interval=5, detector="mediapipe_blazeface")
    still = run(clips, shared_runtime, "still", tmp_path / "still.mp4", interval=5, detector="mediapipe_blazeface")
    assert moving["face_detection"]["areas"] == 0 and moving["face_detection"]["full"] == 1 + 3
    assert still["face_detection"]["unchanged"] == 3 and still["face_detection"]["full"] == 1


def test_a_second_face_joining_is_found_from_its_first_frame(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """With a face followed, the probe at the group's end finds a second face that joined mid-group, so
    the whole group is detected in full and the new face is swapped from its first frame, as with a
    full-frame detection on every frame."""
    every, grouped = tmp_path / "every.mp4", tmp_path / "grouped.mp4"
    each_frame = run(clips, shared_runtime, "joining", every, interval=1)
    in_groups = run(clips, shared_runtime, "joining", grouped, interval=5)
    assert each_frame["faces_swapped"] == in_groups["faces_swapped"] == 20 + (20 - JOINS_AT)
    detection = in_groups["face_detection"]
    assert detection["tracked"] >= 4 and detection["full"] >= 1 + (10 - 5), detection  # frames 6-10 in full
    source = raw_frames(clips["joining"], 640, 360)
    result = raw_frames(grouped, 640, 360)
    second = (slice(150, 246), slice(470, 566))
    before, at = source[JOINS_AT - 1][second], result[JOINS_AT][second]
    assert np.array_equal(result[JOINS_AT - 1][second], before)  # nobody there yet: untouched
    assert np.abs(at.astype(int) - source[JOINS_AT][second]).mean() > 1.0  # the swap shows at once


def test_a_moving_camera_is_probed_cheaply_and_a_face_walking_in_is_found(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """The pan changes every cell, so the change gate cannot skip a probe: three probes in four search
    without upsampling and around BlazeFace's candidates; the probe at frame 34 finds the head that came in
    at frame 30, and the group is detected in full: the same faces are swapped as with interval 1."""
    each_frame = run(clips, shared_runtime, "walking_in", tmp_path / "every.mp4", interval=1)
    grouped = run(clips, shared_runtime, "walking_in", tmp_path / "grouped.mp4", interval=5)
    detection = grouped["face_detection"]
    assert detection["proposed"] == 3 and detection["areas"] == detection["unchanged"] == 0, detection
    assert grouped["faces_swapped"] == each_frame["faces_swapped"] >= 40 - WALKS_IN_AT - 2  # half in: not yet
    assert each_frame["face_detection"]["proposed"] == 0  # interval 1: every frame in full


class AnalysisAlone:
    """The pipeline's frame stages without the work its analysis hands its helper threads (not
    ``AheadStages``): probes searched and colours converted on the analysis thread alone."""

    def __init__(self, stages: Any) -> None:
        self.stages = stages

    def group_size_from(self, index: int) -> int:
        return int(self.stages.group_size_from(index))

    def analyse_group(self, images: Any, indices: Any, timestamps: Any) -> Any:
        return self.stages.analyse_group(images, indices, timestamps)

    def changes(self, analysis: Any) -> bool:
        return bool(self.stages.changes(analysis))

    def apply(self, frame: Any, analysis: Any, index: int, timestamp: float) -> Any:
        return self.stages.apply(frame, analysis, index, timestamp)

    def frame_region(self, analysis: Any, width: int, height: int) -> Any:
        return self.stages.frame_region(analysis, width, height)

    def apply_within(self, crop: Any, analysis: Any, origin: tuple[int, int], index: int, timestamp: float) -> Any:
        return self.stages.apply_within(crop, analysis, origin, index, timestamp)


@pytest.mark.parametrize(("name", "size"), [("crossing", (640, 360)), ("walking_in", (320, 240))])
def test_work_done_ahead_leaves_the_video_and_its_counts_as_they_were(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path, name: str, size: tuple[int, int]
) -> None:
    """The next group's probe searched and the frames' colours converted on helper threads: the same
    frames and counts as the analysis thread alone, with the searches ahead taken as probes."""
    settings = LOSSLESS.with_items(face_detector_interval=5, frame_queue_size=32)  # the default queues
    results: dict[str, dict[str, Any]] = {}
    for label, wrap in (("ahead", None), ("alone", AnalysisAlone)):
        job = SwapJob.of(settings, [clips["face"]], clips[name], tmp_path / f"{label}.mp4")
        results[label] = process(job, RunContext(runtime=shared_runtime, wrap_stages=wrap)).to_json()
    ahead, alone = results["ahead"], results["alone"]
    assert np.array_equal(raw_frames(tmp_path / "ahead.mp4", *size), raw_frames(tmp_path / "alone.mp4", *size))
    for key in ("faces_detected", "faces_swapped", "frames_converted", "face_detection"):
        assert ahead[key] == alone[key], key
    searched = ahead["probes_ahead"]
    assert searched["started"] == searched["used"] + searched["discarded"], searched
    # the crossing face is in view from the start: each group's probe searched ahead, none guessed wrong (a
    # group split where the face crossed more than its width is followed in both halves: the groups grow
    # on); the walk-in's comes in at the last group's probe, followed back: no group after it to search ahead
    if name == "crossing":
        assert searched["used"] >= 1 and searched["discarded"] == 0, searched
    else:
        assert searched["started"] == 0, searched
    assert alone["probes_ahead"] == {"started": 0, "used": 0, "discarded": 0}


def test_a_face_joining_a_followed_one_on_a_moving_camera_is_found_by_the_next_probe(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """A pan changes every cell, so with a face in view three probes in four are the cheap ones (HOG
    without upsampling, around the face followed and BlazeFace's candidates): a face of the size HOG
    finds without upsampling joining at frame 12 is found by the probe at frame 15 and followed back to
    its first frame, as with a full-frame detection on every frame (latency: none, for a face from about
    twice HOG's smallest; a smaller one BlazeFace misses would wait for the fourth probe)."""
    each_frame = run(clips, shared_runtime, "panning_pair", tmp_path / "every.mp4", interval=1)
    grouped = run(clips, shared_runtime, "panning_pair", tmp_path / "grouped.mp4", interval=5)
    detection = grouped["face_detection"]
    assert detection["proposed"] >= 2, detection
    assert grouped["faces_swapped"] == each_frame["faces_swapped"] == 40 + 40 - PAN_JOINS_AT, (grouped, each_frame)


def test_a_face_followed_by_its_mesh_is_read_from_its_region_without_converting_whole_frames(
    clips: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the probes the crossing head is read from its mesh's square alone, and swapped in its
    region: no whole frame is converted to BGR but where a detection is completed."""
    whole: list[int] = []
    convert = YuvFrame.bgr

    def counted(image: YuvFrame) -> Any:
        whole.append(1)
        return convert(image)

    monkeypatch.setattr(YuvFrame, "bgr", counted)
    result = run(clips, shared_runtime, "crossing", tmp_path / "crossing.mp4", interval=5)
    assert result["faces_swapped"] >= 55 and result["face_detection"]["followed_by_mesh"] >= 40, result
    assert len(whole) <= result["face_detection"]["full"]  # at most the frames searched in full

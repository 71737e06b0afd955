"""Temporal smoothing of the embedded swapper's meshes: the One Euro filter, cut detection, the
per-track smoother, and a still clip under sensor noise swapped with and without it."""

from __future__ import annotations

import itertools
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.cuts import CUT_SIZE, STEP_SIZE, cut_thumbnail, is_cut
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.face import Face, box_iou
from facefusion_ui.faces.frame_analysis import FrameAnalysis
from facefusion_ui.faces.mesh_smoother import MeshSmoother
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import ScheduleState
from facefusion_ui.faces.smoothing import OneEuroParameters, one_euro_step
from facefusion_ui.frames import BgrImage
from facefusion_ui.pipeline import FrameMeshes, FramePipeline, VideoState, smooths_meshes
from facefusion_ui.processors.base import Processor
from facefusion_ui.processors.mesh_warp import FACE_OVAL
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame
from tests.support import media, videos

FPS = 30.0
PARAMETERS = OneEuroParameters(min_cutoff=1.0, beta=20.0, d_cutoff=1.0)


def run_filter(signal: np.ndarray, parameters: OneEuroParameters = PARAMETERS) -> np.ndarray:
    state = None
    out = []
    for index, value in enumerate(signal):
        filtered, state = one_euro_step(state, value, index / FPS, parameters)
        out.append(filtered)
    return np.array(out)


def noisy(image: Frame, seed: int, sigma: float = 3.0) -> Frame:
    noise = np.random.default_rng(seed).normal(0, sigma, image.shape)
    return np.asarray(np.clip(image + noise, 0, 255), dtype=np.uint8)


def test_a_still_point_under_noise_varies_less() -> None:
    rng = np.random.default_rng(1)
    signal = 0.5 + rng.normal(0, 0.01, (90, 4, 2))
    filtered = run_filter(signal)
    assert np.abs(np.diff(filtered, axis=0)).mean() < 0.5 * np.abs(np.diff(signal, axis=0)).mean()
    assert np.abs(filtered[30:] - 0.5).mean() < np.abs(signal[30:] - 0.5).mean()


def test_a_step_converges() -> None:
    signal = np.concatenate([np.zeros((10, 1, 2)), np.ones((50, 1, 2))])
    filtered = run_filter(signal)
    assert 0 < filtered[10, 0, 0] < 1
    assert abs(filtered[-1, 0, 0] - 1.0) < 0.01
    assert np.all(np.diff(filtered[:, 0, 0]) >= -1e-12)  # no overshoot back


def test_a_moving_point_lags_less_with_beta() -> None:
    ramp = (np.arange(60) / FPS * 0.5)[:, None, None] * np.ones((1, 1, 2))  # half a face width a second
    slow = run_filter(ramp, OneEuroParameters(1.0, 0.0, 1.0))
    quick = run_filter(ramp)
    assert np.abs(quick[-1] - ramp[-1]).max() < 0.25 * np.abs(slow[-1] - ramp[-1]).max()


def test_the_filter_starts_again_when_time_does_not_move_forward() -> None:
    _, state = one_euro_step(None, np.zeros((2, 2)), 1.0, PARAMETERS)
    again, _ = one_euro_step(state, np.ones((2, 2)), 1.0, PARAMETERS)
    assert np.array_equal(again, np.ones((2, 2)))


def resized(image: Frame, like: Frame) -> Frame:
    return np.asarray(cv2.resize(image, (like.shape[1], like.shape[0])), dtype=np.uint8)


def test_cuts_between_different_photos_not_under_noise() -> None:
    grace = media.grace_hopper()
    astronaut = resized(media.astronaut(), grace)
    assert is_cut(cut_thumbnail(BgrImage(grace)), cut_thumbnail(BgrImage(astronaut)))
    people = media.t1()
    assert is_cut(cut_thumbnail(BgrImage(people)), cut_thumbnail(BgrImage(resized(grace, people))))
    assert not is_cut(cut_thumbnail(BgrImage(grace)), cut_thumbnail(BgrImage(noisy(grace, 1, sigma=8.0))))
    assert not is_cut(cut_thumbnail(BgrImage(noisy(grace, 2))), cut_thumbnail(BgrImage(noisy(grace, 3))))


def hd(image: Frame) -> Frame:
    return np.ascontiguousarray(cv2.resize(image, (1280, 720)), dtype=np.uint8)


def test_a_cut_thumbnail_made_small_first_is_within_a_grey_level_of_one_made_grey_first() -> None:
    """A large frame is brought to ``STEP_SIZE`` before its grey conversion (half the time on 720p): the
    thumbnail stays within a grey level of the one whose whole frame was made grey first, and the cuts
    between the photos, and none under noise, are told as before."""
    frames = [hd(photo) for photo in (media.grace_hopper(), media.t1())]
    frames += [noisy(frames[0], 5, sigma=8.0), hd(media.astronaut())]
    for frame in frames:
        grey = cv2.resize(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), (STEP_SIZE, STEP_SIZE))
        grey_first = cv2.resize(grey, (CUT_SIZE, CUT_SIZE), interpolation=cv2.INTER_AREA)
        assert np.abs(cut_thumbnail(BgrImage(frame)).astype(int) - grey_first).max() <= 1
    thumbnails = [cut_thumbnail(BgrImage(frame)) for frame in frames]
    assert is_cut(thumbnails[0], thumbnails[1]) and is_cut(thumbnails[0], thumbnails[3])
    assert not is_cut(thumbnails[0], thumbnails[2])
    # a video frame is scaled down as YUV planes, then converted: the whole frame is never made BGR
    videos = [YuvFrame.from_bgr(frame, ColourMatrix("bt709")) for frame in frames]
    for video, thumbnail in zip(videos, thumbnails, strict=True):
        assert np.abs(cut_thumbnail(video).astype(int) - thumbnail).max() <= 2
    yuv_thumbnails = [cut_thumbnail(video) for video in videos]
    assert is_cut(yuv_thumbnails[0], yuv_thumbnails[1]) and not is_cut(yuv_thumbnails[0], yuv_thumbnails[2])
    assert all(video._bgr is None for video in videos)


@pytest.fixture(scope="module")
def analyser(shared_runtime: ModelRuntime) -> FaceAnalyser:
    return FaceAnalyser(shared_runtime)


def face_of(analyser: FaceAnalyser, image: Frame) -> Face:
    return analyser.analyse(image, Settings(), embeddings=False, mesh=True)[0]


def test_a_cut_restarts_from_the_new_face(analyser: FaceAnalyser) -> None:
    grace = media.grace_hopper()
    astronaut = resized(media.astronaut(), grace)
    smoother = MeshSmoother()
    first = face_of(analyser, grace)
    smoother.smooth(BgrImage(grace), 0, 0.0, [first], [None])
    moved = noisy(grace, 4)
    second = face_of(analyser, moved)
    [held] = smoother.smooth(BgrImage(moved), 1, 1 / FPS, [second], [None])
    assert held.mesh is not None and second.mesh is not None
    assert not np.array_equal(held.mesh.points, second.mesh.points), "a still face was not smoothed"
    other = face_of(analyser, astronaut)
    # the astronaut's box overlaps Grace Hopper's, but the shot changed: the filter starts again
    assert smoother.tracks and len(smoother.tracks) == 1
    [after_cut] = smoother.smooth(BgrImage(astronaut), 2, 2 / FPS, [other], [None])
    assert after_cut.mesh is not None and other.mesh is not None
    assert np.array_equal(after_cut.mesh.points, other.mesh.points)
    # a frame that is not the next one starts again too
    [after_gap] = smoother.smooth(BgrImage(moved), 9, 9 / FPS, [second], [None])
    assert after_gap.mesh is not None and np.array_equal(after_gap.mesh.points, second.mesh.points)


def test_the_saved_state_smooths_as_the_running_one(analyser: FaceAnalyser) -> None:
    frames = [noisy(media.grace_hopper(), seed) for seed in range(4)]
    faces = [face_of(analyser, frame) for frame in frames]
    running = MeshSmoother()
    for index in range(3):
        running.smooth(BgrImage(frames[index]), index, index / FPS, [faces[index]], [None])
    resumed = MeshSmoother()
    saved = VideoState.from_json(VideoState(ScheduleState(), None, running.to_json()).to_json())
    assert saved.meshes is not None
    resumed.load_json(saved.meshes)
    [expected] = running.smooth(BgrImage(frames[3]), 3, 3 / FPS, [faces[3]], [None])
    [got] = resumed.smooth(BgrImage(frames[3]), 3, 3 / FPS, [faces[3]], [None])
    assert expected.mesh is not None and got.mesh is not None
    assert np.array_equal(expected.mesh.points, got.mesh.points)


def test_only_the_embedded_swapper_smooths(shared_runtime: ModelRuntime) -> None:
    def chain(settings: Settings) -> list[Processor]:
        registry = ProcessorRegistry.discover()
        return [registry.create(name, settings, shared_runtime) for name in settings.processors]

    assert smooths_meshes(chain(Settings().with_items(processors=("face_swapper",), face_swapper_model="mesh_warp")))
    assert not smooths_meshes(chain(Settings().with_items(processors=("face_enhancer",))))


def face_change(frames: list[Frame], area: np.ndarray) -> float:
    """Mean absolute change from frame to frame inside ``area``."""
    steps = [np.abs(a.astype(np.int16) - b.astype(np.int16))[area].mean() for a, b in itertools.pairwise(frames)]
    return float(np.mean(steps))


def test_a_still_clip_shimmers_less_with_smoothing(shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    """Twenty frames of one photo under sensor noise through the video pipeline (analysis in order, then
    the embedded swapper): the swapped face moves less from frame to frame with its mesh smoothed. A
    single image is never smoothed."""
    source = tmp_path / "astronaut.png"
    cv2.imwrite(str(source), media.astronaut())
    frames = [noisy(media.grace_hopper(), seed) for seed in range(20)]
    outputs: dict[bool, list[Frame]] = {}
    for smoothing in (True, False):
        pipeline = FramePipeline.build(Settings(), shared_runtime, [source])
        assert pipeline.meshes is None
        pipeline.start_video(0)
        assert pipeline.meshes is not None
        if not smoothing:
            pipeline.meshes = None
        outputs[smoothing] = []
        for index, frame in enumerate(frames):
            analysis = pipeline.analyse(frame, index, index / FPS)
            outputs[smoothing].append(pipeline.apply(frame.copy(), analysis, index, index / FPS))
    mesh = face_of(FaceAnalyser(shared_runtime), frames[0]).mesh
    assert mesh is not None
    area = np.zeros(frames[0].shape[:2], dtype=np.uint8)
    cv2.fillConvexPoly(area, cv2.convexHull(mesh.points[list(FACE_OVAL)]).astype(np.int32), 1)
    with_smoothing, without = face_change(outputs[True], area > 0), face_change(outputs[False], area > 0)
    assert with_smoothing < 0.8 * without, (with_smoothing, without)


def test_a_moving_face_does_not_lag(analyser: FaceAnalyser) -> None:
    """Grace Hopper's head drifting right by about half its width a second, its mesh read by the
    smoother in the region of the track's smoothed mesh: the smoothed mesh stays within 2 % of the face's
    width of the mesh found around each frame's detected box."""
    make = videos.moving_face(640, 360, 40)
    smoother = MeshSmoother()
    offsets = []
    for index in range(40):
        frame = make(index)
        face = analyser.analyse(frame, Settings(), embeddings=False)[0]
        raw = analyser.mesh(frame, Detection(face.bbox, face.score, face.kps))

        [held] = smoother.smooth(
            BgrImage(frame), index, index / FPS, [face], [None], FrameMeshes(analyser, BgrImage(frame))
        )
        assert raw is not None and held.mesh is not None
        offsets.append(np.abs((held.mesh.points - raw.points).mean(axis=0)).max() / face.width)
    assert max(offsets[10:]) < 0.02, max(offsets[10:])
    assert len(smoother.tracks) == 1, "the moving face was not followed as one track"


def test_a_followed_face_keeps_its_track_until_a_cut_or_a_gap(analyser: FaceAnalyser) -> None:
    """``followed_tracks`` gives a followed box the track it had in the frame before (saved and loaded
    too); a box no track has, a cut or a frame that is not the next one gets none."""
    grace = media.grace_hopper()
    smoother = MeshSmoother()
    face = face_of(analyser, grace)
    smoother.smooth(BgrImage(grace), 0, 0.0, [face], [None])
    elsewhere = face.bbox + np.float32(400)
    moved = noisy(grace, 1)
    [track, none] = smoother.followed_tracks(BgrImage(moved), 1, [face.bbox, elsewhere])
    assert track is not None and none is None
    assert track.score == face.score
    resumed = MeshSmoother()
    resumed.load_json(smoother.to_json())
    [loaded] = resumed.followed_tracks(BgrImage(moved), 1, [face.bbox])
    assert loaded is not None and np.allclose(loaded.smoothed_points(), track.smoothed_points())
    astronaut = resized(media.astronaut(), grace)
    assert smoother.followed_tracks(BgrImage(astronaut), 1, [face.bbox]) == [None]  # a cut
    assert smoother.followed_tracks(BgrImage(moved), 2, [face.bbox]) == [None]  # not the next frame


def drifting_head(runtime: ModelRuntime, folder: Path) -> tuple[list[Frame], FramePipeline]:
    """Grace Hopper's head drifting for 20 frames of 640x360, and a video pipeline swapping the astronaut
    onto it with the default settings, started at frame 0."""
    make = videos.moving_face(640, 360, 20)
    source = folder / "astronaut.png"
    cv2.imwrite(str(source), media.astronaut())
    pipeline = FramePipeline.build(Settings(), runtime, [source])
    pipeline.start_video(0)
    return [make(index) for index in range(20)], pipeline


def analysed_in_groups(pipeline: FramePipeline, frames: list[Frame]) -> list[FrameAnalysis]:
    """Each of ``frames`` analysed as a video's, in the groups the pipeline's schedule asks for."""
    results: list[FrameAnalysis] = []
    while len(results) < len(frames):
        start = len(results)
        group = range(start, start + min(pipeline.group_size_from(start), len(frames) - start))
        images = [BgrImage(frames[i]) for i in group]
        results += pipeline.analyse_group(images, list(group), [i / FPS for i in group])
    return results


def test_a_face_followed_by_its_mesh_alone_stays_on_the_face(shared_runtime: ModelRuntime, tmp_path: Path) -> None:
    """Grace Hopper's head drifting for 20 frames through the video pipeline with the default schedule:
    between the probes her face is read from the frame before's mesh with no detection at all; once the
    filter has her speed (frame 10 on, as in the test above) its smoothed mesh stays within 3 % of the
    face's width of the mesh found round each frame's detected box, and her box holds her nose tip in its
    middle third all along."""
    frames, pipeline = drifting_head(shared_runtime, tmp_path)
    offsets, noses = [], []
    for frame, analysis in zip(frames, analysed_in_groups(pipeline, frames), strict=True):
        [face] = analysis.faces
        detected = face_of(FaceAnalyser(shared_runtime), frame)
        assert face.mesh is not None and detected.mesh is not None
        offsets.append(np.linalg.norm(face.mesh.points[:468] - detected.mesh.points, axis=1).mean() / face.width)
        noses.append((face.mesh.points[1] - face.bbox[:2]) / (face.bbox[2:] - face.bbox[:2]))
    assert max(offsets[10:]) < 0.03, offsets
    assert ((np.array(noses) > 1 / 3) & (np.array(noses) < 2 / 3)).all(), noses
    assert pipeline.schedule.stats.faces_followed_by_mesh == pipeline.schedule.stats.frames_tracked > 10


def test_a_probe_of_a_followed_face_reads_its_mesh_with_no_landmarker(
    shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    """The same drifting head: the first frame's face is new (its mesh found in the crop round its box, its
    5 points from it: nothing reads the 68 landmarks); every probe after it detects the face followed,
    which is made from the mesh read where the track's smoothed mesh puts it, with the detector's box and
    no 68-point landmarker, as the frames between the probes are. Its mesh is the one the smoother reads
    for it: it stays on the face."""
    frames, pipeline = drifting_head(shared_runtime, tmp_path)
    faces = [analysis.faces[0] for analysis in analysed_in_groups(pipeline, frames)]
    stats = pipeline.schedule.stats
    probes = stats.frames_full - 1 + stats.probes_proposed + stats.probes_of_areas  # full, cheap or of areas
    assert probes >= 2 and stats.faces_probed_by_mesh == probes
    assert all(face.landmarks_68 is None and face.mesh is not None for face in faces)
    for frame, face in zip(frames[10:], faces[10:], strict=True):
        detected = face_of(FaceAnalyser(shared_runtime), frame)
        assert detected.mesh is not None and face.mesh is not None
        offset = np.linalg.norm(face.mesh.points[:468] - detected.mesh.points, axis=1).mean() / face.width
        assert offset < 0.03
        assert box_iou(face.bbox, detected.bbox) > 0.5


def test_a_detected_box_continues_a_track_only_beyond_doubt(analyser: FaceAnalyser) -> None:
    """``detected_tracks``: a detector's box near a track's gets it; two boxes over one track, a box far
    from any, a cut or a frame that is not the next one get none."""
    grace = media.grace_hopper()
    smoother = MeshSmoother()
    face = face_of(analyser, grace)
    smoother.smooth(BgrImage(grace), 0, 0.0, [face], [None])
    moved = noisy(grace, 1)
    nudged = face.bbox + np.float32(face.width / 20)
    [track] = smoother.detected_tracks(BgrImage(moved), 1, [nudged])
    assert track is not None and np.array_equal(track.bbox, face.bbox)
    assert smoother.detected_tracks(BgrImage(moved), 1, [nudged, face.bbox]) == [None, None]
    assert smoother.detected_tracks(BgrImage(moved), 1, [face.bbox + np.float32(400)]) == [None]
    assert smoother.detected_tracks(BgrImage(resized(media.astronaut(), grace)), 1, [nudged]) == [None]
    assert smoother.detected_tracks(BgrImage(moved), 2, [nudged]) == [None]

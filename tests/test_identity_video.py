"""The identity cache on clips made from package photos: few recognizer calls, the same swap decisions
as without the cache, and two people who cross never trade identities."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import ScheduleState
from facefusion_ui.pipeline import FramePipeline, VideoState
from facefusion_ui.state_manager import Settings
from tests.support import media, videos

REFERENCE = Settings(face_selector_mode="reference", processors=("face_swapper",))


@pytest.fixture(scope="module")
def face_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("face") / "astronaut.png"
    cv2.imwrite(str(path), media.astronaut())
    return path


def selections(pipeline: FramePipeline, frames: list[np.ndarray], fps: float) -> list[list[tuple[int, int]]]:
    pipeline.set_reference_from(frames[0])
    chosen = []
    for index, frame in enumerate(frames):
        analysis = pipeline.analyse(frame, index, index / fps)
        chosen.append([(int(f.bbox[0]), int(f.bbox[1])) for f in analysis.selected])
    return chosen


def test_talking_head_skips_the_recognizer_and_decides_the_same(shared_runtime: ModelRuntime, face_path: Path) -> None:
    fps, seconds = 12, 10
    make = videos.talking_head(320, 240, fps * seconds)
    frames = [make(index) for index in range(fps * seconds)]
    cached = FramePipeline.build(REFERENCE, shared_runtime, [face_path])
    uncached = FramePipeline.build(REFERENCE.with_items(face_identity_cache=False), shared_runtime, [face_path])
    with_cache, without_cache = selections(cached, frames, fps), selections(uncached, frames, fps)
    assert with_cache == without_cache
    assert all(len(chosen) == 1 for chosen in with_cache)  # the reference person, every frame
    summary = cached.summary()
    detected = summary["faces_detected"]
    assert detected >= len(frames)
    assert summary["recognizer_calls"] <= 0.10 * detected, summary
    assert summary["identity_cache"]["hit_rate"] >= 0.0
    assert uncached.summary()["recognizer_calls"] >= len(frames)


def test_two_people_crossing_never_trade_identities(shared_runtime: ModelRuntime, face_path: Path) -> None:
    frames_total, width, height = 60, 480, 320
    make = videos.crossing(width, height, frames_total)
    pipeline = FramePipeline.build(REFERENCE.with_items(face_selector_mode="many"), shared_runtime, [face_path])
    assert pipeline.identities is not None
    size = int(height * 0.45)
    owners: dict[str, set[int]] = {"A": set(), "B": set()}
    for index, (xa, xb) in enumerate(videos.crossing_positions(width, frames_total, size)):
        frame = make(index)
        faces = pipeline.analyser.analyse(frame, pipeline.settings, embeddings=False)
        rgb = np.ascontiguousarray(frame[:, :, ::-1])

        def embed(seen: Face, frame: np.ndarray = frame, rgb: np.ndarray = rgb) -> np.ndarray:
            return pipeline.analyser.embedding(frame, rgb, seen, pipeline.settings)

        resolved = pipeline.identities.resolve(faces, index, index / 25, embed)
        for found, identity in resolved:
            if identity is None:
                continue
            cx, cy = found.center
            person = "A" if cy < height * 0.5 else "B"  # A walks on the upper line, B on the lower
            expected_x = (xa if person == "A" else xb) + size / 2
            assert abs(cx - expected_x) < size, "a face was found where nobody is"
            owners[person].add(identity.id)
    assert owners["A"] and owners["B"]
    assert owners["A"].isdisjoint(owners["B"]), owners


def test_identities_survive_a_resume_exactly(shared_runtime: ModelRuntime, face_path: Path) -> None:
    """The state saved in the manifest after a chunk (through JSON, as a resume reads it) makes a new
    pipeline identify the next frames as the uninterrupted one does: same faces chosen, same embeddings,
    the same recognizer calls; without it the recognizer has to run again."""
    fps, frames_total, cut = 12, 72, 36
    make = videos.talking_head(320, 240, frames_total)
    frames = [make(index) for index in range(frames_total)]

    def run(pipeline: FramePipeline, indices: range) -> tuple[list[list[tuple[int, int]]], list[np.ndarray], int]:
        calls = pipeline.analyser.counters.recognizer_calls
        chosen: list[list[tuple[int, int]]] = []
        embeddings: list[np.ndarray] = []
        for index in indices:
            analysis = pipeline.analyse(frames[index], index, index / fps)
            chosen.append([(int(f.bbox[0]), int(f.bbox[1])) for f in analysis.selected])
            embeddings.extend(f.embedding for f in analysis.selected if f.embedding is not None)
        return chosen, embeddings, pipeline.analyser.counters.recognizer_calls - calls

    def fresh() -> FramePipeline:
        pipeline = FramePipeline.build(REFERENCE, shared_runtime, [face_path])
        pipeline.set_reference_from(frames[0])
        return pipeline

    whole = fresh()
    whole.start_video(0)
    run(whole, range(cut))
    saved = json.loads(json.dumps(whole.video_state().to_json()))
    assert saved["identities"]["cache"]["entries"], "nothing identified before the cut"
    expected = run(whole, range(cut, frames_total))

    resumed = fresh()
    resumed.start_video(0, VideoState.from_json(saved))
    chosen, embeddings, calls = run(resumed, range(cut, frames_total))
    assert chosen == expected[0] and all(len(faces) == 1 for faces in chosen)
    assert len(embeddings) == len(expected[1])
    assert all(np.array_equal(got, want) for got, want in zip(embeddings, expected[1], strict=True))
    assert calls == expected[2]

    forgetful = fresh()
    forgetful.start_video(0)
    assert run(forgetful, range(cut, frames_total))[2] > expected[2]


def test_a_manifest_saved_before_identities_still_resumes() -> None:
    """Manifests written before identities were saved hold the schedule's state alone."""
    schedule = ScheduleState(((1.0, 2.0, 3.0, 4.0),), 2, None)
    state = VideoState.from_json(schedule.to_json())
    assert state.schedule == schedule and state.identities is None

"""``--face-map`` on a video made from package photos (two people crossing, one leaving and coming back, a
cut): each mapped person keeps their own source all through (the recognizer on the output says so), the
unmapped person stays themself, chunked equals unchunked and resumed equals uninterrupted frame for frame."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.errors import CancelledError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import embedding_distance
from facefusion_ui.faces.face_map import parse_face_map
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding
from tests.conftest import RunCli
from tests.support import media, videos

FRAMES, WIDTH, HEIGHT = 60, 400, 240
"""videos.three_people: the crossing in frames 0-39, Grace Hopper away in 20-29, the cut at 40."""
LOSSLESS = Settings(output_video_quality=100, video_copy_unchanged="off")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("map")
    paths = {"tom": folder / "tom.jpg", "astronaut": folder / "astronaut.png", "grace": folder / "grace.jpg"}
    paths["tom"].write_bytes(media.tom_hanks_path().read_bytes())
    paths["grace"].write_bytes(media.grace_hopper_path().read_bytes())
    cv2.imwrite(str(paths["astronaut"]), media.astronaut())
    paths["clip"] = videos.write_video(folder / "three.mp4", videos.three_people(WIDTH, HEIGHT, FRAMES), FRAMES)
    return paths


def swap(files: dict[str, Path], output: Path, runtime: ModelRuntime, settings: Settings, **context: Any) -> Any:
    face_map = [parse_face_map(f"1={files['tom']}"), parse_face_map(f"2={files['astronaut']}")]
    job = SwapJob.of(settings, [], files["clip"], output, face_map)
    return process(job, RunContext(runtime=runtime, **context))


def embedding_of(analyser: FaceAnalyser, path: Path) -> Embedding:
    faces = analyser.analyse(media.read(path), Settings(), embeddings=True)
    assert faces and faces[0].embedding is not None
    return faces[0].embedding


def test_each_person_keeps_their_source_through_crossing_absence_and_cut(
    files: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    states: list[dict[str, Any]] = []
    result = swap(files, tmp_path / "out.mp4", shared_runtime, LOSSLESS, progress=states.append)
    # the people pass reports its own progress before the frames' (a bar, a job's status line)
    stages = [state.get("stage", "frames") for state in states]
    assert stages[0] == "people" and "frames" in stages
    assert stages.index("frames") == stages.count("people")  # the pass entirely before the frames
    passing = [state for state in states if state.get("stage") == "people"]
    assert passing[-1]["frames_done"] == passing[-1]["frames_total"] == FRAMES and passing[-1]["chunk"] == 0
    assert result.stats["people"] == [
        {"id": 1, "source": "tom.jpg", "faces_swapped": FRAMES, "frames": FRAMES},
        {"id": 2, "source": "astronaut.png", "faces_swapped": FRAMES, "frames": FRAMES},
    ]
    assert result.stats["recognizer_calls"] < FRAMES // 2
    analyser = FaceAnalyser(shared_runtime)
    scale = analyser.recognizer_scale(Settings())
    known = {name: embedding_of(analyser, files[path]) for name, path in (("A", "tom"), ("B", "astronaut"))}
    known["C"] = embedding_of(analyser, files["grace"])
    frames = videos.decode_all(tmp_path / "out.mp4")
    checked = 0
    for index in range(0, FRAMES, 3):
        for face in analyser.analyse(frames[index], Settings(), embeddings=True):
            embedding = face.embedding
            assert embedding is not None
            nearest = min(known, key=lambda name: embedding_distance(known[name], embedding, scale.metric))
            assert nearest == videos.three_people_who(WIDTH, HEIGHT, FRAMES, index, *face.center), (index, face.bbox)
            checked += 1
    assert checked >= 50


def test_chunked_and_resumed_equal_the_whole_run(
    files: dict[str, Path], shared_runtime: ModelRuntime, tmp_path: Path
) -> None:
    whole, chunked, resumed = tmp_path / "whole.mp4", tmp_path / "chunked.mp4", tmp_path / "resumed.mp4"
    swap(files, whole, shared_runtime, LOSSLESS.with_items(video_chunk_size=1000))
    summary = swap(files, chunked, shared_runtime, LOSSLESS.with_items(video_chunk_size=1)).stats
    assert summary["chunks_total"] == 3
    cancel = threading.Event()

    def stop_in_chunk_2(state: dict[str, Any]) -> None:
        if state["chunk"] >= 2:
            cancel.set()

    work = tmp_path / "work"
    settings = LOSSLESS.with_items(video_chunk_size=1)
    with pytest.raises(CancelledError):
        swap(files, resumed, shared_runtime, settings, work_dir=work, cancel=cancel, progress=stop_in_chunk_2)
    again = swap(files, resumed, shared_runtime, settings, work_dir=work).stats
    assert again["chunks_skipped"] >= 1
    assert again["people"] == summary["people"]
    expected = videos.decode_all(whole)
    for other in (chunked, resumed):
        frames = videos.decode_all(other)
        assert len(frames) == FRAMES
        assert all(np.array_equal(a, b) for a, b in zip(frames, expected, strict=True))


def test_a_number_the_video_does_not_have_is_one_line(cli_here: RunCli, files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    done = cli_here(["process", "-t", str(files["clip"]), "-o", str(out), "--face-map", f"4={files['tom']}"])
    assert done.returncode == 2 and not out.exists()
    assert done.stderr == "error: --face-map: the target has no person 4: its people are 1, 2, 3\n"

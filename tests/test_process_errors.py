"""``run.py process`` on bad input: one clear line, exit code 2, no output file, no traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import RunCli
from tests.support import media, videos


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    paths = {
        "face": folder / "astronaut.jpg",
        "target": folder / "grace.jpg",
        "blank": folder / "wall.jpg",
        "text": folder / "notes.jpg",
    }
    cv2.imwrite(str(paths["face"]), media.astronaut())
    cv2.imwrite(str(paths["target"]), media.grace_hopper())
    cv2.imwrite(str(paths["blank"]), np.full((300, 300, 3), 128, np.uint8))
    paths["text"].write_text("this is not an image")
    return paths


def one_line_error(completed: object, fragment: str) -> None:
    assert completed.returncode == 2, completed.stderr  # type: ignore[attr-defined]
    lines = completed.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr  # type: ignore[attr-defined]
    assert fragment in lines[0]
    assert "Traceback" not in completed.stderr  # type: ignore[attr-defined]


def test_no_face_in_source(cli_here: RunCli, files: dict[str, Path], tmp_path: Path) -> None:
    output = tmp_path / "out.jpg"
    completed = cli_here(["process", "-s", str(files["blank"]), "-t", str(files["target"]), "-o", str(output)])
    one_line_error(
        completed, f"no face found in {files['blank']}: use a photo where the face is visible and at least 80 px wide"
    )
    assert not output.exists()


@pytest.mark.parametrize("source", ["blank", "text"])
def test_a_bad_source_photo_fails_a_video_too(
    cli_here: RunCli, files: dict[str, Path], tmp_path: Path, private_home: Path, source: str
) -> None:
    """A video's source photos are read while its frames are decoded (``load_sources_in_background``):
    a photo without a face (or not an image) fails the job all the same, with the same line, though no
    face ever shows in the video, and leaves no output and no work folder."""
    clip = videos.write_video(tmp_path / "pan.mp4", videos.panning_scene(320, 240, 30), 30)
    output = tmp_path / "out.mp4"
    completed = cli_here(["process", "-s", str(files[source]), "-t", str(clip), "-o", str(output)])
    problem = f"no face found in {files[source]}" if source == "blank" else f"source {files[source]} cannot be read"
    one_line_error(completed, problem)
    assert not output.exists()
    work = private_home / "work"
    assert not work.exists() or not any(work.iterdir()), "the failed job's work folder is left behind"


@pytest.mark.parametrize("role", ["source", "target"])
def test_unreadable_image(cli_here: RunCli, files: dict[str, Path], tmp_path: Path, role: str) -> None:
    source = files["text"] if role == "source" else files["face"]
    target = files["text"] if role == "target" else files["target"]
    output = tmp_path / "out.jpg"
    completed = cli_here(["process", "-s", str(source), "-t", str(target), "-o", str(output)])
    one_line_error(completed, f"{role} {files['text']} cannot be read as an image")
    assert not output.exists()


def test_missing_model_names_the_download_command(cli_here: RunCli, files: dict[str, Path], tmp_path: Path) -> None:
    def process_without_models(*options: str) -> subprocess.CompletedProcess[str]:
        return cli_here(
            ["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(tmp_path / "o.jpg"), *options],
            env={"FACEFUSION_UI_MODELS": str(tmp_path / "empty")},
        )

    one_line_error(
        process_without_models("--face-swapper-model", "inswapper_128"),
        "model 'inswapper_128' is not downloaded: run 'python run.py models download inswapper_128'",
    )
    one_line_error(
        process_without_models("--processors", "face_swapper", "face_enhancer"),
        "run 'python run.py models download gfpgan_1.4'",
    )


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ("/proc/out.jpg", "cannot write to output folder /proc"),
        ("{tmp}/missing/out.jpg", "output folder {tmp}/missing does not exist"),
        ("{tmp}/out.mp4", "must be an image like the target"),
        ("{tmp}/out.txt", "is neither an image"),
    ],
)
def test_unusable_output(cli_here: RunCli, files: dict[str, Path], tmp_path: Path, output: str, fragment: str) -> None:
    out = output.format(tmp=tmp_path)
    completed = cli_here(["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", out])
    one_line_error(completed, fragment.format(tmp=tmp_path))


def test_output_same_as_target(cli_here: RunCli, files: dict[str, Path]) -> None:
    before = files["target"].read_bytes()
    completed = cli_here(["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(files["target"])])
    one_line_error(completed, "is the target itself")
    assert files["target"].read_bytes() == before


def test_missing_files_and_arguments(cli_here: RunCli, files: dict[str, Path], tmp_path: Path) -> None:
    one_line_error(
        cli_here(
            ["process", "-s", str(tmp_path / "nope.jpg"), "-t", str(files["target"]), "-o", str(tmp_path / "o.jpg")]
        ),
        "does not exist",
    )
    one_line_error(
        cli_here(["process", "-t", str(files["target"]), "-o", str(tmp_path / "o.jpg")]), "process needs -s SOURCE"
    )


def test_success_prints_the_json_summary(cli_here: RunCli, files: dict[str, Path], tmp_path: Path) -> None:
    output = tmp_path / "out.jpg"
    completed = cli_here(["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(output), "--json"])
    assert completed.returncode == 0, completed.stderr
    summary = json.loads(completed.stdout)
    assert summary["output"] == str(output) and output.exists()
    assert summary["faces_detected"] == 1 and summary["faces_swapped"] == 1
    assert summary["models_used"] == ["dlib_hog", "dlib_68", "mesh_warp", "mediapipe_face_mesh"]
    assert summary["seconds"] > 0
    assert completed.stderr == "", "mediapipe or TFLite start-up chatter reached the terminal"


def test_a_chain_that_puts_no_face_in_needs_no_source_photo(cli_here: RunCli, tmp_path: Path) -> None:
    """The face debugger (or an enhancer, the background remover) alone: no -s, and the output is made;
    the face swapper without -s is still the one line."""
    target = tmp_path / "group.jpg"
    cv2.imwrite(str(target), media.t1())
    out = tmp_path / "debugged.jpg"
    done = cli_here(["process", "-t", str(target), "-o", str(out), "--processors", "face_debugger"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{out}: written in ")  # no "0 of 0 faces swapped"
    assert out.exists() and not np.array_equal(media.read(out), media.t1())  # the boxes are drawn
    missing = cli_here(["process", "-t", str(target), "-o", str(tmp_path / "swapped.jpg")])
    assert missing.returncode == 2 and "process needs -s SOURCE" in missing.stderr
    # the face selector taking its reference from the source needs one whatever the processors
    reference = ["--face-selector-mode", "reference", "--reference-face-from", "source"]
    again = cli_here(["process", "-t", str(target), "-o", str(out), "--processors", "face_debugger", *reference])
    assert again.returncode == 2 and "process needs -s SOURCE" in again.stderr

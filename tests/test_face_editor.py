"""The face editor on stand-in LivePortrait parts (``tests/support/face_edit_models.py``): each slider
moves the expression, the head or the retargeted eyes and lips as FaceFusion's tables say, and the
generator (a brightness the size of the move) shows it; the crop spread by 1.5 round the nose; nothing
changes with every slider at 0; a face without its 68 landmarks is left alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors import face_editor
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.face_editor import FaceEditor
from facefusion_ui.processors.face_edits import EXPRESSION_EDITS, edit_expression, edited_angles
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support.face_edit_models import GENERATOR_GAIN, RETARGET_GAIN, build_face_editor_parts

FFHQ = np.array([(0.377, 0.469), (0.623, 0.469), (0.501, 0.613), (0.393, 0.725), (0.612, 0.725)], np.float32)
SIDE = 200
SCALE = 1.1
"""The stand-in motion extractor's scale."""


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_face_editor_parts(folder)
    return folder


def face() -> Face:
    kps = ((FFHQ - 0.5) * SIDE + (300, 280)).astype(np.float32)
    landmarks = np.zeros((68, 2), np.float32)
    for top, bottom, left, right, centre in ((37, 40, 39, 36, kps[0]), (43, 46, 45, 42, kps[1])):
        landmarks[[left, right]] = centre + np.array(
            [(-12, 0), (12, 0)], np.float32
        )  # eyes 24 px wide, 5 px open: ratio 0.2
        landmarks[[top, bottom]] = centre + np.array([(0, -2.5), (0, 2.5)], np.float32)
    mouth = kps[3:5].mean(axis=0)
    landmarks[[48, 54]] = mouth + np.array([(-20, 0), (20, 0)], np.float32)
    landmarks[[62, 66]] = mouth + np.array([(0, -4), (0, 4)], np.float32)  # lips 40 px wide, 8 px open: ratio 0.2
    return Face(np.array([200, 180, 400, 380], np.float32), 0.9, kps, "test", landmarks_68=landmarks)


def grey() -> Frame:
    return np.full((560, 600, 3), 128, np.uint8)


def editor(folder: Path, **values: float) -> FaceEditor:
    edits = {f"face_editor_{name}": value for name, value in values.items()}
    settings = Settings.from_dict({"processors": ("face_editor",), **edits})
    return FaceEditor(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def change(processor: FaceEditor, subject: Face | None = None) -> np.ndarray:
    context = FrameContext(0, 0.0, processor.settings, faces=(subject or face(),))
    return processor.process_frame(grey(), context).astype(np.int16) - 128


def at_nose(difference: np.ndarray) -> float:
    x, y = face().kps[2].round().astype(int)
    return float(difference[y - 8 : y + 8, x - 8 : x + 8].mean())


def test_a_smile_moves_the_mouth_points_as_facefusions_table(models: Path) -> None:
    moved = sum(sign * amplitude for _, _, sign, amplitude in EXPRESSION_EDITS["mouth_smile"][0])
    expected = GENERATOR_GAIN * 0.5 * SCALE * moved * 255  # half kept by the stand-in stitcher
    measured = at_nose(change(editor(models, mouth_smile=1.0)))
    assert expected < -15 and abs(measured - expected) < 0.25 * abs(expected), (measured, expected)
    assert abs(at_nose(change(editor(models, mouth_smile=0.5))) - expected / 2) < 0.25 * abs(expected)


def test_eyes_and_lips_open_through_their_retargeters(models: Path) -> None:
    # eye opening 0.2 in both eyes, 0.6 wanted: every y moved by the gain * 0.4, half kept, 21 points
    expected_eyes = GENERATOR_GAIN * 0.5 * 21 * RETARGET_GAIN * (0.6 - 0.2) * 255
    assert abs(at_nose(change(editor(models, eye_open_ratio=1.0))) - expected_eyes) < 0.25 * expected_eyes
    # closing: 0 wanted, the move the other way
    assert at_nose(change(editor(models, eye_open_ratio=-1.0))) < -0.5 * expected_eyes
    expected_lips = GENERATOR_GAIN * 0.5 * 21 * RETARGET_GAIN * (1.0 - 0.2) * 255
    assert abs(at_nose(change(editor(models, lip_open_ratio=1.0))) - expected_lips) < 0.25 * expected_lips


def test_the_head_turns_and_every_slider_at_zero_changes_nothing(models: Path) -> None:
    assert abs(at_nose(change(editor(models, head_yaw=1.0)))) > 3
    assert not change(editor(models)).any()
    no_landmarks = dataclasses.replace(face(), landmarks_68=None)
    assert not change(editor(models, mouth_smile=1.0), no_landmarks).any()


def test_the_crop_is_spread_round_the_nose(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def changed_width(processor: FaceEditor) -> int:
        columns = np.nonzero(np.abs(change(processor)).max(axis=(0, 2)) > 2)[0]
        return int(columns[-1] - columns[0])

    eyes = float(np.linalg.norm(face().kps[1] - face().kps[0]))
    crop_side = 512 * 1.5 * eyes / (512 * (0.62285697 - 0.37691676))  # the 512 px crop, in frame pixels
    spread = changed_width(editor(models, mouth_smile=1.0))
    assert 0.6 * crop_side < spread <= crop_side + 2
    monkeypatch.setattr(face_editor, "SPREAD", 1.0)
    assert changed_width(editor(models, mouth_smile=1.0)) < 0.75 * spread


def test_tables_and_limits() -> None:
    expression = np.zeros((1, 21, 3), np.float32)
    edited = edit_expression(expression, {"eyebrow_direction": 1.0, "eye_gaze_horizontal": -0.5})
    assert edited[0, 1, 1] == pytest.approx(0.015) and edited[0, 2, 1] == pytest.approx(-0.020)
    assert edited[0, 11, 0] == pytest.approx(-0.010) and edited[0, 15, 0] == pytest.approx(-0.0075)
    assert edited_angles(0.0, 0.0, 0.0, {"head_pitch": 1.0, "head_yaw": -1.0, "head_roll": 1.0}) == (-20.0, 60.0, 15.0)
    assert edited_angles(25.0, 50.0, -15.0, {"head_pitch": -1.0, "head_yaw": -1.0, "head_roll": -1.0}) == (
        30.0,
        60.0,
        -20.0,
    )
    assert edited_angles(40.0, 0.0, 0.0, {"head_pitch": -1.0}) == (40.0, 0.0, 0.0)  # its own angle is the limit

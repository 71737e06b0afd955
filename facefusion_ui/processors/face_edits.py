"""The face editor's sliders as FaceFusion's ``face_editor/core.py`` has them: what each does to
LivePortrait's expression (21 points x 3 axes), its head angles, and the eye and lip retargeters' inputs.

Each expression slider moves some coordinates by ``sign * amplitude * value`` (FaceFusion's
``numpy.interp(value, [-1, 1], [-amplitude, amplitude])``), one set of moves for a value above 0 and
another for 0 and below (``EXPRESSION_EDITS``: ``(point, axis, sign, amplitude)``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from facefusion_ui.types import Points

Move = tuple[int, int, int, float]
"""(point, axis, sign, amplitude)."""

EYEBROW_UP: tuple[Move, ...] = ((1, 1, 1, 0.015), (2, 1, -1, 0.020))
EYEBROW_DOWN: tuple[Move, ...] = ((1, 0, -1, 0.015), (2, 0, 1, 0.020), (1, 1, 1, 0.005), (2, 1, -1, 0.005))
GAZE_VERTICAL: tuple[Move, ...] = (
    (1, 1, 1, 0.0025),
    (2, 1, -1, 0.0025),
    (11, 1, -1, 0.010),
    (13, 1, -1, 0.005),
    (15, 1, -1, 0.010),
    (16, 1, -1, 0.005),
)

EXPRESSION_EDITS: Mapping[str, tuple[tuple[Move, ...], tuple[Move, ...]]] = {
    "eyebrow_direction": (EYEBROW_UP, EYEBROW_DOWN),
    "eye_gaze_horizontal": (((11, 0, 1, 0.015), (15, 0, 1, 0.020)), ((11, 0, 1, 0.020), (15, 0, 1, 0.015))),
    "eye_gaze_vertical": (GAZE_VERTICAL, GAZE_VERTICAL),
    "mouth_grim": (
        ((17, 2, -1, 0.005), (19, 2, 1, 0.01), (20, 1, -1, 0.06), (20, 2, -1, 0.03)),
        ((19, 1, -1, 0.05), (19, 2, -1, 0.02), (20, 2, -1, 0.03)),
    ),
    "mouth_position_horizontal": (((19, 0, 1, 0.05), (20, 0, 1, 0.04)), ((19, 0, 1, 0.05), (20, 0, 1, 0.04))),
    "mouth_position_vertical": (((19, 1, -1, 0.04), (20, 1, -1, 0.02)), ((19, 1, -1, 0.05), (20, 1, -1, 0.04))),
    "mouth_pout": (
        ((19, 1, -1, 0.022), (19, 2, 1, 0.025), (20, 2, -1, 0.002)),
        ((19, 1, 1, 0.022), (19, 2, 1, 0.025), (20, 2, -1, 0.002)),
    ),
    "mouth_purse": (
        ((19, 1, -1, 0.04), (19, 2, -1, 0.02)),
        ((14, 1, -1, 0.02), (17, 2, 1, 0.01), (19, 2, -1, 0.015), (20, 2, -1, 0.002)),
    ),
    "mouth_smile": (
        (
            (20, 1, -1, 0.015),
            (14, 1, -1, 0.025),
            (17, 1, 1, 0.01),
            (17, 2, 1, 0.004),
            (3, 1, -1, 0.0045),
            (7, 1, -1, 0.0045),
        ),
        (
            (14, 1, -1, 0.02),
            (17, 1, 1, 0.003),
            (19, 1, 1, 0.02),
            (19, 2, -1, 0.005),
            (20, 2, 1, 0.01),
            (3, 1, 1, 0.0045),
            (7, 1, 1, 0.0045),
        ),
    ),
}
"""FaceFusion's ``edit_eyebrow_direction``, ``edit_eye_gaze``, ``edit_mouth_grim``, ``edit_mouth_position``,
``edit_mouth_pout``, ``edit_mouth_purse``, ``edit_mouth_smile``: (moves above 0, moves at 0 and below)."""

HEAD_SPANS = {"head_pitch": (20.0, -20.0), "head_yaw": (60.0, -60.0), "head_roll": (-15.0, 15.0)}
"""Degrees added at slider -1 and 1 (``edit_head_rotation``)."""
ANGLE_LIMITS = ((-30.0, 30.0), (-60.0, 60.0), (-20.0, 20.0))
"""Pitch, yaw, roll: where an edited angle stops, widened to the face's own angle (``calculate_euler_limits``)."""


def edit_expression(expression: np.ndarray, values: Mapping[str, float]) -> np.ndarray:
    """The expression with every slider's moves applied (FaceFusion's order: the sum does not depend on it)."""
    edited = np.array(expression, dtype=np.float32, copy=True)
    for name, (above, below) in EXPRESSION_EDITS.items():
        value = float(values.get(name, 0.0))
        for point, axis, sign, amplitude in above if value > 0 else below:
            edited[0, point, axis] += sign * amplitude * value
    return edited


def edited_angles(pitch: float, yaw: float, roll: float, values: Mapping[str, float]) -> tuple[float, float, float]:
    """The head's angles moved by the sliders, within the limits (``edit_head_rotation``, ``limit_angle``)."""
    edited = []
    for own, name, (low, high) in zip((pitch, yaw, roll), HEAD_SPANS, ANGLE_LIMITS, strict=True):
        start, end = HEAD_SPANS[name]
        moved = own + float(np.interp(values.get(name, 0.0), [-1, 1], [start, end]))
        low, high = (min(own, low), high) if own < 0 else (low, max(own, high))
        edited.append(float(np.clip(moved, low, high)))
    return edited[0], edited[1], edited[2]


def distance_ratio(landmarks: Points, top: int, bottom: int, left: int, right: int) -> float:
    """``calculate_distance_ratio``: an opening's height over its width, from the 68 landmarks."""
    vertical = float(np.linalg.norm(landmarks[top] - landmarks[bottom]))
    return vertical / (float(np.linalg.norm(landmarks[left] - landmarks[right])) + 1e-6)


def eye_input(points: np.ndarray, landmarks: Points, value: float) -> np.ndarray:
    """The eye retargeter's input: the face's points, both eyes' opening, and 0 (closing) or 0.6 (opening)."""
    left, right = distance_ratio(landmarks, 37, 40, 39, 36), distance_ratio(landmarks, 43, 46, 45, 42)
    wanted = 0.0 if value < 0 else 0.6
    return np.concatenate([points.ravel(), [left, right, wanted]]).reshape(1, -1).astype(np.float32)


def lip_input(points: np.ndarray, landmarks: Points, value: float) -> np.ndarray:
    """The lip retargeter's input: the face's points, the lips' opening, and 0 (closing) or 1 (opening)."""
    ratio = distance_ratio(landmarks, 62, 66, 54, 48)
    wanted = 0.0 if value < 0 else 1.0
    return np.concatenate([points.ravel(), [ratio, wanted]]).reshape(1, -1).astype(np.float32)

"""LivePortrait as FaceFusion runs it (``processors/live_portrait.py`` and the expression restorer's
``core.py``): the crop's preparation, the motion extractor's outputs, the expression limits, the head's
rotation, and the generator's call.

The face is aligned on ``arcface_128`` into 512 px, resized to 256 px (area), RGB in [0, 1], 1x3x256x256,
fed as ``input`` to the feature extractor (-> a feature volume) and the motion extractor (-> pitch, yaw,
roll in degrees, scale, translation, expression 1x21x3, motion points 1x21x3). The 21 implicit points are
``scale * (points @ rotation.T + expression) + translation``; the generator takes the feature volume,
``source`` (the points the face should take) and ``target`` (the points it has), and returns the face
(1x3x512x512 RGB in [0, 1]), pasted back through the 512 px crop.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import cv2
import numpy as np

from facefusion_ui.faces.warp_templates import WarpTemplate
from facefusion_ui.types import Frame

TEMPLATE: WarpTemplate = "arcface_128"
SIZE = 512
UPPER_FACE = (1, 2, 6, 10, 11, 12, 13, 15, 16)
LOWER_FACE = (3, 7, 14, 17, 18, 19, 20)
KEPT = (0, 4, 5, 8, 9)
"""Expression points the restorer always takes from the face as it is (FaceFusion's
``restrict_expression_areas``); the upper and lower face's come from the target where asked."""

EXPRESSION_MIN = np.array(
    (
        (-2.88067125e-02, -8.12731311e-02, -1.70541159e-03),
        (-4.88598682e-02, -3.32196616e-02, -1.67431499e-04),
        (-6.75425082e-02, -4.28681746e-02, -1.98950816e-04),
        (-7.23103955e-02, -3.28503326e-02, -7.31324719e-04),
        (-3.87073644e-02, -6.01546466e-02, -5.50269964e-04),
        (-6.38048723e-02, -2.23840728e-01, -7.13261834e-04),
        (-3.02710701e-02, -3.93195450e-02, -8.24086510e-06),
        (-2.95799859e-02, -5.39318882e-02, -1.74219604e-04),
        (-2.92359516e-02, -1.53050944e-02, -6.30460854e-05),
        (-5.56493877e-03, -2.34344602e-02, -1.26858242e-04),
        (-4.37593013e-02, -2.77768299e-02, -2.70503685e-02),
        (-1.76926646e-02, -1.91676542e-02, -1.15090821e-04),
        (-8.34268332e-03, -3.99775570e-03, -3.27481248e-05),
        (-3.40162888e-02, -2.81868968e-02, -1.96679524e-04),
        (-2.91855410e-02, -3.97511162e-02, -2.81230678e-05),
        (-1.50395725e-02, -2.49494594e-02, -9.42573533e-05),
        (-1.67938769e-02, -2.00953931e-02, -4.00750607e-04),
        (-1.86435618e-02, -2.48535164e-02, -2.74416432e-02),
        (-4.61211195e-03, -1.21660791e-02, -2.93173041e-04),
        (-4.10017073e-02, -7.43824020e-02, -4.42762971e-02),
        (-1.90370996e-02, -3.74363363e-02, -1.34740388e-02),
    ),
    dtype=np.float32,
)
EXPRESSION_MAX = np.array(
    (
        (4.46682945e-02, 7.08772913e-02, 4.08344204e-04),
        (2.14308221e-02, 6.15894832e-02, 4.85319615e-05),
        (3.02363783e-02, 4.45043296e-02, 1.28298725e-05),
        (3.05869691e-02, 3.79812494e-02, 6.57040102e-04),
        (4.45670523e-02, 3.97259220e-02, 7.10966764e-04),
        (9.43699256e-02, 9.85926315e-02, 2.02551950e-04),
        (1.61131397e-02, 2.92906128e-02, 3.44733417e-06),
        (5.23825921e-02, 1.07065082e-01, 6.61510974e-04),
        (2.85718683e-03, 8.32320191e-03, 2.39314613e-04),
        (2.57947259e-02, 1.60935968e-02, 2.41853559e-05),
        (4.90833223e-02, 3.43903080e-02, 3.22353356e-02),
        (1.44766076e-02, 3.39248963e-02, 1.42291479e-04),
        (8.75749043e-04, 6.82212645e-03, 2.76097053e-05),
        (1.86958015e-02, 3.84016186e-02, 7.33085908e-05),
        (2.01714113e-02, 4.90544215e-02, 2.34028921e-05),
        (2.46518422e-02, 3.29151377e-02, 3.48571630e-05),
        (2.22457591e-02, 1.21796541e-02, 1.56396593e-04),
        (1.72109623e-02, 3.01626958e-02, 1.36556877e-02),
        (1.83460284e-02, 1.61141958e-02, 2.87440169e-04),
        (3.57594155e-02, 1.80554688e-01, 2.75554154e-02),
        (2.17450950e-02, 8.66811201e-02, 3.34241726e-02),
    ),
    dtype=np.float32,
)


class Motion(NamedTuple):
    pitch: float
    yaw: float
    roll: float
    scale: np.ndarray
    translation: np.ndarray
    expression: np.ndarray
    points: np.ndarray


def limit_expression(expression: np.ndarray) -> np.ndarray:
    return np.asarray(np.clip(expression, EXPRESSION_MIN, EXPRESSION_MAX), dtype=np.float32)


def rotation(pitch: float, yaw: float, roll: float) -> np.ndarray:
    """scipy's ``Rotation.from_euler('xyz', [pitch, yaw, roll], degrees=True)``: about x, then y, then z
    (fixed axes)."""
    x, y, z = np.radians([pitch, yaw, roll])
    about_x = np.array([[1, 0, 0], [0, np.cos(x), -np.sin(x)], [0, np.sin(x), np.cos(x)]])
    about_y = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    about_z = np.array([[np.cos(z), -np.sin(z), 0], [np.sin(z), np.cos(z), 0], [0, 0, 1]])
    return np.asarray(about_z @ about_y @ about_x, dtype=np.float32)


def crop_blob(crop: Frame) -> np.ndarray:
    """``prepare_crop_frame``: the 512 px crop at 256 px, RGB in [0, 1], 1x3x256x256."""
    small = cv2.resize(crop, (SIZE // 2, SIZE // 2), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray((small[:, :, ::-1] / 255.0).transpose(2, 0, 1)[None], dtype=np.float32)


def crop_frame(output: np.ndarray) -> Frame:
    """``normalize_crop_frame``: the generator's 3x512x512 RGB [0, 1] as a BGR crop (truncated to 8 bits)."""
    pixels = (output.transpose(1, 2, 0).clip(0, 1) * 255.0).astype(np.uint8)
    return np.ascontiguousarray(pixels[:, :, ::-1])


def extract_motion(session: Any, blob: np.ndarray) -> Motion:
    pitch, yaw, roll, scale, translation, expression, points = session.run(None, {"input": blob})
    pitch, yaw, roll = (float(np.ravel(angle)[0]) for angle in (pitch, yaw, roll))
    return Motion(
        pitch, yaw, roll, np.asarray(scale), np.asarray(translation), np.asarray(expression), np.asarray(points)
    )


def implicit_points(motion: Motion, expression: np.ndarray) -> np.ndarray:
    turned = motion.points @ rotation(motion.pitch, motion.yaw, motion.roll).T
    return np.asarray(motion.scale * (turned + expression) + motion.translation, dtype=np.float32)


def extract_features(session: Any, blob: np.ndarray) -> np.ndarray:
    return np.asarray(session.run(None, {"input": blob})[0], dtype=np.float32)


def generate(session: Any, features: np.ndarray, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    feed = {"feature_volume": features, "source": source, "target": target}
    return np.asarray(session.run(None, feed)[0][0], dtype=np.float32)

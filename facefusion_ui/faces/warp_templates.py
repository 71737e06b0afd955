"""The 5-point alignment templates every ONNX face model family is trained on, as fractions of the crop.

``alignment.py`` keeps the three templates the original models use (ArcFace 112, its 128 px shift, FFHQ
512); the swapper, enhancer and landmarker families add theirs here: ArcFace as InsightFace's and
SimSwap's crops place it (``arcface_112_v1``/``v2``), and MTCNN's 512 px layout (HifiFace). Points are
(x, y) in the order left eye, right eye, nose tip, left and right mouth corner, each a fraction of the
side, so one table serves every crop size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import cv2
import numpy as np

from facefusion_ui.faces.alignment import AlignmentFit, similarity_fit, template_points
from facefusion_ui.types import Frame, Matrix, Points

WarpTemplate = Literal[
    "arcface_112_v1", "arcface_112_v2", "arcface_128", "ffhq_512", "mtcnn_512", "styleganex_384", "dfl_whole_face"
]

WARP_TEMPLATES: Mapping[WarpTemplate, tuple[tuple[float, float], ...]] = {
    "arcface_112_v1": (
        (0.35473214, 0.45658929),
        (0.64526786, 0.45658929),
        (0.50000000, 0.61154464),
        (0.37913393, 0.77687500),
        (0.62086607, 0.77687500),
    ),
    # InsightFace's arcface_dst / 112
    "arcface_112_v2": (
        (0.34191607, 0.46157411),
        (0.65653393, 0.45983393),
        (0.50022500, 0.64050536),
        (0.37097589, 0.82469196),
        (0.63151696, 0.82325089),
    ),
    # arcface_dst shifted 8 px right, / 128: inswapper's and HyperSwap's crop
    "arcface_128": (
        (0.36167656, 0.40387734),
        (0.63696719, 0.40235469),
        (0.50019687, 0.56044219),
        (0.38710391, 0.72160547),
        (0.61507734, 0.72034453),
    ),
    # GFPGAN's FFHQ points / 512
    "ffhq_512": (
        (0.37691676, 0.46864664),
        (0.62285697, 0.46912813),
        (0.50123859, 0.61331904),
        (0.39308822, 0.72541100),
        (0.61150205, 0.72490465),
    ),
    "mtcnn_512": (
        (0.36562865, 0.46733799),
        (0.63305391, 0.46585885),
        (0.50019127, 0.61942959),
        (0.39032951, 0.77598822),
        (0.61178945, 0.77476328),
    ),
    # DeepFaceLab's whole-face crop (FaceFusion's deep swapper)
    "dfl_whole_face": (
        (0.35342266, 0.39285716),
        (0.62797622, 0.39285716),
        (0.48660713, 0.54017860),
        (0.38839287, 0.68750011),
        (0.59821427, 0.68750011),
    ),
    # StyleGANEX's face with its surroundings (FaceFusion's age modifier, styleganex_age)
    "styleganex_384": (
        (0.42353745, 0.52289879),
        (0.57725008, 0.52319972),
        (0.50123859, 0.61331904),
        (0.43364461, 0.68337652),
        (0.57015325, 0.68306005),
    ),
}


def warp_points(template: WarpTemplate, size: int) -> Points:
    """The template's points in a ``size`` px crop (the original models' from ``alignment``, to the bit)."""
    if template in ("arcface_128", "ffhq_512"):
        return template_points(template, size)
    points: Points = np.asarray(WARP_TEMPLATES[template], dtype=np.float32) * np.float32(size)
    return points


def template_matrix(kps: Points, template: WarpTemplate, size: int, fit: AlignmentFit = "least_squares") -> Matrix:
    """The similarity transform taking the face's 5 points onto the template in a ``size`` px crop
    (``fit``: least squares, or LMEDS where the model's reference runs it: see ``similarity_fit``)."""
    return similarity_fit(kps, warp_points(template, size), fit)


def warp_to_template(
    frame: Frame, kps: Points, template: WarpTemplate, size: int, fit: AlignmentFit = "least_squares"
) -> tuple[Frame, Matrix]:
    """The aligned ``size`` x ``size`` crop (BGR, as the frame) and the matrix that made it."""
    matrix = template_matrix(kps, template, size, fit)
    crop = cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)
    return np.asarray(crop, dtype=np.uint8), matrix

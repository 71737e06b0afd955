"""Alignment: the 5-point templates, similarity transforms, aligned crops and paste-back (its masks are
the mask stage's, ``facefusion_ui.masks``).

Templates are insightface's ArcFace points (112 px; the 128 px variant shifts x by 8 px as inswapper
expects) and the FFHQ 512 template GFPGAN is trained on.
"""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np

from facefusion_ui.types import Frame, Mask, Matrix, Points

TemplateName = Literal["arcface_112", "arcface_128", "ffhq_512"]
AlignmentFit = Literal["least_squares", "lmeds"]
"""How five points are fitted to a template: see ``similarity_fit``."""

ARCFACE_112 = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    dtype=np.float32,
)
"""insightface's ``face_align.arcface_dst`` (written out: importing insightface costs a second of start-up;
tests/test_model_families.py checks it against insightface's own)."""

FFHQ_512 = np.array(
    [
        [192.98138, 239.94708],
        [318.90277, 240.19366],
        [256.63416, 314.01935],
        [201.26117, 371.41043],
        [313.08905, 371.15118],
    ],
    dtype=np.float32,
)


def template_points(name: TemplateName, size: int) -> Points:
    """The template's 5 points scaled to an output of ``size`` px."""
    if name == "ffhq_512":
        return FFHQ_512 * (size / 512.0)
    base = ARCFACE_112
    if name == "arcface_112":
        return base * (size / 112.0)
    ratio = size / 128.0
    shifted = base * ratio
    shifted[:, 0] += 8.0 * ratio
    return shifted


def similarity_fit(source: Points, target: Points, fit: AlignmentFit = "least_squares") -> Matrix:
    """The 2x3 similarity transform (rotation, one scale, shift) taking ``source`` onto ``target``.

    ``least_squares`` (swappers, recognizer, landmarkers, lip syncer): every point counts, as in
    insightface's ``face_align.estimate_norm`` (scikit-image's ``SimilarityTransform.estimate``) and
    FaceFusion's ``estimate_matrix_by_face_landmark_5`` (RANSAC with a 100 px threshold: all five points
    are inliers, then refined to the least-squares fit). ``lmeds`` (the enhancers): OpenCV's least median
    of squares, as facexlib's ``FaceRestoreHelper.align_warp_face`` runs GFPGAN and CodeFormer; with five
    points it drops up to two of them as outliers.
    """
    points = np.asarray(source, dtype=np.float64)
    if fit == "least_squares":
        return umeyama(points, np.asarray(target, dtype=np.float64))
    matrix, _ = cv2.estimateAffinePartial2D(points.astype(np.float32), np.asarray(target, np.float32), method=cv2.LMEDS)
    if matrix is None:
        raise ValueError("cannot align a face whose keypoints are degenerate")
    return np.asarray(matrix, dtype=np.float64)


def umeyama(source: Matrix, target: Matrix) -> Matrix:
    """The least-squares similarity taking ``source`` (N x 2) onto ``target``, without reflection.

    Umeyama's closed form (IEEE TPAMI 13(4), 1991, "Least-squares estimation of transformation
    parameters between two point patterns", eqs. 38-42), the method scikit-image's
    ``SimilarityTransform.estimate`` implements: centre both sets on their means; their covariance
    C = target_c^T source_c / N; its SVD C = U S V^T; D = diag(1, det(U) det(V)) (-1 would be a
    reflection, so the weakest direction is turned instead); rotation R = U D V^T; scale = trace(S D) /
    the mean squared distance of source_c from its centre; shift = mean(target) - scale R mean(source).
    """
    source_mean, target_mean = source.mean(axis=0), target.mean(axis=0)
    source_c, target_c = source - source_mean, target - target_mean
    variance = float((source_c**2).sum(axis=1).mean())
    if not np.isfinite(variance) or variance < 1e-12:
        raise ValueError("cannot align a face whose keypoints are degenerate")
    u, singular, vt = np.linalg.svd(target_c.T @ source_c / len(source))
    d = np.array([1.0, np.sign(np.linalg.det(u) * np.linalg.det(vt)) or 1.0])
    rotation = u @ np.diag(d) @ vt
    scale = float(singular @ d) / variance
    shift = target_mean - scale * rotation @ source_mean
    return np.hstack([scale * rotation, shift[:, None]])


def estimate_matrix(kps: Points, template: TemplateName, size: int) -> Matrix:
    """The 2x3 similarity transform taking the face's 5 points onto the template (least squares)."""
    return similarity_fit(kps, template_points(template, size))


def warp_face(frame: Frame, kps: Points, template: TemplateName, size: int) -> tuple[Frame, Matrix]:
    """The aligned ``size`` x ``size`` crop and the matrix that made it."""
    matrix = estimate_matrix(kps, template, size)
    crop = np.asarray(
        cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE),
        dtype=np.uint8,
    )
    return crop, matrix


def paste_back(frame: Frame, crop: Frame, matrix: Matrix, crop_mask: Mask) -> Frame:
    """Warp ``crop`` back into ``frame`` through the inverse of ``matrix``, blended by ``crop_mask``.

    Only the bounding box of the warped mask is touched, so the cost follows the face, not the frame.
    """
    height, width = frame.shape[:2]
    inverse = cv2.invertAffineTransform(matrix)
    size = crop.shape[0]
    corners = np.array([[0, 0, 1], [size, 0, 1], [0, size, 1], [size, size, 1]], dtype=np.float64) @ inverse.T
    x1, y1 = np.floor(corners.min(axis=0)).astype(int)
    x2, y2 = np.ceil(corners.max(axis=0)).astype(int)
    x1, y1, x2, y2 = max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)
    if x2 <= x1 or y2 <= y1:
        return frame
    shifted = inverse.copy()
    shifted[:, 2] -= (x1, y1)
    region = (x2 - x1, y2 - y1)
    warped = cv2.warpAffine(crop, shifted, region, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    alpha = cv2.warpAffine(crop_mask, shifted, region, flags=cv2.INTER_LINEAR, borderValue=0.0)[..., None]
    result: Frame = frame.copy()
    patch = result[y1:y2, x1:x2].astype(np.float32)
    result[y1:y2, x1:x2] = np.clip(patch * (1 - alpha) + warped.astype(np.float32) * alpha, 0, 255).astype(np.uint8)
    return result


def kps_from_68(landmarks: Points) -> Points:
    """ArcFace-order 5 points from the 68-point iBUG layout (eye centres, nose tip, mouth corners)."""
    points = np.asarray(landmarks, dtype=np.float32)
    return np.stack(
        [points[36:42].mean(axis=0), points[42:48].mean(axis=0), points[30], points[48], points[54]]
    ).astype(np.float32)


FRONTAL_NOSE_RATIO = 0.55
"""Nose height between the eye line and the mouth line of a frontal face (measured on t1.jpg)."""


def estimate_pose(kps: Points) -> tuple[float, float]:
    """Approximate (yaw, pitch) in degrees from 5 points, after removing the roll of the eye line.

    Yaw grows as the nose leaves the middle of the eyes (0 frontal, ~45 when it reaches an eye);
    pitch compares the nose height between eyes and mouth with a frontal face's. Both are rough
    (a few degrees to ~15): enough to tell frontal, half-profile and profile apart.
    """
    points = np.asarray(kps, dtype=np.float64)
    left_eye, right_eye, nose = points[0], points[1], points[2]
    mouth = (points[3] + points[4]) / 2
    eye_vector = right_eye - left_eye
    eye_distance = float(np.linalg.norm(eye_vector)) or 1.0
    angle = np.arctan2(eye_vector[1], eye_vector[0])
    rotation = np.array([[np.cos(-angle), -np.sin(-angle)], [np.sin(-angle), np.cos(-angle)]])
    eye_mid = (left_eye + right_eye) / 2
    nose_offset = rotation @ (nose - eye_mid)
    mouth_offset = rotation @ (mouth - eye_mid)
    yaw = float(np.degrees(np.arctan2(nose_offset[0], 0.5 * eye_distance)))
    vertical = float(mouth_offset[1]) or 1.0
    pitch = float(np.clip((nose_offset[1] / vertical - FRONTAL_NOSE_RATIO) * 100.0, -90.0, 90.0))
    return yaw, pitch

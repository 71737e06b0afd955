"""The embedded swapper: the source face's 468-point mesh warped triangle by triangle onto the target's.

Steps, for one target face:
1. triangulate the target mesh (Delaunay over the target points, so no triangle folds over);
2. for every target pixel inside the mesh, find its triangle and barycentric coordinates, and read the
   source photo at the same coordinates of the matching source triangle (one ``cv2.remap``);
3. move the warped face's colour to the target's skin (mean and spread in LAB, inside the face);
4. blend with a feathered mask of the face (the oval, cut above the brows), so nothing outside changes.
The target keeps its pose and expression (its geometry); the source gives the appearance (identity).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from scipy.spatial import Delaunay

from facefusion_ui.types import Frame, Mask, Points

# Face-oval points of the mediapipe mesh (FACEMESH_FACE_OVAL), the outline of the swapped region.
FACE_OVAL = (
    10, 338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379, 378, 400, 377,
    152, 148, 176, 149, 150, 136, 172, 58, 132, 93, 234, 127, 162, 21, 54, 103, 67, 109,
)  # fmt: skip
BROWS = (70, 63, 105, 66, 107, 336, 296, 334, 293, 300)
"""Upper contours of both eyebrows."""
EYES = (33, 133, 362, 263)
MOUTH_CORNERS = (61, 291)
LIPS = (
    0, 13, 14, 17, 37, 39, 40, 61, 78, 80, 81, 82, 84, 87, 88, 91, 95, 146, 178, 181, 185, 191, 267, 269,
    270, 291, 308, 310, 311, 312, 314, 317, 318, 321, 324, 375, 402, 405, 409, 415,
)  # fmt: skip
SHAPE_WEIGHT = 0.5
"""How far the inner face (eyes, brows, nose, cheeks) moves toward the source's proportions. The
outline stays on the target so the blend is seamless, and the lips stay so the expression is kept."""
FOREHEAD_KEPT = 0.12
"""How much forehead above the brows the swap covers, in eye distances: above it, sources often have
hair (bangs, hats) that would smear a band across the target's forehead."""
STD_RATIO_LIMITS = (0.6, 1.6)
"""How far colour transfer may stretch the spread of a channel: beyond, it flattens or bleaches skin."""


@dataclass(frozen=True)
class WarpResult:
    frame: Frame
    mask: Mask
    """The blend weight used, over the whole frame (0 outside the face)."""


def region_of(points: Points, shape: tuple[int, ...], margin: int = 2) -> tuple[int, int, int, int]:
    height, width = shape[:2]
    x1, y1 = np.floor(points.min(axis=0)).astype(int) - margin
    x2, y2 = np.ceil(points.max(axis=0)).astype(int) + margin
    return max(int(x1), 0), max(int(y1), 0), min(int(x2), width), min(int(y2), height)


def warp_maps(
    target_points: Points, source_points: Points, region: tuple[int, int, int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each pixel of ``region`` in the target: where to read the source, and whether it is covered."""
    x1, y1, x2, y2 = region
    triangulation = Delaunay(target_points.astype(np.float64))
    ys, xs = np.mgrid[y1:y2, x1:x2]
    pixels = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64)
    simplex = triangulation.find_simplex(pixels)
    covered = simplex >= 0
    transform = triangulation.transform[simplex[covered]]
    partial = np.einsum("nij,nj->ni", transform[:, :2], pixels[covered] - transform[:, 2])
    barycentric = np.concatenate([partial, 1.0 - partial.sum(axis=1, keepdims=True)], axis=1)
    corners = source_points.astype(np.float64)[triangulation.simplices[simplex[covered]]]
    source_xy = np.einsum("ni,nij->nj", barycentric, corners)
    map_x = np.full(pixels.shape[0], -1.0, dtype=np.float32)
    map_y = np.full(pixels.shape[0], -1.0, dtype=np.float32)
    map_x[covered] = source_xy[:, 0]
    map_y[covered] = source_xy[:, 1]
    shape = (y2 - y1, x2 - x1)
    return map_x.reshape(shape), map_y.reshape(shape), covered.reshape(shape)


def face_outline(points: Points) -> Points:
    """The swapped region: the face oval, with the forehead cut a little above the eyebrows."""
    eyes = points[list(EYES)]
    eye_mid = eyes.mean(axis=0)
    up = eye_mid - points[list(MOUTH_CORNERS)].mean(axis=0)
    up = up / (np.linalg.norm(up) or 1.0)
    eye_distance = float(np.linalg.norm(eyes[:2].mean(axis=0) - eyes[2:].mean(axis=0)))
    raised_brows = points[list(BROWS)] + up * FOREHEAD_KEPT * eye_distance
    level = float(((raised_brows - eye_mid) @ up).max())
    oval = points[list(FACE_OVAL)]
    kept = oval[(oval - eye_mid) @ up <= level]
    return np.vstack([kept, raised_brows]).astype(np.float32)


def oval_mask(target_points: Points, region: tuple[int, int, int, int], blur: float) -> Mask:
    """The face outline filled, pulled in from its edge and feathered (``blur`` 0..1 sets the fade)."""
    x1, y1, x2, y2 = region
    mask = np.zeros((y2 - y1, x2 - x1), dtype=np.float32)
    outline = face_outline(target_points) - np.array([x1, y1], dtype=np.float32)
    hull = cv2.convexHull(outline.astype(np.float32)).astype(np.int32)
    cv2.fillConvexPoly(mask, hull, 1.0)
    face_size = float(max(outline.max(axis=0) - outline.min(axis=0)))
    inset = max(1, int(face_size * 0.03))
    mask = np.asarray(cv2.erode(mask, np.ones((inset * 2 + 1, inset * 2 + 1), np.uint8)), dtype=np.float32)
    fade = max(1, int(face_size * 0.12 * max(blur, 0.05) / 0.3))
    kernel = fade * 2 + 1
    blurred: Mask = cv2.GaussianBlur(mask, (kernel, kernel), 0) * mask.clip(0, 1)
    return np.asarray(cv2.GaussianBlur(blurred, (kernel, kernel), 0), dtype=np.float32)


def transfer_colour(warped: Frame, target: Frame, weight: Mask) -> Frame:
    """Reinhard colour transfer in LAB, statistics taken where ``weight`` is high (the inner face)."""
    inner = weight > 0.5
    if inner.sum() < 16:
        return warped
    source_lab = cv2.cvtColor(warped, cv2.COLOR_BGR2LAB).astype(np.float32)
    target_lab = cv2.cvtColor(target, cv2.COLOR_BGR2LAB).astype(np.float32)
    s_mean, s_std = source_lab[inner].mean(axis=0), source_lab[inner].std(axis=0) + 1e-3
    t_mean, t_std = target_lab[inner].mean(axis=0), target_lab[inner].std(axis=0) + 1e-3
    ratio = np.clip(t_std / s_std, *STD_RATIO_LIMITS)
    moved = (source_lab - s_mean) * ratio + t_mean
    return np.asarray(cv2.cvtColor(np.clip(moved, 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR), dtype=np.uint8)


def morph_toward_source(target_mesh: Points, source_mesh: Points, weight: float = SHAPE_WEIGHT) -> Points:
    """The target mesh with its inner points moved ``weight`` of the way to the source's, after the
    source mesh is brought onto the target by a similarity transform (so only proportions move)."""
    matrix, _ = cv2.estimateAffinePartial2D(source_mesh.astype(np.float32), target_mesh.astype(np.float32))
    if matrix is None:
        return target_mesh
    aligned = cv2.transform(source_mesh[None].astype(np.float32), matrix)[0]
    weights = np.full((len(target_mesh), 1), weight, dtype=np.float32)
    weights[list(FACE_OVAL)] = 0.0
    weights[list(LIPS)] = 0.0
    morphed: Points = (target_mesh + weights * (aligned - target_mesh)).astype(np.float32)
    return morphed


def mesh_warp_swap(
    frame: Frame, target_mesh: Points, source_image: Frame, source_mesh: Points, blur: float
) -> WarpResult:
    """Put the source face (photo + its mesh) onto the target face (its mesh in ``frame``)."""
    region = region_of(target_mesh, frame.shape)
    x1, y1, x2, y2 = region
    full_mask = np.zeros(frame.shape[:2], dtype=np.float32)
    if x2 - x1 < 8 or y2 - y1 < 8:
        return WarpResult(frame, full_mask)
    map_x, map_y, covered = warp_maps(morph_toward_source(target_mesh, source_mesh), source_mesh, region)
    warped = cv2.remap(source_image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    weight = oval_mask(target_mesh, region, blur) * covered
    target_patch = frame[y1:y2, x1:x2]
    warped = transfer_colour(np.asarray(warped, dtype=np.uint8), target_patch, weight)
    alpha = weight[..., None]
    blended = target_patch.astype(np.float32) * (1 - alpha) + warped.astype(np.float32) * alpha
    result = frame.copy()
    result[y1:y2, x1:x2] = np.clip(blended + 0.5, 0, 255).astype(np.uint8)
    full_mask[y1:y2, x1:x2] = weight
    return WarpResult(result, full_mask)

"""Face parts as polygons of mediapipe's face mesh (its first 468 points; the irises after them are not
used), from mediapipe's own index sets (``face_mesh_connections``: lips, eyes, eyebrows, nose, face oval).

"Left" and "right" are the person's own, as mediapipe names them: the left eye is on the image's right
of a face looking at the camera. Nose and skin are derived: the nose is the hull of mediapipe's nose
set; skin is the oval without the other parts. Glasses are the band around both eyes, from the brows
to the top of the cheeks, and over the bridge of the nose.
"""

from __future__ import annotations

import functools

import cv2
import numpy as np

from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.types import FaceMaskArea, FaceMaskRegion, Mask, Points

MOUTH_INNER_POINT = 13
"""A point of the inner lip contour (upper lip, middle): tells the inner loop from the outer one."""
UPPER_LIP_POINT = 0
LOWER_LIP_POINT = 17
LOWER_INNER_POINT = 14
"""The middles of the lips' outer edges (upper, lower) and of the lower lip's inner edge."""
OUTER_CORNERS = (61, 291)
INNER_CORNERS = (78, 308)
"""The mouth's corners on the lips' outer and inner contours."""
NOSE_BASE = (98, 2, 327)
"""The nose's base (both wings and the point under the tip): the line between upper and lower face."""
BRIDGE = (168, 6, 197, 195)
"""The bridge of the nose, from between the eyes down to the middle of the nose."""
GLASSES_SCALE = 1.7
"""How far round each eye the glasses band reaches, as a scale of the eye's outline about its centre."""


def edge_loops(edges: frozenset[tuple[int, int]]) -> list[list[int]]:
    """The closed loops (points in order) that ``edges`` form, each point having two neighbours."""
    neighbours: dict[int, list[int]] = {}
    for first, second in edges:
        neighbours.setdefault(first, []).append(second)
        neighbours.setdefault(second, []).append(first)
    loops, seen = [], set()
    for start in sorted(neighbours):
        if start in seen or len(neighbours[start]) != 2:
            continue
        loop, previous, point = [start], -1, start
        seen.add(start)
        while True:
            following = next((n for n in neighbours[point] if n != previous), start)
            if following == start or following in seen or len(neighbours[following]) != 2:
                break
            loop.append(following)
            seen.add(following)
            previous, point = point, following
        loops.append(loop)
    return loops


def _points_of(edges: frozenset[tuple[int, int]]) -> tuple[int, ...]:
    return tuple(sorted({point for edge in edges for point in edge}))


@functools.cache
def part_indices() -> dict[str, tuple[int, ...]]:
    """Mesh point indices, in polygon order where the part is a loop (lips, eyes, oval); a constant table
    read from mediapipe once."""
    import_mediapipe()
    from mediapipe.python.solutions import face_mesh_connections as sets

    lips = edge_loops(sets.FACEMESH_LIPS)
    inner = next(loop for loop in lips if MOUTH_INNER_POINT in loop)
    outer = next(loop for loop in lips if MOUTH_INNER_POINT not in loop)
    return {
        "oval": tuple(edge_loops(sets.FACEMESH_FACE_OVAL)[0]),
        "lips-outer": tuple(outer),
        "lips-inner": tuple(inner),
        "left-eye": tuple(edge_loops(sets.FACEMESH_LEFT_EYE)[0]),
        "right-eye": tuple(edge_loops(sets.FACEMESH_RIGHT_EYE)[0]),
        "left-eyebrow": _points_of(sets.FACEMESH_LEFT_EYEBROW),
        "right-eyebrow": _points_of(sets.FACEMESH_RIGHT_EYEBROW),
        "nose": _points_of(sets.FACEMESH_NOSE),
    }


def face_size(points: Points) -> float:
    """The larger side of the mesh's bounding box, in the points' pixels."""
    return float(max(points.max(axis=0) - points.min(axis=0)))


def _fill(mask: Mask, polygon: Points, convex: bool = False) -> None:
    shape = cv2.convexHull(polygon.astype(np.float32)) if convex else polygon
    cv2.fillPoly(mask, [np.round(shape * 16).astype(np.int32).reshape(-1, 1, 2)], 1.0, cv2.LINE_8, shift=4)


def _scaled(polygon: Points, scale: float) -> Points:
    centre = polygon.mean(axis=0)
    return np.asarray(centre + (polygon - centre) * scale, dtype=np.float32)


def _arc(loop: tuple[int, ...], start: int, end: int, through: int) -> list[int]:
    """The points of ``loop`` from ``start`` to ``end`` (both included) along the side holding ``through``."""
    ordered = list(loop[loop.index(start) :] + loop[: loop.index(start)])
    forward = ordered[: ordered.index(end) + 1]
    return forward if through in forward else [start, *ordered[ordered.index(end) :][::-1]]


def _lip_half(points: Points, upper: bool) -> Points:
    """The upper or lower lip: its arc of the outer contour, corner to corner, and back along the same
    arc of the inner contour."""
    indices = part_indices()
    outer = _arc(indices["lips-outer"], *OUTER_CORNERS, UPPER_LIP_POINT if upper else LOWER_LIP_POINT)
    inner = _arc(indices["lips-inner"], *INNER_CORNERS, MOUTH_INNER_POINT if upper else LOWER_INNER_POINT)
    return np.asarray(points[outer + inner[::-1]], dtype=np.float32)


def oval_polygon_mask(points: Points, shape: tuple[int, int]) -> Mask:
    """1 inside the mesh's face oval (forehead to chin, ear to ear), 0 outside."""
    mask = np.zeros(shape, dtype=np.float32)
    _fill(mask, points[list(part_indices()["oval"])])
    return mask


def region_polygon_mask(points: Points, region: FaceMaskRegion, shape: tuple[int, int]) -> Mask:
    """1 inside one named region of the face (``points``: the mesh in the mask's pixels), 0 outside."""
    indices = part_indices()
    mask = np.zeros(shape, dtype=np.float32)
    if region in ("left-eye", "right-eye", "mouth"):
        _fill(mask, points[list(indices["lips-inner" if region == "mouth" else region])])
    elif region in ("left-eyebrow", "right-eyebrow", "nose"):
        _fill(mask, points[list(indices[region])], convex=True)
    elif region in ("upper-lip", "lower-lip"):
        _fill(mask, _lip_half(points, upper=region == "upper-lip"))
    elif region == "glasses":
        for eye in ("left-eye", "right-eye"):
            _fill(mask, _scaled(points[list(indices[eye])], GLASSES_SCALE), convex=True)
        inner_corners = points[[133, 362]]
        _fill(mask, np.vstack([inner_corners, points[list(BRIDGE)]]), convex=True)
    else:
        mask = oval_polygon_mask(points, shape)
        others = np.zeros(shape, dtype=np.float32)
        for part in ("left-eye", "right-eye", "left-eyebrow", "right-eyebrow", "nose", "lips-outer"):
            _fill(others, points[list(indices[part])], convex=part.endswith(("brow", "nose")))
        mask = np.minimum(mask, 1.0 - others)
    return mask


def area_polygon_mask(points: Points, area: FaceMaskArea, shape: tuple[int, int]) -> Mask:
    """1 inside one named area: the face above the nose's base, below it, or the mouth (lips and all)."""
    indices = part_indices()
    mask = np.zeros(shape, dtype=np.float32)
    if area == "mouth":
        _fill(mask, points[list(indices["lips-outer"])], convex=True)
        return mask
    mask = oval_polygon_mask(points, shape)
    base = points[list(NOSE_BASE)]
    along = base[-1] - base[0]
    up = np.array([along[1], -along[0]], dtype=np.float32)
    up = up / (np.linalg.norm(up) or 1.0)
    up = up if up @ (points[168] - base.mean(axis=0)) > 0 else -up  # toward the eyes
    reach = 4.0 * face_size(points)
    line = base.mean(axis=0)
    side = up if area == "upper-face" else -up
    tangent = np.array([up[1], -up[0]], dtype=np.float32)
    half_plane = np.array(
        [
            line - tangent * reach,
            line + tangent * reach,
            line + tangent * reach + side * reach,
            line - tangent * reach + side * reach,
        ],
        dtype=np.float32,
    )
    kept = np.zeros(shape, dtype=np.float32)
    _fill(kept, half_plane)
    return np.minimum(mask, kept)

"""The embedded swapper: the source photo's face drawn onto the target face, triangle by triangle of
mediapipe's face mesh (``WarpSource`` is prepared once per source photo).

Steps, for one target face (the swapper first leaves alone a face turned past ``TURN_LIMITS``; a turned
source, ``TURNED_SOURCE``, is drawn from its mirror image on a face turned the other way, ``WarpSource.mirror_weight``):
1. the target mesh's inner points move toward the source's proportions (``morph_toward_source``); the
   outline and the shape of each eye stay the target's (its expression), the lips move half as far and
   only along the mouth and as a whole across it (their width, not how open they are);
2. the mesh's own triangles are drawn in the target, farthest first (the mesh's depth), so that where a
   turned head hides part of the face (the far cheek behind the nose) the nearer triangle wins; a
   triangle that faces the other way in the target than in the source (folded over by a turn) is not
   drawn. Every pixel a triangle covers reads the source photo at the same place of the same triangle
   there (one ``cv2.remap``); a source face much larger than the target's is read from a copy of it
   shrunk once to about its size (``WarpSource.at_size``: its wrinkles averaged, not sampled into broken
   cracks);
3. the blend weight: the target's face outline (cut above the brows), feathered, times how much the
   source pixel read is the source's own face (``source_trust``), so hair over the source's temples or
   the background beside a cheek never comes across (on turned heads they made grey and white smears
   when the whole hull was warped as one); the eye and mouth openings, which the mesh leaves empty, are
   closed with the source's eyes and teeth unless the source is shut where the target is open, or the
   target nearly shut where the source is open (``openings_to_draw``): an eye round its iris, so the
   source's iris lands where the target's is (its gaze), the mouth rung by rung between the lips; round
   each eye the target's own lids are kept (``eye_lids``) and a narrow (shut, cast-down) eye is kept
   whole, so no source iris is drawn into it; the source's glasses, unless kept, are painted out of it
   first (``source_glasses``: the skin seen through the lenses kept, the fill given the fine detail of the
   face's own skin beside it, ``with_borrowed_texture``) and the painted area is given the target's finest
   detail (pores), not left flat; a soft or small source is sharpened first (``source_detail``), so its
   features come across as clearly as a sharp photo's;
4. the warped face's brightness moves to the target's (Lab mean, and spread where the target's is wider:
   never narrowed, ``LIGHTNESS_RATIO_LIMITS``; inside the face; the difference its two halves' broad
   lightness shows, how the source photo was lit from the side, swapped for the target's: ``side_light``)
   and its colour becomes a smooth field moved to the target's skin (``transfer_colour``: no colour
   streaks), toward the face's edge the target's own colour (``toward_target_colour_at_edge``), and the
   two are blended with that weight, multi-band (``seam_blend``), so nothing outside the face changes; from
   a turned source, its cheeks' broad shadows are lifted to the target's, out to the blend's fading edge
   (``with_lifted_shadows``); a turned small source's skin is quieted first (``source_detail.quieted``:
   its grain).
The target keeps its pose and expression (its geometry); the source gives the appearance (identity).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import cv2
import numpy as np

from facefusion_ui.faces.face import FaceMesh
from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.faces.mesh_pose import mesh_pose
from facefusion_ui.processors import seam_blend
from facefusion_ui.processors.eye_lids import lid_band
from facefusion_ui.processors.seam_blend import three_channels
from facefusion_ui.processors.side_light import (
    MIRROR_PAIRS,
    mirror_index,
    with_lifted_shadows,
    with_target_side_light,
)
from facefusion_ui.processors.source_detail import quieted, sharpened, sharpening
from facefusion_ui.processors.source_glasses import (
    frame_lines,
    lens_insides,
    paint_share,
    painted_out,
    with_borrowed_texture,
    with_target_detail,
    without_remnants,
)
from facefusion_ui.types import Frame, Mask, Points

# Face-oval points of the mediapipe mesh (FACEMESH_FACE_OVAL), the outline of the swapped region.
FACE_OVAL = (
    10,
    338,
    297,
    332,
    284,
    251,
    389,
    356,
    454,
    323,
    361,
    288,
    397,
    365,
    379,
    378,
    400,
    377,
    152,
    148,
    176,
    149,
    150,
    136,
    172,
    58,
    132,
    93,
    234,
    127,
    162,
    21,
    54,
    103,
    67,
    109,
)
BROWS = (70, 63, 105, 66, 107, 336, 296, 334, 293, 300)
"""Upper contours of both eyebrows."""
EYES = (33, 133, 362, 263)
MOUTH_CORNERS = (61, 291)
LIPS = (
    0,
    13,
    14,
    17,
    37,
    39,
    40,
    61,
    78,
    80,
    81,
    82,
    84,
    87,
    88,
    91,
    95,
    146,
    178,
    181,
    185,
    191,
    267,
    269,
    270,
    291,
    308,
    310,
    311,
    312,
    314,
    317,
    318,
    321,
    324,
    375,
    402,
    405,
    409,
    415,
)
SHAPE_WEIGHT = 0.5
"""How far the inner face (eyes, brows, nose, cheeks) moves toward the source's proportions. The
outline stays on the target so the blend is seamless; the lips move ``LIP_SHARE`` as far."""
LIP_SHARE = 0.5
"""The lips move this share of ``SHAPE_WEIGHT`` toward the source's: each point along the mouth (its width,
where its corners are), all of them by one amount across it, so how open the mouth is and a smile's curve
stay the target's (lips kept whole: identity 87.5 % of swap_quality's swaps; moved so: 88.9 %; each point
moved freely: 90.3 %, but a dropped jaw's 32 px opening was drawn 29 px high, the expression lost)."""
FOREHEAD_KEPT = 0.12
"""How much forehead above the brows the swap covers, in eye distances: above it, sources often have
hair (bangs, hats) that would smear a band across the target's forehead."""
FADE = 0.08
"""The blend's fade at the face's edge (``oval_mask``): a share of the face's size at the default mask blur
(0.3). At 0.12 the source's cheeks and jaw faded out over a wider band and the target's showed through
(identity 77.8 % of swap_quality's swaps at 0.12, 80.6 % at 0.08); the seam stays below the target's own."""
STD_RATIO_LIMITS = (0.6, 1.6)
"""How far colour transfer may stretch the spread of a channel: beyond, it flattens or bleaches skin."""
LIGHTNESS_RATIO_LIMITS = (1.0, 1.6)
"""How far colour transfer may scale the spread of lightness: never narrowed, since the source's shading
and fine detail (wrinkles, the lids', brows' and lips' edges) are who it is; narrowed to a flatter target's,
they faded (identity 77.8 % of swap_quality's swaps narrowed to 0.6x, 81.2 % never narrowed)."""
FEATURES = (*BROWS, *EYES, *LIPS, 1, 4, 5, 6, 52, 65, 98, 145, 159, 168, 195, 197, 282, 295, 327, 374, 386)
"""Brows, eyes, nose and lips: always taken from the source, whatever their colour."""
MESH_POINTS = 468
"""The mesh's points without the irises."""
IRIS_POINTS = 478
"""The mesh's points with the irises (mediapipe's refined landmarks)."""
DISC_REACH = 0.8
"""An iris disc reaches at most this share of the way from the iris centre to the eye's contour."""
IRISES = ((473, 474, 475, 476, 477), (468, 469, 470, 471, 472))
"""The iris points (centre first) of the left and the right eye, in the order of ``opening_contours``:
meshes made with mediapipe's refined landmarks have them (478 points), plain ones stop at 468."""
MOUTH_CORNER = 78
"""A corner of the inner lip contour (image left)."""
MOUTH_INNER_POINT = 13
"""A point of the inner lip contour (upper lip, middle): tells the inner loop from the outer one."""
OPEN_ENOUGH = 0.5
NARROW_ENOUGH = 0.3
"""An opening (eye, mouth) gets the source's when the source's is at least this open, relative to the
target's (each measured against its face's size)."""
TRUST_RAMP = 0.06
"""Over how much of the face's size (inward from the outline) the source's trust rises from 0 to 1."""
COLOUR_SIGMA = 0.025
"""The Gaussian blur (sigma, a share of the face's size) that makes the target's colour a smooth field."""
SMOOTH_STEP = 2.0
"""A smooth colour field is made at a size this many pixels of its blur's sigma per pixel."""
OWN_COLOUR = 0.05
"""The weight of a pixel's own colour in its smooth colour field (``smooth_colour``)."""
SKIN_SPREAD_FLOOR = np.array([8.0, 2.0, 2.0], dtype=np.float32)
"""Smallest spread (L, a, b) of the source's skin colour: a evenly lit face would otherwise reject its
own shading."""
LIGHTNESS_SLACK = 1.25
"""Lightness may stray this many times further than colour: shading changes it more than skin does."""
SKIN_DISTANCE = (2.0, 3.0)
"""Spreads from the typical skin colour where a pixel stops counting as skin: fully below the first,
not at all above the second (hair, hats, background)."""
SHRINK_STEP = 2**0.5
"""Each of a source's smaller copies (``WarpSource.with_smaller_copies``) is this many times smaller than
the one before: a face is drawn from the smallest still as large as it (``WarpSource.at_size``)."""
SMALLEST_COPY = 24.0
"""The smallest face (pixels across) a source is copied down to."""
TURNED_SOURCE = 0.6
"""A source face whose far half shows less than this share of its near half's area (``smaller_half``) is
turned: it keeps a mirror image of itself (``WarpSource.mirror``) for targets turned the other way."""
TURNED_TARGET = 0.8
"""A target face whose far half shows less than this share of its near half's area is turned; one nearer
frontal takes the source as it is (a face swinging round frontal does not switch between the two)."""
MIRROR_BAND = 0.05
"""Either side of ``TURNED_TARGET``, the band of a target's turn over which the source and its mirror image
are both drawn and mixed (``WarpSource.mirror_weight``)."""
IRIS_TWINS = {468: 473, 469: 476, 470: 475, 471: 474, 472: 477}
"""The iris points that mirror each other (centre to centre, each ring point to the one on its side)."""
TURN_LIMITS = (55.0, 40.0)
"""Yaw and pitch (degrees, ``mesh_pose``) past which the warp is not trusted and the face is left as it
is: up to about 45 degrees of yaw (the most turned faces of t1) the fold test and the depth order draw
what shows and the result holds; further round, the near cheek is drawn from the frontal source's
foreshortened one (a smear) and the mesh itself loses the far side."""


@dataclass(frozen=True)
class WarpResult:
    frame: Frame
    weight: Mask
    """The blend weight used, over ``region`` (x1, y1, x2, y2)."""
    region: tuple[int, int, int, int]

    @property
    def mask(self) -> Mask:
        """The blend weight over the whole frame (0 outside the face), made when asked: a video's frames
        never ask (a frame-sized buffer filled per face was a tenth of a millisecond)."""
        x1, y1, x2, y2 = self.region
        mask = np.zeros(self.frame.shape[:2], dtype=np.float32)
        mask[y1:y2, x1:x2] = self.weight
        return mask


def turned_too_far(mesh: FaceMesh) -> bool:
    """Whether the head is turned or tilted past ``TURN_LIMITS``: the face is then left untouched."""
    yaw, pitch = mesh_pose(mesh)
    return abs(yaw) > TURN_LIMITS[0] or abs(pitch) > TURN_LIMITS[1]


def region_of(points: Points, shape: tuple[int, ...], margin: int = 2) -> tuple[int, int, int, int]:
    height, width = shape[:2]
    x1, y1 = np.floor(points.min(axis=0)).astype(int) - margin
    x2, y2 = np.ceil(points.max(axis=0)).astype(int) + margin
    return max(int(x1), 0), max(int(y1), 0), min(int(x2), width), min(int(y2), height)


@functools.cache
def mesh_triangles() -> np.ndarray:
    """The (n, 3) point indices of the mesh's triangles, from mediapipe's tessellation (its edges: every
    three points joined to each other). One constant table, read from mediapipe once."""
    import_mediapipe()
    from mediapipe.python.solutions.face_mesh_connections import FACEMESH_TESSELATION

    neighbours: dict[int, set[int]] = {}
    for first, second in FACEMESH_TESSELATION:
        neighbours.setdefault(first, set()).add(second)
        neighbours.setdefault(second, set()).add(first)
    triangles = {
        tuple(sorted((first, second, third)))
        for first, second in FACEMESH_TESSELATION
        for third in neighbours[first] & neighbours[second]
    }
    return np.array(sorted(triangles), dtype=np.int32)


def edge_cycles(edges: frozenset[tuple[int, int]]) -> list[list[int]]:
    """The closed loops (points in order) that ``edges`` form, each point having two neighbours."""
    neighbours: dict[int, list[int]] = {}
    for first, second in edges:
        neighbours.setdefault(first, []).append(second)
        neighbours.setdefault(second, []).append(first)
    loops, seen = [], set()
    for start in sorted(neighbours):
        if start in seen:
            continue
        loop, previous, point = [start], -1, start
        seen.add(start)
        while True:
            following = next(n for n in neighbours[point] if n != previous)
            if following == start:
                break
            loop.append(following)
            seen.add(following)
            previous, point = point, following
        loops.append(loop)
    return loops


@functools.cache
def opening_contours() -> tuple[np.ndarray, ...]:
    """The contours (points in order) of the mesh's openings, which its tessellation leaves empty: the
    two eyes and the mouth (the inner lips)."""
    import_mediapipe()
    from mediapipe.python.solutions.face_mesh_connections import FACEMESH_LEFT_EYE, FACEMESH_LIPS, FACEMESH_RIGHT_EYE

    mouth = next(loop for loop in edge_cycles(FACEMESH_LIPS) if MOUTH_INNER_POINT in loop)
    loops = [*edge_cycles(FACEMESH_LEFT_EYE), *edge_cycles(FACEMESH_RIGHT_EYE), mouth]
    return tuple(np.array(loop, dtype=np.int32) for loop in loops)


def fan(contour: np.ndarray) -> np.ndarray:
    """Triangles closing a contour, all from its first point (the openings are near convex)."""
    return np.stack([np.full(len(contour) - 2, contour[0]), contour[1:-1], contour[2:]], axis=1).astype(np.int32)


def polygon_area(points: Points) -> float:
    return float(abs(cv2.contourArea(points.astype(np.float32))))


def with_irises(plain: FaceMesh, refined: FaceMesh) -> FaceMesh:
    """``plain`` (468 points) with the iris points of ``refined`` (478, the same face by a model with
    refined landmarks), each iris carried over by the similarity that fits its eye's contour in
    ``refined`` onto the same contour in ``plain`` (the two models put the eyes a few pixels apart)."""
    points = np.vstack([plain.points[:MESH_POINTS], refined.points[MESH_POINTS:IRIS_POINTS]]).astype(np.float32)
    depth = np.concatenate([plain.depth[:MESH_POINTS], refined.depth[MESH_POINTS:IRIS_POINTS]]).astype(np.float32)
    for contour, iris in zip(opening_contours()[: len(IRISES)], IRISES, strict=True):
        matrix, _ = cv2.estimateAffinePartial2D(refined.points[contour], plain.points[contour])
        if matrix is None:
            return plain
        points[list(iris)] = cv2.transform(refined.points[list(iris)][None].astype(np.float32), matrix)[0]
        depth[list(iris)] += float(plain.depth[contour].mean() - refined.depth[contour].mean())
    return FaceMesh(points, depth)


def disc_start(index: int) -> int:
    """Where the iris disc of eye ``index`` starts in points extended by ``with_iris_discs``."""
    return IRIS_POINTS + index * len(opening_contours()[index])


def with_iris_discs(points: Points) -> Points:
    """``points`` (a 478-point mesh) with, per eye, a ring of points round the iris centre, one toward
    each point of the eye's contour, at the iris's radius (nearer where a lid comes closer): the disc
    they bound moves with the iris, and only the ring between it and the lids stretches. Meshes without
    irises come back as they are."""
    if len(points) < IRIS_POINTS:
        return points
    rings = []
    for contour, iris in zip(opening_contours()[: len(IRISES)], IRISES, strict=True):
        centre = points[iris[0]].astype(np.float64)
        radius = float(np.linalg.norm(points[list(iris[1:])] - centre, axis=1).mean())
        offsets = points[contour].astype(np.float64) - centre
        lengths = np.linalg.norm(offsets, axis=1, keepdims=True)
        rings.append(centre + offsets / np.maximum(lengths, 1e-6) * np.minimum(radius, lengths * DISC_REACH))
    return np.vstack([points[:IRIS_POINTS], *rings]).astype(np.float32)


def with_disc_depth(depth: Points) -> Points:
    """The depth of ``with_iris_discs``'s points: a disc's ring lies as deep as its iris centre."""
    if len(depth) < IRIS_POINTS:
        return depth
    rings = [np.full(len(contour), depth[iris[0]]) for contour, iris in zip(opening_contours(), IRISES, strict=False)]
    return np.concatenate([depth[:IRIS_POINTS], *rings]).astype(np.float32)


def iris_inside(points: Points, centre: int, contour: np.ndarray) -> bool:
    if len(points) <= centre:
        return False
    polygon = points[contour].astype(np.float32).reshape(-1, 1, 2)
    return cv2.pointPolygonTest(polygon, (float(points[centre, 0]), float(points[centre, 1])), False) > 0


def iris_fan(centre: int, disc: np.ndarray, contour: np.ndarray) -> np.ndarray:
    """Triangles closing an eye's opening round its iris: the disc fanned from the centre, then the ring
    between the disc and the contour."""
    following, disc_following = np.roll(contour, -1), np.roll(disc, -1)
    return np.concatenate(
        [
            np.stack([np.full(len(disc), centre), disc, disc_following], axis=1),
            np.stack([disc, contour, following], axis=1),
            np.stack([disc, following, disc_following], axis=1),
        ]
    ).astype(np.int32)


def ladder(contour: np.ndarray, corner: int) -> np.ndarray:
    """Triangles closing an opening whose two edges face each other (the lips' inner edges), rung by
    rung from ``corner`` to the opposite corner: unlike a fan from one corner, it stays inside the
    opening however the edges bend (a smile's upper lip, a dropped jaw)."""
    start = int(np.flatnonzero(contour == corner)[0])
    loop = np.roll(contour, -start)
    half = len(loop) // 2
    upper, lower = loop[1:half], loop[half + 1 :][::-1]
    triangles = [(loop[0], upper[0], lower[0])]
    for i in range(len(upper) - 1):
        triangles += [(upper[i], upper[i + 1], lower[i]), (lower[i], upper[i + 1], lower[i + 1])]
    triangles.append((upper[-1], loop[half], lower[-1]))
    return np.array(triangles, dtype=np.int32)


def opening_fan(target_points: Points, source_points: Points, index: int, contour: np.ndarray) -> np.ndarray:
    """The triangles closing one opening: the mouth rung by rung (``ladder``). An eye whose iris centre
    lies inside the opening in both faces (points with their iris discs, ``with_iris_discs``) is closed
    round its iris, so the source's iris lands on the target's (the gaze follows the target); otherwise
    (no iris points, an eye too shut to hold its iris centre) it is fanned from its corner."""
    if index < len(IRISES) and min(len(target_points), len(source_points)) > IRIS_POINTS:
        centre = IRISES[index][0]
        if iris_inside(target_points, centre, contour) and iris_inside(source_points, centre, contour):
            return closing_triangles(index, round_iris=True)
    return closing_triangles(index, round_iris=False)


@functools.cache
def closing_triangles(index: int, round_iris: bool) -> np.ndarray:
    """The triangles ``opening_fan`` closes opening ``index`` (of ``opening_contours``) with: round its iris
    (an eye), rung by rung (the mouth) or fanned from its corner. Made once: they depend on the mesh's
    topology alone (read-only, shared)."""
    contour = opening_contours()[index]
    if round_iris:
        disc = np.arange(disc_start(index), disc_start(index) + len(contour))
        triangles = iris_fan(IRISES[index][0], disc, contour)
    elif index == len(IRISES):
        triangles = ladder(contour, MOUTH_CORNER)
    else:
        triangles = fan(contour)
    triangles.setflags(write=False)
    return triangles


def openings_to_draw(target_points: Points, source_points: Points) -> list[np.ndarray]:
    """The fans of the openings (eyes, mouth) where the source is open at least ``OPEN_ENOUGH`` as much as
    the target, relative to each face's size: there the source's own eyes and teeth are drawn (who the
    person is); where the source is shut and the target open, a shut eye or mouth would be stretched
    over the opening, so the target keeps its own."""
    target_face = polygon_area(target_points[list(FACE_OVAL)]) or 1.0
    source_face = polygon_area(source_points[list(FACE_OVAL)]) or 1.0
    chosen = []
    for index, contour in enumerate(opening_contours()):
        target_open = polygon_area(target_points[contour]) / target_face
        source_open = polygon_area(source_points[contour]) / source_face
        if source_open >= OPEN_ENOUGH * target_open and target_open >= NARROW_ENOUGH * source_open:
            chosen.append(opening_fan(target_points, source_points, index, contour))
    return chosen


def signed_areas(corners: np.ndarray) -> np.ndarray:
    """Twice the signed area of each triangle of ``corners`` (n, 3, 2): the sign tells which way it faces."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    return np.asarray((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))


def triangle_affines(target: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Per triangle of ``target`` corners (n, 3, 2; float64, none flat), the affine map onto its ``source``
    corners: [x, y, 1] @ affine (n, 3, 2) = the source (x, y). In closed form (the target's two edges as a
    2x2 matrix, inverted): ``np.linalg.solve`` of the corners gave the same figures in float32 for all but
    one in 200,000 of the talking head's, in a tenth of the time."""
    edges, moves = target[:, 1:] - target[:, :1], source[:, 1:] - source[:, :1]
    determinant = (edges[:, 0, 0] * edges[:, 1, 1] - edges[:, 0, 1] * edges[:, 1, 0])[:, None]
    linear = np.empty((len(target), 2, 2))
    linear[:, 0] = (edges[:, 1, 1, None] * moves[:, 0] - edges[:, 0, 1, None] * moves[:, 1]) / determinant
    linear[:, 1] = (edges[:, 0, 0, None] * moves[:, 1] - edges[:, 1, 0, None] * moves[:, 0]) / determinant
    offset = source[:, 0] - np.einsum("ni,nij->nj", target[:, 0], linear)
    return np.concatenate([linear, offset[:, None]], axis=1)


def render_maps(
    target_points: Points,
    target_depth: Points,
    source_points: Points,
    region: tuple[int, int, int, int],
    triangles: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each pixel of ``region`` in the target: where to read the source, and whether one of
    ``triangles`` (point indices) covers it."""
    x1, y1, x2, y2 = region
    target = target_points.astype(np.float64)[triangles]
    source = source_points.astype(np.float64)[triangles]
    target_area, source_area = signed_areas(target), signed_areas(source)
    drawn = (np.sign(target_area) == np.sign(source_area)) & (np.abs(target_area) > 1e-3)
    # per triangle, the affine map from target to source pixels; one more row, for pixels no triangle
    # covers, reads (-1, -1)
    affine = np.zeros((len(triangles) + 1, 3, 2))
    affine[:-1][drawn] = triangle_affines(target[drawn], source[drawn])
    affine[-1, 2] = -1.0
    owner = np.full((y2 - y1, x2 - x1), len(triangles), dtype=np.int32)
    # fillConvexPoly's fixed point: corners to 1/16 pixel (shift 4)
    polygons = np.round((target - np.array([x1, y1], dtype=np.float64)) * 16).astype(np.int32)
    farthest_first = np.argsort(-target_depth[triangles].mean(axis=1), kind="stable")
    order = farthest_first[drawn[farthest_first]]
    fill = cv2.fillConvexPoly  # a thousand calls a face: positional arguments parse in a third less time
    for index, polygon in zip(order.tolist(), polygons[order], strict=True):
        fill(owner, polygon, index, cv2.LINE_8, 4)
    xs = np.arange(x1, x2, dtype=np.float32)[None, :]
    ys = np.arange(y1, y2, dtype=np.float32)[:, None]
    # each pixel's six coefficients in one read: planes (term, axis), each contiguous
    planes = np.take(affine.astype(np.float32).reshape(-1, 6).T, owner.astype(np.intp), axis=1)
    maps = [planes[axis] * xs + planes[2 + axis] * ys + planes[4 + axis] for axis in (0, 1)]
    return maps[0], maps[1], owner < len(triangles)


@functools.cache
def triangle_sides() -> np.ndarray:
    """Per triangle of ``mesh_triangles``: -1 when a corner lies on the first side of ``MIRROR_PAIRS``,
    1 when on the second, 0 when all three lie on the face's middle line."""
    sides = np.zeros(MESH_POINTS, dtype=np.int32)
    sides[[first for first, _ in MIRROR_PAIRS]] = -1
    sides[[second for _, second in MIRROR_PAIRS]] = 1
    corners = sides[mesh_triangles()]
    return np.asarray(np.where(corners.min(axis=1) < 0, -1, corners.max(axis=1)), dtype=np.int32)


def smaller_half(points: Points) -> tuple[int, float]:
    """The side (-1 or 1, as ``triangle_sides``) of the half of a face's mesh that covers less area, and its
    area over the other half's (1 for a frontal face, less the more it is turned)."""
    areas = np.abs(signed_areas(points[:MESH_POINTS].astype(np.float64)[mesh_triangles()]))
    sides = triangle_sides()
    first, second = (float(areas[sides == side].sum()) for side in (-1, 1))
    return (-1 if first < second else 1), min(first, second) / max(first, second, 1e-9)


def far_side(points: Points, shown: float) -> int:
    """The side (-1 or 1, as ``triangle_sides``) of a face turned so far that that half of its mesh covers
    less than ``shown`` of the other half's area; 0 for a face nearer frontal."""
    side, share = smaller_half(points)
    return side if share < shown else 0


def mirrored_order(count: int) -> np.ndarray:
    """For each of ``count`` mesh points (468, or 478 with irises), the point that mirrors it."""
    index = np.arange(count)
    index[:MESH_POINTS] = mirror_index()
    if count >= IRIS_POINTS:
        for first, second in IRIS_TWINS.items():
            index[first], index[second] = second, first
    return index


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
    filled = np.zeros((y2 - y1, x2 - x1), dtype=np.uint8)  # 0 or 1: filled and eroded as bytes
    outline = face_outline(target_points) - np.array([x1, y1], dtype=np.float32)
    hull = cv2.convexHull(outline.astype(np.float32)).astype(np.int32)
    cv2.fillConvexPoly(filled, hull, 1)
    face_size = float(max(outline.max(axis=0) - outline.min(axis=0)))
    inset = max(1, int(face_size * 0.03))
    mask = cv2.erode(filled, np.ones((inset * 2 + 1, inset * 2 + 1), np.uint8)).astype(np.float32)
    fade = max(1, int(face_size * FADE * max(blur, 0.05) / 0.3))
    kernel = fade * 2 + 1
    blurred: Mask = wide_blur(mask, kernel) * mask
    return wide_blur(blurred, kernel)


WIDE_KERNEL = 31
"""From this kernel size on, ``wide_blur`` blurs at half size."""


def wide_blur(mask: Mask, kernel: int) -> Mask:
    """A Gaussian blur of ``mask`` with a ``kernel`` wide enough (``WIDE_KERNEL``) that it is done at half
    size and scaled back: within 0.015 of the full-size blur on a face oval, for a quarter of the pixels
    and half the kernel (a 560 px face's fade is over 100 px wide)."""
    if kernel < WIDE_KERNEL:
        return np.asarray(cv2.GaussianBlur(mask, (kernel, kernel), 0), dtype=np.float32)
    height, width = mask.shape
    half = cv2.resize(mask, (max(1, width // 2), max(1, height // 2)), interpolation=cv2.INTER_AREA)
    blurred = cv2.GaussianBlur(half, (kernel // 2 | 1, kernel // 2 | 1), 0)
    return np.asarray(cv2.resize(blurred, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.float32)


def transfer_colour(
    warped: Frame,
    target: Frame,
    weight: Mask,
    openings: Mask | None = None,
    points: Points | None = None,
    turned: bool = False,
) -> Frame:
    """The warped face moved to the target's colours in Lab (Reinhard: each channel's mean and spread
    where ``weight`` is high, the inner face; the lightness spread only widened, never narrowed,
    ``LIGHTNESS_RATIO_LIMITS``), with its colour (a*, b*) a smooth field (``smooth_colour``):
    the source's shading and fine detail (wrinkles, pores: who the person is) come across as brightness
    only, never as orange-brown streaks on the target's skin, and a greyscale source takes the target's
    mean colour, not a grey patch. In ``openings`` (0..1: the eyes and the mouth) the source's own colour
    is moved instead, not smoothed: its irises and teeth keep theirs. With ``points`` (the mesh over the
    same pixels) the lightness takes the target's side lighting (``with_target_side_light``) and, from a
    ``turned`` source, its cheeks' shadows lifted to the target's (``with_lifted_shadows``)."""
    inner = np.asarray(weight > 0.5, dtype=np.uint8)
    if cv2.countNonZero(inner) < 16:
        return warped
    source_lab = cv2.cvtColor(warped, cv2.COLOR_BGR2LAB)
    sigma = max(1.0, COLOUR_SIGMA * float(max(weight.shape)))
    # averaged over the inner face as a whole: a colour field that does not follow the weight's fine
    # changes (a trust a hundredth lower somewhere must not move the colour)
    face = inner.astype(np.float32)
    smooth = cv2.merge([cv2.extractChannel(source_lab, 0), smooth_colour(source_lab, face, sigma)])
    s_mean, s_std = (value.ravel() for value in cv2.meanStdDev(smooth, mask=inner))
    target_lab = cv2.cvtColor(target, cv2.COLOR_BGR2LAB)
    t_mean, t_std = smooth_statistics(target_lab, face, sigma)
    ratio = np.clip(t_std / (s_std + 1e-3), *STD_RATIO_LIMITS)
    ratio[0] = np.clip(t_std[0] / (s_std[0] + 1e-3), *LIGHTNESS_RATIO_LIMITS)
    # each channel moved as (value - s_mean) * ratio + t_mean, rounded and saturated to 0..255
    matrix = np.hstack([np.diag(ratio), (t_mean - s_mean * ratio)[:, None]])
    moved = cv2.transform(smooth, matrix)
    if float(s_std[1:].max()) >= GREY_SOURCE:  # a greyscale source's colour is the target's mean already
        colour = toward_target_colour_at_edge(colour_channels(moved), target_lab, weight, sigma)
        cv2.mixChannels([colour], [moved], [0, 1, 1, 2])
    if points is not None:
        lightness, target_lightness = cv2.extractChannel(moved, 0), cv2.extractChannel(target_lab, 0)
        lightness = with_target_side_light(lightness, target_lightness, face, points)
        if turned:
            features = feature_parts_mask(points, face.shape)
            lightness = with_lifted_shadows(lightness, target_lightness, face, features)
        cv2.insertChannel(lightness, moved, 0)
    if openings is not None and openings.any():
        # only inside the openings' box: the rest of the face keeps the smooth colour
        x, y, w, h = cv2.boundingRect(np.asarray(openings > 0, dtype=np.uint8))
        own = cv2.transform(source_lab[y : y + h, x : x + w], matrix).astype(np.float32)
        share = three_channels(openings[y : y + h, x : x + w])
        inside = moved[y : y + h, x : x + w].astype(np.float32)
        moved[y : y + h, x : x + w] = np.asarray(inside * (1.0 - share) + own * share + 0.5, dtype=np.uint8)
    return np.asarray(cv2.cvtColor(moved, cv2.COLOR_LAB2BGR), dtype=np.uint8)


GREY_SOURCE = 1.0
"""A source whose colour (a*, b*) spreads less than this over the face is greyscale."""
EDGE_COLOUR = 0.15
EDGE_SMOOTHING = 3.0
"""Over how much of the face's size inward from its inner edge the colour moves from the target's own (at
the edge, beside its neck and ears) to the source's moved one."""


def colour_channels(lab: np.ndarray) -> np.ndarray:
    """The a* and b* of ``lab`` (uint8, three channels) as one contiguous two-channel array: numpy reads
    and writes a strided ``lab[..., 1:]`` pair by pair, some twenty times slower than OpenCV copies it out."""
    colour = np.empty((*lab.shape[:2], 2), dtype=lab.dtype)
    cv2.mixChannels([lab], [colour], [1, 0, 2, 1])
    return colour


def toward_target_colour_at_edge(colour: np.ndarray, target_lab: np.ndarray, weight: Mask, sigma: float) -> np.ndarray:
    """``colour`` (the warped face's a*, b*, uint8, moved to the target's) with, toward the edge of ``inner``
    (the inner face, 0/1: ``EDGE_COLOUR`` of its size inward), the target's own colour there (``target_lab``'s
    smooth colour field, three times smoother than ``sigma``: no streaks of its own), so the face's edge has
    the colour of the target's neck and ears beside it: moved to the face's mean alone, an older source's
    paler, yellower skin stopped short of a warmer neck (Grace Hopper on t1: cheek colour 4.7 Lab units off
    the target's, 2.8 so; 6 of 6 faces carrying her by dlib instead of 5)."""
    # how deep inside the face each pixel is, smoothly (the blend weight blurred over ``EDGE_COLOUR``): a
    # still face's edge moving by a pixel must not move the colour in steps (a video would shimmer)
    reach = max(1.0, EDGE_COLOUR * float(max(weight.shape)))
    deep = wide_blur(weight, int(2 * reach) | 1)
    share = np.clip((1.0 - deep) / 0.5, 0.0, 1.0)
    own = smooth_colour(target_lab, np.asarray(weight > 0.5, dtype=np.float32), EDGE_SMOOTHING * sigma)
    pair = cv2.merge([share, share])  # same-shaped operands: broadcasting a (h, w, 1) share is several times slower
    mixed = colour.astype(np.float32) * (1.0 - pair) + own.astype(np.float32) * pair
    return np.asarray(mixed + 0.5, dtype=np.uint8)


def features_mask(points: Points, shape: tuple[int, ...]) -> Mask:
    """1 inside the hull of the face's features (``FEATURES``: brows, eyes, nose, lips), 0 outside."""
    mask = np.zeros(shape[:2], dtype=np.float32)
    cv2.fillConvexPoly(mask, cv2.convexHull(points[list(FEATURES)].astype(np.float32)).astype(np.int32), 1.0)
    return mask


FEATURE_PARTS = (
    (33, 133, 145, 159, 70, 63, 105, 66, 107),
    (362, 263, 374, 386, 336, 296, 334, 293, 300),
    (168, 6, 197, 195, 5, 4, 1, 98, 327),
    LIPS,
)
"""Each eye with its brow, the nose (bridge to wings) and the lips: the features one by one."""


def feature_parts_mask(points: Points, shape: tuple[int, ...]) -> Mask:
    """1 inside the hull of each of the face's features (``FEATURE_PARTS``), 0 elsewhere (the cheeks between
    them too, which the hull of all of them, ``features_mask``, takes in)."""
    mask = np.zeros(shape[:2], dtype=np.float32)
    for part in FEATURE_PARTS:
        cv2.fillConvexPoly(mask, cv2.convexHull(points[list(part)].astype(np.float32)).astype(np.int32), 1.0)
    return mask


def smooth_statistics(lab: np.ndarray, face: Mask, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """The mean and spread (L, a*, b*) over ``face`` (1 inside, 0 outside) of ``lab`` with its colour
    made a smooth field (``smooth_colour``), read at a quarter of the size: only the figures are needed."""
    height, width = face.shape
    size = (max(1, width // 4), max(1, height // 4))
    small_lab = cv2.resize(lab, size, interpolation=cv2.INTER_LINEAR)
    small_face = np.asarray(cv2.resize(face, size, interpolation=cv2.INTER_LINEAR), dtype=np.float32)
    smooth = cv2.merge([small_lab[..., 0], smooth_colour(small_lab, small_face, sigma / 4)])
    mean, std = cv2.meanStdDev(smooth, mask=np.asarray(small_face > 0.5, dtype=np.uint8))
    return mean.ravel(), std.ravel()


def openings_mask(points: Points, region: tuple[int, int, int, int]) -> Mask:
    """1 inside the mesh's openings (``opening_contours``: the eyes, the mouth) over ``region``, 0 outside."""
    x1, y1, x2, y2 = region
    mask = np.zeros((y2 - y1, x2 - x1), dtype=np.float32)
    offset = np.array([x1, y1], dtype=np.float32)
    polygons = [np.round(points[contour] - offset).astype(np.int32) for contour in opening_contours()]
    cv2.fillPoly(mask, polygons, 1.0)
    return mask


def smooth_colour(lab: np.ndarray, weight: Mask, sigma: float) -> np.ndarray:
    """The a* and b* of ``lab`` (uint8, two channels) averaged over ``sigma`` pixels, each pixel by
    ``weight`` (the inner face, not the hair or background round it, which never comes in): no colour
    detail finer than the blur. Each pixel's own colour counts ``OWN_COLOUR`` more, so where little weight
    is near (the face's edge) the field stays the pixel's colour, not a mean of a few. Done at a size
    ``sigma / SMOOTH_STEP`` times smaller (a bilinear shrink: the blur that follows smooths it) and scaled
    back (the field is smooth at that scale)."""
    height, width = weight.shape
    step = max(1, min(int(sigma / SMOOTH_STEP), height // 4, width // 4))
    size = (max(1, width // step), max(1, height // step))
    shrunk = step > 1
    small_weight = np.asarray(
        cv2.resize(weight, size, interpolation=cv2.INTER_LINEAR) if shrunk else weight, dtype=np.float32
    )
    colour = colour_channels(lab)
    small = np.asarray(cv2.resize(colour, size, interpolation=cv2.INTER_LINEAR) if shrunk else colour)
    small = small.astype(np.float32)
    pair = cv2.merge([small_weight, small_weight])
    spread = cv2.GaussianBlur(pair, (0, 0), sigma / step) + OWN_COLOUR
    field = (cv2.GaussianBlur(small * pair, (0, 0), sigma / step) + OWN_COLOUR * small) / spread
    rounded = np.asarray(np.clip(field + 0.5, 0, 255), dtype=np.uint8)
    if step == 1:
        return rounded
    return np.asarray(cv2.resize(rounded, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.uint8)


def eye_groups(count: int) -> list[np.ndarray]:
    """Per eye, the points that keep the target's shape and move as one: the eye's contour (its opening,
    how open the eye is) and its iris points where the mesh has them (``count`` points: where it looks)."""
    contours = opening_contours()[: len(IRISES)]
    return [
        np.concatenate([contour, [p for p in iris if p < count]]).astype(np.int32)
        for contour, iris in zip(contours, IRISES, strict=True)
    ]


def morph_toward_source(target_mesh: Points, source_mesh: Points, weight: float = SHAPE_WEIGHT) -> Points:
    """The target mesh with its inner points moved ``weight`` of the way to the source's, after the
    source mesh is brought onto the target by a similarity transform (so only proportions move). The
    expression stays the target's: the outline does not move, the lips move only along the mouth and
    as a whole across it (``lips_toward_source``), and each eye (contour and iris) keeps its shape and
    only moves as a whole, by the morph of its centre, so a squinting or laughing target keeps its
    narrow eyes, its open mouth and its gaze."""
    shared = min(len(source_mesh), len(target_mesh), MESH_POINTS)
    matrix, _ = cv2.estimateAffinePartial2D(
        source_mesh[:shared].astype(np.float32), target_mesh[:shared].astype(np.float32)
    )
    if matrix is None:
        return target_mesh
    aligned = cv2.transform(source_mesh[None].astype(np.float32), matrix)[0]
    # iris points the source lacks: nothing to move toward (they move with their eye below)
    aligned = np.vstack([aligned, target_mesh[len(aligned) :]])[: len(target_mesh)]
    weights = np.full((len(target_mesh), 1), weight, dtype=np.float32)
    weights[list(FACE_OVAL)] = 0.0
    weights[list(LIPS)] = 0.0
    morphed: Points = (target_mesh + weights * (aligned - target_mesh)).astype(np.float32)
    morphed[list(LIPS)] = lips_toward_source(target_mesh, aligned, weight * LIP_SHARE)
    for group in eye_groups(len(target_mesh)):
        contour = group[: len(opening_contours()[0])]
        shift = weight * (aligned[contour].mean(axis=0) - target_mesh[contour].mean(axis=0))
        morphed[group] = target_mesh[group] + shift
    return morphed


def lips_toward_source(target_mesh: Points, aligned: Points, weight: float) -> Points:
    """The target's lip points (``LIPS``) moved ``weight`` of the way toward the source's (``aligned``: the
    source mesh brought onto the target), along the mouth (corner to corner) point by point, across it
    all by their mean: the mouth's width and place come from the source, how open it is from the target."""
    lips = list(LIPS)
    axis = target_mesh[MOUTH_CORNERS[1]] - target_mesh[MOUTH_CORNERS[0]]
    axis = axis / (float(np.linalg.norm(axis)) or 1.0)
    normal = np.array([-axis[1], axis[0]], dtype=np.float32)
    moves = weight * (aligned[lips] - target_mesh[lips])
    along, across = moves @ axis, float((moves @ normal).mean())
    return np.asarray(target_mesh[lips] + along[:, None] * axis + across * normal, dtype=np.float32)


def inside_outline(points: Points, shape: tuple[int, ...], ramp: float) -> Mask:
    """1 deep inside the face outline, falling to 0 over ``ramp`` pixels before its edge (or the image's,
    where the face runs out of the photo), 0 outside: a bilinear read where it is above 0 never touches a
    pixel outside the outline or the photo."""
    height, width = shape[:2]
    filled = np.zeros((height + 2, width + 2), dtype=np.uint8)  # a border of "outside" round the image
    cv2.fillConvexPoly(filled, cv2.convexHull(face_outline(points) + 1).astype(np.int32), 1)
    filled[[0, -1], :] = 0
    filled[:, [0, -1]] = 0
    depth_inside = cv2.distanceTransform(filled, cv2.DIST_L2, 3)[1:-1, 1:-1]
    return np.asarray(np.clip((depth_inside - 1.5) / max(ramp, 1.0), 0.0, 1.0), dtype=np.float32)


def skin_likeness(image: Frame, points: Points, outline: Mask, features: Mask) -> Mask | None:
    """0..1 per pixel of ``image``: how near its colour is to the face's typical skin (taken inside
    ``outline`` outside ``features``); None when too little skin shows to tell."""
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    skin_area = (outline > 0.5) & (features == 0)
    if skin_area.sum() < 16:
        return None
    typical = np.median(lab[skin_area], axis=0)
    spread = np.maximum(np.median(np.abs(lab[skin_area] - typical), axis=0) * 1.4826, SKIN_SPREAD_FLOOR)
    off = np.abs(lab - typical) / spread
    distance = np.maximum(off[..., 0] / LIGHTNESS_SLACK, np.hypot(off[..., 1], off[..., 2]))
    skin = np.clip((SKIN_DISTANCE[1] - distance) / (SKIN_DISTANCE[1] - SKIN_DISTANCE[0]), 0.0, 1.0)
    return np.asarray(cv2.medianBlur((skin * 255).astype(np.uint8), 5), dtype=np.float32) / 255.0


def face_parts(image: Frame, points: Points) -> tuple[Mask, Mask]:
    """The face's outline (``inside_outline``) and its features (eyes, brows, nose, lips) filled, 0..1."""
    size = float(max(points.max(axis=0) - points.min(axis=0)))
    outline = inside_outline(points, image.shape, ramp=size * TRUST_RAMP)
    return outline, features_mask(points, outline.shape)


def source_trust(image: Frame, points: Points) -> Mask:
    """How much each pixel of ``image`` (a crop around the source face, ``points`` in it) is the face
    itself, 0..1: inside the outline, the eyes, brows, nose and lips always; elsewhere (cheeks, chin,
    forehead) skin whose colour is near the face's typical skin (``skin_likeness``), not hair, a hat or
    the background the outline may take in at its edges. A beard counts as hair there: the target's own
    chin shows."""
    outline, features = face_parts(image, points)
    skin = skin_likeness(image, points, outline, features)
    if skin is None:
        return outline
    size = float(max(points.max(axis=0) - points.min(axis=0)))
    kernel = max(3, int(size * 0.04)) | 1
    trusted = np.maximum(cv2.GaussianBlur(features, (kernel, kernel), 0), cv2.GaussianBlur(skin, (kernel, kernel), 0))
    return np.asarray(trusted * outline, dtype=np.float32)


def without_glasses(image: Frame, points: Points) -> Frame:
    """``image`` (a crop round the source face) with the glasses its face wears painted out
    (``source_glasses``), or as it is when it wears none."""
    return glasses_painted_out(image, points)[0]


def glasses_painted_out(image: Frame, points: Points) -> tuple[Frame, Mask | None]:
    """``without_glasses``, and how much of each pixel was painted (None when nothing was)."""
    outline, features = face_parts(image, points)
    skin = skin_likeness(image, points, outline, features)
    if skin is None:
        return image, None
    lines = frame_lines(image, points, skin)
    if not lines.any():
        return image, None
    # the skin seen through the lenses is skin the painting reads, tinted or not: no ring where they meet
    skin = np.maximum(skin, lens_insides(points, skin.shape))
    share = paint_share(points, lines)
    painted = without_remnants(painted_out(image, points, lines, skin), points, lines)
    return with_borrowed_texture(painted, points, share, skin), share


@dataclass(frozen=True)
class WarpSource:
    """What the embedded swapper keeps of a source photo: the face's crop, its mesh in the crop, and
    ``source_trust`` of the crop (so a large photo is not held whole; the source's glasses, unless kept,
    are not trusted)."""

    image: Frame
    mesh: FaceMesh
    trust: Mask
    painted: Mask | None = None
    """Where its glasses were painted out (0..1 over ``image``), None when it wore none or kept them."""
    smaller: tuple[WarpSource, ...] = ()
    """Copies of it area-averaged to smaller sizes, largest first (``with_smaller_copies``, ``at_size``)."""
    mirror: WarpSource | None = None
    """For a turned source face (``TURNED_SOURCE``): its photo flipped left to right, the mesh with it
    (``flipped``); None for a face nearer frontal."""

    @classmethod
    def of(cls, image: Frame, mesh: FaceMesh, keep_glasses: bool = False) -> WarpSource:
        x1, y1, x2, y2 = region_of(mesh.points, image.shape, margin=4)
        crop = np.ascontiguousarray(image[y1:y2, x1:x2])
        points = (mesh.points - np.array([x1, y1], dtype=np.float32)).astype(np.float32)
        (inside, features), size = face_parts(crop, points), float(max(np.ptp(points, axis=0)))
        amount = sharpening(crop, inside, size)  # measured before any glasses are painted out
        if amount > 0.0 and far_side(points, TURNED_SOURCE) != 0:  # a small photo's grain, not skin detail
            crop = quieted(crop, inside, features, size)
        painted = None
        if not keep_glasses:
            crop, painted = glasses_painted_out(crop, points)
        trust = source_trust(crop, points)
        # a turned face's near cheek is drawn large on a target's cheek facing the camera: its faint grain
        # is not lifted there (it came across as grey speckle); a frontal face keeps all its detail
        flat = features if far_side(points, TURNED_SOURCE) != 0 else None
        whole = cls(sharpened(crop, inside, size, amount, flat), FaceMesh(points, mesh.depth), trust, painted)
        return whole.with_smaller_copies()

    @functools.cached_property
    def far(self) -> int:
        """The side of a turned face's far half (``far_side`` at ``TURNED_SOURCE``), 0 for one nearer
        frontal; worked out once (the swap asks for it on every face)."""
        return far_side(self.mesh.points, TURNED_SOURCE)

    @functools.cached_property
    def disc_points(self) -> Points:
        """Its mesh's points with the iris discs (``with_iris_discs``), worked out once (the swap reads them for
        every face)."""
        return with_iris_discs(self.mesh.points)

    @property
    def turned(self) -> bool:
        """Whether the face is turned (``TURNED_SOURCE``): it is then worth a mirror image."""
        return self.far != 0

    def flipped(self) -> WarpSource:
        """This source's mirror image: each pixel flipped left to right, and the mesh with it, each point
        taking its twin's place (``mirrored_order``), so a point keeps its meaning (the left eye's corner
        is still the left eye's)."""
        width = self.image.shape[1]
        order = mirrored_order(len(self.mesh.points))
        points = self.mesh.points[order].astype(np.float32)
        points[:, 0] = width - 1 - points[:, 0]
        painted = None if self.painted is None else np.ascontiguousarray(self.painted[:, ::-1])
        return WarpSource(
            np.ascontiguousarray(self.image[:, ::-1]),
            FaceMesh(points, self.mesh.depth[order]),
            np.ascontiguousarray(self.trust[:, ::-1]),
            painted,
        )

    def mirror_weight(self, target_points: Points) -> float:
        """How much of its mirror image is drawn on a target face (0: the source as it is, 1: the mirror
        image): the mirror image on a target turned (``TURNED_TARGET``) the other way from the source, so
        that the half the source shows best is drawn on the half the target shows best. Drawn as it is, a
        turned source's far half was mostly folded away on such a target and the target's own cheek showed
        (Tom Hanks's photo, turned some 20 degrees, on t1.jpg, whose faces turn the other way). Over a band
        of the target's turn (``MIRROR_BAND`` either side of ``TURNED_TARGET``) the weight goes from one to
        the other, so a head turning through it, or hovering there, changes smoothly instead of switching
        between the two from frame to frame."""
        if self.mirror is None:
            return 0.0
        side, share = smaller_half(target_points)
        if side == self.far:
            return 0.0
        return float(np.clip((TURNED_TARGET + MIRROR_BAND - share) / (2 * MIRROR_BAND), 0.0, 1.0))

    def at_size(self, face_size: float) -> WarpSource:
        """The smallest of this source and its ``smaller`` copies whose face is still ``face_size`` pixels
        across or more: drawn onto a much smaller face by bilinear reads alone, its thin lines (wrinkles,
        lashes) were sampled, not averaged, and came across as hard broken cracks (Grace Hopper's 202 px
        face onto t1.jpg's 100-130 px faces); from the copy chosen they are read at most ``SHRINK_STEP``
        times smaller. A still face keeps its copy: the choice changes only as the face's size passes one."""
        chosen = self
        for smaller in self.smaller:
            if smaller.face_size < face_size:
                break
            chosen = smaller
        return chosen

    @property
    def face_size(self) -> float:
        return float(max(np.ptp(self.mesh.points[:MESH_POINTS], axis=0)))

    def shrunk(self, scale: float) -> WarpSource:
        """This source area-averaged to ``scale`` of its size, the mesh moved with it (no smaller copies)."""
        height, width = self.image.shape[:2]
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        factors = np.array([size[0] / width, size[1] / height], dtype=np.float32)

        def resized(values: np.ndarray) -> np.ndarray:
            return np.asarray(cv2.resize(values, size, interpolation=cv2.INTER_AREA), dtype=values.dtype)

        # pixel centres map onto pixel centres: (x + 0.5) * factor - 0.5
        points = ((self.mesh.points + 0.5) * factors - 0.5).astype(np.float32)
        painted = None if self.painted is None else resized(self.painted)
        return WarpSource(resized(self.image), FaceMesh(points, self.mesh.depth), resized(self.trust), painted)

    def with_smaller_copies(self) -> WarpSource:
        """This source with its ``smaller`` copies, each ``SHRINK_STEP`` times smaller than the one before,
        down to a face of ``SMALLEST_COPY`` pixels (made once per source photo: shrinking for each face cost
        more than the swap's time budget allows)."""
        copies: list[WarpSource] = []
        scale = 1.0 / SHRINK_STEP
        while self.face_size * scale >= SMALLEST_COPY:
            copies.append(self.shrunk(scale))
            scale /= SHRINK_STEP
        return replace(self, smaller=tuple(copies))


def mesh_warp_swap(
    frame: Frame,
    target: FaceMesh,
    source: WarpSource,
    blur: float,
    face_mask: Callable[[tuple[int, int, int, int]], Mask] | None = None,
) -> WarpResult:
    """Put the source face onto the target face (``target``: its mesh in ``frame``). ``face_mask`` gives
    the paste-back masks over the blended rectangle (``masks.stage``); the blend keeps the smaller. A turned
    source is drawn from its mirror image on a face turned the other way (``WarpSource.mirror_weight``); in
    the band between, both are drawn and mixed."""
    region = region_of(target.points, frame.shape)
    x1, y1, x2, y2 = region
    if x2 - x1 < 8 or y2 - y1 < 8:
        return WarpResult(frame, np.zeros((0, 0), dtype=np.float32), (0, 0, 0, 0))
    share = source.mirror_weight(target.points)
    if source.mirror is None or share <= 0.0:
        return drawn_swap(frame, target, source, blur, face_mask, region)
    mirrored = drawn_swap(frame, target, source.mirror, blur, face_mask, region)
    if share >= 1.0:
        return mirrored
    plain = drawn_swap(frame, target, source, blur, face_mask, region)
    mixed = plain.frame
    mixed[y1:y2, x1:x2] = cv2.addWeighted(
        plain.frame[y1:y2, x1:x2], 1.0 - share, mirrored.frame[y1:y2, x1:x2], share, 0
    )
    return WarpResult(mixed, (1.0 - share) * plain.weight + share * mirrored.weight, region)


def drawn_swap(
    frame: Frame,
    target: FaceMesh,
    source: WarpSource,
    blur: float,
    face_mask: Callable[[tuple[int, int, int, int]], Mask] | None,
    region: tuple[int, int, int, int],
) -> WarpResult:
    """``mesh_warp_swap`` with the source (or its mirror image) chosen, over the face's ``region``."""
    x1, y1, x2, y2 = region
    source = source.at_size(float(max(np.ptp(target.points[:MESH_POINTS], axis=0))))
    shaped = with_iris_discs(morph_toward_source(target.points, source.mesh.points))
    depth = with_disc_depth(target.depth)
    source_points = source.disc_points
    triangles = np.concatenate([mesh_triangles(), *openings_to_draw(shaped, source_points)])
    map_x, map_y, covered = render_maps(shaped, depth, source_points, region, triangles)
    warped = cv2.remap(source.image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    trust = cv2.remap(source.trust, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    # the edges of what is not drawn (folded triangles, openings left to the target) softened without
    # reaching past the triangles drawn, and nothing where the source pixel read is not its face
    kernel = max(3, int(max(x2 - x1, y2 - y1) * 0.03)) | 1
    drawn = cv2.GaussianBlur(oval_mask(target.points, region, blur) * covered, (kernel, kernel), 0) * covered
    target_patch = frame[y1:y2, x1:x2]
    lids = lid_band(target.points, opening_contours()[: len(IRISES)], region, target_patch, IRISES)
    weight = np.asarray(drawn * trust * (1.0 - lids), dtype=np.float32)
    if face_mask is not None:
        weight = np.minimum(weight, face_mask(region))
    local = (shaped - np.array([x1, y1], dtype=np.float32)).astype(np.float32)
    warped = transfer_colour(
        np.asarray(warped, dtype=np.uint8),
        target_patch,
        weight,
        openings_mask(shaped, region),
        local if len(shaped) >= MESH_POINTS else None,
        source.turned,
    )
    if source.painted is not None:
        painted = cv2.remap(
            source.painted, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        warped = with_target_detail(warped, target_patch, np.asarray(painted, dtype=np.float32), float(x2 - x1))
    result = frame.copy()
    result[y1:y2, x1:x2] = seam_blend.multiband_blend(target_patch, warped, weight)
    return WarpResult(result, weight, region)

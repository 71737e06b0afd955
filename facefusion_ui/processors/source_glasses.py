"""The source's glasses, for the embedded swapper: whether the source photo's person wears them, which
pixels of the photo are their frames, and the photo with them painted out from the skin round them (so
the source's own eyes and the skin seen through the lenses stay, and no rim comes across).

Where glasses sit: round each eye, a lens-sized ellipse (the mesh's "glasses" region, widened: frames
reach past it above and below the eye), and the bridge of the nose between the eyes. The eyes themselves
and the brows are always the source's.

What is painted is the frames (and a lens's glints), not the skin seen through the lenses: an older
face's creases there are hers, not frames (painted over, they left a flat, pale band round the eyes); the
fill takes the fine detail of the face's own skin beside it (``with_borrowed_texture``).

The cue for glasses is a dark, thin line (a morphological black-hat of the lightness: darker than its
surroundings and narrower than a few per cent of the face) both across the bridge of the nose, as a
horizontal bar over the whole width between the eyes, and round the eyes, crossed by most rays out of
each eye. A bare face has creases, but not a bar across its nose nor a ring round both eyes.
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.masks.mesh_parts import face_size, part_indices, region_polygon_mask
from facefusion_ui.types import Frame, Mask, Points

EYE_CORNERS = ((362, 263), (33, 133))
"""The corners of the left and the right eye (the person's own), inner first for the left eye."""
LENS_AXES = (1.0, 0.8)
"""Half-axes of a lens round an eye (along the eye, across it), in eye widths."""
EYE_KEPT = 1.3
"""How far round each eye's outline (a scale about its centre) the source's own eye and lashes are kept."""
BRIDGE_POINTS = (133, 362, 8, 168, 6)
"""Inner eye corners and the bridge of the nose between them, from the brows' level down."""
LINE_WIDTH = 0.05
"""The widest a frame is taken to be, as a share of the face's size (the black-hat's kernel)."""
LINE_DARKNESS = 12.0
"""How much darker than its surroundings (LAB lightness, 0..255) a pixel must be to be part of a line."""
BAR_COVER = 0.6
"""A row of the bridge counts as a bar when at least this share of it is a dark line."""
BAR_WIDTH = 0.5
"""Rows of the bridge looked at: those at least this wide, in distances between the inner eye corners."""
BROW_MARGIN = 25.0
"""How much darker than the brows' median lightness a line over them must be to be taken for a frame."""
PAINT_GROW = 0.015
"""How far (a share of the face's size) the painted-out frames reach past the pixels found: their soft
edges and shadow."""
PAINT_RADIUS = 0.04
"""How far round (a share of the face's size, a Gaussian's sigma) the painting reads the skin it fills a
frame with."""
FILL_CONFIDENT = 0.03
"""The share of skin near a painted pixel from which its fill is the near skin's mean alone."""
DETAIL_SIGMA = 0.007
"""The blur (sigma, a share of the face's width) whose difference is the target's fine detail put on the
painted-out fill (``with_target_detail``)."""
LIGHT_LINE = 20.0
"""How much lighter than its surroundings (LAB lightness) a line along a lens's edge must be for a rim."""
RIM_LENGTH = 0.5
"""The shortest light line along a lens's edge taken for a rim, in eye widths."""
RIM_BAND = 0.2
"""Half the width of the band along a lens's edge where a rim is looked for, in eye widths."""
EDGE_REACH = 3.0
"""How far past the painted frames (in ``PAINT_GROW``s) a long dark line is taken for what is left of a rim
(``edge_remnants``): a lower rim's far edge and its shadow on the cheek."""
LENS_INSIDE = 0.1
"""How far inside the band along a lens's edge (in eye widths) the skin seen through it is taken as it is."""
GLINT = 35.0
"""How much lighter than its surroundings (LAB lightness) a small spot inside a lens must be for a glint."""
GLINT_LIGHTNESS = 200
"""The least lightness (LAB, 0..255) of a lens's glint: near white, lighter than skin."""
TEXTURE_SIGMA = 0.015
"""The blur (sigma, a share of the face's size) whose difference is the skin detail ``with_borrowed_texture``
lends the painted fill."""
TEXTURE_SHIFT = 0.15
"""How far (a share of the face's size) from a painted pixel, away from the eyes' line, the skin that lends
it its detail lies."""
MOUTH_CORNERS = (61, 291)
"""The mouth's corners: with the eyes' middle, the face's up direction (``with_borrowed_texture``)."""
RAYS = 24
RIM_COVER = 0.6
"""Share of the rays out of each eye that must cross a dark line inside the lens for a rim."""


def eye_frame(points: Points, corners: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """The eye's centre, its unit axis (corner to corner) and its width."""
    first, second = points[corners[0]].astype(np.float64), points[corners[1]].astype(np.float64)
    width = float(np.linalg.norm(second - first)) or 1.0
    return (first + second) / 2, (second - first) / width, width


def lens_polygon(points: Points, corners: tuple[int, int]) -> Points:
    centre, axis, width = eye_frame(points, corners)
    angle = float(np.degrees(np.arctan2(axis[1], axis[0])))
    axes = (max(1, round(LENS_AXES[0] * width)), max(1, round(LENS_AXES[1] * width)))
    polygon = cv2.ellipse2Poly((round(centre[0]), round(centre[1])), axes, round(angle), 0, 360, 10)
    return np.asarray(polygon, dtype=np.float32)


def glasses_zones(points: Points, shape: tuple[int, int]) -> tuple[Mask, Mask, Mask]:
    """Where glasses sit (lenses, the mesh's glasses region and the bridge), where the source stays
    itself whatever its colour (eyes and brows), and the bridge alone; each 1 inside, 0 outside."""
    zone = region_polygon_mask(points, "glasses", shape)
    for corners in EYE_CORNERS:
        cv2.fillConvexPoly(zone, np.round(lens_polygon(points, corners)).astype(np.int32), 1.0)
    bridge = np.zeros(shape, dtype=np.float32)
    cv2.fillConvexPoly(bridge, cv2.convexHull(points[list(BRIDGE_POINTS)].astype(np.float32)).astype(np.int32), 1.0)
    brows = region_polygon_mask(points, "left-eyebrow", shape) + region_polygon_mask(points, "right-eyebrow", shape)
    kept = np.minimum(brows + kept_eyes(points, shape), 1.0)
    return np.maximum(zone, bridge), kept, bridge


def kept_eyes(points: Points, shape: tuple[int, int]) -> Mask:
    """1 on the source's own eyes and lashes (each eye's outline scaled by ``EYE_KEPT``), 0 elsewhere."""
    kept = np.zeros(shape, dtype=np.float32)
    indices = part_indices()
    for eye in ("left-eye", "right-eye"):
        outline = points[list(indices[eye])].astype(np.float32)
        centre = outline.mean(axis=0)
        cv2.fillConvexPoly(kept, cv2.convexHull(centre + (outline - centre) * EYE_KEPT).astype(np.int32), 1.0)
    return kept


def dark_lines(image: Frame, points: Points) -> np.ndarray:
    """True where ``image`` has a thin dark line (narrower than ``LINE_WIDTH`` of the face)."""
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0]
    kernel = max(3, int(face_size(points) * LINE_WIDTH)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))
    return np.asarray(cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, element) >= LINE_DARKNESS)


def rim_highlights(image: Frame, points: Points, rings: Mask, kept: Mask) -> Mask:
    """1 on the long, thin light lines along the lenses' edges (``rings``, outside the ``kept`` eyes): a
    light rim's edge or a rim's highlight (a top-hat of the lightness at least ``LIGHT_LINE``), each at
    least ``RIM_LENGTH`` of an eye's width long, not the specks of the skin's texture."""
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0]
    kernel = max(3, int(face_size(points) * LINE_WIDTH)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))
    light = cv2.morphologyEx(lightness, cv2.MORPH_TOPHAT, element) >= LIGHT_LINE
    candidates = np.asarray(light & (rings > 0) & (kept == 0), dtype=np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(candidates, connectivity=8)
    shortest = RIM_LENGTH * eye_frame(points, EYE_CORNERS[0])[2]
    long_enough = np.zeros(count, dtype=np.float32)
    long_enough[1:] = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]) >= shortest
    return np.asarray(long_enough[labels], dtype=np.float32)


def dilated_lines(image: Frame, points: Points) -> Mask:
    """``dark_lines`` as 0..1, grown by a pixel or two: a frame's soft edges with it."""
    grow = max(3, int(face_size(points) * LINE_WIDTH / 2)) | 1
    lines = dark_lines(image, points).astype(np.uint8)
    return np.asarray(cv2.dilate(lines, np.ones((grow, grow), np.uint8)), dtype=np.float32)


def bar_across_bridge(lines: np.ndarray, bridge: Mask, kept: Mask, points: Points) -> bool:
    """Whether one row of the bridge (between the eyes), where it is wide, is a dark line nearly across
    (the bridge's narrow tips touch the eyes' corners, where lashes are)."""
    inside = (bridge > 0) & (kept == 0)
    between = float(np.linalg.norm(points[BRIDGE_POINTS[0]] - points[BRIDGE_POINTS[1]]))
    rows = np.flatnonzero(inside.sum(axis=1) >= max(3.0, BAR_WIDTH * between))
    return any(lines[row][inside[row]].mean() >= BAR_COVER for row in rows)


def rims_round_eyes(lines: np.ndarray, points: Points, kept: Mask) -> bool:
    """Whether most rays out of each eye cross a dark line between the kept eye and the lens's edge."""
    height, width = lines.shape
    for corners in EYE_CORNERS:
        centre, axis, eye_width = eye_frame(points, corners)
        crossed = 0
        for angle in np.linspace(0, 2 * np.pi, RAYS, endpoint=False):
            direction = np.cos(angle) * axis + np.sin(angle) * np.array([-axis[1], axis[0]])
            reach = np.hypot(LENS_AXES[0] * np.cos(angle), LENS_AXES[1] * np.sin(angle)) * eye_width * 1.1
            steps = centre + np.outer(np.linspace(0, reach, max(2, int(reach))), direction)
            xs, ys = np.round(steps[:, 0]).astype(int), np.round(steps[:, 1]).astype(int)
            inside = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
            xs, ys = xs[inside], ys[inside]
            crossed += bool((lines[ys, xs] & (kept[ys, xs] == 0)).any())
        if crossed < RIM_COVER * RAYS:
            return False
    return True


def wears_glasses(image: Frame, points: Points) -> bool:
    """Whether the face in ``image`` (``points``: its mesh there) wears glasses: a bar across the bridge
    of the nose and rims round both eyes."""
    _, kept, bridge = glasses_zones(points, image.shape[:2])
    lines = dark_lines(image, points)
    return bar_across_bridge(lines, bridge, kept, points) and rims_round_eyes(lines, points, kept)


def frames_over_brows(image: Frame, points: Points) -> Mask:
    """1 where a frame crosses a brow: a thin dark line clearly darker than the brows' own colour."""
    shape = image.shape[:2]
    brows = (
        region_polygon_mask(points, "left-eyebrow", shape) + region_polygon_mask(points, "right-eyebrow", shape)
    ) > 0
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
    if not brows.any():
        return np.zeros(shape, dtype=np.float32)
    darker = lightness < float(np.median(lightness[brows])) - BROW_MARGIN
    return np.asarray(brows & darker & dark_lines(image, points), dtype=np.float32)


def paint_share(points: Points, glasses: Mask) -> Mask:
    """How much of each pixel is painted over (0..1): the ``glasses`` (``frame_lines``) grown over their
    soft edges and shadow (``PAINT_GROW``) and feathered outward over as much again, so the fill's edge
    does not show as a line; never over the source's own eyes (``kept_eyes``)."""
    painted = np.asarray(glasses > 0.5, dtype=np.uint8)
    if not painted.any():
        return np.zeros(glasses.shape, dtype=np.float32)
    grow = max(3, int(face_size(points) * PAINT_GROW)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (grow, grow))
    painted = cv2.dilate(painted, element).astype(np.float32)
    # feathered outward only: the whole frame stays painted, its edge fades into the skin round it; the
    # source's own eyes are never painted over
    soft = np.maximum(painted, cv2.GaussianBlur(painted, (0, 0), grow))
    return np.asarray(soft * (1.0 - kept_eyes(points, glasses.shape)), dtype=np.float32)


def painted_out(image: Frame, points: Points, glasses: Mask, skin: Mask) -> Frame:
    """``image`` with its ``glasses`` (``frame_lines``, 0..1) painted over with the skin round them (the
    mean of the pixels near that are ``skin``, 0..1, and not glasses): the source's eyes, brows and the
    skin seen through the lenses stay its own, so its likeness round the eyes comes across where leaving
    the whole lens zone to the target lost it, and no dark eye or frame is smeared into the fill. The
    fill is smooth (the skin's tone and shading only): the swap gives it the target's fine detail
    (``with_target_detail``), so it is not a flat patch."""
    blend = paint_share(points, glasses)
    if not blend.any():
        return image
    sigma = max(2.0, face_size(points) * PAINT_RADIUS)
    # the skin round the frames, not the eyes and lashes the painting leaves (they would darken it)
    trusted = np.asarray(skin * (blend < 0.01) * (kept_eyes(points, blend.shape) == 0), dtype=np.float32)
    weighted = image.astype(np.float32) * cv2.merge([trusted, trusted, trusted])
    # the skin near, and where little is near (between the lenses, over the bridge) the skin further off
    near, far = (cv2.GaussianBlur(weighted, (0, 0), scale) for scale in (sigma, 3 * sigma))
    near_spread, far_spread = (cv2.GaussianBlur(trusted, (0, 0), scale)[..., None] for scale in (sigma, 3 * sigma))
    confidence = np.clip(near_spread / FILL_CONFIDENT, 0.0, 1.0)
    fill = near / np.maximum(near_spread, 1e-3) * confidence + far / np.maximum(far_spread, 1e-3) * (1.0 - confidence)
    share = blend[..., None]
    result = image.astype(np.float32) * (1.0 - share) + fill * share
    return np.asarray(np.clip(result + 0.5, 0, 255), dtype=np.uint8)


def with_target_detail(warped: Frame, target: Frame, painted: Mask, face_width: float) -> Frame:
    """``warped`` (the source drawn onto the target) with, where its glasses were painted out
    (``painted``, 0..1, drawn onto the target too), the target's own finest detail (its lightness minus
    its blur over ``DETAIL_SIGMA`` of the face: pores, fine lines) on the smooth fill, so the painted area
    reads as skin, not a flat patch. Coarser detail (the target's lid creases) would show the target's
    eyes round the source's and cost the likeness. Lightness only: the colour stays."""
    if not painted.any():
        return warped
    x, y, w, h = cv2.boundingRect(np.asarray(painted > 0.01, dtype=np.uint8))
    sigma = max(1.0, DETAIL_SIGMA * face_width)
    margin = int(3 * sigma) + 1
    y1, y2, x1, x2 = (
        max(y - margin, 0),
        min(y + h + margin, target.shape[0]),
        max(x - margin, 0),
        min(x + w + margin, target.shape[1]),
    )
    # only the patch read is converted (pixel by pixel: the same values)
    patch = cv2.cvtColor(target[y1:y2, x1:x2], cv2.COLOR_BGR2GRAY).astype(np.float32)
    detail = (patch - cv2.GaussianBlur(patch, (0, 0), sigma))[y - y1 : y - y1 + h, x - x1 : x - x1 + w]
    added = detail * painted[y : y + h, x : x + w]
    result: Frame = warped.copy()
    inside = result[y : y + h, x : x + w].astype(np.float32) + cv2.merge([added, added, added])
    result[y : y + h, x : x + w] = np.clip(inside + 0.5, 0, 255).astype(np.uint8)
    return result


def lens_rings(points: Points, shape: tuple[int, int]) -> Mask:
    """1 on a band along each lens's edge (``RIM_BAND`` of the eye's width either side): where a rim runs."""
    rings = np.zeros(shape, dtype=np.float32)
    for corners in EYE_CORNERS:
        _, _, width = eye_frame(points, corners)
        thickness = max(1, round(2 * RIM_BAND * width))
        polygon = np.round(lens_polygon(points, corners)).astype(np.int32)
        cv2.polylines(rings, [polygon], True, 1.0, thickness)
    return rings


def lens_insides(points: Points, shape: tuple[int, int]) -> Mask:
    """1 inside each lens, ``LENS_INSIDE`` short of the band along its edge (``lens_rings``): the skin seen
    through the lens, where no frame, nor a lens's bevelled edge, runs; 0 elsewhere."""
    insides = np.zeros(shape, dtype=np.float32)
    edges = np.zeros(shape, dtype=np.float32)
    for corners in EYE_CORNERS:
        polygon = np.round(lens_polygon(points, corners)).astype(np.int32)
        cv2.fillConvexPoly(insides, polygon, 1.0)
        thickness = max(1, round(2 * (RIM_BAND + LENS_INSIDE) * eye_frame(points, corners)[2]))
        cv2.polylines(edges, [polygon], True, 1.0, thickness)
    return np.asarray(insides * (1.0 - edges), dtype=np.float32)


def lens_glints(image: Frame, points: Points) -> Mask:
    """1 on small near-white spots (a top-hat of the lightness, half a frame's width, at least ``GLINT``, and
    at least ``GLINT_LIGHTNESS`` light), grown by a pixel: a lens's reflections, not the skin's lighter
    creases between wrinkles."""
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0]
    kernel = max(3, int(face_size(points) * LINE_WIDTH / 2)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))
    raised = cv2.morphologyEx(lightness, cv2.MORPH_TOPHAT, element) >= GLINT
    light = np.asarray(raised & (lightness >= GLINT_LIGHTNESS), dtype=np.uint8)
    return np.asarray(cv2.dilate(light, np.ones((3, 3), np.uint8)), dtype=np.float32)


def with_borrowed_texture(image: Frame, points: Points, share: Mask, skin: Mask) -> Frame:
    """``image`` (the source photo with its frames painted out, ``share``: how much of each pixel, 0..1) with
    the painted fill given the fine lightness detail (``TEXTURE_SIGMA``) of the face's own skin
    ``TEXTURE_SHIFT`` further from the eyes' line (below it under the line, above it over the line; twice
    as far where that is painted too): an older face's wrinkles round the eyes, not a flat pale band. Only
    skin (``skin``, 0..1) that was not painted and is not the eyes lends its detail; lightness only."""
    size = face_size(points)
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    detail = grey - cv2.GaussianBlur(grey, (0, 0), max(1.0, TEXTURE_SIGMA * size))
    lends = (skin > 0.5) & (share < 0.01) & (kept_eyes(points, share.shape) == 0)
    usable = cv2.GaussianBlur(lends.astype(np.float32), (0, 0), 1.0)
    eyes = points[[corner for pair in EYE_CORNERS for corner in pair]].astype(np.float32).mean(axis=0)
    up = eyes - points[list(MOUTH_CORNERS)].astype(np.float32).mean(axis=0)
    up = up / (float(np.linalg.norm(up)) or 1.0)
    ys, xs = np.mgrid[0 : share.shape[0], 0 : share.shape[1]].astype(np.float32)
    away = np.where((xs - eyes[0]) * up[0] + (ys - eyes[1]) * up[1] >= 0.0, 1.0, -1.0).astype(np.float32)
    borrowed, found = np.zeros_like(detail), np.zeros_like(detail)
    for steps in (1, 2):
        reach = away * (steps * TEXTURE_SHIFT * size)
        map_x, map_y = xs + reach * up[0], ys + reach * up[1]
        lent = cv2.remap(detail * usable, map_x, map_y, cv2.INTER_LINEAR, borderValue=0)
        there = cv2.remap(usable, map_x, map_y, cv2.INTER_LINEAR, borderValue=0)
        borrowed += (1.0 - found) * lent
        found += (1.0 - found) * there
    added = borrowed * share
    result = image.astype(np.float32) + cv2.merge([added, added, added])
    return np.asarray(np.clip(result + 0.5, 0, 255), dtype=np.uint8)


def without_remnants(image: Frame, points: Points, lines: Mask) -> Frame:
    """``image`` (the source photo with its frames, ``lines``, painted out) with what is left of its rims
    just past the painting (``edge_remnants``) closed over: each such thin dark line takes the lightness of
    the skin either side of it (a morphological closing, as wide as a frame), the skin's texture round it
    kept (painted over with the smooth fill, the wrinkles there went too and the likeness with them)."""
    remnants = edge_remnants(image, points, lines, kept_eyes(points, lines.shape))
    if not remnants.any():
        return image
    kernel = max(3, int(face_size(points) * LINE_WIDTH)) | 1
    closed = cv2.morphologyEx(image, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel)))
    share = cv2.GaussianBlur(cv2.dilate(remnants, np.ones((3, 3), np.uint8)), (0, 0), 1.0)[..., None]
    result = image.astype(np.float32) * (1.0 - share) + closed.astype(np.float32) * share
    return np.asarray(np.clip(result + 0.5, 0, 255), dtype=np.uint8)


def edge_remnants(image: Frame, points: Points, lines: Mask, kept: Mask) -> Mask:
    """1 on the long thin dark lines (``dark_lines``, at least ``RIM_LENGTH`` of an eye's width) just past
    the frames found (``lines``, within ``EDGE_REACH`` of the painting's growth): the far edge of a lower rim
    and its shadow, which the painting's fade left as a faint arc under each eye."""
    grow = max(3, int(face_size(points) * PAINT_GROW)) | 1
    core = cv2.dilate(
        np.asarray(lines > 0.5, dtype=np.uint8), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (grow, grow))
    )
    reach = int(EDGE_REACH * grow) | 1
    near = cv2.dilate(core, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (reach, reach)))
    candidates = np.asarray(dark_lines(image, points) & (near > 0) & (core == 0) & (kept == 0), dtype=np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(candidates, connectivity=8)
    shortest = RIM_LENGTH * eye_frame(points, EYE_CORNERS[0])[2]
    long_enough = np.zeros(count, dtype=np.float32)
    long_enough[1:] = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]) >= shortest
    return np.asarray(long_enough[labels], dtype=np.float32)


def frame_lines(image: Frame, points: Points, skin: Mask) -> Mask:
    """1 on the frames of the glasses the face wears: the thin dark lines in the glasses' zone, what is
    not its skin (``skin``: 0..1 per pixel) or a thin light line along the lenses' edges (light rims,
    tortoiseshell, a rim's highlight), neither on
    its eyes, and frames where they cross the brows; all 0 when it wears none."""
    if not wears_glasses(image, points):
        return np.zeros(image.shape[:2], dtype=np.float32)
    shape = image.shape[:2]
    zone, kept, _ = glasses_zones(points, shape)
    rings = lens_rings(points, shape)
    # seen through a lens is skin: its creases (an older face's) are not frames; its glints are the lens's
    insides = lens_insides(points, shape)
    zone = zone * (1.0 - insides)
    lines = np.maximum(zone * dilated_lines(image, points), rings * (1.0 - skin))
    lines = np.maximum(lines, insides * lens_glints(image, points))
    lines = np.maximum(lines, rim_highlights(image, points, rings, kept))
    return np.asarray(np.maximum(lines * (1.0 - kept), frames_over_brows(image, points)), dtype=np.float32)

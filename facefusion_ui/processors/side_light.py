"""Side lighting, for the embedded swapper: a source photo lit from one side brings a dark half-face, which
does not belong on a target lit otherwise. The face mesh is left-right symmetric (``MIRROR_PAIRS``), so the
warped face's broad lightness splits into what its two halves share (eye sockets, the nose's sides,
cheekbones: who the person is) and what differs between them (how it is lit); the source's difference is
swapped for the target's (``with_target_side_light``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_ui.processors.source_detail import masked_blur
from facefusion_ui.types import Mask, Points

MIRROR_PAIRS = (
    (3, 248),
    (7, 249),
    (20, 250),
    (21, 251),
    (22, 252),
    (23, 253),
    (24, 254),
    (25, 255),
    (26, 256),
    (27, 257),
    (28, 258),
    (29, 259),
    (30, 260),
    (31, 261),
    (32, 262),
    (33, 263),
    (34, 264),
    (35, 265),
    (36, 266),
    (37, 267),
    (38, 268),
    (39, 269),
    (40, 270),
    (41, 271),
    (42, 272),
    (43, 273),
    (44, 274),
    (45, 275),
    (46, 276),
    (47, 277),
    (48, 278),
    (49, 279),
    (50, 280),
    (51, 281),
    (52, 282),
    (53, 283),
    (54, 284),
    (55, 285),
    (56, 286),
    (57, 287),
    (58, 288),
    (59, 289),
    (60, 290),
    (61, 291),
    (62, 292),
    (63, 293),
    (64, 294),
    (65, 295),
    (66, 296),
    (67, 297),
    (68, 298),
    (69, 299),
    (70, 300),
    (71, 301),
    (72, 302),
    (73, 303),
    (74, 304),
    (75, 305),
    (76, 306),
    (77, 307),
    (78, 308),
    (79, 309),
    (80, 310),
    (81, 311),
    (82, 312),
    (83, 313),
    (84, 314),
    (85, 315),
    (86, 316),
    (87, 317),
    (88, 318),
    (89, 319),
    (90, 320),
    (91, 321),
    (92, 322),
    (93, 323),
    (95, 324),
    (96, 325),
    (97, 326),
    (98, 327),
    (99, 328),
    (100, 329),
    (101, 330),
    (102, 331),
    (103, 332),
    (104, 333),
    (105, 334),
    (106, 335),
    (107, 336),
    (108, 337),
    (109, 338),
    (110, 339),
    (111, 340),
    (112, 341),
    (113, 342),
    (114, 343),
    (115, 344),
    (116, 345),
    (117, 346),
    (118, 347),
    (119, 348),
    (120, 349),
    (121, 350),
    (122, 351),
    (123, 352),
    (124, 353),
    (125, 354),
    (126, 355),
    (127, 356),
    (128, 357),
    (129, 358),
    (130, 359),
    (131, 360),
    (132, 361),
    (133, 362),
    (134, 363),
    (135, 364),
    (136, 365),
    (137, 366),
    (138, 367),
    (139, 368),
    (140, 369),
    (141, 370),
    (142, 371),
    (143, 372),
    (144, 373),
    (145, 374),
    (146, 375),
    (147, 376),
    (148, 377),
    (149, 378),
    (150, 379),
    (153, 380),
    (154, 381),
    (155, 382),
    (156, 383),
    (157, 384),
    (158, 385),
    (159, 386),
    (160, 387),
    (161, 388),
    (162, 389),
    (163, 390),
    (165, 391),
    (166, 392),
    (167, 393),
    (169, 394),
    (170, 395),
    (171, 396),
    (172, 397),
    (173, 398),
    (174, 399),
    (176, 400),
    (177, 401),
    (178, 402),
    (179, 403),
    (180, 404),
    (181, 405),
    (182, 406),
    (183, 407),
    (184, 408),
    (185, 409),
    (186, 410),
    (187, 411),
    (188, 412),
    (189, 413),
    (190, 414),
    (191, 415),
    (192, 416),
    (193, 417),
    (194, 418),
    (196, 419),
    (198, 420),
    (201, 421),
    (202, 422),
    (203, 423),
    (204, 424),
    (205, 425),
    (206, 426),
    (207, 427),
    (208, 428),
    (209, 429),
    (210, 430),
    (211, 431),
    (212, 432),
    (213, 433),
    (214, 434),
    (215, 435),
    (216, 436),
    (217, 437),
    (218, 438),
    (219, 439),
    (220, 440),
    (221, 441),
    (222, 442),
    (223, 443),
    (224, 444),
    (225, 445),
    (226, 446),
    (227, 447),
    (228, 448),
    (229, 449),
    (230, 450),
    (231, 451),
    (232, 452),
    (233, 453),
    (234, 454),
    (235, 455),
    (236, 456),
    (237, 457),
    (238, 458),
    (239, 459),
    (240, 460),
    (241, 461),
    (242, 462),
    (243, 463),
    (244, 464),
    (245, 465),
    (246, 466),
    (247, 467),
)
"""The mesh's points (of its 468) that mirror each other across the face's midline; the points on it mirror
themselves. Found on frontal faces (the astronaut, Grace Hopper: the same pairs) as the assignment that
puts each point nearest the mirror image of another."""
MESH_POINTS = 468
SIDE_SIGMA = 0.06
"""The scale (a Gaussian's sigma, a share of the face's size) of the broad lightness whose halves are
compared: lighting, not the features' own edges."""
SIDE_STEP = 4
"""``with_target_side_light`` works this many times smaller than the face's region (at most)."""


@functools.cache
def mirror_index() -> np.ndarray:
    """For each of the mesh's points, the point that mirrors it."""
    index = np.arange(MESH_POINTS)
    for first, second in MIRROR_PAIRS:
        index[first], index[second] = second, first
    return index


def summed_at(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """``values`` (n, k) summed into ``size`` float32 rows at ``index`` (n): ``np.add.at`` into zeros, the
    same sums in the same order (a row's values added one by one, first to last), several times faster.
    The values are laid out row by row (each row's values in their order, padded with zeros, which add
    nothing), and added column by column into zeros: first every row's first value, then every row's
    second, and so on."""
    total = np.zeros((size, values.shape[1]), dtype=np.float32)
    if len(index) == 0:
        return total
    # a stable sort is one order whatever the algorithm: on 16-bit keys numpy's radix sort, a few times faster
    keys = index.astype(np.uint16) if size <= 1 << 16 else index
    order = np.argsort(keys, kind="stable")
    ordered = index[order]
    first = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    starts = np.flatnonzero(first)
    row = np.cumsum(first) - 1
    rank = np.arange(len(index)) - starts[row]
    padded = np.zeros((len(starts), int(rank.max()) + 1, values.shape[1]), dtype=values.dtype)
    padded[row, rank] = values[order]
    sums = np.zeros((len(starts), values.shape[1]), dtype=np.float32)
    for step in range(padded.shape[1]):
        sums += padded[:, step]
    total[ordered[starts]] = sums
    return total


def mirror_maps(points: Points, shape: tuple[int, int], sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each pixel of an image of ``shape`` (height, width; ``points``, the mesh, in it), where its
    mirror image across the face lies: each mesh point's move onto its mirror (``mirror_index``), spread
    smoothly over ``sigma`` pixels (a normalised Gaussian), so it holds between the points as on them.
    Also how near the mesh each pixel is (1 on it, toward 0 far from it)."""
    height, width = shape
    plain = points[:MESH_POINTS].astype(np.float32)
    moves = plain[mirror_index()] - plain
    values = np.hstack([moves, np.ones((len(plain), 1), dtype=np.float32)])
    # each point shared bilinearly among its four pixels: a point moving by a fraction of a pixel moves
    # the field smoothly (a video's still face must not flicker)
    inside = np.clip(plain, 0.0, np.array([width - 1, height - 1], dtype=np.float32))
    corner = np.minimum(np.floor(inside).astype(int), np.array([max(width - 2, 0), max(height - 2, 0)]))
    fraction = inside - corner
    pixels, shares = [], []
    for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
        share = (fraction[:, 0] if dx else 1.0 - fraction[:, 0]) * (fraction[:, 1] if dy else 1.0 - fraction[:, 1])
        columns = np.minimum(corner[:, 0] + dx, width - 1)
        rows = np.minimum(corner[:, 1] + dy, height - 1)
        pixels.append(rows * width + columns)
        shares.append(values * share[:, None])
    spread = summed_at(np.concatenate(pixels), np.concatenate(shares), height * width).reshape(height, width, 3)
    blurred = cv2.GaussianBlur(spread, (0, 0), sigma)
    weight = blurred[..., 2]
    field = blurred[..., :2] / np.maximum(weight, 1e-6)[..., None]
    xs = np.arange(width, dtype=np.float32)[None, :]
    ys = np.arange(height, dtype=np.float32)[:, None]
    near = np.clip(weight / (float(weight.max()) * 0.05 or 1.0), 0.0, 1.0)
    return (
        np.asarray(xs + field[..., 0], dtype=np.float32),
        np.asarray(ys + field[..., 1], dtype=np.float32),
        np.asarray(near, dtype=np.float32),
    )


@dataclass(frozen=True)
class ShrunkGrid:
    """The grid a face region's broad lightness is worked out on: ``SIDE_STEP`` times smaller (it is
    broad), with the Gaussian sigma (a share of the face's size) in its cells."""

    size: tuple[int, int]
    """(width, height) of the grid."""
    sigma: float

    @classmethod
    def of(cls, shape: tuple[int, ...], sigma_share: float) -> ShrunkGrid:
        height, width = shape[:2]
        step = max(1, min(SIDE_STEP, height // 16, width // 16))
        size = (max(1, width // step), max(1, height // step))
        return cls(size, max(1.0, sigma_share * float(max(height, width)) / step))

    def small(self, values: np.ndarray) -> np.ndarray:
        """``values`` area-averaged onto the grid, as float32."""
        return np.asarray(
            cv2.resize(values.astype(np.float32, copy=False), self.size, interpolation=cv2.INTER_AREA), dtype=np.float32
        )


def with_target_side_light(
    lightness: np.ndarray,
    target_lightness: np.ndarray,
    face: Mask,
    points: Points,
) -> np.ndarray:
    """``lightness`` (the warped source's, uint8, over the face's region) with the difference between its
    two halves' broad lightness (``SIDE_SIGMA``) replaced by the target's (``target_lightness``), inside
    ``face`` (0..1) where a pixel's mirror (``mirror_maps`` of ``points``, the mesh in the region) lands
    inside it too. Worked out at ``SIDE_STEP`` times smaller (it is broad) and scaled back."""
    height, width = face.shape
    grid = ShrunkGrid.of(face.shape, SIDE_SIGMA)
    size, sigma, small = grid.size, grid.sigma, grid.small
    inside = small(face)
    scaled = (points * np.array([size[0] / width, size[1] / height], dtype=np.float32)).astype(np.float32)
    map_x, map_y, covered = mirror_maps(scaled, (size[1], size[0]), sigma)

    def half_difference(values: np.ndarray) -> np.ndarray:
        # shrunk reading only the face's pixels: nothing from beside it comes in at its edge
        own = small(cv2.multiply(values, face, dtype=cv2.CV_32F)) / np.maximum(inside, 1e-3)
        broad = masked_blur(own, inside, sigma)
        mirrored = cv2.remap(broad, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        return np.asarray((broad - mirrored) / 2.0, dtype=np.float32)

    mirrored_inside = cv2.remap(inside, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    # where both a pixel and its mirror are inside, softened so the change has no edge of its own
    held = cv2.GaussianBlur(inside * np.asarray(mirrored_inside, dtype=np.float32) * covered, (0, 0), sigma)
    change = (half_difference(target_lightness) - half_difference(lightness)) * held
    full = cv2.resize(change, (width, height), interpolation=cv2.INTER_LINEAR)
    return np.asarray(np.clip(lightness.astype(np.float32) + full + 0.5, 0, 255), dtype=np.uint8)


SHADOW_SIGMA = 0.06
"""The scale (a Gaussian's sigma, a share of the face's size) of the broad shading ``with_lifted_shadows``
compares."""


def with_lifted_shadows(lightness: np.ndarray, target_lightness: np.ndarray, face: Mask, features: Mask) -> np.ndarray:
    """``lightness`` (the warped source's, uint8, over the face's region) lifted, inside ``face`` (0..1) and
    past its edge, where the blend fades (lifted only inside, the shadow stayed there as a grey rim on Tom
    Hanks's photo), away from ``features`` (0..1: eyes, brows, nose, lips, each on its own, which keep all
    their shading; the cheeks between them are lifted), where its broad
    lightness (``SHADOW_SIGMA``) is darker than the target's (both taken about their means): a turned
    source's near cheek darkens toward its silhouette as it turns from the camera, and drawn onto a
    target's cheek facing the camera it was a grey smudge. Never darkened (the source's own shading
    darkened to a brighter target's lost the likeness). Worked out at ``SIDE_STEP`` times smaller."""
    height, width = face.shape
    grid = ShrunkGrid.of(face.shape, SHADOW_SIGMA)
    sigma, small = grid.sigma, grid.small
    inside = small(face)
    held = inside > 0.5
    if not held.any():
        return lightness
    own, target = small(lightness), small(target_lightness)
    source_broad = masked_blur(own, inside, sigma) - float(own[held].mean())
    target_broad = masked_blur(target, inside, sigma) - float(target[held].mean())
    away = 1.0 - np.minimum(cv2.GaussianBlur(small(features), (0, 0), sigma), 1.0)
    # over the face's fading edge too (where the blend still shows the source, weight under 0.5): the
    # broad fields there are their nearest inner values (``masked_blur``)
    lift = np.maximum(target_broad - source_broad, 0.0) * away
    full = cv2.resize(lift, (width, height), interpolation=cv2.INTER_LINEAR)
    return np.asarray(np.clip(lightness.astype(np.float32) + full + 0.5, 0, 255), dtype=np.uint8)

"""The embedded occlusion masker: what is in front of the face and is not face, with no download.

Three sources, on a crop around the face, joined then cleaned:
- hands, from mediapipe's palm detector and hand landmarker (a hand is skin-coloured: the appearance
  model alone would take it for the face);
- anything else (a cup, a microphone, a shoulder), from the face's own appearance (``appearance``);
- background inside the face's outline of a turned head, from mediapipe's selfie segmentation.
Cleaning: an opening removes specks of skin texture, a closing fills the holes of an object, and only
parts of a reasonable size and thickness are kept (a deep fold is a long thin line, not an object), so
the mask does not flicker from frame to frame on pores and glints.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.appearance import occluder_candidates
from facefusion_ui.masks.mesh_parts import face_size, oval_polygon_mask
from facefusion_ui.masks.view import FaceView
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Mask, Matrix, Points

HANDS_MODEL = "mediapipe_hands"
SELFIE_MODEL = "mediapipe_selfie_segmentation"
CONTEXT_SCALE = 2.2
"""Side of the crop the hand and person models see, in face sizes: a hand beside the face is found."""
CONTEXT_SIZE = 256
HAND_MARGIN = 0.12
"""How far round its landmarks' hull a hand reaches (finger width), as a share of the hand's size."""
TURNED_YAW = 20.0
"""Degrees of yaw from which the selfie segmentation runs: below, the face's outline lies on the face
(no background inside it) and the 10 ms per face are saved."""
PERSON_LIMIT = 0.5
"""Below this selfie-segmentation score a pixel is background, not the person."""
SPECK = 0.025
CLOSING = 0.05
GROW = 0.02
"""Opening, closing and growing sizes of the cleaning, as shares of the face's size."""
HOLE_LIMIT = 3.0
THINNEST = 0.065
"""The thinnest occluder kept, as a share of the face's size: thinner lines are the face's own folds."""
SMALLEST_PART = 0.01
"""The smallest occluder kept, as a share of the face oval's area."""


def context_crop(frame: Frame, view: FaceView) -> tuple[Frame, Matrix]:
    """A square RGB crop of ``CONTEXT_SIZE`` px round the face, and the matrix from it to the view."""
    x1, y1, x2, y2 = (float(value) for value in view.face.bbox)
    side = max(x2 - x1, y2 - y1) * CONTEXT_SCALE
    scale = CONTEXT_SIZE / max(side, 1.0)
    to_crop = np.array(
        [[scale, 0, CONTEXT_SIZE / 2 - scale * (x1 + x2) / 2], [0, scale, CONTEXT_SIZE / 2 - scale * (y1 + y2) / 2]]
    )
    crop = cv2.warpAffine(frame, to_crop, (CONTEXT_SIZE, CONTEXT_SIZE), borderMode=cv2.BORDER_REPLICATE)
    from_crop = np.vstack([cv2.invertAffineTransform(to_crop), [0.0, 0.0, 1.0]])
    return np.ascontiguousarray(crop[:, :, ::-1]), np.asarray(view.matrix @ from_crop, dtype=np.float64)


def hand_mask(landmark_sets: list[Points], to_view: Matrix, shape: tuple[int, int]) -> Mask:
    """1 over each hand (``landmark_sets``: 21 points per hand, in crop pixels), 0 elsewhere."""
    mask = np.zeros(shape, dtype=np.uint8)
    for landmarks in landmark_sets:
        points = cv2.transform(landmarks[None].astype(np.float32), to_view)[0]
        hull = cv2.convexHull(points).astype(np.int32)
        cv2.fillConvexPoly(mask, hull, 1)
        reach = max(1, int(face_size(points) * HAND_MARGIN))
        cv2.polylines(mask, [hull], True, 1, thickness=2 * reach)
    return mask.astype(np.float32)


def detected_hands(model: Any, crop_rgb: Frame) -> list[Points]:
    result = model.process(crop_rgb)
    return [
        np.array([[point.x, point.y] for point in hand.landmark], dtype=np.float32) * CONTEXT_SIZE
        for hand in result.multi_hand_landmarks or []
    ]


def background_mask(model: Any, crop_rgb: Frame, to_view: Matrix, shape: tuple[int, int]) -> Mask:
    """1 where the selfie segmentation sees background (not the person), in the view."""
    person = np.asarray(model.process(crop_rgb).segmentation_mask, dtype=np.float32)
    height, width = shape
    warped = cv2.warpAffine(person, to_view, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return np.asarray(warped < PERSON_LIMIT, dtype=np.float32)


def _odd(value: float) -> int:
    return max(3, int(value) | 1)


def _disc(diameter: float) -> np.ndarray:
    side = _odd(diameter)
    return np.asarray(cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (side, side)), dtype=np.uint8)


def filled(parts: np.ndarray) -> np.ndarray:
    """``parts`` (0/1) with the holes each part encloses filled, where a hole is no larger than
    ``HOLE_LIMIT`` times its part: the coffee inside a cup's rim is the cup, though its colour is
    skin's; an eye inside a thin spectacle frame stays face."""
    contours, hierarchy = cv2.findContours(parts, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hierarchy is None:
        return parts
    result = parts.copy()
    for index, (_, _, first_hole, parent) in enumerate(hierarchy[0]):
        if parent >= 0:
            continue
        area = cv2.contourArea(contours[index])
        hole = first_hole
        while hole >= 0:
            hole_area = cv2.contourArea(contours[hole])
            if hole_area <= HOLE_LIMIT * max(area - hole_area, 1.0):
                cv2.drawContours(result, contours, hole, 1, thickness=-1)
            hole = int(hierarchy[0][hole][0])
    return np.asarray(result, dtype=np.uint8)


def clean(candidates: Mask, oval: Mask, size: float) -> Mask:
    """The occluders, 0..1: ``candidates`` inside the oval without specks and holes, parts smaller than
    ``SMALLEST_PART`` of the oval dropped, grown a little over their soft edges and feathered."""
    found = np.asarray((candidates > 0) & (oval > 0), dtype=np.uint8)
    opened = cv2.morphologyEx(found, cv2.MORPH_OPEN, _disc(size * SPECK))
    binary = np.asarray(cv2.morphologyEx(opened, cv2.MORPH_CLOSE, _disc(size * CLOSING)), dtype=np.uint8)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(binary, connectivity=8)
    smallest = SMALLEST_PART * float(cv2.countNonZero(np.asarray(oval > 0, dtype=np.uint8)))
    kept_labels = np.flatnonzero(stats[:, cv2.CC_STAT_AREA] >= smallest)
    kept = filled(np.isin(labels, kept_labels[kept_labels > 0]).astype(np.uint8))
    # once an object's holes are filled (a cup is solid now), what is thinner than THINNEST goes: the
    # folds and wrinkles the skin model does not fit, even where they touch an object
    kept = np.asarray(cv2.morphologyEx(kept, cv2.MORPH_OPEN, _disc(size * THINNEST)), dtype=np.uint8)
    grown = cv2.dilate(kept, _disc(size * GROW))
    feather = _odd(size * GROW)
    return np.asarray(cv2.GaussianBlur(grown.astype(np.float32), (feather, feather), 0), dtype=np.float32)


def face_only(oval: Mask, size: float) -> Mask:
    """The face oval grown by its feather, so it is 1 on the oval's edge: in a crop, the hair and
    background round the face are not the face either (the target keeps them)."""
    grown = cv2.dilate(oval, _disc(size * GROW * 2))
    feather = _odd(size * GROW * 2)
    return np.asarray(cv2.GaussianBlur(grown, (feather, feather), 0), dtype=np.float32)


class OcclusionMasker:
    """1 where the face shows, 0 over what covers it and outside the face."""

    name = "occlusion"
    needs_mesh = True

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.runtime = runtime

    def required_models(self) -> tuple[str, ...]:
        return (HANDS_MODEL, SELFIE_MODEL)

    def mask(self, view: FaceView) -> Mask:
        if view.points is None:
            return np.ones(view.shape, dtype=np.float32)
        crop, to_view = context_crop(view.frame, view)
        with self.runtime.using(HANDS_MODEL) as hands_model:
            hands = detected_hands(hands_model, crop)
        candidates = occluder_candidates(view.image, view.points)
        if abs(view.face.yaw) >= TURNED_YAW:
            with self.runtime.using(SELFIE_MODEL) as selfie_model:
                candidates = np.maximum(candidates, background_mask(selfie_model, crop, to_view, view.shape))
        if hands:
            candidates = np.maximum(candidates, hand_mask(hands, to_view, view.shape))
        oval = oval_polygon_mask(view.points, view.shape)
        size = face_size(view.points)
        return np.asarray(np.minimum(face_only(oval, size), 1.0 - clean(candidates, oval, size)), dtype=np.float32)

"""Which areas of a frame a probe must search, given a frame already found to hold no face.

In a stretch without faces the schedule probes one frame per group (``schedule.py``). Content that is
the same as in a frame where a full-frame detection found no face cannot hold a face now, so a probe
compares a small grey copy of the frame with the one kept from that faceless frame, cell by cell, and
the detector searches only the areas that changed, each grown by a margin so that a face only partly
in the changed cells is whole in the crop; nothing at all when no cell changed. A still shot, a static
camera with something moving, a slide: their probes cost almost nothing. When much of the frame changed
(a pan, a cut, a flash), or in many places, the whole frame is probed, and a faceless result becomes
the new kept copy.

With faces in view the same gate compares with the last frame a full-frame detection searched, leaving
out the crops around the faces followed (``changed_beside``; they are searched there anyway): a face
joining them changes the cells it covers, on a still camera the probes search those alone.

The kept copy is replaced only by a full-frame detection, never by a probe of areas: a face that came
in over several probes, or stopped moving, still differs from the kept copy everywhere it covers, so
the areas searched hold all of it. A slow drift (a fade, a light coming up) adds up against the kept
copy and is searched once it passes ``CHANGE_LEVEL``. With ``face_detector_interval`` 1 there is no gate:
every frame gets a full-frame detection.
"""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.types import Frame

Area = tuple[int, int, int, int]
"""x0, y0, x1, y1 in the pixels of the image the cells were made from."""

CELL = 8
"""Image pixels per cell side (each cell is their mean)."""
CHANGE_LEVEL = 10
"""Grey levels (of 255) a cell's mean must move to count as changed: well above encoding noise, which
averaging 64 pixels brings under 2 levels, and far below what a face coming into view changes."""
MIN_MARGIN = 40
"""Pixels added around a changed area at least: the smallest face HOG finds on the detector's image
with one upsampling (its 80 px window at half size)."""
MOST_AREAS = 6
LARGEST_SHARE = 0.4
"""Above this share of the image (summed over the areas), one full-frame detection costs about the same."""


def thumbnail(image: Frame) -> np.ndarray:
    """The cells of ``image`` (BGR or grey): the mean grey level of each ``CELL`` x ``CELL`` block."""
    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    height, width = grey.shape[:2]
    size = (max(1, width // CELL), max(1, height // CELL))
    return np.asarray(cv2.resize(grey, size, interpolation=cv2.INTER_AREA), dtype=np.int16)


def grow(area: Area, width: int, height: int) -> Area:
    """``area`` grown on each side by its own larger side (at least ``MIN_MARGIN``), inside the image."""
    x0, y0, x1, y1 = area
    margin = max(MIN_MARGIN, x1 - x0, y1 - y0)
    return max(0, x0 - margin), max(0, y0 - margin), min(width, x1 + margin), min(height, y1 + margin)


def overlap(first: Area, second: Area) -> bool:
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] and second[1] < first[3]


def merge_overlapping(areas: list[Area]) -> list[Area]:
    merged = list(areas)
    joined = True
    while joined:
        joined = False
        for i in range(len(merged)):
            for j in range(i + 1, len(merged)):
                if overlap(merged[i], merged[j]):
                    a, b = merged[i], merged.pop(j)
                    merged[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    joined = True
                    break
            if joined:
                break
    return merged


def changed_areas(kept: np.ndarray, cells: np.ndarray, width: int, height: int) -> list[Area] | None:
    """The areas (in the pixels of a ``width`` x ``height`` image) to search: [] when nothing changed,
    None when the whole image should be searched (too much changed, or in too many places)."""
    if kept.shape != cells.shape:
        return None
    changed = (np.abs(cells - kept) > CHANGE_LEVEL).astype(np.uint8)
    if not changed.any():
        return []
    count, _, boxes, _ = cv2.connectedComponentsWithStats(changed, connectivity=8)
    cell_width, cell_height = width / cells.shape[1], height / cells.shape[0]
    areas = []
    for x, y, box_width, box_height, _ in boxes[1:count]:
        x0, y0 = int(x * cell_width), int(y * cell_height)
        x1, y1 = int(np.ceil((x + box_width) * cell_width)), int(np.ceil((y + box_height) * cell_height))
        areas.append(grow((x0, y0, x1, y1), width, height))
    areas = merge_overlapping(areas)
    covered = sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in areas)
    if len(areas) > MOST_AREAS or covered > LARGEST_SHARE * width * height:
        return None
    return areas


def changed_beside(
    kept: np.ndarray, cells: np.ndarray, width: int, height: int, beside: list[Area]
) -> list[Area] | None:
    """``changed_areas`` leaving out the cells ``beside`` covers (areas of the image searched otherwise:
    around the faces followed, where a face moving changes every cell)."""
    if kept.shape != cells.shape:
        return None
    current = cells.copy()
    cell_width, cell_height = width / cells.shape[1], height / cells.shape[0]
    for x0, y0, x1, y1 in beside:
        columns = slice(max(0, int(x0 / cell_width)), int(np.ceil(x1 / cell_width)))
        rows = slice(max(0, int(y0 / cell_height)), int(np.ceil(y1 / cell_height)))
        current[rows, columns] = kept[rows, columns]
    return changed_areas(kept, current, width, height)


class FacelessFrame:
    """The cells of the last frame a full-frame detection found no face in (within one chunk)."""

    def __init__(self) -> None:
        self.cells: np.ndarray | None = None

    def keep(self, cells: np.ndarray) -> None:
        self.cells = cells

    def forget(self) -> None:
        self.cells = None

    def areas_to_search(self, cells: np.ndarray, width: int, height: int) -> list[Area] | None:
        """See ``changed_areas``; None (search everything) when no faceless frame is known."""
        return None if self.cells is None else changed_areas(self.cells, cells, width, height)

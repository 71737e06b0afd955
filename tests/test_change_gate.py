"""The change gate: which areas of a frame a probe searches, given a frame already found faceless."""

from __future__ import annotations

import cv2
import numpy as np

from facefusion_ui.faces.change_gate import (
    MIN_MARGIN,
    FacelessFrame,
    changed_areas,
    changed_beside,
    merge_overlapping,
    thumbnail,
)
from tests.support import media, videos

WIDTH, HEIGHT = 640, 360


def scene() -> np.ndarray:
    return videos.panning_scene(WIDTH, HEIGHT, 10)(3)


def cells_of(image: np.ndarray) -> np.ndarray:
    return thumbnail(image)


def test_nothing_changed_means_nothing_to_search() -> None:
    frame = scene()
    assert changed_areas(cells_of(frame), cells_of(frame.copy()), WIDTH, HEIGHT) == []


def test_encoding_noise_is_not_a_change() -> None:
    frame = scene()
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 40])
    assert ok
    noisy = cv2.imdecode(data, cv2.IMREAD_COLOR)
    assert noisy is not None
    grain = np.random.default_rng(1).integers(-6, 7, frame.shape)
    noisy = np.clip(noisy.astype(int) + grain, 0, 255).astype(np.uint8)
    assert changed_areas(cells_of(frame), cells_of(noisy), WIDTH, HEIGHT) == []


def test_a_face_coming_in_is_searched_whole() -> None:
    frame = scene()
    head = cv2.resize(videos.grace_head(), (60, 70))  # 120 px tall in a 720p frame
    later = frame.copy()
    videos.paste(later, head, 400, 150)
    areas = changed_areas(cells_of(frame), cells_of(later), WIDTH, HEIGHT)
    assert areas is not None and len(areas) == 1
    x0, y0, x1, y1 = areas[0]
    assert x0 <= 400 - MIN_MARGIN and y0 <= 150 - MIN_MARGIN and x1 >= 460 + MIN_MARGIN and y1 >= 220 + MIN_MARGIN
    assert (x1 - x0) * (y1 - y0) < 0.4 * WIDTH * HEIGHT  # far cheaper than the whole frame


def test_part_of_a_face_changed_searches_around_it_by_its_size() -> None:
    """Eyes uncovered on a face that was there (unseen): the area grows by its own size, so it holds the face."""
    frame = scene()
    face = cv2.resize(media.astronaut()[40:300, 130:370], (90, 96))
    covered = face.copy()
    covered[25:55] = 0  # dark glasses
    before, after = frame.copy(), frame.copy()
    videos.paste(before, covered, 250, 100)
    videos.paste(after, face, 250, 100)
    areas = changed_areas(cells_of(before), cells_of(after), WIDTH, HEIGHT)
    assert areas is not None and len(areas) == 1
    x0, y0, x1, y1 = areas[0]
    assert x0 <= 250 and y0 <= 100 and x1 >= 340 and y1 >= 196


def test_far_apart_changes_are_searched_apart_and_near_ones_together() -> None:
    frame = scene()
    later = frame.copy()
    cv2.circle(later, (60, 60), 12, (0, 0, 255), -1)
    cv2.circle(later, (580, 300), 12, (0, 0, 255), -1)
    assert len(changed_areas(cells_of(frame), cells_of(later), WIDTH, HEIGHT) or []) == 2
    cv2.circle(later, (110, 70), 12, (0, 255, 0), -1)  # next to the first: one area holds both
    assert len(changed_areas(cells_of(frame), cells_of(later), WIDTH, HEIGHT) or []) == 2
    assert merge_overlapping([(0, 0, 10, 10), (5, 5, 20, 20), (30, 30, 40, 40)]) == [(0, 0, 20, 20), (30, 30, 40, 40)]


def test_a_cut_a_flash_or_a_pan_searches_the_whole_frame() -> None:
    frame = scene()
    brighter = cv2.convertScaleAbs(frame, alpha=1.0, beta=40)
    panned = videos.panning_scene(WIDTH, HEIGHT, 10)(6)
    assert changed_areas(cells_of(frame), cells_of(brighter), WIDTH, HEIGHT) is None
    assert changed_areas(cells_of(frame), cells_of(panned), WIDTH, HEIGHT) is None
    assert changed_areas(cells_of(frame), cells_of(cv2.resize(frame, (320, 180))), WIDTH, HEIGHT) is None


def test_many_scattered_changes_search_the_whole_frame() -> None:
    frame = scene()
    later = frame.copy()
    for x in range(40, 640, 90):
        for y in (40, 300):
            cv2.circle(later, (x, y), 6, (255, 255, 255), -1)
    assert changed_areas(cells_of(frame), cells_of(later), WIDTH, HEIGHT) is None


def test_a_slow_drift_adds_up_against_the_kept_frame() -> None:
    """The kept cells change only with a full-frame detection: small steps add up until they are searched."""
    frame = scene()
    kept = FacelessFrame()
    assert kept.areas_to_search(cells_of(frame), WIDTH, HEIGHT) is None  # nothing kept yet: search it all
    kept.keep(cells_of(frame))
    searched = []
    for step in range(1, 8):
        later = frame.copy()
        later[100:200, 100:200] = cv2.convertScaleAbs(frame[100:200, 100:200], alpha=1.0, beta=4 * step)
        searched.append(kept.areas_to_search(cells_of(later), WIDTH, HEIGHT) != [])  # None: all of it
    assert searched == [False, False, True, True, True, True, True]  # 4, 8 levels: no; from 12 on: yes
    kept.forget()
    assert kept.areas_to_search(cells_of(frame), WIDTH, HEIGHT) is None


def test_with_a_face_in_view_what_changed_beside_it_is_searched() -> None:
    """A face moving in its crop (searched there anyway) needs no other search; a face joining elsewhere
    is searched whole; a camera moving everything: the whole frame (None)."""
    frame = scene()
    first, second = (cv2.resize(face, (90, 90)) for face in videos.t1_pair())
    before, after, joined = frame.copy(), frame.copy(), frame.copy()
    videos.paste(before, first, 100, 100)
    videos.paste(after, first, 112, 104)  # moved a little
    videos.paste(joined, first, 112, 104)
    videos.paste(joined, second, 450, 150)
    around = [(40, 40, 250, 250)]
    kept = cells_of(before)
    assert changed_beside(kept, cells_of(after), WIDTH, HEIGHT, around) == []
    areas = changed_beside(kept, cells_of(joined), WIDTH, HEIGHT, around)
    assert areas and all(x0 <= 450 and y0 <= 150 and x1 >= 540 and y1 >= 240 for x0, y0, x1, y1 in areas)
    panned = videos.panning_scene(WIDTH, HEIGHT, 10)(8)
    assert changed_beside(kept, cells_of(panned), WIDTH, HEIGHT, around) is None

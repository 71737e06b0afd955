"""The Single tab's People panel, through its handlers: the pass runs in the background with progress
and can be cancelled, one card per person, and Start queues the job with the cards' face map, which
the page's worker runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import cv2
import gradio as gr
import numpy as np
import pytest

from facefusion_ui.jobs.store import wait_for
from facefusion_ui.people_job import find_people
from facefusion_ui.ui import people, single_run
from facefusion_ui.ui.app import build_app
from facefusion_ui.ui.services import UiServices
from tests.support import media, videos
from tests.test_ui_handlers import request as tab_request

FRAMES = 60


@pytest.fixture
def page(services: UiServices) -> UiServices:
    """The page's services (``services`` in conftest.py), by this file's name for them."""
    return services


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return videos.write_video(tmp_path / "three.mp4", videos.three_people(400, 240, FRAMES), FRAMES)


def session(name: str = "s1") -> gr.Request:
    return cast(gr.Request, SimpleNamespace(session_hash=name))


def until(condition: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_page_builds_with_the_people_panel(page: UiServices) -> None:
    assert build_app(page) is not None


def test_find_people_in_the_background_then_start_with_a_map(page: UiServices, clip: Path, tmp_path: Path) -> None:
    searches = people.PeopleSearches()
    message, timer = people.find(searches, page, str(clip), session())
    assert "Finding" in message and timer.active
    search = searches.get("s1")
    assert search is not None
    until(search.finished.is_set)
    line, cards, timer = people.tick(searches, session())
    assert line.startswith("3 people") and not timer.active
    assert [card["id"] for card in cards] == [1, 2, 3]
    assert all(Path(card["thumbnail"]).is_file() for card in cards)
    assert cards[2]["seen"] == "on screen 2.0 s, first seen at 0.0 s"  # 50 frames at 25 fps
    tom = tmp_path / "tom.jpg"
    tom.write_bytes(media.tom_hanks_path().read_bytes())
    astronaut = tmp_path / "astronaut.png"
    cv2.imwrite(str(astronaut), media.astronaut())
    choices = people.with_sources({}, 1, [str(tom)])
    choices = people.with_sources(choices, 3, [str(astronaut)])
    choices = people.with_leave(choices, 3, True)  # person 3 left as is after all
    face_map = people.face_map_of(choices)
    assert [(entry.who, entry.sources) for entry in face_map] == [("1", (tom,))]
    queued = single_run.run_start(page, None, tab_request(page, [], clip), face_map)
    assert isinstance(queued.job_id, int), queued.message
    job = page.job(queued.job_id)
    assert job.payload["face_map"] == [{"who": "1", "sources": [str(tom)]}] and job.payload["sources"] == []
    page.start_worker(page.settings())
    done = wait_for(page.store, job.id, 300)
    assert done.status == "completed", done.last_error
    assert done.result is not None and done.result["people"][0]["faces_swapped"] == FRAMES


def test_a_search_can_be_cancelled(page: UiServices, clip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held = threading.Event()
    real = find_people

    def slow(*args: Any) -> Any:
        args[4].wait(30)  # the search's cancel event: as a long video would be cancelled mid-pass
        held.set()
        return real(*args)

    monkeypatch.setattr(people, "find_people", slow)
    searches = people.PeopleSearches()
    people.find(searches, page, str(clip), session("s2"))
    assert people.cancel(searches, session("s2")) == "cancelling..."
    search = searches.get("s2")
    assert search is not None
    until(search.finished.is_set)
    line, cards, _ = people.tick(searches, session("s2"))
    assert "cancelled" in line and cards is not None
    assert people.cancel(searches, session("s2")) == "nothing to cancel"


def test_the_preview_shows_the_people_map_on_the_current_frame(page: UiServices, tmp_path: Path) -> None:
    """Two of the group photo's six people mapped: the preview changes those two and names what each
    gets; the other four stay as they are, pixel for pixel."""
    group = tmp_path / "group.png"
    cv2.imwrite(str(group), media.t1())
    tom = tmp_path / "tom.jpg"
    tom.write_bytes(media.tom_hanks_path().read_bytes())
    astronaut = tmp_path / "astronaut.png"
    cv2.imwrite(str(astronaut), media.astronaut())
    found = find_people(group, page.settings(), page.runtime).people
    assert len(found) == 6
    choices = people.with_sources(people.with_sources({}, 2, [str(tom)]), 5, [str(astronaut)])
    message, (before, after) = single_run.run_preview(page, tab_request(page, [], group), people.face_map_of(choices))
    assert message == (
        "Preview with the People map: person 2 gets tom.jpg; person 5 gets astronaut.png (everybody else as they are)"
    )
    changed = np.any(before != after, axis=2)
    for person in found:
        x1, y1, x2, y2 = person.box
        inside = changed[max(y1, 0) : y2, max(x1, 0) : x2]
        if person.id in (2, 5):
            assert inside.mean() > 0.2, f"person {person.id} was mapped but not swapped"
        else:
            assert not inside.any(), f"person {person.id} was not mapped but changed"
    # no source photo and no map: the preview waits quietly
    assert single_run.run_preview(page, tab_request(page, [], group), [])[1] == gr.skip()

"""The People panel in a real headless Chromium: a two-person target, Find people, two cards, a source
photo on each, the preview naming the map, then Start: the output has each person swapped as mapped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.analyser import analyse
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.jobs.store import wait_for
from facefusion_ui.state_manager import Settings
from facefusion_ui.ui.app import RunningUi
from tests.support import media, videos
from tests.test_ui import ARTIFACTS, browser_page, ui  # noqa: F401  (the page and its browser, as test_ui has them)

pytestmark = pytest.mark.slow


def two_people(folder: Path) -> Path:
    """Two people of the group photo side by side on a plain background (person 1 left, person 2 right)."""
    left, right = videos.t1_pair()
    canvas = videos.background(520, 260)
    videos.paste(canvas, left, 40, 35)
    videos.paste(canvas, right, 290, 35)
    path = folder / "pair.png"
    cv2.imwrite(str(path), canvas)
    return path


def embeddings(image: np.ndarray) -> list[np.ndarray]:
    """The faces of ``image``, left to right, as the default recognizer sees them."""
    settings = Settings()
    faces = analyse(image, settings, ModelRuntime.create(settings))
    return [np.asarray(face.embedding) for face in sorted(faces, key=lambda face: float(face.bbox[0]))]


def test_people_panel_maps_two_people_in_a_real_browser(
    ui: RunningUi,  # noqa: F811
    browser_page: tuple[Any, list[str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    page, errors = browser_page
    target = two_people(tmp_path)
    tom, astronaut = tmp_path / "tom.jpg", tmp_path / "astronaut.png"
    tom.write_bytes(media.tom_hanks_path().read_bytes())
    cv2.imwrite(str(astronaut), media.astronaut())
    page.locator("#single-target input[type=file]").set_input_files(str(target))
    expect(page.locator("#single-faces img")).to_have_count(2, timeout=60_000)
    page.locator("#single-people").get_by_text("People: a source face for each person").click()
    page.locator("#single-people-find").click()
    expect(page.locator("#single-people-message")).to_contain_text("2 people", timeout=120_000)
    expect(page.locator(".people-card")).to_have_count(2, timeout=30_000)
    page.locator("#people-source-1 input[type=file]").set_input_files(str(tom))
    page.locator("#people-source-2 input[type=file]").set_input_files(str(astronaut))
    expect(page.locator("#single-message")).to_contain_text(
        "Preview with the People map: person 1 gets tom.jpg; person 2 gets astronaut.png", timeout=120_000
    )
    page.locator("#single-start").click()
    expect(page.locator("#single-message")).to_contain_text("queued: it writes pair_swapped", timeout=60_000)
    expect(page.locator("#single-status")).to_contain_text("completed", timeout=180_000)
    page.screenshot(path=str(ARTIFACTS / "ui-people.png"), full_page=True)
    job = ui.services.store.jobs()[-1]
    done = wait_for(ui.services.store, job.id, 60)
    assert done.result is not None and done.payload["sources"] == []  # the map's sources, not the photos above
    given = [(entry["who"], [Path(path).name for path in entry["sources"]]) for entry in done.payload["face_map"]]
    assert given == [("1", ["tom.jpg"]), ("2", ["astronaut.png"])]
    swapped = embeddings(media.read(Path(done.result["output"])))
    wanted = [embeddings(media.read(tom))[0], embeddings(media.read(astronaut))[0]]
    assert len(swapped) == 2
    for person, embedding in enumerate(swapped):
        nearest = min(range(2), key=lambda index: float(np.linalg.norm(embedding - wanted[index])))
        assert nearest == person, f"person {person + 1} does not carry their own source"
    assert not [error for error in errors if "favicon" not in error]

"""The processors added from FaceFusion's set on the Single tab, in a real headless Chromium: ticking each
shows its own controls (and unticking hides them); the background remover (embedded, no download) runs a
PNG through Start to a cut-out that keeps its alpha channel; a face editor slider (stand-in LivePortrait
parts in the page's models folder) changes the preview."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
import pytest

from facefusion_ui.jobs.store import wait_for
from facefusion_ui.ui.app import RunningUi
from tests.support import media
from tests.support.face_edit_models import build_face_editor_parts
from tests.test_ui import ARTIFACTS, browser_page, ui  # noqa: F401  (the page and its browser, as test_ui has them)

pytestmark = pytest.mark.slow

OWN_CONTROLS = {
    "age_modifier": "#setting-age_modifier_direction",
    "background_remover": "#setting-background_remover_color",
    "frame_colorizer": "#setting-frame_colorizer_blend",
    "expression_restorer": "#setting-expression_restorer_factor",
    "face_editor": "#setting-face_editor_mouth_smile",
    "deep_swapper": "#setting-deep_swapper_morph",
}
"""Each new processor and one control of its own that the page shows while it is ticked."""


def tick(page: Any, name: str, ticked: bool) -> None:
    box = page.locator("#single-processors").get_by_label(name, exact=False)
    box.check() if ticked else box.uncheck()


def controls_follow_the_ticks(page: Any) -> None:
    from playwright.sync_api import expect

    tick(page, "face_swapper", False)
    expect(page.locator("#single-options-face_swapper")).to_be_hidden(timeout=30_000)
    for name, control in OWN_CONTROLS.items():
        tick(page, name, True)
        expect(page.locator(control)).to_be_visible(timeout=30_000)
        expect(page.locator(f"#single-options-{name}")).to_contain_text(f"{name} options")
        page.locator(control).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"ui-new-{name}.png"))
        others = [other for other in OWN_CONTROLS if other != name]
        for other in others:
            expect(page.locator(OWN_CONTROLS[other])).to_be_hidden()
        tick(page, name, False)
        expect(page.locator(control)).to_be_hidden(timeout=30_000)


def after_image(page: Any, flags: int = cv2.IMREAD_COLOR) -> np.ndarray | None:
    """The preview's "after" side (None while it is not shown)."""
    images = page.locator("#single-preview img")
    if images.count() < 2:
        return None
    source = images.nth(1).get_attribute("src") or ""
    response = httpx.get(source, timeout=30) if source.startswith("http") else None
    if response is None or response.status_code != 200 or not response.content:
        return None  # an empty body: the file fetched while the server was still writing it
    return cv2.imdecode(np.frombuffer(response.content, np.uint8), flags)


def transparent_around(image: np.ndarray | None) -> bool:
    """A 256 px BGRA cut-out of the astronaut: the top corners clear, her face opaque."""
    if image is None or image.shape != (256, 256, 4):
        return False
    alpha = image[:, :, 3]
    corners = np.concatenate([alpha[:24, :24].ravel(), alpha[:24, -24:].ravel()])
    return bool((corners < 10).mean() > 0.95 and (alpha[45:80, 95:125] > 245).mean() > 0.95)


def cut_out_with_start(page: Any, ui: RunningUi, target: Path) -> None:  # noqa: F811
    from playwright.sync_api import expect

    tick(page, "background_remover", True)
    page.locator("#single-target input[type=file]").set_input_files(str(target))
    expect(page.locator("#single-preview img")).to_have_count(2, timeout=120_000)
    deadline = page.evaluate("Date.now()") + 120_000
    while not transparent_around(after_image(page, cv2.IMREAD_UNCHANGED)):  # the preview shows what Start writes
        assert page.evaluate("Date.now()") < deadline, "the preview never showed the transparent cut-out"
        page.wait_for_timeout(200)
    page.locator("#single-start").click()
    expect(page.locator("#single-message")).to_contain_text("queued: it writes portrait_", timeout=60_000)
    expect(page.locator("#single-result-image img")).to_be_visible(timeout=120_000)
    expect(page.locator("#single-status")).to_contain_text("completed")
    page.screenshot(path=str(ARTIFACTS / "ui-new-background-remover.png"), full_page=True)
    job = wait_for(ui.services.store, ui.services.store.jobs()[-1].id, 60)
    assert job.status == "completed" and job.result is not None
    assert job.payload["settings"]["processors"] == ["background_remover"]
    output = cv2.imread(str(job.result["output"]), cv2.IMREAD_UNCHANGED)
    assert output is not None and output.shape == (256, 256, 4), "the PNG keeps an alpha channel"
    assert transparent_around(output), "the background transparent, her face opaque"
    tick(page, "background_remover", False)


def slider_moves_the_preview(page: Any) -> None:
    from playwright.sync_api import expect

    tick(page, "face_editor", True)
    page.locator("#single-target button[aria-label='Clear']").first.click()
    page.locator("#single-target input[type=file]").set_input_files(str(ARTIFACTS / "ui-new-portrait.png"))
    expect(page.locator("#single-preview img")).to_have_count(2, timeout=120_000)
    page.wait_for_function(
        "() => !document.querySelector('#single-preview .progress-text, #single-preview .eta-bar')", timeout=120_000
    )
    before = after_image(page)
    assert before is not None
    number = page.locator(f"{OWN_CONTROLS['face_editor']} input[type=number]")
    number.fill("1")
    number.press("Enter")
    deadline = page.evaluate("Date.now()") + 120_000
    while True:
        now = after_image(page)
        if now is not None and now.shape == before.shape and np.abs(now.astype(int) - before.astype(int)).max() > 30:
            break
        assert page.evaluate("Date.now()") < deadline, "the preview never followed the face editor's slider"
        page.wait_for_timeout(200)
    page.locator(OWN_CONTROLS["face_editor"]).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui-new-face-editor.png"))
    changed = np.abs(now.astype(int) - before.astype(int)).max(axis=2) > 30
    ys, xs = np.nonzero(changed)
    assert 20 < ys.mean() < 100 and 80 < xs.mean() < 140, "the change is on her face (x 87-132, y 38-83)"


def test_new_processors_on_the_single_tab(
    ui: RunningUi,  # noqa: F811
    browser_page: tuple[Any, list[str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    page, errors = browser_page
    ui.services.runtime.folder.mkdir(parents=True, exist_ok=True)
    build_face_editor_parts(ui.services.runtime.folder)  # stand-ins where the catalog expects them
    portrait = ARTIFACTS / "ui-new-portrait.png"
    cv2.imwrite(str(portrait), cv2.resize(media.astronaut(), (256, 256), interpolation=cv2.INTER_AREA))
    target = tmp_path / "portrait.png"
    target.write_bytes(portrait.read_bytes())
    controls_follow_the_ticks(page)
    cut_out_with_start(page, ui, target)
    slider_moves_the_preview(page)
    assert page.get_by_text("Error", exact=True).count() == 0
    assert not [error for error in errors if "favicon" not in error], errors

"""The Gradio page, launched for real: gradio_client round trip, a real headless Chromium (Debian's,
driven by Playwright) through the three tabs, loopback binding, password, served paths, busy port,
and settings that never change jobs already queued."""

from __future__ import annotations

import re
import socket
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
import pytest

from facefusion_ui.errors import UsageError
from facefusion_ui.ui.app import RunningUi, start_ui
from tests.conftest import ROOT
from tests.support import media, videos

CHROMIUM = "/usr/bin/chromium"
STAND_IN = "gpen_bfr_256"
"""A face enhancer model cheap to make runnable (GPEN 256: 1x3x256x256 in, same out)."""
ARTIFACTS = ROOT / "test-artifacts"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def media_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ui-media")
    files = {
        "face": folder / "astronaut.png",
        "grace": folder / "grace.png",
        "batch_grace": folder / "batch_grace.png",
        "batch_group": folder / "batch_group.jpg",
        "blank": folder / "blank.png",
    }
    cv2.imwrite(str(files["face"]), media.astronaut())
    cv2.imwrite(str(files["grace"]), media.grace_hopper())
    cv2.imwrite(str(files["batch_grace"]), media.grace_hopper())
    cv2.imwrite(str(files["batch_group"]), media.t1())
    cv2.imwrite(str(files["blank"]), np.full((120, 160, 3), 90, np.uint8))
    files["clip"] = videos.write_video(folder / "clip.mp4", videos.moving_face(240, 180, 16), 16, audio=True)
    return files


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUi]:
    home = tmp_path_factory.mktemp("ui-home")
    with pytest.MonkeyPatch.context() as environment:  # the page and its worker keep their models folder
        environment.setenv("FACEFUSION_UI_MODELS", str(home / "models"))  # downloads stay out of the checkout
        running = start_ui(port=free_port(), home=home, overrides={"output_video_preset": "ultrafast"})
    yield running
    running.close()


def test_gradio_client_round_trip(ui: RunningUi, media_files: dict[str, Path]) -> None:
    from gradio_client import Client, handle_file

    client = Client(ui.url, verbose=False)
    result = client.predict(
        [handle_file(str(media_files["face"]))], handle_file(str(media_files["grace"])), api_name="/swap"
    )
    output = cv2.imread(str(result))
    assert output is not None and output.shape == media.grace_hopper().shape
    assert ui.services.store.counts().get("completed", 0) >= 1


def test_the_api_is_a_few_named_endpoints_and_the_readme_example_runs(
    ui: RunningUi, media_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from gradio_client import Client

    endpoints = Client(ui.url, verbose=False).view_api(return_format="dict", print_info=False)
    named = endpoints["named_endpoints"]
    assert set(named) == {"/swap", "/submit", "/job", "/cancel", "/settings"} and not endpoints["unnamed_endpoints"]
    assert [item["parameter_name"] for item in named["/submit"]["parameters"]] == [
        "sources",
        "target",
        "settings",
        "priority",
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = readme.split("<!-- api-example -->\n```python\n", 1)[1].split("```", 1)[0]
    exec(example, {"URL": ui.url, "FACE": str(media_files["face"]), "TARGET": str(media_files["grace"])})
    output, status, written = capsys.readouterr().out.split()[-3:]  # what the example printed last
    assert status == "completed" and Path(output).exists() and Path(written).exists()


def test_binds_loopback_by_default(ui: RunningUi) -> None:
    assert ui.url.startswith("http://127.0.0.1:")
    assert ui.demo.server_name == "127.0.0.1"


def test_paths_outside_the_served_folders_are_refused(ui: RunningUi, media_files: dict[str, Path]) -> None:
    for secret in ("/etc/passwd", str(ROOT / "pyproject.toml"), str(media_files["face"])):
        response = httpx.get(f"{ui.url}/gradio_api/file={secret}", timeout=10)
        assert response.status_code in (403, 404), (secret, response.status_code)
    served = ui.services.outputs_dir / "check.txt"
    served.write_text("ok")
    assert httpx.get(f"{ui.url}/gradio_api/file={served}", timeout=10).status_code == 200


def test_password_is_required_and_checked(tmp_path: Path) -> None:
    running = start_ui(port=free_port(), auth="alice:s3cret", home=tmp_path / "home")
    try:
        assert httpx.get(f"{running.url}/config", timeout=10).status_code in (401, 403)
        wrong = httpx.post(f"{running.url}/login", data={"username": "alice", "password": "nope"}, timeout=10)
        assert wrong.status_code in (400, 401)
        right = httpx.post(f"{running.url}/login", data={"username": "alice", "password": "s3cret"}, timeout=10)
        assert right.status_code == 200
    finally:
        running.close()


def test_busy_port_says_which_flag_to_use(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is busy.*--port {port + 1}"):
            start_ui(port=port, home=tmp_path / "home")


def test_saved_settings_never_change_queued_jobs(ui: RunningUi, media_files: dict[str, Path]) -> None:
    services = ui.services
    services.store.set_paused(True)
    try:
        before = services.enqueue(
            [media_files["face"]], media_files["grace"], services.outputs_dir / "a.png", services.settings()
        )
        services.save_settings({"face_cache_limit": 7})
        after = services.enqueue(
            [media_files["face"]], media_files["grace"], services.outputs_dir / "b.png", services.settings()
        )
        assert services.store.get(before).payload["settings"]["face_cache_limit"] != 7
        assert services.store.get(after).payload["settings"]["face_cache_limit"] == 7
        assert '"face_cache_limit": 7' in (services.store.path.parent / "settings.json").read_text()
    finally:
        services.save_settings({"face_cache_limit": 100})
        services.store.set_paused(False)


@pytest.fixture
def browser_page(ui: RunningUi) -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page at 1400x1000 on the running page, and the console errors it logs."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: .ci/run installs it"
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(ui.url)
        page.wait_for_selector("#single-start", timeout=60_000)
        yield page, errors
        browser.close()


def single_flow(page: Any, ui: RunningUi, media_files: dict[str, Path]) -> None:
    from playwright.sync_api import expect

    # sources: the face found in each photo; a photo without one leaves the list, said in the one message area
    page.locator("#single-sources input[type=file]").set_input_files(
        [str(media_files["face"]), str(media_files["blank"])]
    )
    expect(page.locator("#single-message")).to_contain_text("blank.png removed", timeout=60_000)
    expect(page.locator("#single-source-faces img")).to_have_count(1, timeout=30_000)
    expect(page.locator("#single-sources")).not_to_contain_text("blank")
    # an image target: no frame slider, its faces whole, and a before/after preview without a button
    page.locator("#single-target input[type=file]").set_input_files(str(media_files["grace"]))
    expect(page.locator("#single-faces img").first).to_be_visible(timeout=60_000)
    expect(page.locator("#single-frame")).to_be_hidden()
    expect(page.locator("#single-preview img")).to_have_count(2, timeout=120_000)
    assert page.get_by_text("Error", exact=True).count() == 0
    layout_checks(page)
    # a video target: frame slider and trim range with times; Start is disabled while the job runs
    page.locator("#single-target button[aria-label='Clear']").first.click()
    page.locator("#single-target input[type=file]").set_input_files(str(media_files["clip"]))
    expect(page.locator("#single-trim-times")).to_contain_text(
        "Trim: from 0:00.00 to 0:00.64 (16 frames)", timeout=60_000
    )
    expect(page.locator("#single-frame")).to_be_visible()
    expect(page.locator("#single-faces img").first).to_be_visible(timeout=60_000)
    first_faces = page.locator("#single-faces img").first.get_attribute("src")
    typed = page.locator("#single-frame input[type=number]")  # a frame number typed, then Enter
    typed.fill("9")
    typed.press("Enter")
    expect(page.locator("#single-frame-time")).to_contain_text("Frame 9 at 0:00.36", timeout=30_000)
    page.wait_for_function(  # the faces gallery shows frame 9's faces too, not only the preview
        "before => { const img = document.querySelector('#single-faces img'); "
        "return img && img.getAttribute('src') !== before; }",
        arg=first_faces,
        timeout=60_000,
    )
    frames, deadline = videos.decode_all(media_files["clip"]), time.monotonic() + 120
    while preview_frame(page, frames) != 9:  # the typed frame's preview has come (it writes the message area)
        assert time.monotonic() < deadline, "the preview never showed the typed frame 9"
        page.wait_for_timeout(200)
    page.locator("#single-start").click()
    expect(page.locator("#single-message")).to_contain_text("queued: it writes clip_swapped_", timeout=60_000)
    expect(page.locator("#single-start")).to_be_disabled(timeout=10_000)
    expect(page.locator("#single-result-video video")).to_be_visible(timeout=180_000)
    expect(page.locator("#single-status")).to_contain_text("completed")
    expect(page.locator("#single-start")).to_be_enabled()
    expect(page.locator("#single-log textarea")).not_to_have_value("", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "ui-single.png"), full_page=True)


def layout_checks(page: Any) -> None:
    """The run order said, the face strips captioned above (no label over the thumbnails), file names
    whole, and the preview in view while the face mask options far down the left column are edited."""
    from playwright.sync_api import expect

    expect(page.locator("#single-run-order")).to_have_text("Runs: 1. face_swapper")
    assert page.locator("#single-faces [data-testid=block-label]").count() == 0
    expect(page.get_by_text("Faces in that frame: click one to make it the reference")).to_be_visible()
    stem = page.locator("#single-sources .filename .stem").first
    assert stem.evaluate("element => getComputedStyle(element).whiteSpace") == "normal"
    page.get_by_text("Face mask (how changed faces blend in)").click()
    mask = page.locator("#setting-face_mask_blur:visible")
    mask.scroll_into_view_if_needed()
    expect(mask).to_be_in_viewport()
    expect(page.locator("#single-preview")).to_be_in_viewport()
    page.screenshot(path=str(ARTIFACTS / "ui-single-layout.png"))
    page.get_by_text("Face mask (how changed faces blend in)").click()
    page.evaluate("window.scrollTo(0, 0)")


def batch_flow(page: Any, ui: RunningUi, media_files: dict[str, Path]) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Batch").click()
    page.locator("#batch-sources input[type=file]").set_input_files(str(media_files["face"]))
    targets = [str(media_files["batch_grace"]), str(media_files["batch_group"])]
    page.locator("#batch-targets input[type=file]").set_input_files(targets)
    expect(page.locator("#batch-targets")).to_contain_text("batch_group", timeout=30_000)
    page.locator("#batch-add").click()
    expect(page.locator("#batch-message")).to_contain_text("queued 2 job(s)", timeout=60_000)
    table = page.locator("#batch-table")
    expect(table).to_contain_text("batch_grace.png", timeout=30_000)
    every_job = len(ui.services.store.jobs())  # all of them end completed, the two new ones included
    page.wait_for_function(
        "n => (document.querySelector('#batch-table').innerText.match(/completed/g) || []).length >= n",
        arg=every_job,
        timeout=180_000,
    )
    batch_jobs = [job for job in ui.services.store.jobs() if Path(job.target).name.startswith("batch_")]
    assert [job.status for job in batch_jobs] == ["completed", "completed"]
    downloads = page.locator("#batch-downloads")
    expect(downloads).to_contain_text("batch_grace_swapped", timeout=30_000)
    expect(downloads).not_to_contain_text("clip_swapped_")  # the Single tab's output stays there
    # select two rows by clicking them, then act on both
    for job in batch_jobs:
        page.locator("#batch-table [role=gridcell]", has_text=Path(job.target).name).first.click()
        expect(page.locator("#batch-selection")).to_contain_text(f"job {job.id}", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "ui-batch.png"), full_page=True)
    page.locator("#batch-remove").click()
    ids = ", ".join(f"job {job.id}" for job in batch_jobs)
    expect(page.locator("#batch-message")).to_contain_text(f"removed: {ids}", timeout=30_000)
    expect(table).not_to_contain_text("batch_grace.png", timeout=30_000)


def queue_copy(ui: RunningUi, media_files: dict[str, Path], folder: Path, name: str, output: str) -> int:
    """A Batch-tab job on a copy of the Grace Hopper photo named ``name``.png, writing ``output``."""
    import shutil

    target = Path(shutil.copy(media_files["grace"], folder / f"{name}.png"))
    services = ui.services
    return int(
        services.enqueue(
            [media_files["face"]], target, services.outputs_dir / "batch" / output, services.settings(), origin="batch"
        )
    )


def select_rows(page: Any, names: list[str], ids: list[int]) -> None:
    from playwright.sync_api import expect

    page.locator("#batch-clear").click()
    for name in names:
        page.locator("#batch-table [role=gridcell]", has_text=name).first.click()
    expected = ", ".join(f"job {job_id}" for job_id in ids)
    expect(page.locator("#batch-selection")).to_contain_text(expected, timeout=30_000)


def batch_cancel_and_retry_flow(page: Any, ui: RunningUi, media_files: dict[str, Path], folder: Path) -> None:
    """A cancel that comes after a job's last frames is said as too late, never beside "completed"; two
    jobs given one output name, retried from the page, both complete under names of their own."""
    import shutil

    from playwright.sync_api import expect

    store = ui.services.store
    table, message = page.locator("#batch-table"), page.locator("#batch-message")
    store.set_paused(True)
    try:
        late = queue_copy(ui, media_files, folder, "late", "late_swapped.png")
        assert store.claim("test-owner", 60) is not None  # running: its last frames are being written
        select_rows(page, ["late.png"], [late])
        page.locator("#batch-cancel").click()
        expect(message).to_contain_text(f"stopping at their next frames: job {late}", timeout=30_000)
        output = Path(store.get(late).payload["output"])
        shutil.copy(media_files["grace"], output)
        assert store.complete(late, "test-owner", {"output": str(output), "kind": "image"})
        expect(table).to_contain_text("completed (the cancel came too late)", timeout=30_000)
        assert not store.get(late).cancel_requested
        # two jobs that were given one output name (as before names were claimed), both cancelled
        twins = [queue_copy(ui, media_files, folder, name, "twin.png") for name in ("twin_a", "twin_b")]
        for job_id in twins:
            store.cancel(job_id)
        shared = store.get(twins[0]).payload["output"]
        with store._write() as connection:
            connection.execute(
                "UPDATE jobs SET payload = json_set(payload, '$.output', ?) WHERE id IN (?, ?)", (shared, *twins)
            )
        select_rows(page, ["twin_a.png", "twin_b.png"], twins)
        page.locator("#batch-retry").click()
        expect(message).to_contain_text(f"queued again: job {twins[0]}, job {twins[1]}", timeout=30_000)
    finally:
        store.set_paused(False)
    page.wait_for_function(
        "() => (document.querySelector('#batch-table').innerText.match(/twin_.\\.png\\s+completed/g) || [])"
        ".length == 2",
        timeout=180_000,
    )
    done = [store.get(job_id) for job_id in twins]
    assert [job.status for job in done] == ["completed", "completed"] and done[0].attempts == done[1].attempts == 1
    outputs = {str((job.result or {})["output"]) for job in done}
    assert len(outputs) == 2 and all(Path(item).exists() for item in outputs)


def settings_flow(page: Any, ui: RunningUi, url: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Settings").click()
    page.locator("#settings-preset input").click()
    page.get_by_role("option", name="strict").click()
    expect(page.locator("#settings-preset-table")).to_contain_text("Selected: strict", timeout=30_000)
    expect(page.locator("#settings-unsaved")).to_contain_text("Unsaved changes: preset", timeout=30_000)
    page.locator("#setting-face_detector_model input").click()
    page.get_by_role("option", name="mediapipe_blazeface").click()
    page.locator("#setting-execution_providers").get_by_label("directml").check()
    page.locator("#settings-save").click()
    saved_line = page.locator("#settings-saved")
    expect(saved_line).to_contain_text("Saved (preset strict)", timeout=60_000)
    expect(saved_line).to_contain_text("directml cannot run on this machine")
    expect(page.locator("#settings-unsaved")).to_have_text("", timeout=30_000)
    saved = ui.services.settings()
    assert (saved.preset, saved.face_detector_model, saved.face_cache_scope) == (
        "strict",
        "mediapipe_blazeface",
        "chunk",
    )
    assert set(saved.execution_providers) == {"directml", "cpu"}
    # saved settings are what a new page load shows, without a restart (another tab of the browser)
    ui.services.save_settings({"output_video_quality": 71})
    other = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    fresh = other.new_page()
    fresh.goto(ui.url)
    fresh.wait_for_selector("#single-start", timeout=60_000)
    fresh.get_by_role("tab", name="Settings").click()
    expect(fresh.locator("#settings-preset input")).to_have_value("strict", timeout=30_000)
    expect(fresh.locator("#setting-face_detector_model:visible input")).to_have_value(
        re.compile("^mediapipe_blazeface"), timeout=30_000
    )
    # the video quality is blank by default (chosen from the source), so a text box, not a slider
    expect(fresh.locator("#setting-output_video_quality:visible textarea")).to_have_value("71")
    expect(fresh.locator("#settings-unsaved")).to_have_text("")
    other.close()
    # a model download from the page: its progress, then what went wrong (a file that is not the model)
    ui.services.downloads.url_for["det_10g"] = url
    page.locator("#settings-model input").click()
    page.get_by_role("option", name="det_10g").click()
    page.locator("#settings-download").click()
    expect(page.locator("#settings-downloads")).to_contain_text("det_10g was not downloaded: ", timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "ui-settings.png"), full_page=True)


def test_in_a_real_browser(
    ui: RunningUi,
    media_files: dict[str, Path],
    browser_page: tuple[Any, list[str]],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """Single, Batch and Settings as a person uses them, at 1400x1000; no console error, no traceback."""
    from tests.support.http_server import ServedFile, serve

    page, errors = browser_page
    caplog.set_level("ERROR")
    single_flow(page, ui, media_files)
    batch_flow(page, ui, media_files)
    batch_cancel_and_retry_flow(page, ui, media_files, tmp_path)
    with serve(ServedFile(b"not a model" * 100)) as url:
        settings_flow(page, ui, url)
    assert errors == [], errors
    assert [record for record in caplog.records if record.exc_info] == []
    ui.services.save_settings({"execution_providers": ("cpu",), "preset": "balanced"})


def preview_frame(page: Any, frames: list[np.ndarray]) -> int:
    """Which frame of ``frames`` the preview's "before" side shows (-1 when none is shown yet)."""
    images = page.locator("#single-preview img")
    if images.count() < 2:
        return -1
    source = images.first.get_attribute("src") or ""
    response = httpx.get(source, timeout=30) if source.startswith("http") else None
    if response is None or response.status_code != 200:
        return -1
    shown = cv2.imdecode(np.frombuffer(response.content, np.uint8), cv2.IMREAD_COLOR)
    if shown is None:
        return -1
    errors = [np.abs(cv2.resize(shown, frame.shape[1::-1]).astype(int) - frame.astype(int)).mean() for frame in frames]
    return int(np.argmin(errors))


def drag_frame_slider(page: Any, stops: list[float]) -> int:
    """Drag the frame slider through ``stops`` (fractions of its width) in one go; the value it ends on."""
    track = page.locator("#single-frame input[type=range]")
    box = track.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 2, y)
    page.mouse.down()
    for stop in stops:
        page.mouse.move(box["x"] + box["width"] * stop, y, steps=4)
    page.mouse.up()
    return int(float(page.locator("#single-frame input[type=number]").input_value()))


def preview_flow(page: Any, media_files: dict[str, Path]) -> None:
    """Dragging the frame slider through many values ends on the preview of the last one."""
    from playwright.sync_api import expect

    page.locator("#single-sources input[type=file]").set_input_files(str(media_files["face"]))
    expect(page.locator("#single-source-faces img")).to_have_count(1, timeout=60_000)
    page.locator("#single-target input[type=file]").set_input_files(str(media_files["clip"]))
    expect(page.locator("#single-frame")).to_be_visible(timeout=60_000)
    expect(page.locator("#single-preview img")).to_have_count(2, timeout=120_000)
    frames = videos.decode_all(media_files["clip"])
    last = drag_frame_slider(page, [0.9, 0.2, 0.7, 0.1, 0.5, 0.95, 0.3, 0.6])
    assert 0 < last < len(frames) - 1
    page.wait_for_function(  # the preview's requests have all been answered
        "() => !document.querySelector('#single-preview .progress-text, #single-preview .eta-bar')",
        timeout=120_000,
    )
    deadline = time.monotonic() + 120
    while preview_frame(page, frames) != last:
        assert time.monotonic() < deadline, f"the preview never showed frame {last}"
        page.wait_for_timeout(200)


def download_flow(page: Any, ui: RunningUi, media_files: dict[str, Path], url: str) -> None:
    """A missing model chosen on the Single tab: Download beside it, its progress to "downloaded and
    verified", the label says installed, then a job with it, all without a restart."""
    from playwright.sync_api import expect

    ui.services.downloads.url_for[STAND_IN] = url
    page.locator("#single-target button[aria-label='Clear']").first.click()
    page.locator("#single-target input[type=file]").set_input_files(str(media_files["grace"]))
    expect(page.locator("#single-frame")).to_be_hidden(timeout=60_000)
    page.locator("#single-processors").get_by_label("face_enhancer", exact=False).check()
    page.locator("#setting-face_enhancer_model input").click()
    page.get_by_role("option", name=STAND_IN).click()
    button = page.locator("#single-download-face_enhancer_model")
    expect(button).to_be_visible(timeout=30_000)
    expect(page.locator("#single-downloads")).to_contain_text(f"{STAND_IN} is not downloaded")
    button.click()
    expect(page.locator("#single-downloads")).to_contain_text(f"{STAND_IN}: downloaded and verified", timeout=120_000)
    expect(button).to_be_hidden(timeout=30_000)
    expect(page.locator("#setting-face_enhancer_model input")).to_have_value(
        re.compile(f"^{STAND_IN} · installed"), timeout=30_000
    )
    page.locator("#single-start").click()
    expect(page.locator("#single-message")).to_contain_text("queued: it writes grace_swapped_", timeout=60_000)
    expect(page.locator("#single-result-image img")).to_be_visible(timeout=180_000)
    expect(page.locator("#single-status")).to_contain_text("completed")
    page.screenshot(path=str(ARTIFACTS / "ui-single-models.png"), full_page=True)
    assert page.get_by_text("Error", exact=True).count() == 0  # no error toast on the way
    job = ui.services.store.jobs()[-1]
    assert job.status == "completed" and job.payload["settings"]["face_enhancer_model"] == STAND_IN


def swapper_line_flow(page: Any, ui: RunningUi, url: str) -> None:
    """The line beside the face swapper's dropdown: the model of best likeness with its size (the server
    answers) and one click that downloads it through the page's download flow, then that it is ready."""
    from playwright.sync_api import expect

    from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER
    from tests.support.onnx_models import build_arcface

    ui.services.downloads.url_for[RECOMMENDED_SWAPPER] = url
    build_arcface(ui.services.runtime.folder / "arcface_w600k_r50.onnx")  # what it requires, here already
    line = page.locator("#single-swapper-hint")
    page.locator("#setting-face_swapper_model input").click()
    page.get_by_role("option", name="ghost_1_256").click()  # another choice: the line asks the new address
    expect(line).to_contain_text(f"Best likeness: {RECOMMENDED_SWAPPER} (", timeout=60_000)
    button = page.locator("#single-hint-download")
    expect(button).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "ui-single-swapper-line.png"), full_page=True)
    button.click()
    downloads = page.locator("#single-downloads")
    expect(downloads).to_contain_text(f"{RECOMMENDED_SWAPPER}: downloaded and verified", timeout=120_000)
    expect(line).to_contain_text("is downloaded: choose it in the dropdown to use it", timeout=30_000)
    expect(button).to_be_hidden()
    page.locator("#setting-face_swapper_model input").click()
    page.get_by_role("option", name="mesh_warp").click()
    expect(line).to_contain_text("is downloaded: choose it in the dropdown to use it")
    assert line.count() == 1 and page.locator(".toast-body").count() == 0  # one line in its place, no pop-up


def test_model_download_and_live_preview_in_a_real_browser(
    ui: RunningUi,
    media_files: dict[str, Path],
    browser_page: tuple[Any, list[str]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The preview follows a slider drag to its last value; a model downloaded from the Single tab (a
    stand-in served on loopback, with its CRC32 sidecar) runs a job at once; the face swapper's line
    offers the model of best likeness, and its Download gets it."""
    from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER
    from tests.support.http_server import ServedFile, serve
    from tests.support.onnx_models import build_enhancer

    page, errors = browser_page
    caplog.set_level("ERROR")
    preview_flow(page, media_files)
    body = build_enhancer(tmp_path / "stand-in.onnx", 256).read_bytes()
    crc = format(zlib.crc32(body), "08x").encode()
    sidecar = {f"{STAND_IN}.hash": crc, f"{RECOMMENDED_SWAPPER}.hash": crc}
    with serve(ServedFile(body, extra=sidecar)) as url:
        download_flow(page, ui, media_files, url)
        swapper_line_flow(page, ui, url)
    assert errors == [], errors
    assert [record for record in caplog.records if record.exc_info] == []


def test_share_without_internet_keeps_serving_locally(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING")
    running = start_ui(port=free_port(), share=True, home=tmp_path / "home")
    try:
        assert running.share_url is None
        assert "could not get a public share link" in caplog.text and "serving locally only" in caplog.text
        assert "could not be made" in running.services.notice and running.url in running.services.notice
        assert httpx.get(running.url, timeout=10).status_code == 200
    finally:
        running.close()

"""The Gradio page, launched for real: gradio_client round trip, a real headless Chromium (Debian's,
driven by Playwright) through the three tabs, loopback binding, password, served paths, busy port,
and settings that never change jobs already queued."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import cv2
import httpx
import pytest

from facefusion_ui.errors import UsageError
from facefusion_ui.ui.app import RunningUi, start_ui
from tests.conftest import ROOT
from tests.support import media, videos

CHROMIUM = "/usr/bin/chromium"
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
    }
    cv2.imwrite(str(files["face"]), media.astronaut())
    cv2.imwrite(str(files["grace"]), media.grace_hopper())
    cv2.imwrite(str(files["batch_grace"]), media.grace_hopper())
    cv2.imwrite(str(files["batch_group"]), media.t1())
    files["clip"] = videos.write_video(folder / "clip.mp4", videos.moving_face(240, 180, 16), 16, audio=True)
    return files


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUi]:
    home = tmp_path_factory.mktemp("ui-home")
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


def test_in_a_real_browser(ui: RunningUi, media_files: dict[str, Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: .ci/run installs it"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1100})
        page.goto(ui.url)
        page.wait_for_selector("#single-start", timeout=60_000)

        # Single: a source photo and a short video, Start, and the result plays
        page.locator("#single-sources input[type=file]").set_input_files(str(media_files["face"]))
        page.locator("#single-target input[type=file]").set_input_files(str(media_files["clip"]))
        expect(page.locator("#single-faces img").first).to_be_visible(timeout=60_000)  # the target's faces
        page.locator("#single-start").click()
        expect(page.locator("#single-result-video video")).to_be_visible(timeout=180_000)
        expect(page.locator("#single-status")).to_contain_text("completed")
        page.screenshot(path=str(ARTIFACTS / "ui-single.png"), full_page=True)

        # Batch: two targets reach "completed" in the table
        page.get_by_role("tab", name="Batch").click()
        page.locator("#batch-sources input[type=file]").set_input_files(str(media_files["face"]))
        targets = [str(media_files["batch_grace"]), str(media_files["batch_group"])]
        page.locator("#batch-targets input[type=file]").set_input_files(targets)
        page.wait_for_timeout(1000)
        page.locator("#batch-add").click()
        expect(page.locator("#batch-message")).to_contain_text("queued 2 job(s)", timeout=60_000)
        table = page.locator("#batch-table")
        expect(table).to_contain_text("batch_grace.png", timeout=30_000)
        expect(table).to_contain_text("batch_group.jpg")
        every_job = len(ui.services.store.jobs())  # all of them end completed, the two new ones included
        page.wait_for_function(
            "n => (document.querySelector('#batch-table').innerText.match(/completed/g) || []).length >= n",
            arg=every_job,
            timeout=180_000,
        )
        batch_jobs = [job for job in ui.services.store.jobs() if Path(job.target).name.startswith("batch_")]
        assert [job.status for job in batch_jobs] == ["completed", "completed"]
        page.screenshot(path=str(ARTIFACTS / "ui-batch.png"), full_page=True)

        # Settings: choose another preset and see what it sets
        page.get_by_role("tab", name="Settings").click()
        page.locator("#settings-preset input").click()
        page.get_by_role("option", name="strict").click()
        expect(page.locator("#settings-preset-table")).to_contain_text("Selected: strict", timeout=30_000)
        page.locator("#settings-detector input").click()
        page.get_by_role("option", name="mediapipe_blazeface").click()
        page.locator("#settings-save").click()
        expect(page.locator("#settings-saved")).to_contain_text("Saved (preset strict)", timeout=30_000)
        saved = ui.services.settings()
        assert (saved.preset, saved.face_detector_model, saved.face_cache_scope) == (
            "strict",
            "mediapipe_blazeface",
            "chunk",
        )
        page.screenshot(path=str(ARTIFACTS / "ui-settings.png"), full_page=True)
        browser.close()


def test_share_without_internet_keeps_serving_locally(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING")
    running = start_ui(port=free_port(), share=True, home=tmp_path / "home")
    try:
        assert running.share_url is None
        assert "could not get a public share link" in caplog.text and "serving locally only" in caplog.text
        assert httpx.get(running.url, timeout=10).status_code == 200
    finally:
        running.close()

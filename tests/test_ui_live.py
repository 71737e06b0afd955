"""The Live tab (a page of its own, ``/live``, reached from the main page's Live tab) in a real headless
Chromium with a fake camera playing a clip made at test time (a packaged face photo moving over a
background): swapped frames come back (the face changed, the
background not), the server's fps and latency read-out and the page's own camera-to-screen read-out
(``ui.live_measure``) appear and move, Record gives a playable file, Stop frees the camera."""

from __future__ import annotations

import base64
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.ui.app import RunningUi, start_ui
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos
from tests.test_live import decoded
from tests.test_ui import ARTIFACTS, BROWSER_ARGS, CHROMIUM, free_port

pytestmark = pytest.mark.slow
FRAMES = 100


@pytest.fixture(scope="module")
def camera_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the fake camera plays (looped): Grace Hopper's head moving over a background, as y4m."""
    folder = tmp_path_factory.mktemp("fake-camera")
    clip = videos.write_video(folder / "camera.mp4", videos.moving_face(640, 480, FRAMES), FRAMES)
    y4m = folder / "camera.y4m"
    command = [resolve_ffmpeg().path, "-hide_banner", "-loglevel", "error", "-i", str(clip)]
    subprocess.run([*command, "-pix_fmt", "yuv420p", "-y", str(y4m)], check=True, timeout=120)
    return y4m


@pytest.fixture(scope="module")
def live_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUi]:
    home = tmp_path_factory.mktemp("live-home")
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("FACEFUSION_UI_MODELS", str(home / "models"))
        running = start_ui(port=free_port(), home=home)
    yield running
    running.close()


@pytest.fixture
def camera_page(live_ui: RunningUi, camera_file: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: .ci/run installs it"
    fake = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*BROWSER_ARGS, *fake, f"--use-file-for-fake-video-capture={camera_file}"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(live_ui.url)
        # the main page's Live tab leads to the Live page of the same app (/live)
        page.get_by_role("tab", name="Live").click()
        page.locator("#live-page-link a", has_text="open Live").click()
        page.wait_for_selector("#live-start", timeout=60_000)
        assert page.url.rstrip("/") == f"{live_ui.url}/live", page.url
        assert page.locator("#single-target").count() == 0  # a page of its own: the studio's tabs are not there
        yield page
        browser.close()


def shown_frame(page: Any) -> np.ndarray:
    source = page.locator("#live-frame").get_attribute("src")
    data = base64.b64decode(source.split(",", 1)[1])
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return np.asarray(image, dtype=np.uint8)


SERVER_STATS = "#live-server-stats"
"""The server's read-out, under the shown frame (frame received to swapped)."""
SCREEN_STATS = "#live-screen-stats"
"""The page's own read-out: camera to screen, and frames per second on screen."""
SCREEN_READOUT = r"camera to screen median (\d+) ms, p95 (\d+) ms · ([\d.]+) fps on screen · (\d+) frames measured"


def counted(page: Any, selector: str) -> int:
    """The frames a read-out has counted so far (0 while it is not there)."""
    element = page.locator(selector)
    found = re.search(r"(\d+) frames", element.inner_text()) if element.count() else None
    return int(found.group(1)) if found else 0


def wait_for_frames(page: Any, count: int, selector: str = SERVER_STATS, timeout_ms: int = 180_000) -> None:
    page.wait_for_function(
        "([selector, n]) => { const element = document.querySelector(selector); "
        "const m = ((element && element.innerText) || '').match(/(\\d+) frames/) || []; "
        "return m.length > 1 && Number(m[1]) >= n; }",
        arg=[selector, count],
        timeout=timeout_ms,
    )


def face_and_background_change(shown: np.ndarray, inputs: list[np.ndarray]) -> tuple[float, float]:
    """The input frame nearest the shown one outside the head; the change inside the head's middle (the
    face) and outside the head (the background), in mean absolute levels."""
    backdrop = videos.background(640, 480).astype(np.int16)
    heads = [np.abs(frame.astype(np.int16) - backdrop).max(axis=2) > 25 for frame in inputs]
    outside = [np.abs(shown.astype(np.int16) - frame)[~head].mean() for frame, head in zip(inputs, heads, strict=True)]
    nearest = int(np.argmin(outside))
    ys, xs = np.nonzero(heads[nearest])
    y0, y1, x0, x1 = ys.min(), ys.max(), xs.min(), xs.max()
    cy, cx, h, w = (y0 + y1) // 2, (x0 + x1) // 2, (y1 - y0) // 6, (x1 - x0) // 6
    middle = np.abs(
        shown[cy - h : cy + h, cx - w : cx + w].astype(np.int16) - inputs[nearest][cy - h : cy + h, cx - w : cx + w]
    )
    return float(middle.mean()), float(outside[nearest])


def expect_people_rows(page: Any) -> None:
    """The People accordion (the page's face map) opens on its rows, each a person's photo and their
    sources; closed again, as a viewer leaves it."""
    from playwright.sync_api import expect

    page.locator("#live-people").get_by_text("People (optional)").click()
    for row in range(1, 4):
        expect(page.locator(f"#live-person-{row} input[type=file]")).to_be_attached(timeout=30_000)
        expect(page.locator(f"#live-person-{row}-source input[type=file]")).to_be_attached(timeout=30_000)
    expect(page.locator("#live-person-1")).to_contain_text("Person 1: a photo of them")
    page.locator("#live-people").get_by_text("People (optional)").click()


def test_the_live_tab_swaps_the_camera_records_and_frees_the_camera(
    camera_page: Any, live_ui: RunningUi, camera_file: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page = camera_page
    photo = tmp_path / "astronaut.png"
    cv2.imwrite(str(photo), media.astronaut())
    page.locator("#live-source input[type=file]").set_input_files(str(photo))
    expect(page.locator("#live-source")).to_contain_text("astronaut", timeout=60_000)
    expect_people_rows(page)
    page.locator("#live-mirror input").uncheck()  # the shown frames compare with the camera's as they are
    page.locator("#live-start").click()
    expect(page.locator("#live-message")).to_contain_text("started", timeout=120_000)
    page.locator("#live-camera").get_by_text("Click to Access Webcam").click()
    page.locator("#live-camera button", has_text="Record").click()
    wait_for_frames(page, 10)
    wait_for_frames(page, 10, SCREEN_STATS)  # the page measures the frames it shows
    # while swapped frames come, the camera's own picture is not drawn (the swapped one shows the camera)
    expect(page.locator("#live-camera")).to_have_class(re.compile(r"\blive-streaming\b"), timeout=30_000)
    assert page.locator("#live-camera video").evaluate("video => getComputedStyle(video).visibility") == "hidden"
    first_readouts = page.locator(SERVER_STATS).inner_text(), page.locator(SCREEN_STATS).inner_text()
    wait_for_frames(page, counted(page, SERVER_STATS) + 15)
    wait_for_frames(page, counted(page, SCREEN_STATS) + 15, SCREEN_STATS)
    readout, screen = page.locator(SERVER_STATS).inner_text(), page.locator(SCREEN_STATS).inner_text()
    assert readout != first_readouts[0] and screen != first_readouts[1]  # the read-outs move
    fps, median = re.search(r"([\d.]+) fps · latency median (\d+) ms", readout).groups()  # type: ignore[union-attr]
    assert float(fps) > 0 and int(median) > 0
    screen_median, screen_p95, screen_fps, _ = re.search(SCREEN_READOUT, screen).groups()  # type: ignore[union-attr]
    # camera to screen holds the server's part and more: grab, encode, both ways, decode, paint
    assert 0 < int(screen_median) <= int(screen_p95) and float(screen_fps) > 0
    inputs = decoded(camera_file)
    shown = shown_frame(page)
    ARTIFACTS.mkdir(exist_ok=True)
    cv2.imwrite(str(ARTIFACTS / "ui-live-frame.png"), shown)
    inside, outside = face_and_background_change(shown, inputs)
    assert inside > 8 and outside < 8, (inside, outside)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui-live.png"))
    page.locator("#live-record").click()
    expect(page.locator("#live-message")).to_contain_text("recording", timeout=30_000)
    wait_for_frames(page, counted(page, SERVER_STATS) + 15)
    page.locator("#live-record-stop").click()
    expect(page.locator("#live-message")).to_contain_text("recorded live_", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "ui-live-recorded.png"), full_page=True)
    recorded = sorted((live_ui.services.outputs_dir / "live").glob("live_*.mp4"))
    assert len(recorded) == 1 and len(decoded_any(recorded[0])) >= 10
    expect(page.locator("#live-recording")).to_contain_text(recorded[0].stem, timeout=30_000)  # name, extension apart
    page.locator("#live-stop").click()
    expect(page.locator("#live-message")).to_contain_text("stopped", timeout=30_000)
    live_tracks = page.evaluate(
        "() => [...document.querySelectorAll('#live-camera video')].flatMap(v => v.srcObject ? "
        "v.srcObject.getTracks().filter(t => t.readyState === 'live') : []).length"
    )
    assert live_tracks == 0
    expect(page.locator("#live-camera")).not_to_have_class(re.compile(r"\blive-streaming\b"), timeout=30_000)
    print(f"browser live read-outs: {screen} | server: {readout}")


def decoded_any(path: Path) -> list[np.ndarray]:
    """Every frame of a video of any size (it is playable: ffmpeg decodes it to the end)."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames

"""The Live tab in headless Chromium with a fake camera: the app started as ``run.py ui`` starts it (its Live
page, ``/live``), a clip of one face (a packaged photo moving over a background, 640x480, 25 fps) made here
as y4m and played by Chromium's fake camera, the embedded swapper, the default settings.

Prints, after ``--warm`` seconds of streaming and again after ``--seconds`` more: the page's own read-out of
camera-to-screen latency (median and 95th percentile over its last frames, from the browser grabbing a
camera frame to the swapped frame decoded and painted) and frames per second on screen (goal: median at
most 250 ms, at least 15 fps), the server's read-out (frame received to swapped) beside it, and the
machine's load average: the browser, the page's server and the swap share the CPUs. Also the CPU time per
frame on screen of the browser (all of Chromium's processes) and of the page's server (this process: the
swap, Gradio, the JPEGs), which other work on the machine changes far less than the wall-clock figures:
with one frame in flight end to end, their sum is about the least time a frame can take on one core. And
the browser's CPU a second while it only shows the camera's preview, before streaming.

Run: ``.venv/bin/python benchmarks/live_browser.py [--seconds 20] [--size 480p] [--mirror]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import psutil

from facefusion_ui.ui.app import start_ui
from facefusion_ui.ui.live import LIVE_ROUTE
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos

CHROMIUM = "/usr/bin/chromium"
CAMERA_FRAMES = 100
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
READOUT = re.compile(r"median (\d+) ms, p95 (\d+) ms · ([\d.]+) fps on screen · (\d+) frames")


def camera_file(folder: Path) -> Path:
    """What the fake camera plays, looped: Grace Hopper's head moving over a background, y4m."""
    clip = videos.write_video(folder / "camera.mp4", videos.moving_face(640, 480, CAMERA_FRAMES), CAMERA_FRAMES)
    y4m = folder / "camera.y4m"
    command = [resolve_ffmpeg().path, "-hide_banner", "-loglevel", "error", "-i", str(clip), "-pix_fmt", "yuv420p"]
    subprocess.run([*command, "-y", str(y4m)], check=True, timeout=120)
    return y4m


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def open_camera(page: Any, photo: Path, size: str, mirror: bool) -> None:
    page.wait_for_selector("#live-start", timeout=60_000)
    page.locator("#live-source input[type=file]").set_input_files(str(photo))
    page.locator("#live-source").get_by_text("astronaut").wait_for(timeout=60_000)
    page.locator("#live-size label", has_text=size).click()
    if not mirror:
        page.locator("#live-mirror input").uncheck()
    page.locator("#live-start").click()
    page.wait_for_function(
        "() => (document.querySelector('#live-message') || {}).innerText?.includes('started')", timeout=300_000
    )
    page.locator("#live-camera").get_by_text("Click to Access Webcam").click()
    page.locator("#live-camera button", has_text="Record").wait_for(timeout=60_000)


def stream(page: Any) -> None:
    page.locator("#live-camera button", has_text="Record").click()
    page.wait_for_function("() => /fps on screen/.test(document.querySelector('#live-screen-stats').innerText)")


def readouts(page: Any) -> tuple[str, str]:
    screen = page.locator("#live-screen-stats").inner_text()
    server = page.locator("#live-server-stats").inner_text()
    return screen, server


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by the browser (this process's children: Playwright's driver and Chromium)
    and by this process (the page's server)."""
    own = psutil.Process()
    browser = 0.0
    for child in own.children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        browser += times.user + times.system
    times = own.cpu_times()
    return browser, times.user + times.system


def cpu_line(before: tuple[float, float], after: tuple[float, float], frames: int, seconds: float) -> str:
    browser, server = (end - start for end, start in zip(after, before, strict=True))
    return (
        f"CPU over the last {seconds:g} s ({frames} frames on screen): browser {1000 * browser / seconds:.0f} ms "
        f"a second, {1000 * browser / max(frames, 1):.0f} ms a frame; page's server (swap included) "
        f"{1000 * server / seconds:.0f} ms a second, {1000 * server / max(frames, 1):.0f} ms a frame"
    )


def report(label: str, screen: str, server: str) -> int:
    """Print the read-outs; the frames measured so far."""
    found = READOUT.search(screen)
    if found is None:
        raise SystemExit(f"the page's read-out is not there: {screen!r}")
    median, p95, fps, frames = found.groups()
    print(
        f"{label}: camera to screen median {median} ms, p95 {p95} ms, {fps} fps on screen, {frames} frames measured "
        f"(goal: median <= 250 ms, >= 15 fps) | {screen} | server: {server} | load average {load()}",
        flush=True,
    )
    return int(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to stream after the warm-up")
    parser.add_argument("--warm", type=float, default=5.0, help="seconds of streaming before the first read-out")
    parser.add_argument("--size", choices=("480p", "720p"), default="480p")
    parser.add_argument("--mirror", action="store_true", help="leave the Mirror box on (the page's default)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="ffui-live-browser-"))
    photo = work / "astronaut.png"
    cv2.imwrite(str(photo), media.astronaut())
    y4m = camera_file(work)
    print(f"{os.cpu_count()} CPUs; load average at the start {load()}", flush=True)
    running = start_ui(port=free_port(), home=work / "home")
    try:
        with sync_playwright() as playwright:
            arguments = [*BROWSER_ARGS, f"--use-file-for-fake-video-capture={y4m}"]
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=arguments)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{running.url}/{LIVE_ROUTE}")
            open_camera(page, photo, args.size, args.mirror)
            idle = cpu_seconds()
            time.sleep(args.warm)
            browser_idle = cpu_seconds()[0] - idle[0]
            print(f"the camera's preview alone: browser {1000 * browser_idle / args.warm:.0f} ms of CPU a second")
            stream(page)
            time.sleep(args.warm)
            before, cpu_before = report(f"after {args.warm:g} s", *readouts(page)), cpu_seconds()
            time.sleep(args.seconds)
            label = f"after {args.warm + args.seconds:g} s ({args.size}, camera 640x480 at 25 fps)"
            shown, cpu_after = report(label, *readouts(page)) - before, cpu_seconds()
            print(cpu_line(cpu_before, cpu_after, shown, args.seconds), flush=True)
            page.locator("#live-stop").click()
            browser.close()
    finally:
        running.close()


if __name__ == "__main__":
    main()

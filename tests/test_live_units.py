"""Live mode's small parts: the one-slot hand-over, latency percentiles, the ffmpeg command builders,
and the command line's checks that come before any model loads (the virtual camera's one line)."""

from __future__ import annotations

import base64
import sys
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.cli.argv import normalise_argv
from facefusion_ui.errors import UsageError
from facefusion_ui.live.commands import (
    LIVE_SIZES,
    camera_args,
    fit_filter,
    live_input,
    pace_args,
    read_args,
    record_args,
)
from facefusion_ui.live.latency import LatencyHistogram
from facefusion_ui.live.mailbox import LatestSlot
from tests.conftest import RunCli
from tests.support import media

NEW_FFMPEG = "ffmpeg version n9.0.2-17-g2a571b6068-20260930"


def test_a_slot_keeps_the_newest_item_and_counts_the_ones_replaced() -> None:
    slot: LatestSlot[int] = LatestSlot()
    assert slot.put(1) is False
    assert slot.put(2) is True
    assert slot.put(3) is True
    assert slot.replaced == 2
    assert slot.take(timeout=0.01) == 3
    assert slot.take(timeout=0.01) is None


def test_a_waiting_take_gets_an_item_put_from_another_thread() -> None:
    slot: LatestSlot[str] = LatestSlot()
    timer = threading.Timer(0.05, slot.put, args=("frame",))
    timer.start()
    assert slot.take(timeout=30) == "frame"
    timer.join()


def test_closing_a_slot_ends_a_waiting_take_and_keeps_the_last_item_when_asked() -> None:
    slot: LatestSlot[int] = LatestSlot()
    slot.put(7)
    assert slot.close(keep_last=True) == 0
    assert slot.take(timeout=1) == 7
    assert slot.take(timeout=1) is None
    assert slot.put(8) is False and slot.take(timeout=0.01) is None
    thrown: LatestSlot[int] = LatestSlot()
    thrown.put(1)
    assert thrown.close() == 1 and thrown.take(timeout=0.01) is None


def test_latency_percentiles_match_numpys_within_a_bin() -> None:
    rng = np.random.default_rng(3)
    seconds = rng.gamma(4.0, 0.015, size=5000)
    histogram = LatencyHistogram()
    for value in seconds:
        histogram.add(float(value))
    report = histogram.to_json()
    assert report["median"] == pytest.approx(np.percentile(seconds * 1000, 50), abs=1.0)
    assert report["p95"] == pytest.approx(np.percentile(seconds * 1000, 95), abs=1.0)
    assert report["max"] == pytest.approx(seconds.max() * 1000, abs=0.1)
    assert LatencyHistogram().to_json() == {"median": None, "p95": None, "max": None}


def test_latency_memory_does_not_grow_with_frames() -> None:
    histogram = LatencyHistogram()
    before = histogram.counts.nbytes
    for index in range(20000):
        histogram.add(index / 1000)  # up to 20 s: the long ones share the last bin
    assert histogram.counts.nbytes == before
    assert histogram.percentile(1.0) == pytest.approx(10000.5)


def test_cameras_are_opened_by_each_platforms_device_layer() -> None:
    assert camera_args("0", "linux") == ("-f", "v4l2", "-i", "/dev/video0")
    assert camera_args("/dev/video2", "linux") == ("-f", "v4l2", "-i", "/dev/video2")
    assert camera_args("1", "darwin")[-1] == "1:none"
    assert camera_args("video=Integrated Camera", "win32") == ("-f", "dshow", "-i", "video=Integrated Camera")
    with pytest.raises(UsageError, match="by name"):
        camera_args("0", "win32")


def test_files_are_read_at_their_own_rate_cameras_and_live_streams_as_they_come() -> None:
    file = live_input("clip.mp4", "linux", NEW_FFMPEG, loop=True)
    assert file.kind == "file"
    assert file.args == ("-readrate", "1", "-readrate_initial_burst", "0", "-stream_loop", "-1", "-i", "clip.mp4")
    camera = live_input("0", "linux", NEW_FFMPEG)
    assert camera.kind == "camera" and "-readrate" not in camera.args
    stream = live_input("rtsp://cam.local/stream", "linux", NEW_FFMPEG)
    assert stream.kind == "stream" and "-readrate" not in stream.args and stream.args[-1] == "rtsp://cam.local/stream"
    served = live_input("https://example.org/clip.mp4", "linux", NEW_FFMPEG)
    assert served.kind == "stream" and served.args[:2] == ("-readrate", "1")
    assert pace_args("ffmpeg version 5.1.6-0+deb12u1") == ("-re",)
    assert pace_args("ffmpeg version 6.1.1") == ("-readrate", "1", "-readrate_initial_burst", "0")
    assert pace_args("ffmpeg version N-12345-gabc") == ("-re",)


def test_frames_are_fitted_to_the_live_size_and_read_as_raw_bgr() -> None:
    assert LIVE_SIZES == {"480p": (640, 480), "720p": (1280, 720)}
    assert fit_filter(640, 480).startswith("scale=640:480:force_original_aspect_ratio=decrease,pad=640:480")
    command = read_args("ffmpeg", live_input("a.mp4", "linux", NEW_FFMPEG), 640, 480)
    assert command[command.index("-i") + 1] == "a.mp4"
    assert command[-5:] == ["-f", "rawvideo", "-pix_fmt", "bgr24", "pipe:1"]
    assert "error" in command  # ffmpeg says its errors (kept and reported), nothing else


def test_a_recording_encodes_raw_bgr_into_a_file_any_player_reads() -> None:
    command = record_args("ffmpeg", 1280, 720, 30.0, "out.mp4")
    assert command[command.index("-s") + 1] == "1280x720"
    assert command[command.index("-framerate") + 1] == "30"
    assert command[command.index("-pix_fmt", command.index("-c:v")) + 1] == "yuv420p"
    assert command[-1] == "out.mp4"


def test_live_is_a_command() -> None:
    assert normalise_argv(["live", "--input", "0"]) == ["live", "--input", "0"]


def test_live_without_a_source_or_input_says_what_it_needs(cli_here: RunCli) -> None:
    result = cli_here(["live", "--input", "0"])
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: live needs -s SOURCE (or --face-map PHOTO=SOURCE) and --input CAMERA|DEVICE|FILE|URL "
        "(see 'run.py live --help')"
    ]


def loopback_present() -> bool:
    return any(Path("/sys/devices/virtual/video4linux").glob("video*"))


@pytest.mark.skipif(sys.platform != "linux", reason="the backend-less case is made on Linux without v4l2loopback")
def test_a_virtual_camera_without_a_backend_says_what_to_install(cli_here: RunCli, tmp_path: Path) -> None:
    if loopback_present():
        pytest.skip("a v4l2loopback device is there: the virtual camera has its backend")
    photo = tmp_path / "face.png"
    cv2.imwrite(str(photo), media.astronaut())
    result = cli_here(["live", "-s", str(photo), "--input", "0", "--virtual-camera"])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: --virtual-camera needs pyvirtualcam and a virtual camera: pip install")
    assert "v4l2loopback" in lines[0]


def test_a_pushed_frame_is_fitted_to_the_live_size_keeping_its_aspect() -> None:
    from facefusion_ui.live.pushed import fit_frame

    wide = np.full((360, 640, 3), 200, np.uint8)  # 16:9 into 4:3: black bands above and below
    fitted = fit_frame(wide, 640, 480)
    assert fitted.shape == (480, 640, 3)
    assert fitted[:60].max() == 0 and fitted[420:].max() == 0 and fitted[60:420].min() == 200
    same = np.zeros((480, 640, 3), np.uint8)
    assert fit_frame(same, 640, 480) is same


def test_a_shown_frame_carries_its_jpeg_the_browsers_stamp_and_the_read_out() -> None:
    from facefusion_ui.ui.live import jpeg_html, live_frame

    rgb = np.zeros((48, 64, 3), dtype=np.uint8)
    rgb[:, :32] = (255, 0, 0)
    shown = jpeg_html(rgb, 1234.5, "3.0 fps <fast>")
    assert 'id="live-frame" width="64" height="48"' in shown and 'data-sent="1234.500"' in shown
    assert '<p id="live-server-stats">3.0 fps &lt;fast&gt;</p>' in shown
    encoded = shown.split("base64,", 1)[1].split('"', 1)[0]
    decoded = cv2.imdecode(np.frombuffer(base64.b64decode(encoded), np.uint8), cv2.IMREAD_COLOR)
    assert decoded is not None and decoded.shape == (48, 64, 3)
    assert decoded[24, 8, 2] > 200 and decoded[24, 56, 2] < 40  # red stays left
    assert "data-sent" not in jpeg_html(rgb, None, "")  # no stamp (the stream's first frame): none put back
    assert "press Start" in live_frame(rgb, 1.0, None)


def test_the_pages_measure_script_is_filled_in_and_keeps_bounded_windows() -> None:
    from facefusion_ui.ui.app import PAGE_CSS
    from facefusion_ui.ui.live_measure import (
        HOLD_MS,
        IN_FLIGHT,
        LIVE_MEASURE_HEAD,
        MEASURE_WINDOW,
        SCREEN_STATS_ID,
        STREAMING_CLASS,
        UPLOAD_QUALITY,
    )

    assert "__" not in LIVE_MEASURE_HEAD  # every placeholder filled in
    assert f"WINDOW = {MEASURE_WINDOW}," in LIVE_MEASURE_HEAD and f'"{SCREEN_STATS_ID}"' in LIVE_MEASURE_HEAD
    assert f"HOLD_MS = {HOLD_MS}" in LIVE_MEASURE_HEAD and f"IN_FLIGHT = {IN_FLIGHT}," in LIVE_MEASURE_HEAD
    assert f"UPLOAD_QUALITY = {UPLOAD_QUALITY}," in LIVE_MEASURE_HEAD and 0.5 <= UPLOAD_QUALITY < 1
    # the class the script puts on the camera's block while it streams is the one the page's CSS hides
    assert f'STREAMING_CLASS = "{STREAMING_CLASS}"' in LIVE_MEASURE_HEAD
    assert f"#live-camera.{STREAMING_CLASS} video {{ visibility: hidden; }}" in PAGE_CSS
    assert 1 <= IN_FLIGHT <= 2  # more would let Gradio's server replace a frame posted and not yet swapped
    assert "state.latencies.length > WINDOW" in LIVE_MEASURE_HEAD and "state.started.size > GRABS" in LIVE_MEASURE_HEAD

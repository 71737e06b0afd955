"""The Single tab's models and per-run output settings, through its handlers: every catalog model in its
dropdown with its state and size, Download beside a missing one, labels refreshed when a download ends,
Start downloading what the job needs first (or saying why it cannot), the runtime finding a model that
arrived after a miss, the output size and rate passed to the job, the preview's debounce, and the face
swapper's line naming the model of best likeness (offline: the embedded swapper)."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import gradio as gr
import pytest

from facefusion_ui.errors import DownloadError, ModelError
from facefusion_ui.model_service import DownloadStatus
from facefusion_ui.state_manager import setting_rule
from facefusion_ui.ui import settings, single_models, single_run
from facefusion_ui.ui.downloads import page_line, progress_bar, status_line
from facefusion_ui.ui.model_sizes import ModelSizes
from facefusion_ui.ui.preview_gate import PreviewGate
from facefusion_ui.ui.processor_options import MODEL_NOTES, model_choices, model_label
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER
from tests.support import media
from tests.support.http_server import ServedFile, serve
from tests.support.onnx_models import build_arcface, build_enhancer
from tests.test_ui_handlers import request, start

STAND_IN = "gpen_bfr_256"
"""A face enhancer cheap to make runnable: GPEN's 1x3x256x256 in, same out."""


def wait_until(condition: Any, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[str]:
    """A loopback server with a stand-in GPEN 256 model and its CRC32 sidecar; yields its address."""
    model = build_enhancer(tmp_path / "stand-in.onnx", 256)
    body = model.read_bytes()
    crc = format(zlib.crc32(body), "08x").encode()
    with serve(ServedFile(body, extra={f"{STAND_IN}.hash": crc})) as url:
        yield url


@pytest.fixture
def photos(tmp_path: Path) -> dict[str, Path]:
    paths = {"face": tmp_path / "astronaut.png", "grace": tmp_path / "grace.png"}
    cv2.imwrite(str(paths["face"]), media.astronaut())
    cv2.imwrite(str(paths["grace"]), media.grace_hopper())
    return paths


@pytest.fixture
def page(services: UiServices) -> UiServices:
    """The page's services (``services`` in conftest.py), by this file's name for them."""
    return services


@pytest.fixture
def offline(page: UiServices, tmp_path: Path) -> UiServices:
    """The services on an empty models folder, every download address a closed loopback port."""
    page.runtime.folder = tmp_path / "models"
    for name, spec in page.runtime.manifest.items():
        if spec.kind == "onnx":
            page.downloads.url_for[name] = f"http://127.0.0.1:9/{name}.onnx"
    return page


MODEL_SETTINGS = {
    "face_swapper_model": "swapper",
    "face_enhancer_model": "enhancer",
    "face_detector_model": "detector",
    "face_recognizer_model": "recognizer",
}


def test_every_catalog_model_is_offered_with_its_state_and_note(offline: UiServices) -> None:
    manifest = offline.runtime.manifest
    for key, role in MODEL_SETTINGS.items():
        offered = set(setting_rule(key).cli_options()["choices"])
        assert offered == {name for name, spec in manifest.items() if spec.role == role}, key
    for processor, role in (("frame_enhancer", "frame_enhancer"), ("lip_syncer", "lip_syncer")):
        (option,) = [option for option in offline.registry.options(processor) if option.name == "model"]
        assert set(option.choices) == {name for name, spec in manifest.items() if spec.role == role}
        assert all(name in MODEL_NOTES for name in option.choices)
    assert model_label(offline, "mesh_warp").startswith("mesh_warp · installed · runs on any CPU")
    # the catalog's size where it has one; otherwise unknown while offline
    assert model_label(offline, "inswapper_128").startswith("inswapper_128 · download, 554 MB · ")
    assert model_label(offline, "ghost_1_256").startswith("ghost_1_256 · not downloaded · GHOST checkpoint 1")
    assert [value for _, value in model_choices(offline, ("mesh_warp", "ghost_1_256"))] == ["mesh_warp", "ghost_1_256"]


def test_sizes_come_from_the_server_in_the_background(offline: UiServices, stand_in: str) -> None:
    offline.downloads.url_for[STAND_IN] = stand_in
    assert "not downloaded" in model_label(offline, STAND_IN)  # asked now, never waited for
    wait_until(lambda: offline.downloads.size(STAND_IN) is not None, "the HEAD request's answer")
    size = offline.downloads.size(STAND_IN)
    assert size is not None and model_label(offline, STAND_IN).startswith(f"{STAND_IN} · download, {size / 1e6:.0f} MB")
    row = next(row for row in settings.model_rows(offline) if row[0] == STAND_IN)  # the Settings tab's table too
    assert row[4] == f"{size / 1e6:.0f}"


def test_sizes_are_kept_in_a_bounded_table() -> None:
    sizes = ModelSizes(limit=3)
    for port in range(10):
        assert sizes.size(f"http://127.0.0.1:9/model-{port}.onnx") is None  # unreachable: unknown
    assert len(sizes) == 3
    sizes.close()
    assert sizes.size("http://127.0.0.1:9/after.onnx") is None  # closed: still an answer, no error


def test_download_beside_a_missing_model_then_labels_refresh(offline: UiServices, stand_in: str) -> None:
    offline.downloads.url_for[STAND_IN] = stand_in
    line, button = single_models.model_chosen(offline, STAND_IN)
    assert button.visible and f"{STAND_IN} is not downloaded" in line and "press Download" in line
    assert single_models.model_chosen(offline, "mesh_warp")[1].visible is False
    line, timer = single_models.download_chosen(offline, STAND_IN)
    assert timer.active and STAND_IN in line
    wait_until(lambda: not offline.downloads.running(), "the download to end")
    names = [("mesh_warp", STAND_IN)]
    line, dropdown, button, timer = single_models.download_tick(offline, names, STAND_IN)
    assert f"{STAND_IN}: downloaded and verified" in line
    labels = dict((value, label) for label, value in dropdown["choices"])
    assert labels[STAND_IN].startswith(f"{STAND_IN} · installed")
    assert button.visible is False and timer.active is False
    # the runtime loads it now: no restart
    spec, session = offline.runtime.onnx_session(STAND_IN)
    assert spec.name == STAND_IN and session is not None


def test_runtime_finds_a_model_that_arrived_after_a_miss(offline: UiServices, stand_in: str) -> None:
    with pytest.raises(ModelError, match="is not downloaded"):
        offline.runtime.onnx_session(STAND_IN)
    offline.downloads.url_for[STAND_IN] = stand_in
    offline.downloads.start(STAND_IN)
    wait_until(lambda: not offline.downloads.running(), "the download to end")
    assert offline.runtime.onnx_session(STAND_IN)[0].name == STAND_IN


def run_start(page: UiServices, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    return list(single_models.run_start_with_models(page, None, request(page, *args, **kwargs)))


def test_start_downloads_what_the_job_needs_then_queues_it(
    offline: UiServices, photos: dict[str, Path], stand_in: str
) -> None:
    offline.downloads.url_for[STAND_IN] = stand_in
    steps = run_start(offline, [photos["face"]], photos["grace"], ["face_enhancer"], face_enhancer_model=STAND_IN)
    first, *_, last = steps
    assert first[0] == f"Downloading {STAND_IN} first: the job starts once they are here"
    assert first[2].interactive is False
    message, job_id, button, timer, _ = last
    assert message.startswith(f"Job {job_id} queued") and timer.active and button.interactive is False
    assert offline.store.get(job_id).payload["settings"]["face_enhancer_model"] == STAND_IN


def test_a_failed_download_queues_no_job(offline: UiServices, photos: dict[str, Path]) -> None:
    steps = run_start(offline, [photos["face"]], photos["grace"], ["face_enhancer"], face_enhancer_model=STAND_IN)
    message, _, button, *_ = steps[-1]
    assert message.startswith(f"⚠️ No job was queued: {STAND_IN} was not downloaded: cannot reach the server")
    todo = "press Download again later (if it keeps failing, the address may be gone: report it)"
    assert message.endswith(f"(it is down). To do: {todo}")
    assert "\n" not in message and "Start to try again" not in message and "Settings tab" not in message
    assert button.interactive is True and offline.store.jobs() == []
    # nothing to download: queued at once, in one step
    (only,) = run_start(offline, [photos["face"]], photos["grace"])
    assert only[0].startswith(f"Job {only[1]} queued")


def test_output_size_and_rate_go_into_the_job(page: UiServices, photos: dict[str, Path], tmp_path: Path) -> None:
    from tests.support import videos

    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(240, 180, 6), 6)
    _, job_id, *_ = start(page, [photos["face"]], clip, output_video_resolution="160x120", output_video_fps="12.5")
    settings = page.store.get(job_id).payload["settings"]
    assert (settings["output_video_resolution"], settings["output_video_fps"]) == ("160x120", 12.5)
    _, again, *_ = start(page, [photos["face"]], clip, output_video_resolution="", output_video_fps="")
    blank = page.store.get(again).payload["settings"]
    assert (blank["output_video_resolution"], blank["output_video_fps"]) == (None, None)
    refused = start(page, [photos["face"]], clip, output_video_resolution="720p")[0]
    label = setting_rule("output_video_resolution") and "videos: the output's frame size"
    assert refused.startswith(f"⚠️ {label}") and "'720p' is not allowed here" in refused
    assert "output_video_resolution" not in refused  # the field by its label, not its option
    assert "is not a number" in start(page, [photos["face"]], clip, output_video_fps="fast")[0]


def test_preview_waits_for_quiet_and_the_last_change_wins() -> None:
    gate = PreviewGate(quiet_s=0.3)
    first, second = gate.ticket("page"), gate.ticket("page")
    began = time.monotonic()
    assert gate.quiet("page", first) is False and time.monotonic() - began < 0.2  # stale: at once
    assert gate.quiet("page", second) is True and time.monotonic() - began >= 0.3
    assert gate.quiet("other", gate.ticket("other")) is True  # sessions do not hold each other up
    # a change arriving while one waits makes the waiting one stale
    waiting = gate.ticket("page")
    outcome: list[bool] = []
    thread = threading.Thread(target=lambda: outcome.append(gate.quiet("page", waiting)))
    thread.start()
    gate.ticket("page")
    thread.join(timeout=30)
    assert outcome == [False]
    # Start wrote the message: a preview asked before leaves it, one asked after may clear it
    before = gate.ticket("page")
    gate.hold_message("page")
    assert not gate.may_clear_message("page", before)
    assert gate.may_clear_message("page", gate.ticket("page"))
    # by the browser's clock: a preview sent before Start but reaching the server after it leaves the message
    gate.hold_message("page", asked_at=2_000.0)
    late = gate.ticket("page")  # its ticket is newer than Start's, yet it was sent first
    assert not gate.may_clear_message("page", late, asked_at=1_999.0)
    assert gate.may_clear_message("page", late, asked_at=2_001.0)


def test_gated_preview_skips_stale_changes(page: UiServices, photos: dict[str, Path]) -> None:
    from facefusion_ui.ui import single_run

    asked = request(page, [photos["face"]], photos["grace"])
    gate = PreviewGate(quiet_s=0.05)
    message, pair = single_run.gated_preview(page, gate, "page", asked)
    assert message == "" and pair[0].shape == pair[1].shape
    slow = PreviewGate(quiet_s=60)  # held in its quiet wait until a newer change comes
    results: list[tuple[Any, Any]] = []
    thread = threading.Thread(target=lambda: results.append(single_run.gated_preview(page, slow, "page", asked)))
    thread.start()
    wait_until(lambda: slow.last("page") == 1, "the first change's ticket")
    slow.ticket("page")
    thread.join(timeout=60)
    assert len(results) == 1 and all(isinstance(part, type(gr.skip())) for part in results[0])


def test_a_download_under_way_shows_a_bar_then_only_its_line() -> None:
    running = DownloadStatus("gpen_bfr_256", "running", done=35, total=100, speed_bps=4e6, eta_s=16)
    assert progress_bar(running) == f"`▕{'█' * 7}{'░' * 13}▏` "
    assert page_line(running).endswith("gpen_bfr_256: 0.0 MB of 0.0 MB (35%), 4.0 MB/s, 16 s left")
    assert progress_bar(DownloadStatus("x", "running", done=5)) == ""  # size unknown: no bar
    assert page_line(DownloadStatus("x", "done")) == "x: downloaded and verified"


def test_an_offline_download_says_in_one_line_what_failed_why_and_what_to_do_now(offline: UiServices) -> None:
    offline.downloads.url_for["inswapper_128"] = "http://no-such-host.invalid/inswapper_128.onnx"
    offline.downloads.start("inswapper_128")
    offline.downloads.wait("inswapper_128", 120)
    line = settings.download_lines(offline)
    assert line.startswith("- inswapper_128 was not downloaded: cannot reach the server: no-such-host.invalid")
    assert "To do: connect to the internet, then press Download again" in line
    assert line.endswith("meanwhile mesh_warp needs no download") and "\n" not in line
    for wrong in ("https:/", "bytes are kept", ".part", "Settings tab", "press Start"):
        assert wrong not in line
    status = offline.downloads.progress()["inswapper_128"]
    kept = DownloadStatus("inswapper_128", "failed", error=DownloadError("x", why="slow", offline=True, kept=3_000_000))
    assert "(3.0 MB arrived and are kept: Download resumes)" in status_line(kept, ["mesh_warp"])
    assert status.error is not None and "bytes are kept" not in str(status.error)  # nothing arrived: no such file


def test_choosing_a_missing_model_gives_one_instruction_and_clears_the_preview(
    offline: UiServices, photos: dict[str, Path]
) -> None:
    line, button = single_models.model_chosen(offline, "inswapper_128")
    assert button.visible and line == "inswapper_128 is not downloaded (554 MB): press Download beside it"
    asked = request(offline, [photos["face"]], photos["grace"], face_swapper_model="inswapper_128")
    message, preview = single_run.run_preview(offline, asked)
    names = "inswapper_128, arcface_w600k_r50"
    assert message == f"⚠️ No preview until {names} are downloaded (the one shown was out of date)"
    assert preview is None  # the preview of the model chosen before is no longer shown


def test_an_ended_download_is_shown_for_a_while_then_to_no_later_page_load(offline: UiServices) -> None:
    offline.downloads.shown_s = 1.0
    offline.downloads.start("inswapper_128")
    wait_until(lambda: not offline.downloads.running(), "the download to fail")
    assert "inswapper_128 was not downloaded" in settings.download_lines(offline)  # to the page that asked
    wait_until(lambda: offline.downloads.progress() == {}, "the failure to expire")
    assert settings.download_lines(offline) == ""  # a later page load, in any browser, starts clean
    line, *_ = single_models.download_tick(offline, [])
    assert line == gr.skip()


def test_swapper_line_offline_says_the_embedded_swapper_needs_no_download(offline: UiServices) -> None:
    chosen = "mesh_warp"
    line, button, timer = single_models.swapper_hint(offline, chosen)  # asks the size; nothing said meanwhile
    assert line == "" or line.startswith("The embedded swapper")  # a closed port may answer at once
    wait_until(lambda: offline.downloads.size_answered(RECOMMENDED_SWAPPER), "the size look-up to fail")
    line, button, timer = single_models.swapper_hint(offline, chosen)
    assert (
        line
        == "The embedded swapper (mesh_warp) needs no download (no network now: models can be added later in Settings)"
    )
    assert button.visible is False and timer.active is False  # said once: nothing more is asked


def test_swapper_line_online_offers_the_best_likeness_then_says_it_is_ready(
    offline: UiServices, tmp_path: Path
) -> None:
    body = build_enhancer(tmp_path / "stand-in.onnx", 256).read_bytes()  # any ONNX file: the flow is the subject
    sidecar = {f"{RECOMMENDED_SWAPPER}.hash": format(zlib.crc32(body), "08x").encode()}
    offline.runtime.folder.mkdir(parents=True, exist_ok=True)
    build_arcface(offline.runtime.folder / "arcface_w600k_r50.onnx")  # what it requires, already here
    with serve(ServedFile(body, extra=sidecar)) as url:
        offline.downloads.url_for[RECOMMENDED_SWAPPER] = url
        line, button, timer = single_models.swapper_hint(offline, "mesh_warp")
        assert timer.active  # the size is asked: the line waits for the answer
        wait_until(lambda: offline.downloads.size_answered(RECOMMENDED_SWAPPER), "the size look-up")
        line, button, timer = single_models.swapper_hint(offline, "mesh_warp")
        assert line == f"Best likeness: **{RECOMMENDED_SWAPPER}** ({len(body) / 1e6:.0f} MB): press Download to get it"
        assert button.visible is True and timer.active is False
        assert single_models.swapper_hint(offline, RECOMMENDED_SWAPPER).line == ""  # its own Download is beside it
        progress, downloads_timer = single_models.download_recommended(offline)  # one click
        assert RECOMMENDED_SWAPPER in progress and downloads_timer.active
        wait_until(lambda: not offline.downloads.running(), "the download to end")
    assert offline.downloads.progress()[RECOMMENDED_SWAPPER].state == "done"
    line, button, timer = single_models.swapper_hint(offline, "mesh_warp")
    assert line == f"Best likeness: **{RECOMMENDED_SWAPPER}** is downloaded: choose it in the dropdown to use it"
    assert button.visible is False and timer.active is False
    assert single_models.swapper_hint(offline, RECOMMENDED_SWAPPER).line == ""  # chosen: nothing to say
    names = [(RECOMMENDED_SWAPPER, "mesh_warp")]
    _, dropdown, *_ = single_models.download_tick(offline, names, "mesh_warp")
    labels = dict((value, label) for label, value in dropdown["choices"])
    assert labels[RECOMMENDED_SWAPPER].startswith(f"{RECOMMENDED_SWAPPER} · installed")

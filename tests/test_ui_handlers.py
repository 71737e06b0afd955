"""The page's handlers called directly, without a browser: real photos and videos, the real job store in
the private data home, and (where a job must finish) the page's own worker thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import gradio as gr
import numpy as np
import pytest

from facefusion_ui.jobs.store import wait_for
from facefusion_ui.paths import home_dir
from facefusion_ui.ui import batch, settings, single
from facefusion_ui.ui.api import api_swap
from facefusion_ui.ui.services import UiServices
from tests.support import media, videos
from tests.support.plugins import install_plugin


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "media"
    folder.mkdir()
    paths = {
        "face": folder / "astronaut.png",
        "grace": folder / "grace.png",
        "group": folder / "group.jpg",
        "blank": folder / "blank.png",
        "broken": folder / "broken.mp4",
    }
    paths["broken"].write_bytes(b"not a video")
    cv2.imwrite(str(paths["face"]), media.astronaut())
    cv2.imwrite(str(paths["grace"]), media.grace_hopper())
    cv2.imwrite(str(paths["group"]), media.t1())
    cv2.imwrite(str(paths["blank"]), np.full((120, 160, 3), 90, np.uint8))
    return paths


@pytest.fixture
def services(private_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UiServices]:
    """The page's services on the private home, queue only (nothing runs the jobs). Gradio copies the
    files it is given into its cache: kept in the home as ``start_ui`` does."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(private_home / "ui-uploads"))
    created = UiServices.create(overrides={"output_video_preset": "ultrafast"}, start_worker=False)
    yield created
    created.stop()


@pytest.fixture
def working(services: UiServices) -> UiServices:
    """The same, with the page's worker thread running the queued jobs."""
    services.start_worker(services.settings())
    return services


def test_services_live_in_the_private_home(services: UiServices, private_home: Path) -> None:
    assert home_dir() == private_home
    assert services.store.path == private_home / "jobs.db"
    assert services.outputs_dir == private_home / "outputs"


def test_analyse_target_lists_the_faces_of_an_image(services: UiServices, files: dict[str, Path]) -> None:
    crops, slider, position = single.analyse_target(services, str(files["group"]), 0)
    assert len(crops) == 6
    assert [label for _, label in crops] == [f"face {n}" for n in range(6)]
    assert all(crop.ndim == 3 and crop.shape[2] == 3 for crop, _ in crops)
    assert (slider.maximum, slider.value, position) == (1, 0, 0)


def test_analyse_target_fits_the_frame_slider_to_a_video(services: UiServices, tmp_path: Path) -> None:
    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(240, 180, 12), 12)
    crops, slider, _ = single.analyse_target(services, str(clip), 40)
    assert len(crops) == 1
    assert (slider.maximum, slider.value) == (11, 11)


def test_analyse_target_without_a_target_resets(services: UiServices, files: dict[str, Path]) -> None:
    crops, slider, position = single.analyse_target(services, None, 3)
    assert (crops, slider.maximum, slider.value, position) == ([], 1, 0, 0)
    with pytest.warns(UserWarning, match="No face found in this frame"):
        crops, _, _ = single.analyse_target(services, str(files["blank"]), 0)
    assert crops == []


def test_pick_takes_the_clicked_face() -> None:
    assert single.pick(gr.SelectData(None, {"index": 4, "value": None})) == 4


def test_preview_runs_the_chosen_processors(services: UiServices, files: dict[str, Path]) -> None:
    picture = single.run_preview(
        services, [str(files["face"])], str(files["grace"]), 0, ["face_swapper"], "mesh_warp", "many", 0
    )
    grace = media.grace_hopper()
    assert picture.shape == grace.shape and picture.dtype == np.uint8
    assert not np.array_equal(picture, np.ascontiguousarray(grace[:, :, ::-1]))  # RGB and swapped


def test_start_says_what_is_missing(services: UiServices, files: dict[str, Path]) -> None:
    with pytest.raises(gr.Error, match="add a source photo and a target first"):
        single.run_start(services, [], str(files["grace"]), 0, ["face_swapper"], "mesh_warp", "many", 0)
    with pytest.raises(gr.Error, match="choose at least one processor"):
        single.run_start(services, [str(files["face"])], str(files["grace"]), 0, [], "mesh_warp", "many", 0)
    with pytest.raises(gr.Error, match="no face"):
        single.run_start(
            services, [str(files["blank"])], str(files["grace"]), 0, ["face_swapper"], "mesh_warp", "many", 0
        )
    assert services.store.jobs() == []


def test_start_queues_with_the_tab_choices_and_cancel_stops_it(services: UiServices, files: dict[str, Path]) -> None:
    job_id, line, timer = single.run_start(
        services, [str(files["face"])], str(files["group"]), 0, ["face_swapper"], "mesh_warp", "reference", 2
    )
    assert (line, timer.active) == (f"job {job_id} queued", True)
    stored = services.store.get(job_id).payload["settings"]
    assert (stored["face_selector_mode"], stored["reference_face_position"]) == ("reference", 2)
    assert stored["output_video_preset"] == "ultrafast"  # the page's own settings beneath the choices
    status, video, image, download, timer = single.poll(services, job_id)
    assert status == f"job {job_id}: queued" and timer.active
    assert not (video.visible or image.visible or download.visible)
    assert single.run_cancel(services, job_id) == f"job {job_id} cancelled"
    status, *_, timer = single.poll(services, job_id)
    assert status == f"job {job_id} cancelled" and timer.active is False
    assert single.run_cancel(services, None) == "nothing to cancel"
    assert single.poll(services, None)[0] == ""


def test_started_job_completes_and_poll_shows_the_result(working: UiServices, files: dict[str, Path]) -> None:
    job_id, _, _ = single.run_start(
        working, [str(files["face"])], str(files["grace"]), 0, ["face_swapper"], "mesh_warp", "many", 0
    )
    job = wait_for(working.store, job_id, timeout_s=300)
    assert job.status == "completed", job.last_error
    status, video, image, download, timer = single.poll(working, job_id)
    assert status == f"job {job_id} completed"
    assert (video.visible, image.visible, download.visible, timer.active) == (False, True, True, False)
    assert job.result is not None
    output = Path(job.result["output"])
    assert output.parent == working.outputs_dir and media.read(output).shape == media.grace_hopper().shape
    shown = Path(image.value["path"])
    assert shown.name == output.name and shown.read_bytes() == output.read_bytes()


def test_batch_add_queues_the_good_targets_and_lists_the_rejected(services: UiServices, files: dict[str, Path]) -> None:
    targets = [str(files["grace"]), str(files["broken"]), str(files["group"])]
    with pytest.warns(UserWarning, match="1 target"):
        message, rows = batch.run_add(services, [str(files["face"])], targets, "week 1", 3)
    assert message.startswith("queued 2 job(s)\n- rejected broken.mp4: ")
    assert [(row[1], row[2]) for row in rows] == [("grace.png", "queued"), ("group.jpg", "queued")]
    outputs = [Path(job.payload["output"]) for job in services.store.jobs()]
    assert {path.parent for path in outputs} == {services.outputs_dir / "week 1"}
    assert {job.priority for job in services.store.jobs()} == {3}


def test_adding_the_same_targets_twice_never_shares_an_output(services: UiServices, files: dict[str, Path]) -> None:
    targets = [str(files["grace"]), str(files["group"])]
    batch.run_add(services, [str(files["face"])], targets, "twice", 0)
    batch.run_add(services, [str(files["face"])], targets, "twice", 0)
    outputs = [Path(job.payload["output"]).name for job in services.store.jobs()]
    assert len(outputs) == 4 and len(set(outputs)) == 4, outputs
    assert {name for name in outputs if "-2" in name} == {"grace_swapped-2.png", "group_swapped-2.jpg"}


def test_batch_add_refuses_missing_files_and_escaping_folders(services: UiServices, files: dict[str, Path]) -> None:
    with pytest.raises(gr.Error, match="add at least one source photo and one target"):
        batch.run_add(services, [str(files["face"])], None, "batch", 0)
    for folder in ("../elsewhere", "/tmp/out"):
        with pytest.raises(gr.Error, match="a name inside the outputs folder"):
            batch.run_add(services, [str(files["face"])], [str(files["grace"])], folder, 0)
    assert services.store.jobs() == []


def test_batch_job_actions(services: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(services, [str(files["face"])], [str(files["grace"])], "", 0)
    (job,) = services.store.jobs()
    with pytest.raises(gr.Error, match="type the id of a job"):
        batch.act_on_job(services, "cancel", None)
    message, rows = batch.act_on_job(services, "cancel", job.id)
    assert message == f"job {job.id}: cancel done" and rows[0][2] == "cancelled"
    message, rows = batch.act_on_job(services, "retry", job.id)
    assert message == f"job {job.id}: retry done" and rows[0][2] == "queued"
    message, rows = batch.act_on_job(services, "remove", float(job.id))
    assert message == f"job {job.id}: remove done" and rows == []
    assert batch.refresh(services) == ([], None)


def test_batch_refresh_offers_finished_outputs(working: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(working, [str(files["face"])], [str(files["grace"])], "done", 0)
    (job,) = working.store.jobs()
    assert wait_for(working.store, job.id, timeout_s=300).status == "completed"
    rows, downloads = batch.refresh(working)
    assert rows[0][2:4] == ["completed", "100%"]
    assert downloads == [str(working.outputs_dir / "done" / "grace_swapped.png")]


def test_choose_preset_shows_and_fills_its_values() -> None:
    table, threads, limit, lifetime, chunk, saved = settings.choose_preset("strict")
    assert "Selected: **strict**" in table
    assert isinstance(threads.value, int) and isinstance(limit.value, int)
    assert lifetime.value is not None and chunk.value and saved == ""


def test_save_settings_stores_them_for_later_jobs(services: UiServices, private_home: Path) -> None:
    fields: list[Any] = ["strict", ["cpu"], 3, "mediapipe_blazeface", 4, "0.4", 50, 12.5, "auto", "libx264", 70]
    assert settings.run_save(services, *fields) == "Saved (preset strict): applies to jobs queued from now on."
    saved = services.settings()
    assert (saved.preset, saved.execution_threads, saved.face_recognition_score) == ("strict", 3, 0.4)
    assert (saved.video_chunk_size, saved.face_cache_scope) == ("auto", "chunk")
    stored = json.loads((private_home / "settings.json").read_text())
    assert stored["preset"] == "strict" and stored["face_detector_model"] == "mediapipe_blazeface"


def test_save_settings_says_what_is_wrong(services: UiServices) -> None:
    fields: list[Any] = ["balanced", ["cpu"], 2, "dlib_hog", 5, "", 100, 20.0, "60", "libx264", 80]
    with pytest.raises(gr.Error, match="choose at least one execution provider"):
        settings.run_save(services, fields[0], [], *fields[2:])
    with pytest.raises(gr.Error, match="identity match distance 'close' is not a number"):
        settings.run_save(services, *[*fields[:5], "close", *fields[6:]])
    with pytest.raises(gr.Error, match="video_chunk_size"):
        settings.run_save(services, *[*fields[:8], "soon", *fields[9:]])
    assert not (services.store.path.parent / "settings.json").exists()


def test_api_swap_waits_for_the_output(working: UiServices, files: dict[str, Path]) -> None:
    with pytest.raises(gr.Error, match="give source photo"):
        api_swap(working, None, str(files["grace"]))
    output = Path(api_swap(working, [str(files["face"])], str(files["grace"])))
    assert output.parent == working.outputs_dir
    assert media.read(output).shape == media.grace_hopper().shape


@pytest.fixture
def with_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test plugins installed (entry points found on sys.path) before the services are created."""
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path / "site")))


def test_processor_options_get_a_control_each(with_plugin: None, services: UiServices) -> None:
    assert [(name, option.name) for name, option in single.option_fields(services)] == [
        ("tint", "level"),
        ("tint", "channel"),
        ("tint", "enabled"),
        ("tint", "gain"),
    ]
    with gr.Blocks():
        tab = single.render_single_tab(services)
    level, channel, enabled, gain = tab.option_controls
    assert isinstance(level, gr.Slider) and (level.minimum, level.maximum, level.step, level.value) == (0, 255, 1, 200)
    assert isinstance(channel, gr.Dropdown) and channel.value == "red"
    assert [choice[0] for choice in channel.choices] == ["blue", "green", "red"]
    assert isinstance(enabled, gr.Checkbox) and enabled.value is True
    assert isinstance(gain, gr.Slider) and gain.maximum == 1.0
    assert level.label == "tint: value written into the channel"


def test_start_queues_the_option_controls_values(
    with_plugin: None, services: UiServices, files: dict[str, Path]
) -> None:
    paths = ([str(files["face"])], str(files["grace"]), 0)
    job_id, _, _ = single.run_start(services, *paths, ["tint"], "mesh_warp", "many", 0, 120.0, "blue", False, 0.25)
    stored = services.store.get(job_id).payload["settings"]
    assert stored["processor_options"] == {"tint": {"level": 120, "channel": "blue", "enabled": False, "gain": 0.25}}
    job_id, _, _ = single.run_start(
        services, *paths, ["face_swapper"], "mesh_warp", "many", 0, 120.0, "blue", False, 0.25
    )
    assert services.store.get(job_id).payload["settings"]["processor_options"] == {}
    with pytest.raises(gr.Error, match=r"invalid value 3\.0 for option 'tint\.gain': allowed a number from 0 to 1"):
        single.run_start(services, *paths, ["tint"], "mesh_warp", "many", 0, 120.0, "blue", True, 3.0)


def test_preview_applies_the_option_controls(with_plugin: None, services: UiServices, files: dict[str, Path]) -> None:
    picture = single.run_preview(
        services,
        [str(files["face"])],
        str(files["grace"]),
        0,
        ["tint"],
        "mesh_warp",
        "many",
        0,
        50.0,
        "green",
        True,
        1.0,
    )
    assert (picture[:, :, 1] == 50).all()  # RGB: green is the middle channel

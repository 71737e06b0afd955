"""The page's handlers called directly, without a browser: real photos and videos, the real job store in
the private data home, and (where a job must finish) the page's own worker thread. A handler's first
output is its tab's message area: mistakes are asserted there."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import gradio as gr
import numpy as np
import pytest

from facefusion_ui.jobs.store import wait_for
from facefusion_ui.paths import home_dir
from facefusion_ui.presets import PRESET_KEYS, load_presets
from facefusion_ui.ui import batch, settings, single, single_run
from facefusion_ui.ui.api import api_swap
from facefusion_ui.ui.common import progress_line
from facefusion_ui.ui.processor_options import option_fields
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import REQUEST_CONTROLS, Request, single_keys
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
def working(services: UiServices) -> UiServices:
    """The same, with the page's worker thread running the queued jobs."""
    services.start_worker(services.settings())
    return services


def request(
    services: UiServices,
    sources: Sequence[Path],
    target: Path | None,
    processors: Sequence[str] = ("face_swapper",),
    frame: int = 0,
    position: int = 0,
    trim: tuple[int | None, int | None] = (None, None),
    output: tuple[str, str] = ("", ""),
    options: Sequence[Any] = (),
    **chosen: Any,
) -> Request:
    """The Single tab's inputs as the page sends them, by name: its own controls, one per setting control
    (the saved value unless ``chosen``), then the processor options: ``options`` for the last ones (a
    test plugin's), the defaults before them (the built-ins')."""
    saved = services.settings()
    fields = option_fields(services)
    defaults = [option.default for _, option in fields[: len(fields) - len(options)]] if options else []
    controls = {
        "sources": [str(path) for path in sources],
        "target": None if target is None else str(target),
        "frame": frame,
        "trim_start": trim[0],
        "trim_end": trim[1],
        "processors": list(processors),
        "position": position,
        "folder": output[0],
        "name": output[1],
    }
    values = {key: chosen.get(key, getattr(saved, key)) for key in single_keys(services.registry)}
    return Request.named(controls, values, [*defaults, *options])


def start(services: UiServices, *args: Any, current: int | None = None, **kwargs: Any) -> tuple[Any, ...]:
    return single_run.run_start(services, current, request(services, *args, **kwargs))


def preview(services: UiServices, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return single_run.run_preview(services, request(services, *args, **kwargs))


def test_services_live_in_the_private_home(services: UiServices, private_home: Path) -> None:
    assert home_dir() == private_home
    assert services.store.path == private_home / "jobs.db"
    assert services.outputs_dir == private_home / "outputs"


def test_analyse_target_lists_the_faces_of_an_image(services: UiServices, files: dict[str, Path]) -> None:
    message, crops, frame, first, last, position, times, moment = single_run.analyse_target(
        services, str(files["group"]), 0
    )
    assert len(crops) == 6 and message == gr.skip()  # nothing to say: the message is the preview's to write
    assert [label for _, label in crops] == [f"face {n}" for n in range(6)]
    assert all(crop.shape == (160, 160, 3) for crop, _ in crops)  # square: the whole face, not its forehead
    assert (frame.visible, first.visible, last.visible, position, times, moment) == (False, False, False, 0, "", "")
    assert single_run.frame_line(str(files["group"]), 9) == ""  # no frame line left from a video before


def test_analyse_target_fits_the_frame_slider_and_trim_to_a_video(services: UiServices, tmp_path: Path) -> None:
    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(240, 180, 12), 12)
    _, crops, frame, first, last, _, times, moment = single_run.analyse_target(services, str(clip), 40)
    assert len(crops) == 1 and moment == "Frame 11 at 0:00.44"  # the time with the slider, in one update
    assert (frame.maximum, frame.value, frame.visible) == (11, 11, True)
    assert (first.value, last.value, last.maximum) == (0, 11, 11)
    assert times == "Trim: from 0:00.00 to 0:00.48 (12 frames)"
    assert single_run.trim_times(str(clip), 3, 8) == "Trim: from 0:00.12 to 0:00.36 (6 frames)"
    assert "before it starts" in single_run.trim_times(str(clip), 8, 3)
    message, faces, position, moment = single_run.change_frame(services, str(clip), 6)
    assert (message, len(faces), position, moment) == (gr.skip(), 1, 0, "Frame 6 at 0:00.24")
    assert single_run.frame_line(str(clip), 11) == "Frame 11 at 0:00.44"
    assert single_run.frame_line(None, 3) == ""


def test_analyse_target_without_a_target_resets(services: UiServices, files: dict[str, Path]) -> None:
    message, crops, frame, _, _, position, _, moment = single_run.analyse_target(services, None, 3)
    assert (message, crops, frame.visible, position, moment) == ("", [], False, 0, "")
    message, crops, *_ = single_run.analyse_target(services, str(files["blank"]), 0)
    assert crops == [] and "No face found in this frame" in message


def test_pick_takes_the_clicked_face() -> None:
    assert single_run.pick(gr.SelectData(None, {"index": 4, "value": None})) == 4


def test_sources_show_their_face_and_bad_ones_leave_the_list(services: UiServices, files: dict[str, Path]) -> None:
    message, kept, thumbnails = single_run.show_sources(services, [str(files["face"]), str(files["blank"])])
    assert kept == [str(files["face"])]  # the next upload replaces the bad photo instead of joining it
    assert "blank.png removed: no face found in blank.png" in message
    assert [(image.shape, name) for image, name in thumbnails] == [((160, 160, 3), "astronaut.png")]
    message, kept, thumbnails = single_run.show_sources(services, [str(files["face"])])
    assert (message, len(thumbnails)) == (gr.skip(), 1) and kept is not None  # nothing dropped: list untouched


def test_preview_shows_before_and_after(services: UiServices, files: dict[str, Path]) -> None:
    message, (before, after) = preview(services, [files["face"]], files["grace"])
    grace = np.ascontiguousarray(media.grace_hopper()[:, :, ::-1])
    assert message == "" and np.array_equal(before, grace)
    assert after.shape == grace.shape and after.dtype == np.uint8 and not np.array_equal(after, grace)
    waiting = preview(services, [], files["grace"])
    assert all(isinstance(part, type(gr.skip())) for part in waiting)  # no nagging before both files are there


def test_start_says_what_is_missing(services: UiServices, files: dict[str, Path]) -> None:
    assert "add a source photo and a target first" in start(services, [], files["grace"])[0]
    assert "choose at least one processor" in start(services, [files["face"]], files["grace"], [])[0]
    message, *rest = start(services, [files["blank"]], files["grace"])
    assert "no face found in blank.png" in message and str(files["blank"].parent) not in message
    assert all(isinstance(part, type(gr.skip())) for part in rest)  # the controls stay as they are
    assert services.store.jobs() == []


def test_start_queues_with_the_tab_choices_and_cancel_stops_it(services: UiServices, files: dict[str, Path]) -> None:
    message, job_id, button, timer, log = start(
        services, [files["face"]], files["group"], position=2, face_selector_mode="reference"
    )
    assert message.startswith(f"Job {job_id} queued: it writes group_swapped_")
    assert (button.interactive, timer.active, log) == (False, True, "")
    stored = services.store.get(job_id).payload
    assert (stored["settings"]["face_selector_mode"], stored["settings"]["reference_face_position"]) == (
        "reference",
        2,
    )
    assert stored["settings"]["output_video_preset"] == "ultrafast"  # the page's own settings beneath the choices
    assert stored["origin"] == "single"
    status, video, image, download, _, timer, button = single_run.poll(services, job_id)
    assert status == f"job {job_id}: queued" and timer.active and button.interactive is False
    assert all(isinstance(part, type(gr.skip())) for part in (video, image, download))  # an earlier result stays
    refused = start(services, [files["face"]], files["grace"], current=job_id)
    assert "is still running: wait for it or press Cancel" in refused[0] and len(services.store.jobs()) == 1
    assert single_run.run_cancel(services, job_id) == f"job {job_id} cancelled"
    status, *_, timer, button = single_run.poll(services, job_id)
    assert status == f"job {job_id} cancelled" and timer.active is False and button.interactive is True
    assert single_run.run_cancel(services, None) == "nothing to cancel"
    assert single_run.run_cancel(services, job_id) == f"job {job_id} is already cancelled: nothing to cancel"
    assert single_run.poll(services, None)[0] == ""


def test_a_cancelled_running_job_says_cancelling_until_it_stops(services: UiServices, files: dict[str, Path]) -> None:
    _, job_id, *_ = start(services, [files["face"]], files["grace"])
    claimed = services.store.claim("test-owner", 60)
    assert claimed is not None and claimed.id == job_id
    services.store.report(job_id, "test-owner", frames_done=3, frames_total=10, fps=2.0)
    assert single_run.run_cancel(services, job_id) == f"job {job_id} is stopping"
    status, *_, timer, button = single_run.poll(services, job_id)
    assert status == f"job {job_id}: cancelling (it stops at its next frames)"
    assert timer.active and button.interactive is False
    assert batch.table_rows(services)[0][3] == "cancelling"


def test_trim_and_output_settings_go_into_the_job(services: UiServices, files: dict[str, Path], tmp_path: Path) -> None:
    clip = videos.write_video(tmp_path / "clip.mp4", videos.moving_face(240, 180, 12), 12)
    message, job_id, *_ = start(
        services, [files["face"]], clip, trim=(2, 8), output=("mine", "holiday"), output_video_quality=55
    )
    payload = services.store.get(job_id).payload
    assert message == f"Job {job_id} queued: it writes mine/holiday.mp4"
    assert (payload["settings"]["trim_frame_start"], payload["settings"]["trim_frame_end"]) == (2, 9)
    assert payload["settings"]["output_video_quality"] == 55
    assert Path(payload["output"]) == services.outputs_dir / "mine" / "holiday.mp4"
    _, again, *_ = start(services, [files["face"]], clip, trim=(0, 11), output=("mine", "holiday.mp4"))
    stored = services.store.get(again).payload
    assert Path(stored["output"]).name == "holiday-2.mp4"  # never overwrites the first
    assert (stored["settings"]["trim_frame_start"], stored["settings"]["trim_frame_end"]) == (None, None)
    assert "before it starts" in start(services, [files["face"]], clip, trim=(8, 2))[0]
    assert "output name '../x'" in start(services, [files["face"]], clip, output=("", "../x"))[0]
    assert "inside the outputs folder" in start(services, [files["face"]], clip, output=("/tmp", ""))[0]


def test_started_job_completes_and_poll_shows_the_result_and_log(working: UiServices, files: dict[str, Path]) -> None:
    _, job_id, *_ = start(working, [files["face"]], files["grace"])
    job = wait_for(working.store, job_id, timeout_s=300)
    assert job.status == "completed", job.last_error
    status, video, image, download, log, timer, button = single_run.poll(working, job_id)
    assert status == f"job {job_id} completed"
    assert (video.visible, image.visible, download.visible, timer.active, button.interactive) == (
        False,
        True,
        True,
        False,
        True,
    )
    assert "completed" in log or "done" in log, log
    assert job.result is not None
    output = Path(job.result["output"])
    assert output.parent == working.outputs_dir and media.read(output).shape == media.grace_hopper().shape
    shown = Path(image.value["path"])
    assert shown.name == output.name and shown.read_bytes() == output.read_bytes()
    assert batch.finished_outputs(working) == []  # the Single tab's output is not the Batch tab's


def test_batch_add_queues_the_good_targets_and_lists_the_rejected(services: UiServices, files: dict[str, Path]) -> None:
    targets = [str(files["grace"]), str(files["broken"]), str(files["group"])]
    message, rows = batch.run_add(services, [str(files["face"])], targets, "week 1", 3)
    assert "queued 2 job(s)\n- rejected broken.mp4: " in message
    assert [(row[2], row[3]) for row in rows] == [("grace.png", "queued"), ("group.jpg", "queued")]
    outputs = [Path(job.payload["output"]) for job in services.store.jobs()]
    assert {path.parent for path in outputs} == {services.outputs_dir / "week 1"}
    assert {job.priority for job in services.store.jobs()} == {3}
    assert {job.payload["origin"] for job in services.store.jobs()} == {"batch"}


def test_adding_the_same_targets_twice_never_shares_an_output(services: UiServices, files: dict[str, Path]) -> None:
    targets = [str(files["grace"]), str(files["group"])]
    batch.run_add(services, [str(files["face"])], targets, "twice", 0)
    batch.run_add(services, [str(files["face"])], targets, "twice", 0)
    outputs = [Path(job.payload["output"]).name for job in services.store.jobs()]
    assert len(outputs) == 4 and len(set(outputs)) == 4, outputs
    assert {name for name in outputs if "-2" in name} == {"grace_swapped-2.png", "group_swapped-2.jpg"}


def test_batch_add_refuses_missing_files_and_escaping_folders(services: UiServices, files: dict[str, Path]) -> None:
    message, _ = batch.run_add(services, [str(files["face"])], None, "batch", 0)
    assert "add at least one source photo and one target" in message
    for folder in ("../elsewhere", "/tmp/out"):
        message, _ = batch.run_add(services, [str(files["face"])], [str(files["grace"])], folder, 0)
        assert "a name inside the outputs folder" in message
    assert services.store.jobs() == []


def select(services: UiServices, selected: list[int], row: int) -> list[int]:
    chosen, _, _ = batch.toggle_row(services, selected, gr.SelectData(None, {"index": [row, 2], "value": ""}))
    return chosen


def test_batch_rows_are_selected_by_clicking_and_acted_on(services: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(services, [str(files["face"])], [str(files["grace"]), str(files["group"])], "", 0)
    first, second = (job.id for job in services.store.jobs())
    assert "select jobs first" in batch.act_on_jobs(services, "cancel", [])[0]
    chosen = select(services, select(services, [], 0), 1)
    assert chosen == [first, second]
    assert batch.selection_line(chosen) == f"Selected: job {first}, job {second}"
    assert [row[0] for row in batch.table_rows(services, chosen)] == ["✓", "✓"]
    assert select(services, chosen, 0) == [second]  # a second click unselects
    message, kept, _, rows = batch.act_on_jobs(services, "cancel", chosen)
    assert message == f"cancelled: job {first}, job {second}" and kept == chosen
    assert [row[3] for row in rows] == ["cancelled", "cancelled"]
    message, kept, _, rows = batch.act_on_jobs(services, "retry", [first])
    assert message == f"queued again: job {first}" and rows[0][3] == "queued"
    message, kept, line, rows = batch.act_on_jobs(services, "remove", [first, second])
    assert message == f"removed: job {first}, job {second}" and kept == [] and rows == []
    assert line.startswith("Click rows")
    assert batch.refresh(services) == ([], None)


def test_batch_actions_say_per_job_what_could_not_be_done(services: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(services, [str(files["face"])], [str(files["grace"]), str(files["group"])], "", 0)
    first, second = (job.id for job in services.store.jobs())
    services.store.claim("test-owner", 60)  # the first one runs
    message, kept, _, _ = batch.act_on_jobs(services, "remove", [first, second])
    assert message.startswith(f"⚠️ removed: job {second}\n- job {first} is running: cancel it first")
    assert "run.py" not in message and kept == [first]


def test_batch_refresh_offers_its_finished_outputs_once(working: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(working, [str(files["face"])], [str(files["grace"])], "done", 0)
    (job,) = working.store.jobs()
    assert wait_for(working.store, job.id, timeout_s=300).status == "completed"
    rows, downloads = batch.refresh(working)
    assert rows[0][3:5] == ["completed", "100%"]
    assert downloads == [str(working.outputs_dir / "done" / "grace_swapped.png")]
    unchanged, _ = batch.refresh(working, [], rows)
    assert isinstance(unchanged, type(gr.skip()))  # nothing new: the table is not sent again


def test_old_jobs_without_an_origin_stay_readable(services: UiServices, files: dict[str, Path]) -> None:
    base = {"sources": [str(files["face"])], "target": str(files["grace"]), "settings": {}}
    old_single = services.store.add({**base, "output": str(services.outputs_dir / "grace_swapped_20240101-1.png")})
    old_batch = services.store.add({**base, "output": str(services.outputs_dir / "b" / "grace_swapped.png")})
    assert batch.job_origin(services.store.get(old_single)) == "single"
    assert batch.job_origin(services.store.get(old_batch)) == "batch"
    assert [row[1] for row in batch.table_rows(services)] == [old_single, old_batch]


def test_choose_preset_shows_and_fills_every_preset_value() -> None:
    table, *updates, saved = settings.choose_preset("strict")
    assert "Selected: **strict**" in table and saved == ""
    for preset in load_presets():  # who each is for and what it trades, from its own file
        assert f"- **{preset.name}**: {preset.description}. Trades {preset.trades}." in table and preset.trades
    assert "| frames buffered between stages |" in table  # the settings by their page labels
    values = dict(zip(PRESET_KEYS, (update["value"] for update in updates), strict=True))
    assert isinstance(values["execution_threads"], int) and isinstance(values["face_cache_limit"], int)
    assert values["face_cache_lifetime"] is not None and values["video_chunk_size"]
    assert values["face_cache_scope"] == "chunk"


def fields(services: UiServices, **changes: Any) -> list[Any]:
    """The Settings tab's field values as the page sends them: the saved ones unless changed."""
    saved = services.settings()
    return [changes.get(key, getattr(saved, key)) for key in settings.settings_keys()]


def test_save_settings_stores_them_for_later_jobs(services: UiServices, private_home: Path) -> None:
    chosen = {"execution_threads": 3.0, "face_detector_model": "mediapipe_blazeface", "face_recognition_score": "0.4"}
    values = fields(services, video_chunk_size="auto", face_cache_scope="chunk", **chosen)
    assert settings.unsaved_line(services, "strict", *values).startswith("● Unsaved changes: preset, video_chunk_size")
    message, unsaved = settings.run_save(services, "strict", *values)
    assert message == "Saved (preset strict): applies to jobs queued from now on." and unsaved == ""
    saved = services.settings()
    assert (saved.preset, saved.execution_threads, saved.face_recognition_score) == ("strict", 3, 0.4)
    assert (saved.video_chunk_size, saved.face_cache_scope) == ("auto", "chunk")
    stored = json.loads((private_home / "settings.json").read_text())
    assert stored["preset"] == "strict" and stored["face_detector_model"] == "mediapipe_blazeface"
    assert settings.unsaved_line(services, "strict", *fields(services)) == ""


def test_save_settings_says_what_is_wrong(services: UiServices) -> None:
    message, _ = settings.run_save(services, "balanced", *fields(services, execution_providers=[]))
    assert "choose at least one execution provider" in message
    message, _ = settings.run_save(services, "balanced", *fields(services, face_recognition_score="close"))
    assert "identity match distance 'close' is not a number" in message
    message, _ = settings.run_save(services, "balanced", *fields(services, video_chunk_size="soon"))
    assert "Chunk length (seconds or auto): 'soon' is not allowed here" in message
    assert "not valid" in settings.unsaved_line(services, "balanced", *fields(services, video_chunk_size="soon"))
    assert not (services.store.path.parent / "settings.json").exists()


def test_save_warns_about_what_cannot_work_here(
    services: UiServices, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.runtime, "folder", tmp_path / "no-models")  # nothing downloaded there
    values = fields(services, execution_providers=["directml", "cpu"], face_detector_model="det_10g")
    message, _ = settings.run_save(services, "balanced", *values)
    assert message.startswith("⚠️ Saved (preset balanced)")
    assert "- directml cannot run on this machine (this onnxruntime build has no DmlExecutionProvider)" in message
    assert "- det_10g (face_detector_model) is not downloaded" in message
    assert services.settings().face_detector_model == "det_10g"  # saved all the same, with the warning


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
    fields = [(name, option.name) for name, option in option_fields(services)]
    assert ("frame_enhancer", "model") in fields and ("lip_syncer", "model") in fields  # built-ins declare theirs
    assert [field for field in fields if field[0] == "tint"] == [
        ("tint", "level"),
        ("tint", "channel"),
        ("tint", "enabled"),
        ("tint", "gain"),
    ]
    with gr.Blocks():
        tab = single.render_single_tab(services)
    level, channel, enabled, gain = [
        control for field, control in zip(fields, tab.option_controls, strict=True) if field[0] == "tint"
    ]
    assert isinstance(level, gr.Slider) and (level.minimum, level.maximum, level.step, level.value) == (0, 255, 1, 200)
    assert isinstance(channel, gr.Dropdown) and channel.value == "red"
    assert [choice[0] for choice in channel.choices] == ["blue", "green", "red"]
    assert isinstance(enabled, gr.Checkbox) and enabled.value is True
    assert isinstance(gain, gr.Slider) and gain.maximum == 1.0
    assert level.label == "tint: value written into the channel"
    assert len(tab.setting_controls) == len(single_keys(services.registry))


def test_the_single_tab_names_its_handlers_inputs_and_outputs(services: UiServices) -> None:
    """Preview and Start read the tab's controls by name, and each handler's outputs are named after the
    tab's parts: a control added to the tab shifts nothing."""
    with gr.Blocks():
        tab = single.render_single_tab(services)
    own = len(REQUEST_CONTROLS)
    assert tab.request()[:own] == [getattr(tab, name) for name in REQUEST_CONTROLS]
    assert tab.request()[own:] == [*tab.setting_controls, *tab.option_controls]
    views = (
        single_run.SourcesShown,
        single_run.TargetShown,
        single_run.FrameShown,
        single_run.PreviewShown,
        single_run.Started,
        single_run.Polled,
    )
    for view in views:
        assert all(hasattr(tab, name) for name in view._fields), view.__name__
    keys = single_keys(services.registry)
    given = [["a.png"], "b.png", 3.0, 1, 5, ["face_swapper"], 2.0, "sub", "out", *range(len(keys)), "option"]
    asked = Request.parse(keys, given)
    assert (asked.sources, asked.target, asked.frame, asked.trim) == ([Path("a.png")], Path("b.png"), 3, (1, 5))
    assert (asked.processors, asked.position, asked.folder, asked.name) == (["face_swapper"], 2, "sub", "out")
    assert asked.settings == dict(zip(keys, range(len(keys)), strict=True)) and asked.options == ["option"]


def test_start_queues_the_option_controls_values(
    with_plugin: None, services: UiServices, files: dict[str, Path]
) -> None:
    paths = ([files["face"]], files["grace"])
    _, job_id, *_ = start(services, *paths, ["tint"], options=[120.0, "blue", False, 0.25])
    stored = services.store.get(job_id).payload["settings"]
    assert stored["processor_options"] == {"tint": {"level": 120, "channel": "blue", "enabled": False, "gain": 0.25}}
    _, job_id, *_ = start(services, *paths, ["face_swapper"], options=[120.0, "blue", False, 0.25])
    assert services.store.get(job_id).payload["settings"]["processor_options"] == {}
    message, *_ = start(services, *paths, ["tint"], options=[120.0, "blue", True, 3.0])
    assert "invalid value 3.0 for option 'tint.gain': allowed a number from 0 to 1" in message


def test_preview_applies_the_option_controls(with_plugin: None, services: UiServices, files: dict[str, Path]) -> None:
    _, (_, picture) = preview(services, [files["face"]], files["grace"], ["tint"], options=[50.0, "green", True, 1.0])
    assert (picture[:, :, 1] == 50).all()  # RGB: green is the middle channel


def test_controls_come_from_the_settings_rules() -> None:
    from facefusion_ui.ui.controls import control_value, setting_control

    made = {
        key: setting_control(key, value)
        for key, value in {
            "face_identity_cache": True,
            "face_selector_mode": "many",
            "face_detector_model": "dlib_hog",
            "execution_providers": ("cpu",),
            "execution_threads": 2,
            "face_cache_limit": 100,
            "face_mask_blur": 0.3,
            "video_chunk_size": 60,
            "video_temp_frame_format": None,
            "reference_face_distance": None,
        }.items()
    }
    kinds = {key: type(control).__name__ for key, control in made.items()}
    assert kinds == {
        "face_identity_cache": "Checkbox",
        "face_selector_mode": "Radio",
        "face_detector_model": "Dropdown",
        "execution_providers": "CheckboxGroup",
        "execution_threads": "Slider",
        "face_cache_limit": "Number",
        "face_mask_blur": "Slider",
        "video_chunk_size": "Textbox",
        "video_temp_frame_format": "Dropdown",
        "reference_face_distance": "Textbox",  # optional: blank is none (a number box would show 0)
    }
    assert setting_control("reference_face_distance", None, fallback=0.6).value == 0.6  # a slider from the default
    assert setting_control("face_recognition_score", None).value == ""
    labelled = setting_control("face_swapper_model", "mesh_warp", choice_labels={"inswapper_128": "inswapper (get it)"})
    assert ("inswapper (get it)", "inswapper_128") in labelled.choices
    assert control_value("execution_threads", 3.0) == 3 and control_value("video_chunk_size", "90") == 90
    assert (
        control_value("video_temp_frame_format", "none") is None and control_value("face_recognition_score", "") is None
    )
    assert control_value("execution_providers", ["cuda", "cpu"]) == ("cuda", "cpu")
    with pytest.raises(Exception, match="'execution_threads'"):
        control_value("execution_threads", 500.0)
    with pytest.raises(Exception, match="unknown setting 'no_such_setting'"):  # never dropped silently
        setting_control("no_such_setting", 1)


def test_messages_name_files_as_the_person_knows_them_and_offer_the_page_remedy() -> None:
    """An error's fields say it the page's way: its files by their names, the page's remedy; the command
    line prints it as before."""
    from facefusion_ui.errors import InputError, ModelError, Remedy
    from facefusion_ui.models import download_remedy
    from facefusion_ui.ui.common import job_text, reported

    upload = "/home/me/.facefusion_ui/ui-uploads/" + "ab" * 32 + "/my photo.png"
    face = InputError(f"no face found in {upload}: use another", paths=(upload,))
    assert face.for_page() == "no face found in my photo.png: use another"
    assert str(face) == f"no face found in {upload}: use another"
    missing = ModelError("model 'x_1' is not downloaded", remedy=download_remedy("x_1"))
    assert missing.for_page() == "model 'x_1' is not downloaded: download x_1 on the Settings tab (Models)"
    assert str(missing) == "model 'x_1' is not downloaded: run 'python run.py models download x_1'"
    assert InputError("stopped", remedy=Remedy("run 'run.py batch list'", "")).for_page() == "stopped"
    payload = {"sources": [upload], "target": "/tmp/t/clip.mp4", "output": "/o/out.mp4"}
    recorded = f"cannot read /tmp/t/clip.mp4 (from {upload})"
    assert job_text(payload, recorded) == "cannot read clip.mp4 (from my photo.png)"  # a job's own files

    @reported(single_run.FrameShown)
    def failing() -> single_run.FrameShown:
        raise ValueError("boom")

    message, *rest = failing()
    assert message.startswith("⚠️ internal error (ValueError: boom)")
    assert len(rest) == 3 and all(isinstance(part, type(gr.skip())) for part in rest)


def test_models_download_with_progress_and_delete(services: UiServices, tmp_path: Path) -> None:
    import hashlib

    from facefusion_ui.models import ModelSpec
    from tests.support.http_server import ServedFile, serve

    body = bytes(range(256)) * 4096
    services.runtime.folder = tmp_path / "models"
    with serve(ServedFile(body)) as url:
        spec = ModelSpec("tiny_detector", "detector", "onnx", file="tiny.onnx", url=url, size=len(body))
        services.runtime.manifest["tiny_detector"] = ModelSpec(
            **{**spec.__dict__, "sha256": hashlib.sha256(body).hexdigest()}
        )
        started, seen = settings.start_download(services, "tiny_detector")
        assert "already" not in started and seen == ""  # the page's shown ended downloads, forgotten
        deadline = time.monotonic() + 120
        while services.downloads.running() and time.monotonic() < deadline:  # wait for the download to end
            time.sleep(0.1)
    detectors = ["dlib_hog", "tiny_detector"]
    lines, rows, finished, dropdown = settings.download_progress(services, [detectors], "")
    assert "tiny_detector: downloaded and verified" in lines
    assert rows[-1][:4] == ["tiny_detector", "detector", "yes", "yes"]
    labels = dict((name, label) for label, name in dropdown["choices"])
    assert finished.startswith("tiny_detector@")  # the ended downloads the page has shown
    assert labels["tiny_detector"].startswith("tiny_detector · installed")  # relabelled once it ended, no reload
    assert settings.download_progress(services, [detectors], finished)[3] == gr.skip()  # then left alone
    assert settings.start_download(services, "tiny_detector")[0] == "tiny_detector is already downloaded"
    message, rows = settings.delete_model(services, "tiny_detector")
    assert message == "tiny_detector deleted" and rows[-1][2] == "no"
    assert not (tmp_path / "models" / "tiny.onnx").exists()
    assert "is not downloaded" in settings.delete_model(services, "tiny_detector")[0]
    assert "comes with the program" in settings.delete_model(services, "dlib_hog")[0]
    # Delete's message stays: the timer writes the downloads' lines only when there is news
    assert settings.download_progress(services, [detectors], finished)[:2] == (gr.skip(), gr.skip())


def test_a_download_that_fails_at_once_is_shown_failed_whatever_order_the_page_gets_answers_in(
    services: UiServices, tmp_path: Path
) -> None:
    """A timer tick may answer before Download's click does: the click's older line must not stay."""
    from tests.support.http_server import ServedFile, serve

    services.runtime.folder = tmp_path / "models"
    with serve(ServedFile(b"not a model" * 100)) as url:
        services.downloads.url_for["det_10g"] = url
        started, seen = settings.start_download(services, "det_10g")
        services.downloads.wait("det_10g", 120)
    tick_lines, _, tick_seen, _ = settings.download_progress(services, [["det_10g"]], "")
    assert "det_10g was not downloaded: " in tick_lines  # the tick that saw the end wrote it ...
    assert "was not downloaded" not in started  # ... then the click's answer, written at start, landed over it
    assert settings.download_progress(services, [["det_10g"]], tick_seen)[0] == gr.skip()  # the tick's record alone
    page_seen = seen  # would leave the click's stale line; the click's answer also forgot what the page had shown
    lines = settings.download_progress(services, [["det_10g"]], page_seen)[0]
    assert "det_10g was not downloaded: " in lines  # so the next tick writes the failure again


def test_a_face_selector_filter_brings_the_classifier_into_the_download_flow(
    services: UiServices, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from facefusion_ui.ui.single_request import job_models, request_settings

    monkeypatch.setattr(services.runtime, "folder", tmp_path / "no-models")  # nothing downloaded there
    plain = request(services, [files["face"]], files["grace"])
    assert "fairface" not in job_models(services, request_settings(services, plain))
    female = request(services, [files["face"]], files["grace"], face_selector_gender="female")
    assert "fairface" in job_models(services, request_settings(services, female))  # Start downloads it first
    message, _ = single_run.run_preview(services, female)
    assert "No preview until fairface is downloaded" in message  # the download flow's one instruction


def test_the_gallery_shows_the_faces_the_filters_keep(
    services: UiServices, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.onnx_models import build_fairface

    folder = tmp_path / "classifier"
    folder.mkdir()
    build_fairface(folder / "fairface.onnx")
    monkeypatch.setattr(services.runtime, "folder", folder)
    group = str(files["group"])
    no_filter = ("none", "none", "", "")
    assert len(single_run.analyse_target(services, group, 0, *no_filter).faces) == 6
    female, male = (single_run.change_frame(services, group, 0, kept, "none", "", "") for kept in ("female", "male"))
    assert len(female.faces) + len(male.faces) == 6 and female.faces and male.faces  # the stand-in splits them
    assert female.position == 0
    nobody = single_run.change_frame(services, group, 0, "none", "none", "9", "10")  # no FairFace bracket holds 9
    assert nobody.faces == [] and "filters keep" in nobody.message


def test_each_page_load_shows_the_settings_saved_since_the_page_was_built(services: UiServices) -> None:
    built = services.settings()
    assert all(value == gr.skip() for value in settings.page_values(services, built)[2:-2])
    chosen = {"preset": "lightweight", "execution_providers": ("cuda", "cpu"), "output_video_quality": 70}
    services.save_settings(chosen)
    preset, table, *controls, rows, unsaved = settings.page_values(services, built)
    assert unsaved == ""
    assert preset == "lightweight" and "Selected: **lightweight**" in table and rows
    shown = dict(zip(settings.settings_keys(), controls, strict=True))
    assert shown["output_video_quality"]["value"] == 70
    assert shown["execution_providers"]["value"] == ["cuda", "cpu"]
    single_values = single.page_values(services, built)
    keys = single_keys(services.registry)
    by_key = dict(zip(keys, single_values[1 : 1 + len(keys)], strict=True))
    assert by_key["output_video_quality"]["value"] == 70
    assert by_key["face_selector_mode"] == gr.skip()  # unchanged: left as the page shows it


def test_a_cancel_after_the_last_frames_says_it_came_too_late(services: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(services, [str(files["face"])], [str(files["grace"])], "", 0)
    (job,) = services.store.jobs()
    assert services.store.claim("test-owner", 60) is not None
    message, *_ = batch.act_on_jobs(services, "cancel", [job.id])
    assert message == f"stopping at their next frames: job {job.id}"
    assert services.store.complete(job.id, "test-owner", {"output": job.payload["output"], "kind": "image"})
    done = services.store.get(job.id)
    assert (done.status, done.cancel_requested) == ("completed", False)  # never completed with a cancel pending
    assert batch.table_rows(services)[0][3] == "completed (the cancel came too late)"
    assert "the cancel came too late" in progress_line(services.store.get(job.id))
    message, *_ = batch.act_on_jobs(services, "cancel", [job.id])
    assert f"job {job.id} is already completed: nothing to cancel" in message
    assert not services.store.get(job.id).cancel_requested


def test_retried_jobs_sharing_an_output_name_never_fail_for_it(services: UiServices, files: dict[str, Path]) -> None:
    batch.run_add(services, [str(files["face"])], [str(files["grace"])], "", 0)
    batch.run_add(services, [str(files["face"])], [str(files["grace"])], "", 0)
    first, second = (job.id for job in services.store.jobs())
    batch.act_on_jobs(services, "cancel", [first, second])
    for job_id in (first, second):  # both given one name (as the queue did before names were claimed)
        services.store.set_status_line(job_id, "cancelled")
    shared = services.store.get(first).payload["output"]
    with services.store._write() as connection:
        connection.execute("UPDATE jobs SET payload = json_set(payload, '$.output', ?)", (shared,))
    message, *_ = batch.act_on_jobs(services, "retry", [first, second])
    assert message == f"queued again: job {first}, job {second}"
    outputs = [services.store.get(job_id).payload["output"] for job_id in (first, second)]
    assert outputs[0] == shared and outputs[1] != shared and outputs[1].endswith("-2.png")
    # a run still writing the output (a name the user chose): the job waits for it, at no attempt's cost
    claimed = services.store.claim("test-owner", 60)
    assert claimed is not None
    services.store.wait_for_output(claimed.id, "test-owner", "another run is writing it", 0.0)
    waiting = services.store.get(claimed.id)
    assert (waiting.status, waiting.attempts) == ("queued", 0) and "waiting" in (waiting.status_line or "")


def test_the_page_says_mistakes_in_its_own_words_not_the_command_lines(tmp_path: Path) -> None:
    from facefusion_ui.errors import FacefusionError
    from facefusion_ui.output_lock import OutputLock
    from facefusion_ui.state_manager import setting_label, validate_item

    with pytest.raises(FacefusionError) as refused:
        validate_item("output_video_resolution", "abc")
    assert "output_video_resolution" in str(refused.value)  # the command line names its option
    page = refused.value.for_page()
    assert page.startswith(setting_label("output_video_resolution")) and "output_video_resolution" not in page
    output = tmp_path / "out.mp4"
    with OutputLock(output), pytest.raises(FacefusionError) as busy:
        OutputLock(output).acquire()
    assert str(busy.value).endswith("choose another -o")
    assert busy.value.for_page().endswith("is writing out.mp4: wait for it or give another name")
    assert "GOP" not in setting_label("video_copy_unchanged")


def test_a_broken_or_audio_only_target_is_one_line_in_the_message_area(
    services: UiServices, files: dict[str, Path], tmp_path: Path
) -> None:
    tone = tmp_path / "tone.m4a"
    tone.write_bytes(b"\x00" * 64)  # the picker lets audio through: the server says what it is
    for target in (files["broken"], tone):
        message, *_ = single_run.analyse_target(services, str(target), 0)
        assert message.startswith("⚠️ ") and "\n" not in message and target.name in message
        assert str(target.parent) not in message  # no server path
        assert single_run.frame_line(str(target), 3) == ""  # no error pop-up after it
        assert single_run.trim_times(str(target), 0, 3) == ""


def test_the_processors_run_order_is_said() -> None:
    assert single_run.run_order(["face_swapper", "face_enhancer"]) == "Runs: 1. face_swapper → 2. face_enhancer"
    assert single_run.run_order([]) == ""


def test_a_running_image_job_says_so_and_counts_each_face_once(services: UiServices, files: dict[str, Path]) -> None:
    from facefusion_ui.core import process
    from facefusion_ui.job import RunContext, SwapJob

    batch.run_add(services, [str(files["face"])], [str(files["group"])], "", 0)
    claimed = services.store.claim("test-owner", 60)
    assert claimed is not None
    assert progress_line(services.store.get(claimed.id)) == f"job {claimed.id}: working on the image"
    assert batch.table_rows(services)[0][4:6] == ["", ""]  # no "0/0 frames", no "0.0 fps"
    settings_used = services.settings().with_items(face_selector_mode="reference")
    job = SwapJob(settings_used, (files["face"],), files["group"], files["group"].with_name("out.jpg"))
    stats = process(job, RunContext(runtime=services.runtime)).stats
    assert stats["faces_detected"] == 6  # six people, counted once (the reference frame is the same frame)


def test_the_api_queues_with_settings_and_follows_the_job(services: UiServices, files: dict[str, Path]) -> None:
    from facefusion_ui.ui.api import api_cancel, api_job, api_submit

    job_id = api_submit(services, [str(files["face"])], str(files["grace"]), '{"face_selector_mode": "one"}', 2)
    stored = services.store.get(job_id)
    assert stored.payload["settings"]["face_selector_mode"] == "one" and stored.priority == 2
    assert stored.payload["origin"] == "api"
    view = api_job(services, job_id)
    assert (view["status"], view["progress"], view["output"]) == ("queued", f"job {job_id}: queued", None)
    assert api_cancel(services, job_id) == f"job {job_id} cancelled"
    for wrong, said in (("{", "settings: not JSON"), ('{"fp16": "never"}', "invalid value 'never' for setting 'fp16'")):
        with pytest.raises(gr.Error, match=said):
            api_submit(services, [str(files["face"])], str(files["grace"]), wrong, 0)


def test_a_chain_that_puts_no_face_in_previews_and_starts_without_a_source(
    services: UiServices, files: dict[str, Path]
) -> None:
    asked = request(services, [], files["group"], processors=("face_debugger",))
    message, (before, after) = single_run.run_preview(services, asked)
    assert message == "" and not np.array_equal(before, after)  # the boxes drawn, no source photo given
    started = single_run.run_start(services, None, asked)
    assert isinstance(started.job_id, int), started.message
    assert services.job(started.job_id).payload["sources"] == []

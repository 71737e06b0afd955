"""Settings: validation of every kind of value, the frozen snapshot and its JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from facefusion_ui.errors import SettingsError
from facefusion_ui.state_manager import Settings, StateManager, setting_keys, validate_item
from tests.conftest import RunCli


def test_defaults_are_valid_and_frozen() -> None:
    settings = Settings()
    assert settings.preset == "balanced"
    assert settings.face_swapper_model == "mesh_warp"
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.fp16 = "off"  # type: ignore[misc]


def test_snapshot_round_trips_exactly_through_json() -> None:
    state = StateManager()
    state.update(
        {
            "processors": ["face_swapper", "face_enhancer"],
            "execution_providers": ("cuda", "cpu"),
            "video_chunk_size": "auto",
            "reference_face_distance": 0.45,
            "trim_frame_start": 10,
            "trim_frame_end": 250,
            "video_temp_frame_format": "png",
            "keep_temp": True,
            "face_cache_lifetime": 7.5,
        }
    )
    snapshot = state.snapshot()
    text = snapshot.to_json()
    restored = Settings.from_json(text)
    assert restored == snapshot
    assert restored.to_json() == text
    assert restored.processors == ("face_swapper", "face_enhancer")
    assert json.loads(text)["execution_providers"] == ["cuda", "cpu"]


def test_snapshot_is_not_changed_by_later_edits() -> None:
    state = StateManager()
    before = state.snapshot()
    state.set_item("face_cache_limit", 5)
    assert before.face_cache_limit == 100
    assert state.snapshot().face_cache_limit == 5


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("fp16", "maybe", "on, off, auto"),
        ("face_selector_mode", "all", "many, one, reference"),
        ("face_detector_score", 1.5, "a number from 0 to 1"),
        ("face_cache_limit", 0, "a whole number from 1 to 100000"),
        ("face_cache_limit", 2.5, "a whole number"),
        ("keep_temp", "yes", "true or false"),
        ("video_chunk_size", 0, "'auto' or a whole number of seconds"),
        ("execution_providers", ["gpu"], "cuda, tensorrt"),
        ("execution_providers", [], "one or more distinct names"),
        ("processors", ["Face Swapper"], "lowercase names"),
    ],
)
def test_set_item_rejects_bad_values_naming_key_and_allowed(key: str, value: object, allowed: str) -> None:
    state = StateManager()
    with pytest.raises(SettingsError) as caught:
        state.set_item(key, value)
    message = str(caught.value)
    assert f"'{key}'" in message
    assert allowed in message
    assert state.snapshot() == Settings()


def test_unknown_key_is_named() -> None:
    with pytest.raises(SettingsError, match="unknown setting 'face_cach_limit'"):
        StateManager().set_item("face_cach_limit", 3)
    with pytest.raises(SettingsError, match="unknown setting 'bogus'"):
        Settings.from_dict({"bogus": 1})


def test_update_is_all_or_nothing() -> None:
    state = StateManager()
    with pytest.raises(SettingsError):
        state.update({"face_cache_limit": 7, "fp16": "never"})
    assert state.get_item("face_cache_limit") == 100


def test_trim_range_must_be_ordered() -> None:
    with pytest.raises(SettingsError, match="trim_frame_end"):
        Settings(trim_frame_start=50, trim_frame_end=20)


def test_clear_restores_defaults_and_normalises() -> None:
    state = StateManager()
    state.set_item("video_chunk_size", "45")
    assert state.get_item("video_chunk_size") == 45
    state.clear()
    assert state.snapshot() == Settings()
    assert validate_item("execution_providers", ["cpu"]) == ("cpu",)


def test_every_setting_has_help_and_survives_round_trip() -> None:
    settings = Settings()
    for key in setting_keys():
        assert Settings.from_dict({key: settings.to_dict()[key]}) == settings


def test_processor_options_round_trip_and_merge_option_by_option() -> None:
    state = StateManager()
    state.update({"processor_options": {"my_filter": {"strength": 0.5, "mode": "soft"}}})
    state.update({"processor_options": {"my_filter": {"strength": 0.7}, "other": {"on": True}}})
    snapshot = state.snapshot()
    assert snapshot.processor_options == {"my_filter": {"strength": 0.7, "mode": "soft"}, "other": {"on": True}}
    restored = Settings.from_json(snapshot.to_json())
    assert restored == snapshot and restored.to_json() == snapshot.to_json()
    snapshot.to_dict()["processor_options"]["my_filter"]["strength"] = 0.1  # a copy: the snapshot is unchanged
    assert snapshot.processor_options["my_filter"]["strength"] == 0.7
    assert Settings().processor_options == {}


@pytest.mark.parametrize(
    "value",
    [
        ["my_filter"],
        {"My Filter": {"strength": 1}},
        {"my_filter": 3},
        {"my_filter": {"strength": [1, 2]}},
        {"my_filter": {"strength": None}},
    ],
)
def test_processor_options_must_be_names_and_plain_values(value: object) -> None:
    with pytest.raises(SettingsError, match=r"invalid value .* for setting 'processor_options'"):
        Settings.from_dict({"processor_options": value})
    with pytest.raises(SettingsError, match="processor_options"):
        StateManager().update({"processor_options": value})


@pytest.mark.parametrize(
    ("options", "allowed"),
    [
        (["--face-detector-model", "det_10g", "--face-detector-size", "336"], "a multiple of 32 from 128 to 2048"),
        (["--face-detector-model", "yoloface_8n", "--face-detector-size", "320"], "640 only"),
    ],
)
def test_a_detector_size_the_network_cannot_take_is_one_line_before_anything_loads(
    cli_here: RunCli, tmp_path: Path, options: list[str], allowed: str
) -> None:
    """Checked with the settings: before the missing files are noticed and any model is looked for."""
    command = ["process", "-s", str(tmp_path / "none.jpg"), "-t", str(tmp_path / "none.png"), "-o", "out.png"]
    completed = cli_here([*command, *options], env={"FACEFUSION_UI_MODELS": str(tmp_path / "models")})
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "face_detector_size" in completed.stderr
    assert allowed in completed.stderr
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())

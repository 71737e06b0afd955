"""Presets: each file maps to its values, a broken file gives a clear error, suggestion by memory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from facefusion_ui.errors import PresetError
from facefusion_ui.presets import PRESET_KEYS, apply_preset, load_preset, load_presets, presets_dir, suggest_preset
from facefusion_ui.state_manager import StateManager

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

EXPECTED = {
    "lightweight": {
        "fp16": "on",
        "video_chunk_size": 30,
        "face_cache_limit": 32,
        "face_cache_lifetime": 10.0,
        "frame_queue_size": 8,
        "execution_threads": 1,
        "max_concurrent_jobs": 1,
        "release_models": "after_job",
    },
    "balanced": {
        "fp16": "auto",
        "video_chunk_size": 60,
        "face_cache_limit": 100,
        "face_cache_lifetime": 20.0,
        "frame_queue_size": 32,
        "execution_threads": 2,
        "max_concurrent_jobs": 2,
        "release_models": "never",
    },
    "strict": {
        "fp16": "on",
        "video_chunk_size": "auto",
        "face_cache_limit": 16,
        "face_cache_lifetime": 5.0,
        "frame_queue_size": 4,
        "execution_threads": 1,
        "max_concurrent_jobs": 1,
        "release_models": "after_chunk",
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_matches_design_table_and_its_file(name: str) -> None:
    preset = load_preset(name)
    for key, value in EXPECTED[name].items():
        assert preset.values[key] == value, key
    data = tomllib.loads((presets_dir() / f"{name}.toml").read_text())
    assert {key: data[key] for key in PRESET_KEYS} == preset.values


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_apply_preset_sets_every_value(name: str) -> None:
    state = StateManager()
    apply_preset(state, name)
    snapshot = state.snapshot()
    assert snapshot.preset == name
    for key, value in load_preset(name).values.items():
        assert getattr(snapshot, key) == value


def test_memory_threshold_grows_with_strictness() -> None:
    values = {p.name: p.values["memory_threshold_mb"] for p in load_presets()}
    assert values["lightweight"] < values["balanced"] < values["strict"]


def write_broken(tmp_path: Path, body: str) -> Path:
    original = (presets_dir() / "balanced.toml").read_text()
    (tmp_path / "balanced.toml").write_text(original + body)
    return tmp_path


def test_unknown_key_names_file_and_key(tmp_path: Path) -> None:
    folder = write_broken(tmp_path, "face_cach_limit = 3\n")
    with pytest.raises(PresetError) as caught:
        load_preset("balanced", folder)
    assert str(folder / "balanced.toml") in str(caught.value)
    assert "unknown key 'face_cach_limit'" in str(caught.value)


def test_bad_value_names_file_key_and_allowed(tmp_path: Path) -> None:
    text = (
        (presets_dir() / "balanced.toml")
        .read_text()
        .replace('release_models = "never"', 'release_models = "sometimes"')
    )
    (tmp_path / "balanced.toml").write_text(text)
    with pytest.raises(PresetError) as caught:
        load_preset("balanced", tmp_path)
    message = str(caught.value)
    assert "balanced.toml" in message and "'release_models'" in message and "after_chunk" in message


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "strict.toml").write_text("fp16 = [\n")
    with pytest.raises(PresetError, match="not valid TOML"):
        load_preset("strict", tmp_path)
    with pytest.raises(PresetError, match="cannot be read"):
        load_preset("lightweight", tmp_path)
    with pytest.raises(PresetError, match="unknown preset 'turbo'"):
        load_preset("turbo")


@pytest.mark.parametrize(
    ("gpu_mb", "ram_mb", "expected"),
    [
        (4096, 16384, "lightweight"),
        (2048, 32768, "lightweight"),
        (8192, 32768, "balanced"),
        (None, 32768, "balanced"),
        (None, 8192, "lightweight"),
        (24576, 3072, "strict"),
    ],
)
def test_suggest_preset(gpu_mb: int | None, ram_mb: int, expected: str) -> None:
    assert suggest_preset(gpu_mb, ram_mb) == expected

"""Memory presets: read and validate the shipped ``*.toml`` files, and suggest one from this machine's memory.

The files live in the checkout's ``presets/`` folder and a wheel ships them as package data
(``facefusion_ui/data/presets``, read through ``importlib.resources``); ``FACEFUSION_UI_PRESETS`` names a
folder that replaces them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from facefusion_ui.errors import PresetError, SettingsError
from facefusion_ui.paths import checkout_root
from facefusion_ui.state_manager import StateManager, preset_setting_keys, validate_item
from facefusion_ui.types import PresetName, choices

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable

    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    from importlib.abc import Traversable

    import tomli as tomllib

PRESET_KEYS = preset_setting_keys()
"""The settings a preset may set (their ``preset`` facet); every preset file sets all of them."""

LIGHTWEIGHT_GPU_MB = 4096
LIGHTWEIGHT_RAM_MB = 8192
STRICT_RAM_MB = 4096


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    """Who it is for (the file's ``description``)."""
    values: dict[str, Any]
    path: Traversable
    trades: str = ""
    """What it gives up for what (the file's ``trades``)."""


def presets_dir() -> Traversable:
    """``FACEFUSION_UI_PRESETS``; else, run from a checkout, its ``presets/`` folder (where a user finds and
    edits them); else the copy a wheel ships inside the package (``pyproject.toml`` maps that folder to
    the package data ``facefusion_ui/data/presets``)."""
    override = os.environ.get("FACEFUSION_UI_PRESETS")
    if override:
        return Path(override)
    root = checkout_root()
    if root is not None and (root / "presets").is_dir():
        return root / "presets"
    return files("facefusion_ui") / "data" / "presets"


def preset_names() -> tuple[str, ...]:
    return choices(PresetName)


def parse_preset(name: str, text: str, path: Traversable) -> Preset:
    """Validate the TOML ``text`` of a preset; errors name the file and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"preset file {path} is not valid TOML ({error}): fix or restore it") from error
    description, trades = data.pop("description", ""), data.pop("trades", "")
    for key, text in (("description", description), ("trades", trades)):
        if not isinstance(text, str):
            raise PresetError(f"preset file {path}: '{key}' must be a string")
    unknown = sorted(set(data) - set(PRESET_KEYS))
    if unknown:
        raise PresetError(f"preset file {path}: unknown key '{unknown[0]}' (allowed: {', '.join(PRESET_KEYS)})")
    missing = [key for key in PRESET_KEYS if key not in data]
    if missing:
        raise PresetError(f"preset file {path}: missing key '{missing[0]}'")
    values: dict[str, Any] = {}
    for key in PRESET_KEYS:
        try:
            values[key] = validate_item(key, data[key])
        except SettingsError as error:
            raise PresetError(f"preset file {path}: {error}") from error
    return Preset(name=name, description=description, values=values, path=path, trades=trades)


def load_preset(name: str, folder: Traversable | None = None) -> Preset:
    if name not in preset_names():
        raise PresetError(f"unknown preset '{name}': choose one of {', '.join(preset_names())}")
    path = (folder or presets_dir()) / f"{name}.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PresetError(f"preset file {path} cannot be read ({error.strerror}): restore it") from error
    return parse_preset(name, text, path)


def apply_preset(state: StateManager, name: str, folder: Traversable | None = None) -> None:
    """Apply the values of the preset ``name`` to ``state`` and record the preset's name."""
    preset = load_preset(name, folder)
    state.update({**preset.values, "preset": preset.name})


def load_presets(folder: Traversable | None = None) -> list[Preset]:
    return [load_preset(name, folder) for name in preset_names()]


def suggest_preset(gpu_total_mb: int | None, ram_total_mb: int) -> PresetName:
    """Pick a preset from detected memory: a 4 GB GPU (or a small machine) gets lightweight.

    ``gpu_total_mb`` is None when no GPU was found; then system memory decides alone.
    """
    if ram_total_mb < STRICT_RAM_MB:
        return "strict"
    if gpu_total_mb is not None and gpu_total_mb <= LIGHTWEIGHT_GPU_MB:
        return "lightweight"
    if ram_total_mb <= LIGHTWEIGHT_RAM_MB:
        return "lightweight"
    return "balanced"

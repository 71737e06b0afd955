"""Saved settings: what the Settings tab stores in ``FACEFUSION_UI_HOME/settings.json``.

Settings are built as defaults <- preset <- this file <- command-line options or UI edits. Only values
that differ from the preset are stored, so changing the preset later still changes what it governs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from facefusion_ui.errors import SettingsError
from facefusion_ui.paths import home_dir
from facefusion_ui.presets import apply_preset, load_preset
from facefusion_ui.state_manager import Settings, StateManager, setting_keys


def config_path(home: Path | None = None) -> Path:
    return (home or home_dir()) / "settings.json"


def read_config(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise SettingsError(
            f"{path} is not valid JSON ({error}): fix it or delete it to start from defaults"
        ) from error
    if not isinstance(data, dict):
        raise SettingsError(f"{path} must hold a JSON object of settings")
    unknown = sorted(set(data) - set(setting_keys()))
    if unknown:
        raise SettingsError(f"{path}: unknown setting '{unknown[0]}': remove it")
    return data


def build_state(config: dict[str, Any] | None = None, preset: str | None = None) -> StateManager:
    """defaults <- preset (argument, else the config's, else balanced) <- the rest of the config."""
    values = dict(config if config is not None else read_config())
    state = StateManager()
    apply_preset(state, preset or values.pop("preset", "balanced"))
    values.pop("preset", None)
    state.update(values)
    return state


def save_config(settings: Settings, path: Path | None = None) -> Path:
    """Store ``settings`` as its preset plus the values that differ from that preset's."""
    path = path or config_path()
    base = StateManager()
    apply_preset(base, settings.preset)
    reference = base.snapshot().to_dict()
    changed = {key: value for key, value in settings.to_dict().items() if reference.get(key) != value}
    data = {"preset": settings.preset, **changed}
    load_preset(settings.preset)  # the preset must still exist
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)
    return path

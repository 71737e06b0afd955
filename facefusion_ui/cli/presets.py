"""``run.py presets list|show``: the memory presets and the one suggested for this machine."""

from __future__ import annotations

import argparse
import json
from typing import Any

from facefusion_ui.memory import probe_gpus, system_memory
from facefusion_ui.presets import PRESET_KEYS, Preset, load_preset, load_presets, suggest_preset
from facefusion_ui.types import PresetName, choices

COLUMNS = {
    "video_chunk_size": "chunk_s",
    "face_cache_limit": "cache",
    "face_cache_lifetime": "ttl_s",
    "frame_queue_size": "queue",
    "execution_threads": "threads",
    "max_concurrent_jobs": "jobs",
    "release_models": "release",
    "memory_threshold_mb": "min_free_mb",
    "face_cache_scope": "ids_per",
}
"""Shorter column names of ``presets list``; a preset value not named here is headed by its setting."""


def machine_suggestion() -> PresetName:
    gpus = probe_gpus()
    return suggest_preset(gpus[0].total_mb if gpus else None, system_memory().total_mb)


def format_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def preset_as_json(preset: Preset) -> dict[str, Any]:
    return {"name": preset.name, "description": preset.description, "path": str(preset.path), **preset.values}


def run_presets_list(args: argparse.Namespace) -> int:
    presets = load_presets()
    suggested = machine_suggestion()
    if args.json:
        print(json.dumps({"suggested": suggested, "presets": [preset_as_json(p) for p in presets]}, indent=2))
        return 0
    header = ["preset", *[COLUMNS.get(key, key) for key in PRESET_KEYS]]
    rows = [
        [p.name + (" *" if p.name == suggested else ""), *[str(p.values[key]) for key in PRESET_KEYS]] for p in presets
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print(f"* suggested for this machine ({describe_memory()})")
    return 0


def run_presets_show(args: argparse.Namespace) -> int:
    preset = load_preset(args.name)
    if args.json:
        print(json.dumps(preset_as_json(preset), indent=2))
        return 0
    print(f"# {preset.name}: {preset.description}")
    print(f"# {preset.path}")
    for key in PRESET_KEYS:
        print(f"{key} = {format_value(preset.values[key])}")
    return 0


def describe_memory() -> str:
    memory = system_memory()
    gpus = probe_gpus()
    gpu = ", ".join(f"GPU {g.index} {g.name} {g.total_mb} MiB" for g in gpus) or "no NVIDIA GPU"
    return f"RAM {memory.total_mb} MiB, {gpu}"


def add_presets_parser(commands: Any) -> None:
    presets = commands.add_parser("presets", help="memory presets")
    preset_commands = presets.add_subparsers(dest="presets_command", metavar="ACTION", required=True)
    preset_list = preset_commands.add_parser("list", help="the presets and their key values")
    preset_list.add_argument("--json", action="store_true")
    preset_list.set_defaults(handler=run_presets_list)
    preset_show = preset_commands.add_parser("show", help="every value one preset sets")
    preset_show.add_argument("name", choices=choices(PresetName))
    preset_show.add_argument("--json", action="store_true")
    preset_show.set_defaults(handler=run_presets_show)

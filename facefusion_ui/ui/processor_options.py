"""The processors the Single tab offers and the controls beside each: the settings a processor reads
(``PROCESSOR_SETTINGS``), the face mask settings, and the options a processor declares itself
(``ProcessorOption``, e.g. a plugin's), with what each processor and model is for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from facefusion_ui.errors import InputError
from facefusion_ui.models import model_state
from facefusion_ui.processors.options import OptionValue, ProcessorOption, resolve_options
from facefusion_ui.ui.controls import present
from facefusion_ui.ui.services import UiServices

PROCESSOR_SETTINGS: dict[str, tuple[str, ...]] = {
    "face_swapper": ("face_swapper_model", "face_swapper_pixel_boost", "keep_source_glasses"),
    "face_enhancer": ("face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight"),
    "lip_syncer": ("source_audio",),
}
"""Settings shown beside each processor (the frame enhancer's and the lip syncer's model are options they
declare, shown with the other declared options); names not in ``Settings`` are skipped."""
MASK_SETTINGS = (
    "face_mask_types",
    "face_mask_blur",
    "face_mask_padding",
    "face_mask_regions",
    "face_mask_areas",
    "mouth_mask",
)
"""How a changed face is blended back; names not (yet) in ``Settings`` are skipped."""
PROCESSOR_NOTES = {
    "face_swapper": "puts the source person's face onto the target's faces",
    "face_enhancer": "restores face detail (sharper eyes, skin) after the swap",
    "frame_enhancer": "upscales the whole frame",
    "lip_syncer": "moves the lips to a sound track",
    "face_debugger": "draws the faces found (boxes and points), to check detection",
}
MODEL_NOTES = {
    "mesh_warp": "no download, runs on any CPU: moves the source face onto the target's face shape",
    "inswapper_128": "InsightFace's learned swapper: the most natural likeness (a 554 MB download)",
    "inswapper_128_fp16": "inswapper_128 in half precision: half the memory, for GPUs",
    "gfpgan_1.4": "GFPGAN 1.4 face restoration",
}


def processor_label(name: str) -> str:
    note = PROCESSOR_NOTES.get(name)
    return f"{name}: {note}" if note else name


def installed(services: UiServices, name: str) -> bool:
    return model_state(services.runtime.spec(name), services.runtime.folder).installed


def model_labels(services: UiServices, names: Sequence[str]) -> dict[str, str]:
    """How model choices are called: the ones not downloaded say so (they stay choosable: the message
    on use says where to get them)."""
    return {
        name: f"{name} (not downloaded: Settings, Models)"
        for name in names
        if name in services.runtime.manifest and not installed(services, name)
    }


def model_info(names: Sequence[str]) -> str:
    return " · ".join(f"{name}: {MODEL_NOTES[name]}" for name in names if name in MODEL_NOTES)


def processor_settings(name: str) -> tuple[str, ...]:
    return present(PROCESSOR_SETTINGS.get(name, ()))


def option_fields(services: UiServices) -> list[tuple[str, ProcessorOption]]:
    """(processor, option) for every option of every processor, in a stable order."""
    table = services.registry.option_table()
    return [(name, option) for name in services.registry.names() for option in table.get(name, ())]


def render_option_control(processor: str, option: ProcessorOption, value: OptionValue) -> Any:
    """A checkbox for a bool, a dropdown for choices, a slider for a numeric range, else a number."""
    label = f"{processor}: {option.help or option.name}"
    elem_id = f"single-option-{processor}-{option.name}"
    if option.type is bool:
        return gr.Checkbox(value=bool(value), label=label, elem_id=elem_id)
    if option.type is str:
        return gr.Dropdown(list(option.choices), value=value, label=label, elem_id=elem_id)
    number = float(value)  # an int or float option: its value is a number
    if option.low is not None and option.high is not None:
        step = 1 if option.type is int else (option.high - option.low) / 100
        return gr.Slider(option.low, option.high, value=number, step=step, label=label, elem_id=elem_id)
    return gr.Number(value=number, precision=0 if option.type is int else None, label=label, elem_id=elem_id)


def option_values(services: UiServices, chosen: Sequence[str], values: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The controls' values as processor options, for the chosen processors (whole numbers from sliders
    made ints); checked against each processor's declaration."""
    if not values:
        return {}
    fields = option_fields(services)
    if len(values) != len(fields):
        raise InputError("the page is out of date (processors changed): reload it")
    options: dict[str, dict[str, Any]] = {}
    for (processor, option), value in zip(fields, values, strict=True):
        if processor not in chosen:
            continue
        if option.type is int and isinstance(value, float) and value.is_integer():
            value = int(value)  # a slider gives floats
        options.setdefault(processor, {})[option.name] = value
    for processor, given in options.items():
        resolve_options(processor, services.registry.options(processor), given)
    return options

"""Controls made from the settings' own rules (``state_manager.setting_rule``): a checkbox for a flag, a
dropdown for one of a Literal's choices, checkboxes for a list of choices, a slider for a bounded number,
a number box for a wide or optional one, and a text box for anything else (JSON, or plain text). A
setting added to ``Settings`` gets its control without code here; ``control_value`` turns what the
control gives back into the setting's value, checked by the same rule."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import gradio as gr

from facefusion_ui.errors import SettingsError
from facefusion_ui.state_manager import setting_label, setting_rule, validate_item

NONE_CHOICE = "none"
SLIDER_SPAN = 1000
"""Numbers with a wider range get a number box: a slider step would be too coarse."""


def _bounds(key: str) -> tuple[float | None, float | None]:
    rule = setting_rule(key)
    return getattr(rule, "low", None), getattr(rule, "high", None)


def _optional(key: str) -> bool:
    return bool(getattr(setting_rule(key), "optional", False))


def _kind(key: str) -> str:
    """flag, many (several choices), one (a choice), list (several values), int, float, file or text."""
    options = setting_rule(key).cli_options()
    if options.get("action") is argparse.BooleanOptionalAction:
        return "flag"
    if options.get("metavar") == "FILE":
        return "file"
    if options.get("choices"):
        return "many" if options.get("nargs") in ("+", "*") else "one"
    if options.get("nargs") in ("+", "*"):
        return "list"
    if options.get("type") in (int, float):
        return "int" if options["type"] is int else "float"
    return "text"


RADIO_CHOICES = 3
"""A choice among this many or fewer is shown as radio buttons, all visible at once."""


def setting_control(
    key: str,
    value: Any,
    label: str | None = None,
    info: str | None = None,
    fallback: float | None = None,
    choice_labels: Mapping[str, str] | None = None,
) -> Any:
    """The control of setting ``key`` showing ``value``; ``fallback``: where a slider for an optional
    number starts when the value is none (e.g. the recognizer's own distance); ``choice_labels``: what a
    choice is called on the page (e.g. "inswapper_128 (not downloaded)"), its value stays the name."""
    label = label or setting_label(key)
    elem_id = f"setting-{key}"
    kind = _kind(key)
    if kind == "flag":
        return gr.Checkbox(value=bool(value), label=label, info=info, elem_id=elem_id)
    names = list(setting_rule(key).cli_options().get("choices") or ())
    choices = [((choice_labels or {}).get(name, name), name) for name in names]
    if kind == "many":
        return gr.CheckboxGroup(choices, value=list(value or ()), label=label, info=info, elem_id=elem_id)
    if kind == "one":
        extra = [(NONE_CHOICE, NONE_CHOICE)] if _optional(key) else []
        shown = NONE_CHOICE if value is None else value
        if len(choices) <= RADIO_CHOICES and not extra:
            return gr.Radio(choices, value=shown, label=label, info=info, elem_id=elem_id)
        return gr.Dropdown([*choices, *extra], value=shown, label=label, info=info, elem_id=elem_id)
    if kind in ("int", "float"):
        return _number_control(key, value, label, info, fallback)
    if kind == "list":  # e.g. the mask padding: values apart by spaces, as on the command line
        shown = " ".join(str(item) for item in value or ())
        return gr.Textbox(value=shown, label=label, info=info or "values apart by spaces", elem_id=elem_id)
    if kind == "file":  # an upload: the page gets a path to the uploaded copy
        return gr.File(value=value, label=label, type="filepath", elem_id=elem_id)
    text = value if isinstance(value, str) else json.dumps(value)
    return gr.Textbox(value="" if value is None else text, label=label, info=info, elem_id=elem_id)


def _number_control(key: str, value: Any, label: str, info: str | None, fallback: float | None) -> Any:
    low, high = _bounds(key)
    whole = _kind(key) == "int"
    elem_id = f"setting-{key}"
    if low is not None and high is not None and high - low <= SLIDER_SPAN and (value, fallback) != (None, None):
        step = getattr(setting_rule(key), "step", 1) if whole else round((high - low) / 100, 6)
        shown = fallback if value is None else value
        return gr.Slider(low, high, value=shown, step=step, label=label, info=info, elem_id=elem_id)
    if _optional(key):  # a number box cannot stay blank (it shows 0), and blank means none here
        shown = "" if value is None else str(value)
        return gr.Textbox(value=shown, label=label, info=info or "blank: none (the default)", elem_id=elem_id)
    return gr.Number(value=value, precision=0 if whole else None, label=label, info=info, elem_id=elem_id)


def control_value(key: str, raw: Any, label: str | None = None) -> Any:
    """What control ``key`` gave, as the setting's value (checked by its rule; blank or 'none' is none
    for an optional setting)."""
    if raw is None or raw == "" or (raw == NONE_CHOICE and _kind(key) == "one"):
        if _optional(key):
            return None
        raise SettingsError(f"{label or setting_label(key)}: give a value")
    kind = _kind(key)
    if kind in ("int", "float"):
        raw = _number(raw, label or setting_label(key))
        if kind == "int" and isinstance(raw, float) and raw.is_integer():
            raw = int(raw)  # sliders and number boxes give floats
    elif kind == "many":
        raw = tuple(raw)
    elif kind == "list" and isinstance(raw, str):
        raw = _values(key, raw, label or setting_label(key))
    elif kind == "text" and isinstance(raw, str):
        raw = _text(raw)
    return validate_item(key, raw)


def _number(raw: Any, label: str) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return float(raw.strip())
    except ValueError:
        raise SettingsError(f"{label} '{raw.strip()}' is not a number: leave it blank or type e.g. 0.5") from None


def _values(key: str, raw: str, label: str) -> tuple[Any, ...]:
    convert = setting_rule(key).cli_options().get("type", str)
    try:
        return tuple(convert(item) for item in raw.replace(",", " ").split())
    except ValueError:
        raise SettingsError(f"{label} '{raw.strip()}': give values apart by spaces, e.g. 0 0 0 0") from None


def _text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.strip()


def control_values(keys: Sequence[str], raws: Sequence[Any], labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{key: value}`` for controls made by ``setting_control`` in ``keys`` order (``labels``: what the
    page calls them where not their own label)."""
    if len(keys) != len(raws):
        raise SettingsError("the page is out of date (settings changed): reload it")
    return {key: control_value(key, raw, (labels or {}).get(key)) for key, raw in zip(keys, raws, strict=True)}


def control_update(key: str, value: Any) -> Any:
    """An update setting control ``key`` to ``value`` (as ``setting_control`` shows it)."""
    kind = _kind(key)
    if kind == "many":
        return gr.update(value=list(value or ()))
    if kind == "one":
        return gr.update(value=NONE_CHOICE if value is None else value)
    if kind == "text":
        return gr.update(value=value if isinstance(value, str) else json.dumps(value))
    return gr.update(value=value)

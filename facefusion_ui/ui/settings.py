"""The Settings tab: presets (what each sets, the one suggested here) with every preset value editable,
execution, faces and output defaults, each control made from its setting's rule; unsaved changes are
marked, and saving warns about what cannot work here (a provider this machine lacks, a model not
downloaded). Models are listed with download (with progress) and delete. Saved settings apply to jobs
queued afterwards, never to queued ones. Laid out by ``render_settings_tab``, wired by
``listen_settings_tab`` to module-level handlers over ``UiServices``."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from facefusion_ui.errors import FacefusionError, SettingsError
from facefusion_ui.inference import check_provider
from facefusion_ui.memory import probe_gpus, system_memory
from facefusion_ui.models import model_state
from facefusion_ui.presets import PRESET_KEYS, apply_preset, load_presets, suggest_preset
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings, page_setting_keys, setting_label, setting_rule
from facefusion_ui.types import PageGroup, PresetName, choices
from facefusion_ui.ui.common import outputs_of, problem, reported
from facefusion_ui.ui.controls import control_update, control_values, setting_control
from facefusion_ui.ui.processor_options import installed, is_model_list, model_choices, model_labels
from facefusion_ui.ui.services import UiServices

GROUP_TITLES: tuple[tuple[str, PageGroup | None], ...] = (
    ("Preset values (the preset fills them in; each can be changed)", None),
    ("Execution", "settings:execution"),
    ("Faces", "settings:faces"),
    ("Output defaults", "settings:output"),
)
"""The tab's sections: the preset values, then the settings placed in each group (their ``page`` facet)."""
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (title, PRESET_KEYS if group is None else page_setting_keys(group)) for title, group in GROUP_TITLES
)
"""The tab's sections and their settings."""
MODEL_SETTINGS = (
    "face_detector_model",
    "face_landmarker_model",
    "face_recognizer_model",
    "face_swapper_model",
    "face_enhancer_model",
)
"""Settings naming a model, checked at save: always, or when it is a processor's own (``in_use``) only
while that processor is in use."""
PER_ROW = 4
MODEL_COLUMNS = ["model", "role", "installed", "verified", "size MB", "what it is"]


def settings_keys() -> tuple[str, ...]:
    """The settings with a control on the tab, in the order ``run_save`` takes them."""
    return tuple(dict.fromkeys(key for _, keys in GROUPS for key in keys))


def suggested() -> str:
    gpus = probe_gpus()
    return suggest_preset(gpus[0].total_mb if gpus else None, system_memory().total_mb)


def preset_table(selected: str) -> str:
    """Who each preset is for and what it trades (its file's ``description`` and ``trades``), then the
    values each sets, by the settings' page labels."""
    presets = load_presets()
    intro = [f"- **{p.name}**: {p.description}" for p in presets]
    intro = [line + (f". Trades {p.trades}." if p.trades else "") for line, p in zip(intro, presets, strict=True)]
    header = "| setting | " + " | ".join(f"**{p.name}**" if p.name == selected else p.name for p in presets) + " |"
    lines = [*intro, "", header, "|---|" + "---|" * len(presets)]
    for key in PRESET_KEYS:
        lines.append(f"| {setting_label(key)} | " + " | ".join(str(p.values[key]) for p in presets) + " |")
    return "\n".join(lines) + f"\n\nSuggested for this machine: **{suggested()}**. Selected: **{selected}**."


def model_rows(services: UiServices) -> list[list[Any]]:
    rows = []
    for spec in services.runtime.manifest.values():
        state = model_state(spec, services.runtime.folder)
        verified = {True: "yes", False: "MISMATCH", None: "-"}[state.verified]
        known = services.downloads.size(spec.name)  # the catalog's, else the server's once it answered
        size = f"{known / 1e6:.0f}" if known else ("included" if spec.kind == "embedded" else "?")
        rows.append([spec.name, spec.role, "yes" if state.installed else "no", verified, size, spec.description])
    return rows


def downloadable(services: UiServices) -> list[str]:
    return [spec.name for spec in services.runtime.manifest.values() if spec.kind == "onnx"]


@dataclass(frozen=True)
class SettingsTab:
    """The controls of the Settings tab (one per ``settings_keys()``, in order) and its other parts."""

    preset: Any
    controls: list[Any]
    table: Any
    save: Any
    saved: Any
    unsaved: Any
    model: Any
    download: Any
    delete: Any
    models: Any
    downloads: Any
    timer: Any
    shown: Settings
    """The settings the page was built with: what a browser shows before its page load updates it."""

    def fields(self) -> list[Any]:
        return [self.preset, *self.controls]

    def loaded(self) -> list[Any]:
        """What ``page_values`` updates, in its order."""
        return [self.preset, self.table, *self.controls, self.models, self.unsaved]


def render_controls(services: UiServices) -> list[Any]:
    settings = services.settings()
    controls: dict[str, Any] = {}
    for title, keys in GROUPS:
        shown = [key for key in keys if key not in controls]
        if not shown:
            continue
        gr.Markdown(f"### {title}")
        for row in range(0, len(shown), PER_ROW):
            with gr.Row(equal_height=True):
                for key in shown[row : row + PER_ROW]:
                    names = setting_rule(key).cli_options().get("choices") or ()
                    controls[key] = setting_control(
                        key, getattr(settings, key), choice_labels=model_labels(services, names)
                    )
    return [controls[key] for key in settings_keys()]


def render_models(services: UiServices) -> dict[str, Any]:
    gr.Markdown("### Models")
    with gr.Row():
        names = downloadable(services)
        model = gr.Dropdown(names, value=names[0] if names else None, label="Model", elem_id="settings-model")
        download = gr.Button("Download", elem_id="settings-download")
        delete = gr.Button("Delete", elem_id="settings-delete")
    downloads = gr.Markdown("", elem_id="settings-downloads")
    models = gr.Dataframe(
        value=model_rows(services), headers=MODEL_COLUMNS, interactive=False, elem_id="settings-models"
    )
    return {"model": model, "download": download, "delete": delete, "models": models, "downloads": downloads}


def render_settings_tab(services: UiServices) -> SettingsTab:
    settings = services.settings()
    with gr.Row():
        preset = gr.Dropdown(
            list(choices(PresetName)), value=settings.preset, label="Memory preset", elem_id="settings-preset"
        )
    table = gr.Markdown(preset_table(settings.preset), elem_id="settings-preset-table")
    controls = render_controls(services)
    with gr.Row():
        save = gr.Button("Save settings", variant="primary", elem_id="settings-save")
        unsaved = gr.Markdown("", elem_id="settings-unsaved")
    saved = gr.Markdown("", elem_id="settings-saved")
    parts = render_models(services)
    return SettingsTab(preset, controls, table, save, saved, unsaved, **parts, timer=gr.Timer(1.0), shown=settings)


def listen_settings_tab(tab: SettingsTab, services: UiServices) -> None:
    keys = settings_keys()
    preset_outputs = [tab.controls[keys.index(key)] for key in PRESET_KEYS]
    # the person's own edits only (a page load showing the saved settings is no edit), then what is unsaved
    mark = functools.partial(unsaved_line, services)
    tab.preset.input(choose_preset, tab.preset, [tab.table, *preset_outputs, tab.saved]).then(
        mark, tab.fields(), tab.unsaved, show_progress="hidden"
    )
    for control in tab.controls:
        edit = control.input if hasattr(control, "input") else control.change
        edit(mark, tab.fields(), tab.unsaved, show_progress="hidden", trigger_mode="always_last")
    tab.save.click(functools.partial(run_save, services), tab.fields(), outputs_of(Saved, tab))
    finished_seen = gr.State("")
    tab.download.click(functools.partial(start_download, services), tab.model, [tab.downloads, finished_seen])
    tab.delete.click(functools.partial(delete_model, services), tab.model, outputs_of(ModelDeleted, tab))
    named = zip([model_names(key) for key in keys], tab.controls, strict=True)
    pickers = [(names, control) for names, control in named if is_model_list(services, names)]
    tab.timer.tick(
        functools.partial(download_progress, services, [names for names, _ in pickers]),
        finished_seen,
        [tab.downloads, tab.models, finished_seen, *(control for _, control in pickers)],
        show_progress="hidden",
    )


def build_settings_tab(services: UiServices) -> SettingsTab:
    tab = render_settings_tab(services)
    listen_settings_tab(tab, services)
    return tab


def page_values(services: UiServices, shown: Settings) -> list[Any]:
    """At each page load, the tab as the saved settings are now (``SettingsTab.loaded()``'s parts): the
    preset, its table, each control whose saved value differs from ``shown`` (the page was built with
    those), the models' table, and no unsaved change."""
    settings = services.settings()
    controls = [
        control_update(key, getattr(settings, key)) if getattr(settings, key) != getattr(shown, key) else gr.skip()
        for key in settings_keys()
    ]
    return [settings.preset, preset_table(settings.preset), *controls, model_rows(services), ""]


def choose_preset(name: str) -> tuple[Any, ...]:
    """Show what the preset sets and put its values in the fields (saved with Save)."""
    values = next(p.values for p in load_presets() if p.name == name)
    updates = [control_update(key, values[key]) for key in PRESET_KEYS]
    return preset_table(name), *updates, ""


def edited(services: UiServices, name: str, values: Sequence[Any]) -> Settings:
    """The saved settings with the preset, then the fields, applied (nothing stored)."""
    return services.settings().with_items(preset=name, **control_values(settings_keys(), values))


def unsaved_line(services: UiServices, name: str, *values: Any) -> str:
    """'Unsaved changes' and which, when the fields differ from the saved settings."""
    saved = services.settings()
    try:
        current = edited(services, name, values)
    except FacefusionError as error:
        return problem(f"Unsaved, and not valid: {error.for_page()}")
    changed = [key for key in ("preset", *settings_keys()) if getattr(current, key) != getattr(saved, key)]
    return f"● Unsaved changes: {', '.join(changed)}" if changed else ""


def in_use(registry: ProcessorRegistry, key: str, settings: Settings) -> bool:
    """Whether setting ``key`` matters to a run with ``settings``: it is no processor's own, or one of the
    processors whose own it is runs."""
    owners = [name for name in registry.names() if key in registry.settings_read(name)]
    return not owners or any(name in settings.processors for name in owners)


def save_warnings(services: UiServices, settings: Settings) -> list[str]:
    """What cannot work here with these settings: a provider this machine cannot run, a model that is
    not downloaded."""
    lines = []
    for provider in settings.execution_providers:
        if provider != "cpu" and not (check := check_provider(provider, settings.execution_device_id)).usable:
            lines.append(f"{provider} cannot run on this machine ({check.reason}): jobs will use the CPU instead")
    for key in MODEL_SETTINGS:
        if not in_use(services.registry, key, settings):
            continue
        name = getattr(settings, key, None)
        if isinstance(name, str) and name in services.runtime.manifest and not installed(services, name):
            lines.append(f"{name} ({key}) is not downloaded: jobs using it fail until you download it below")
    return lines


class Saved(NamedTuple):
    """What Save updates (each field a ``SettingsTab`` part of that name)."""

    saved: Any
    unsaved: Any


class ModelDeleted(NamedTuple):
    """What Delete updates."""

    downloads: Any
    models: Any


@reported(Saved)
def run_save(services: UiServices, name: str, *values: Any) -> Saved:
    """Apply the preset, then the fields, and store them: jobs queued from now on get them. Saved even
    with warnings (the message says what will not work)."""
    keys = settings_keys()
    if "execution_providers" in keys and not values[keys.index("execution_providers")]:
        raise SettingsError("choose at least one execution provider (cpu always works)")
    fields = control_values(keys, values)
    apply_preset(services.state, name)
    result = services.save_settings(fields)
    text = f"Saved (preset {result.preset}): applies to jobs queued from now on."
    warnings = save_warnings(services, result)
    return Saved(problem("\n".join([text, *(f"- {line}" for line in warnings)])) if warnings else text, "")


class DownloadStarted(NamedTuple):
    """What Download updates: its line, and the ended downloads the page has shown, forgotten."""

    downloads: Any
    finished_seen: Any


@reported(DownloadStarted)
def start_download(services: UiServices, name: str) -> DownloadStarted:
    """Start ``name``'s download. What the page has shown is forgotten, so the next timer tick writes the
    downloads again: a tick that ran while this click was answered (a download that fails at once) would
    otherwise have its line overwritten by this click's older one, for good."""
    if not name:
        raise SettingsError("choose a model to download")
    if installed(services, name):
        return DownloadStarted(f"{name} is already downloaded", gr.skip())
    services.downloads.start(name)
    return DownloadStarted(download_lines(services) or f"{name}: starting", "")


def download_lines(services: UiServices) -> str:
    return services.downloads.lines()


def model_names(key: str) -> list[str]:
    return list(setting_rule(key).cli_options().get("choices") or ())


def download_progress(
    services: UiServices, model_lists: Sequence[Sequence[str]], finished_seen: str
) -> tuple[Any, ...]:
    """Progress of the downloads while any runs, and once more when others have ended (the table refreshed
    and the model dropdowns relabelled (installed, sizes) without a reload); nothing otherwise, so a
    message written there since (Delete's) stays. ``finished_seen``: the ended downloads the page showed."""
    ended = [status for status in services.downloads.progress().values() if status.finished]
    finished = ";".join(f"{status.name}@{status.ended_at}" for status in ended)
    relabel = finished != finished_seen
    news = services.downloads.running() or relabel
    lines = download_lines(services) if news else ""
    dropdowns = [gr.update(choices=model_choices(services, names)) if relabel else gr.skip() for names in model_lists]
    return (lines or gr.skip()), model_rows(services) if lines else gr.skip(), finished, *dropdowns


@reported(ModelDeleted)
def delete_model(services: UiServices, name: str) -> ModelDeleted:
    if not name:
        raise SettingsError("choose a model to delete")
    services.downloads.delete(name)
    return ModelDeleted(f"{name} deleted", model_rows(services))

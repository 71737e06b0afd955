"""The Settings tab: presets (what each sets, and the one suggested here), execution, identity cache,
chunks, output, and the models with the command to get the missing ones. Saved settings apply to jobs
queued afterwards, never to queued ones (each job keeps the snapshot it was queued with). Laid out by
``render_settings_tab``, wired by ``listen_settings_tab`` to module-level handlers over ``UiServices``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import gradio as gr

from facefusion_ui.errors import SettingsError
from facefusion_ui.memory import probe_gpus, system_memory
from facefusion_ui.models import download_command, model_state
from facefusion_ui.presets import PRESET_KEYS, apply_preset, load_presets, suggest_preset
from facefusion_ui.state_manager import Settings, validate_item
from facefusion_ui.types import ExecutionProvider, FaceDetectorModel, PresetName, VideoEncoder, choices
from facefusion_ui.ui.common import plain_errors
from facefusion_ui.ui.services import UiServices


def suggested() -> str:
    gpus = probe_gpus()
    return suggest_preset(gpus[0].total_mb if gpus else None, system_memory().total_mb)


def preset_table(selected: str) -> str:
    presets = load_presets()
    header = "| setting | " + " | ".join(f"**{p.name}**" if p.name == selected else p.name for p in presets) + " |"
    lines = [header, "|---|" + "---|" * len(presets)]
    for key in PRESET_KEYS:
        lines.append(f"| {key} | " + " | ".join(str(p.values[key]) for p in presets) + " |")
    return "\n".join(lines) + f"\n\nSuggested for this machine: **{suggested()}**. Selected: **{selected}**."


def model_rows(services: UiServices) -> list[list[str]]:
    rows = []
    for spec in services.runtime.manifest.values():
        state = model_state(spec, services.runtime.folder)
        verified = {True: "yes", False: "MISMATCH", None: "-"}[state.verified]
        how = "" if state.installed else (download_command(spec.name) if spec.kind == "onnx" else "reinstall")
        rows.append([spec.name, spec.role, spec.kind, "yes" if state.installed else "no", verified, how])
    return rows


def match_distance(text: str) -> float | None:
    value = (text or "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise SettingsError(
            f"identity match distance '{value}' is not a number: leave it blank or type e.g. 0.5"
        ) from None


def chunk_value(text: str) -> int | str:
    value: int | str = validate_item("video_chunk_size", text.strip())
    return value


@dataclass(frozen=True)
class SettingsTab:
    """The fields of the Settings tab, in the order ``run_save`` takes them, and its other parts."""

    preset: Any
    providers: Any
    threads: Any
    detector: Any
    interval: Any
    score: Any
    limit: Any
    lifetime: Any
    chunk: Any
    encoder: Any
    quality: Any
    table: Any
    save: Any
    saved: Any

    def fields(self) -> list[Any]:
        return [
            self.preset,
            self.providers,
            self.threads,
            self.detector,
            self.interval,
            self.score,
            self.limit,
            self.lifetime,
            self.chunk,
            self.encoder,
            self.quality,
        ]


def render_execution(settings: Settings) -> dict[str, Any]:
    with gr.Row():
        providers = gr.CheckboxGroup(
            list(choices(ExecutionProvider)),
            value=list(settings.execution_providers),
            label="Execution providers (in order)",
        )
        threads = gr.Slider(1, 16, value=settings.execution_threads, step=1, label="Frame workers / threads")
    with gr.Row():
        detector = gr.Dropdown(
            list(choices(FaceDetectorModel)),
            value=settings.face_detector_model,
            label="Face detector (dlib_hog: best recall, mediapipe_blazeface: faster)",
            elem_id="settings-detector",
        )
        interval = gr.Slider(
            1,
            60,
            value=settings.face_detector_interval,
            step=1,
            label="Videos: full-frame detection every N frames, faces followed between",
        )
    return {"providers": providers, "threads": threads, "detector": detector, "interval": interval}


def render_identity_and_output(settings: Settings) -> dict[str, Any]:
    with gr.Row():
        current = settings.face_recognition_score
        score = gr.Textbox(
            value="" if current is None else str(current), label="Identity match distance (blank: the recognizer's own)"
        )
        limit = gr.Number(value=settings.face_cache_limit, precision=0, label="Identity cache size")
        lifetime = gr.Number(value=settings.face_cache_lifetime, label="Identity lifetime (s of video)")
    with gr.Row():
        chunk = gr.Textbox(value=str(settings.video_chunk_size), label="Chunk length (seconds or auto)")
        encoder = gr.Dropdown(list(choices(VideoEncoder)), value=settings.output_video_encoder, label="Video encoder")
        quality = gr.Slider(0, 100, value=settings.output_video_quality, step=1, label="Video quality")
    return {
        "score": score,
        "limit": limit,
        "lifetime": lifetime,
        "chunk": chunk,
        "encoder": encoder,
        "quality": quality,
    }


def render_settings_tab(services: UiServices) -> SettingsTab:
    settings = services.settings()
    with gr.Row():
        preset = gr.Dropdown(
            list(choices(PresetName)), value=settings.preset, label="Memory preset", elem_id="settings-preset"
        )
    table = gr.Markdown(preset_table(settings.preset), elem_id="settings-preset-table")
    execution = render_execution(settings)
    identity_and_output = render_identity_and_output(settings)
    save = gr.Button("Save settings", variant="primary", elem_id="settings-save")
    saved = gr.Markdown("", elem_id="settings-saved")
    gr.Markdown("### Models")
    gr.Dataframe(
        value=model_rows(services),
        headers=["model", "role", "kind", "installed", "verified", "get it"],
        interactive=False,
    )
    return SettingsTab(preset=preset, **execution, **identity_and_output, table=table, save=save, saved=saved)


def listen_settings_tab(tab: SettingsTab, services: UiServices) -> None:
    tab.preset.change(
        choose_preset, tab.preset, [tab.table, tab.threads, tab.limit, tab.lifetime, tab.chunk, tab.saved]
    )
    tab.save.click(functools.partial(run_save, services), tab.fields(), tab.saved)


def build_settings_tab(services: UiServices) -> None:
    listen_settings_tab(render_settings_tab(services), services)


@plain_errors
def choose_preset(name: str) -> tuple[str, Any, Any, Any, Any, Any]:
    """Show what the preset sets and put its values in the fields (saved with Save)."""
    values = next(p.values for p in load_presets() if p.name == name)
    return (
        preset_table(name),
        gr.Slider(value=values["execution_threads"]),
        gr.Number(value=values["face_cache_limit"]),
        gr.Number(value=values["face_cache_lifetime"]),
        gr.Textbox(value=str(values["video_chunk_size"])),
        "",
    )


@plain_errors
def run_save(
    services: UiServices,
    name: str,
    chosen: list[str],
    workers: float,
    finder: str,
    every: float,
    match: str,
    size: float,
    life: float,
    length: str,
    codec: str,
    level: float,
) -> str:
    """Apply the preset, then the fields, and store them: jobs queued from now on get them."""
    if not chosen:
        raise SettingsError("choose at least one execution provider (cpu always works)")
    apply_preset(services.state, name)
    result = services.save_settings(
        {
            "execution_providers": tuple(chosen),
            "execution_threads": int(workers),
            "face_detector_model": finder,
            "face_detector_interval": int(every),
            "face_recognition_score": match_distance(match),
            "face_cache_limit": int(size),
            "face_cache_lifetime": float(life),
            "video_chunk_size": chunk_value(length),
            "output_video_encoder": codec,
            "output_video_quality": int(level),
        }
    )
    return f"Saved (preset {result.preset}): applies to jobs queued from now on."

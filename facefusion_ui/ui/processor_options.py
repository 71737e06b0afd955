"""The processors the Single tab offers and the controls beside each: the settings that are a processor's
own and what it does (both as its factory declares them: ``SettingsReadingProcessor``,
``DescribedProcessor``), the face mask settings, and the options a processor declares (``ProcessorOption``,
e.g. a plugin's), with what each model is for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gradio as gr

from facefusion_ui.errors import InputError, PluginError
from facefusion_ui.models import model_state
from facefusion_ui.processors.options import OptionValue, ProcessorOption, resolve_options
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import page_setting_keys, setting_keys
from facefusion_ui.ui.services import UiServices

MASK_SETTINGS = page_setting_keys("single:mask")
"""How a changed face is blended back."""
MODEL_NOTES = {
    # swappers
    "mesh_warp": "runs on any CPU, no download: moves the source face onto the target's face shape",
    "hyperswap_1a_256": "FaceFusion's default swapper since 3.5: natural likeness, 256 px",
    "hyperswap_1b_256": "HyperSwap trained for another identity/attribute balance",
    "hyperswap_1c_256": "HyperSwap trained for a third identity/attribute balance",
    "inswapper_128": "the smallest input, fastest: use pixel boost 256-512 on large faces",
    "inswapper_128_fp16": "inswapper_128 in half precision: half the memory, for GPUs",
    "simswap_256": "SimSwap at 256 px",
    "simswap_unofficial_512": "SimSwap at 512 px: close-ups without pixel boost",
    "ghost_1_256": "GHOST checkpoint 1: try each on a hard face",
    "ghost_2_256": "GHOST checkpoint 2",
    "ghost_3_256": "GHOST checkpoint 3",
    "blendswap_256": "takes the source photo itself: for a source the recognizer reads badly",
    "uniface_256": "takes the source photo itself, FFHQ-aligned",
    "hififace_unofficial_256": "an unofficial HifiFace export, MTCNN-aligned",
    # face enhancers
    "gfpgan_1.4": "GFPGAN 1.4: the usual face restoration",
    "gfpgan_1.2": "GFPGAN 1.2: sharper, less faithful",
    "gfpgan_1.3": "GFPGAN 1.3: more natural, fewer artefacts",
    "codeformer": "CodeFormer: robust on very degraded faces (fidelity weight)",
    "gpen_bfr_256": "GPEN 256: the lightest enhancer, small faces",
    "gpen_bfr_512": "GPEN 512: general face restoration",
    "gpen_bfr_1024": "GPEN 1024: for large faces",
    "gpen_bfr_2048": "GPEN 2048: for 4K close-ups, heavy",
    "restoreformer_plus_plus": "a transformer restorer: compare with GFPGAN",
    # frame enhancers
    "real_esrgan_x2": "x2 upscaler for general photos",
    "real_esrgan_x2_fp16": "real_esrgan_x2 in half precision, for GPUs",
    "real_esrgan_x4": "x4 upscaler for general photos",
    "real_esrgan_x4_fp16": "real_esrgan_x4 in half precision, for GPUs",
    "real_hatgan_x4": "x4 transformer upscaler: fine detail, slower",
    "ultra_sharp_x4": "x4, sharp detail (non-commercial)",
    "clear_reality_x4": "x4, fast and natural for photos (non-commercial)",
    "nomos8k_sc_x4": "x4 for photos",
    "remacri_x4": "x4 (non-commercial)",
    "siax_x4": "x4",
    "span_kendata_x4": "x4, light and fast (non-commercial)",
    "face_dat_x4": "x4 for photos of people: faces kept natural",
    "real_esrgan_x8": "x8 upscaler for general photos",
    "real_esrgan_x8_fp16": "real_esrgan_x8 in half precision, for GPUs",
    "real_web_photo_x4": "x4 for web photos with compression artefacts",
    "realistic_rescaler_x4": "x4, realistic photos",
    "swin2_sr_x4": "x4 transformer for compressed images, slow on a CPU",
    "tghq_face_x8": "x8 for faces (GPL-3.0)",
    "ultra_sharp_2_x4": "x4, sharp detail, big tiles (non-commercial)",
    # lip syncers
    "wav2lip_96": "tighter lip sync (non-commercial)",
    "wav2lip_gan_96": "better-looking mouths (non-commercial)",
    "edtalk_256": "EDTalk: the whole lower face at 256 px, sharper mouths (Apache-2.0)",
    # detectors, landmarkers, recognizers
    "dlib_hog": "CPU, no download: frontal faces, best recall here",
    "mediapipe_blazeface": "no download: fast",
    "scrfd_2.5g": "fast SCRFD: good for videos on a CPU",
    "det_10g": "SCRFD 10G: accurate, four times scrfd_2.5g's compute",
    "retinaface_10g": "RetinaFace 10G: accurate",
    "yoloface_8n": "YOLOv8 nano: little compute",
    "yunet_2023_mar": "YuNet: tiny, CPU friendly",
    "dlib_68": "no download: 68 points",
    "dlib_5": "no download: 5 points, fastest",
    "mediapipe_face_mesh": "no download: a 468-point mesh",
    "2dfan4": "68 points, precise contours",
    "dlib_resnet": "no download: identity for reference mode",
    "arcface_w600k_r50": "ArcFace: the identity the learned swappers need",
    # maskers
    "xseg_1": "occlusion mask: hands, hair, objects in front of the face",
    "xseg_2": "occlusion mask (second training)",
    "xseg_3": "occlusion mask (third training)",
    "bisenet_resnet_18": "face parser for the region mask: fast",
    "bisenet_resnet_34": "face parser for the region mask: finer",
}
"""What each choosable model suits, from the catalog's descriptions, shown in its dropdown label."""


def processor_label(registry: ProcessorRegistry, name: str) -> str:
    note = registry.summary(name)
    return f"{name}: {note}" if note else name


def installed(services: UiServices, name: str) -> bool:
    return model_state(services.runtime.spec(name), services.runtime.folder).installed


def model_state_text(services: UiServices, name: str) -> str:
    """'installed', 'download, 554 MB' (the size from the catalog or the server), or 'not downloaded'."""
    if installed(services, name):
        return "installed"
    size = services.downloads.size(name)
    return f"download, {size / 1e6:.0f} MB" if size else "not downloaded"


def model_label(services: UiServices, name: str) -> str:
    """``hyperswap_1a_256 · download, 403 MB · FaceFusion's default swapper since 3.5...``"""
    note = MODEL_NOTES.get(name)
    return " · ".join([name, model_state_text(services, name), *([note] if note else [])])


def model_labels(services: UiServices, names: Sequence[str]) -> dict[str, str]:
    """How model choices are called on the page: each with its state and what it suits (the value stays
    the name). Names that are not catalog models keep their name."""
    return {name: model_label(services, name) for name in names if name in services.runtime.manifest}


def model_choices(services: UiServices, names: Sequence[str]) -> list[tuple[str, str]]:
    """(label, name) for a dropdown of ``names``."""
    labels = model_labels(services, names)
    return [(labels.get(name, name), name) for name in names]


def is_model_list(services: UiServices, names: Sequence[str]) -> bool:
    """Whether ``names`` are catalog models (a model dropdown), not other choices."""
    return bool(names) and all(name in services.runtime.manifest for name in names)


def processor_settings(registry: ProcessorRegistry, name: str) -> tuple[str, ...]:
    """The settings shown beside the processor: those it declares its own. A name that is no setting is
    a mistake in the processor, said at once instead of being skipped."""
    declared = registry.settings_read(name)
    unknown = [key for key in declared if key not in setting_keys()]
    if unknown:
        raise PluginError(f"processor '{name}' declares settings that do not exist: {', '.join(unknown)}")
    return declared


def processor_setting_keys(registry: ProcessorRegistry) -> tuple[str, ...]:
    """The settings shown beside any processor, each once, in the processors' order."""
    return tuple(dict.fromkeys(key for name in registry.names() for key in processor_settings(registry, name)))


def option_fields(services: UiServices) -> list[tuple[str, ProcessorOption]]:
    """(processor, option) for every option of every processor, in a stable order."""
    table = services.registry.option_table()
    return [(name, option) for name in services.registry.names() for option in table.get(name, ())]


def render_option_control(
    processor: str, option: ProcessorOption, value: OptionValue, choice_labels: Mapping[str, str] | None = None
) -> Any:
    """A checkbox for a bool, a dropdown for choices (``choice_labels``: what a choice is called, e.g. a
    model with its state), a slider for a numeric range, else a number."""
    label = f"{processor}: {option.help or option.name}"
    elem_id = f"single-option-{processor}-{option.name}"
    if option.type is bool:
        return gr.Checkbox(value=bool(value), label=label, elem_id=elem_id)
    if option.type is str:
        shown = [((choice_labels or {}).get(name, name), name) for name in option.choices]
        return gr.Dropdown(shown, value=value, label=label, elem_id=elem_id)
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

"""What the Single tab asks for, read from its controls: files, frame, trim range, processors, the
reference face, where the output goes, and the settings and processor options shown on the tab; turned
into the settings of a preview or a job."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.errors import InputError
from facefusion_ui.faces.classifier import FACE_CLASSIFIER
from facefusion_ui.faces.selector import filters_in_use
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings, merge_options, page_setting_keys
from facefusion_ui.ui.common import file_path, file_paths, output_name
from facefusion_ui.ui.controls import control_values
from facefusion_ui.ui.media_view import target_info
from facefusion_ui.ui.processor_options import MASK_SETTINGS, installed, option_values, processor_setting_keys
from facefusion_ui.ui.services import UiServices

FACE_SETTINGS = page_setting_keys("single:faces")
OUTPUT_SETTINGS = page_setting_keys("single:output")
"""Output settings offered per run."""
SAFE_NAME = re.compile(r"^[\w.\- ]+$")
REQUEST_CONTROLS = ("sources", "target", "frame", "trim_start", "trim_end", "processors", "position", "folder", "name")
"""The Single tab's own controls that preview and Start read (``SingleTab`` attributes of these names),
before the settings' controls and the option controls."""


def single_keys(registry: ProcessorRegistry) -> tuple[str, ...]:
    """The settings with a control on the Single tab, in the order the handlers get their values (the
    processors' own settings as ``registry``'s processors declare them)."""
    processor_keys = processor_setting_keys(registry)
    return tuple(dict.fromkeys((*FACE_SETTINGS, *processor_keys, *MASK_SETTINGS, *OUTPUT_SETTINGS)))


@dataclass(frozen=True)
class Request:
    """What preview and Start were asked for, by name."""

    sources: list[Path]
    target: Path | None
    frame: int
    trim: tuple[float | None, float | None]
    processors: list[str]
    position: int
    folder: str
    name: str
    settings: Mapping[str, Any]
    """What each setting's control gave, by setting."""
    options: Sequence[Any]
    """What each option control gave, in ``option_fields`` order."""

    @classmethod
    def parse(cls, keys: Sequence[str], values: Sequence[Any]) -> Request:
        """The inputs as Gradio gives them (``SingleTab.request()``): one per name of ``REQUEST_CONTROLS``,
        then one per setting of ``keys``, then the options."""
        first = len(REQUEST_CONTROLS)
        if len(values) < first + len(keys):
            raise InputError("the page is out of date (settings changed): reload it")
        named = dict(zip(REQUEST_CONTROLS, values[:first], strict=True))
        settings = dict(zip(keys, values[first : first + len(keys)], strict=True))
        return cls.named(named, settings, values[first + len(keys) :])

    @classmethod
    def named(cls, controls: Mapping[str, Any], settings: Mapping[str, Any], options: Sequence[Any]) -> Request:
        """From the values of the tab's own controls (by ``REQUEST_CONTROLS`` name), its settings' (by
        setting) and its option controls'."""
        return cls(
            file_paths(controls["sources"]),
            file_path(controls["target"]),
            int(controls["frame"] or 0),
            (controls["trim_start"], controls["trim_end"]),
            list(controls["processors"] or []),
            int(controls["position"] or 0),
            str(controls["folder"] or ""),
            str(controls["name"] or ""),
            dict(settings),
            list(options),
        )

    def files(self, mapped: bool = False, needed: bool = True) -> tuple[list[Path], Path]:
        """The source photos and the target; ``mapped``: the People panel gives the sources (none here);
        ``needed``: whether the chosen processors need a source photo (``pipeline.source_face_needed``)."""
        if mapped:
            if self.target is None:
                raise InputError("add a target first")
            return [], self.target
        if self.target is None or (needed and not self.sources):
            raise InputError("add a source photo and a target first")
        return self.sources, self.target


def trim_items(target: Path, trim: tuple[float | None, float | None]) -> dict[str, int | None]:
    """The trim settings of a video: the first frame and the frame after the last (none: the ends)."""
    info = target_info(target)
    if not info.is_video:
        return {"trim_frame_start": None, "trim_frame_end": None}
    first = int(trim[0] or 0)
    last = info.frame_count - 1 if trim[1] is None else int(trim[1])
    if last < first:
        raise InputError(f"the trim ends (frame {last}) before it starts (frame {first}): move the end slider")
    return {
        "trim_frame_start": first or None,
        "trim_frame_end": last + 1 if last + 1 < info.frame_count else None,
    }


def request_settings(services: UiServices, request: Request, trim: bool = True) -> Settings:
    """The saved settings with this tab's choices (the trim too, for a job)."""
    if not request.processors:
        raise InputError("choose at least one processor")
    if request.target is None:
        raise InputError("add a target first")
    target = request.target
    items: dict[str, Any] = {
        "processors": tuple(request.processors),
        "reference_face_position": request.position,
        "reference_frame_number": request.frame,
        **control_values(tuple(request.settings), tuple(request.settings.values())),
    }
    if trim:
        items.update(trim_items(target, request.trim))
    settings = services.settings().with_items(**items)
    edits = option_values(services, request.processors, request.options)
    return settings.with_items(processor_options=merge_options(settings.processor_options, edits))


def job_models(services: UiServices, settings: Settings) -> list[str]:
    """The models a job with ``settings`` loads: the face analysis's (the classifier when a face selector's
    filter is in use) and each processor's."""
    names: list[str] = [settings.face_detector_model, settings.face_landmarker_model]
    if settings.face_selector_mode == "reference":
        names.append(settings.face_recognizer_model)
    if filters_in_use(settings):
        names.append(FACE_CLASSIFIER)
    for processor in settings.processors:
        names.extend(services.registry.create(processor, settings, services.runtime).required_models())
    return list(dict.fromkeys(names))


def missing_names(services: UiServices, settings: Settings) -> list[str]:
    """The models a job with ``settings`` loads that are not installed."""
    return [name for name in job_models(services, settings) if not installed(services, name)]


def output_path(services: UiServices, target: Path, folder: str, name: str) -> Path:
    """Where the job writes: a folder inside the outputs folder and a name (the target's extension when
    none is given); a timestamped name by default. A taken name steps aside (``-2``) when queued."""
    directory = output_dir(services, folder, "")
    stem = name.strip()
    if not stem:
        return output_name(target, directory)
    if not SAFE_NAME.match(stem) or stem.startswith("."):
        raise InputError(f"output name '{stem}': use letters, digits, spaces, '.', '-' or '_' (no folders)")
    suffix = Path(stem).suffix.lower()
    return directory / (stem if suffix == target.suffix.lower() else f"{stem}{target.suffix.lower()}")


def output_dir(services: UiServices, subfolder: str, default: str) -> Path:
    """The named folder inside the outputs folder, created (a name only: no '..', no absolute path)."""
    name = Path(subfolder.strip() or default)
    if name.is_absolute() or ".." in name.parts:
        raise InputError("the output folder is a name inside the outputs folder (no '..', no absolute path)")
    out_dir = services.outputs_dir / name
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir

"""What the Single tab asks for, read from its controls: files, frame, trim range, processors, the
reference face, where the output goes, and the settings and processor options shown on the tab; turned
into the settings of a preview or a job."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.errors import InputError
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings, merge_options
from facefusion_ui.ui.common import file_path, file_paths, output_name
from facefusion_ui.ui.controls import control_values, present
from facefusion_ui.ui.media_view import target_info
from facefusion_ui.ui.processor_options import MASK_SETTINGS, option_values, processor_setting_keys
from facefusion_ui.ui.services import UiServices

FACE_SETTINGS = ("face_selector_mode", "reference_face_distance")
OUTPUT_SETTINGS = (
    "output_image_quality",
    "output_video_encoder",
    "output_video_preset",
    "output_video_quality",
    "output_video_resolution",
    "output_video_fps",
    "video_copy_unchanged",
)
"""Output settings offered per run; names not (yet) in ``Settings`` are skipped."""
SAFE_NAME = re.compile(r"^[\w.\- ]+$")
FIXED_INPUTS = 9
"""sources, target, frame, trim start, trim end, processors, position, output folder, output name."""


def single_keys(registry: ProcessorRegistry) -> tuple[str, ...]:
    """The settings with a control on the Single tab, in the order the handlers get their values (the
    processors' own settings as ``registry``'s processors declare them)."""
    processor_keys = processor_setting_keys(registry)
    return present(dict.fromkeys((*FACE_SETTINGS, *processor_keys, *MASK_SETTINGS, *OUTPUT_SETTINGS)))


@dataclass(frozen=True)
class Request:
    sources: list[Path]
    target: Path | None
    frame: int
    trim: tuple[float | None, float | None]
    processors: list[str]
    position: int
    folder: str
    name: str
    setting_values: Sequence[Any]
    option_values: Sequence[Any]

    @classmethod
    def parse(cls, keys: Sequence[str], values: Sequence[Any]) -> Request:
        """The handlers' inputs: the fixed ones, then one per setting of ``keys``, then the options."""
        sources, target, frame, start, end, processors, position, folder, name = values[:FIXED_INPUTS]
        rest = values[FIXED_INPUTS:]
        return cls(
            file_paths(sources),
            file_path(target),
            int(frame or 0),
            (start, end),
            list(processors or []),
            int(position or 0),
            str(folder or ""),
            str(name or ""),
            rest[: len(keys)],
            rest[len(keys) :],
        )

    def files(self, mapped: bool = False) -> tuple[list[Path], Path]:
        """The source photos and the target; ``mapped``: the People panel gives the sources (none here)."""
        if mapped:
            if self.target is None:
                raise InputError("add a target first")
            return [], self.target
        if self.target is None or not self.sources:
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


def request_settings(services: UiServices, keys: Sequence[str], request: Request, trim: bool = True) -> Settings:
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
        **control_values(keys, request.setting_values),
    }
    if trim:
        items.update(trim_items(target, request.trim))
    settings = services.settings().with_items(**items)
    edits = option_values(services, request.processors, request.option_values)
    return settings.with_items(processor_options=merge_options(settings.processor_options, edits))


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

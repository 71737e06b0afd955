"""Typed settings: one frozen ``Settings`` dataclass, validated on every change.

Settings are built from defaults <- preset <- config <- CLI/UI edits through a ``StateManager``. Code
below the CLI and the UI never reads a global: it receives ``snapshot()``, a frozen ``Settings`` that
round-trips through JSON exactly, so a queued job keeps the settings it was queued with.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import re
import threading
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from facefusion_ui.errors import SettingsError
from facefusion_ui.types import (
    AGE_MODIFIER_DIRECTION_RANGE,
    DETECTOR_GRID,
    DETECTOR_SIZE_RANGE,
    FACE_SELECTOR_AGE_RANGE,
    FIXED_DETECTOR_SIZES,
    AgeModifierModel,
    BackgroundRemoverModel,
    ExecutionProvider,
    ExpressionRestorerArea,
    ExpressionRestorerModel,
    FaceCacheScope,
    FaceDetectorModel,
    FaceEditorModel,
    FaceEnhancerModel,
    FaceLandmarkerModel,
    FaceMaskArea,
    FaceMaskRegion,
    FaceMaskType,
    FaceOccluderModel,
    FaceParserModel,
    FaceRecognizerModel,
    FaceSelectorGender,
    FaceSelectorMode,
    FaceSelectorOrder,
    FaceSelectorRace,
    FaceSwapperModel,
    FaceSwapperPixelBoost,
    Fp16Mode,
    FrameColorizerModel,
    FrameColorizerSize,
    PageGroup,
    PresetName,
    ReferenceFaceFrom,
    ReleasePolicy,
    TempFrameFormat,
    VideoCopyMode,
    VideoEncoder,
    VideoPreset,
    choices,
)

_NAME = re.compile(r"^[a-z][a-z0-9_.\-]*$")
_RESOLUTION = re.compile(r"^(\d{1,5})\s*[xX×]\s*(\d{1,5})$")


def _fail(key: str, value: Any, allowed: str) -> SettingsError:
    """The setting's rule refused ``value``: said with the option on the command line, the field's page
    label on the page."""
    return SettingsError(
        f"invalid value {value!r} for setting '{key}': allowed {allowed}",
        setting=key,
        page_problem=f"{setting_label(key)}: {value!r} is not allowed here (allowed: {allowed})",
    )


class Rule:
    """How one setting is checked, and how it is typed on the command line."""

    def __call__(self, key: str, value: Any) -> Any:
        raise NotImplementedError

    def cli_options(self) -> dict[str, Any]:
        """Keyword arguments for ``argparse.add_argument`` (type, choices, nargs, action)."""
        return {}


@dataclass(frozen=True)
class OneOf(Rule):
    values: tuple[str, ...]
    optional: bool = False

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if value not in self.values:
            raise _fail(key, value, ", ".join(self.values) + (" or none" if self.optional else ""))
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"choices": self.values}


@dataclass(frozen=True)
class WholeNumber(Rule):
    low: int
    high: int
    optional: bool = False

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            allowed = f"a whole number from {self.low} to {self.high}" + (" or none" if self.optional else "")
            raise _fail(key, value, allowed)
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"type": int, "metavar": "N"}


@dataclass(frozen=True)
class Number(Rule):
    low: float
    high: float
    optional: bool = False

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.low <= value <= self.high:
            allowed = f"a number from {self.low:g} to {self.high:g}" + (" or none" if self.optional else "")
            raise _fail(key, value, allowed)
        return float(value)

    def cli_options(self) -> dict[str, Any]:
        return {"type": float, "metavar": "X"}


@dataclass(frozen=True)
class WholeMultiple(Rule):
    """A whole number from ``low`` to ``high`` that is a multiple of ``step`` (a network's input side)."""

    step: int
    low: int
    high: int

    def __call__(self, key: str, value: Any) -> Any:
        valid = isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high
        if not valid or value % self.step:
            raise _fail(key, value, f"a multiple of {self.step} from {self.low} to {self.high}")
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"type": int, "metavar": "PX"}


@dataclass(frozen=True)
class WholeChoice(Rule):
    """One of a few whole numbers (a size), or none when ``optional``."""

    values: tuple[int, ...]
    optional: bool = False

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if isinstance(value, bool) or value not in self.values:
            allowed = ", ".join(str(item) for item in self.values) + (" or none" if self.optional else "")
            raise _fail(key, value, allowed)
        return int(value)

    def cli_options(self) -> dict[str, Any]:
        return {"type": int, "choices": self.values, "metavar": "PX"}


@dataclass(frozen=True)
class Resolution(Rule):
    """A frame size written ``WIDTHxHEIGHT`` (e.g. 1280x720), each side from ``low`` to ``high`` pixels; none
    when ``optional``. Odd sides are rounded up to even where frames are encoded (4:2:0)."""

    low: int = 16
    high: int = 16384
    optional: bool = True

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        allowed = f"WIDTHxHEIGHT, e.g. 1280x720, each side {self.low} to {self.high}" + (
            " or none" if self.optional else ""
        )
        match = _RESOLUTION.match(value.strip()) if isinstance(value, str) else None
        if match is None:
            raise _fail(key, value, allowed)
        width, height = int(match.group(1)), int(match.group(2))
        if not (self.low <= width <= self.high and self.low <= height <= self.high):
            raise _fail(key, value, allowed)
        return f"{width}x{height}"

    def cli_options(self) -> dict[str, Any]:
        return {"metavar": "WIDTHxHEIGHT"}


class Flag(Rule):
    def __call__(self, key: str, value: Any) -> Any:
        if not isinstance(value, bool):
            raise _fail(key, value, "true or false")
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"action": argparse.BooleanOptionalAction}


@dataclass(frozen=True)
class Names(Rule):
    """A non-empty list of distinct names from ``values`` or, when empty (plugins), any lowercase name."""

    values: tuple[str, ...] = ()

    def __call__(self, key: str, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise _fail(key, value, "a list of names")
        items = tuple(value)
        allowed = ", ".join(self.values) if self.values else "lowercase names"
        if not items or len(set(items)) != len(items):
            raise _fail(key, value, f"one or more distinct names from {allowed}")
        for item in items:
            valid = item in self.values if self.values else isinstance(item, str) and bool(_NAME.match(item))
            if not valid:
                raise _fail(key, item, allowed)
        return items

    def cli_options(self) -> dict[str, Any]:
        return {"nargs": "+", **({"choices": self.values} if self.values else {"metavar": "NAME"})}


class Padding(Rule):
    """Percentages for the four sides (top, right, bottom, left), given as 1 to 4 whole numbers the way
    CSS and FaceFusion read them: one for all sides, two for top/bottom and right/left, three for top,
    right/left and bottom."""

    def __call__(self, key: str, value: Any) -> Any:
        allowed = "1 to 4 whole numbers from 0 to 100 (top right bottom left, in percent)"
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise _fail(key, value, allowed)
        items = tuple(value)
        valid = all(isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 100 for item in items)
        if not valid or not 1 <= len(items) <= 4:
            raise _fail(key, value, allowed)
        top, right, bottom, left = _sides(items)
        if top + bottom >= 100 or left + right >= 100:
            raise _fail(key, value, "paddings whose opposite sides add up to less than 100")
        return (top, right, bottom, left)

    def cli_options(self) -> dict[str, Any]:
        return {"nargs": "+", "type": int, "metavar": "PERCENT"}


class Color(Rule):
    """A colour as red, green, blue and alpha, each a whole number from 0 to 255 (three values: alpha
    255, opaque); none when unset (the user of the setting then picks its own default)."""

    optional = True

    def __call__(self, key: str, value: Any) -> Any:
        if value is None:
            return None
        allowed = "3 or 4 whole numbers from 0 to 255 (red green blue, then alpha) or none"
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise _fail(key, value, allowed)
        items = tuple(value)
        valid = all(isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 255 for item in items)
        if not valid or len(items) not in (3, 4):
            raise _fail(key, value, allowed)
        return items if len(items) == 4 else (*items, 255)

    def cli_options(self) -> dict[str, Any]:
        return {"nargs": "+", "type": int, "metavar": "RGBA"}


@dataclass(frozen=True)
class ModelName(Rule):
    """The name of a model of the catalog or one imported (``models import``), lowercase; whether it is
    installed and of the right kind is checked where it is used; none when optional."""

    optional: bool = True

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if not isinstance(value, str) or not _NAME.match(value):
            raise _fail(
                key, value, "a model name (lowercase letters, digits, _ . -)" + (" or none" if self.optional else "")
            )
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"metavar": "MODEL"}


def _sides(items: tuple[int, ...]) -> tuple[int, int, int, int]:
    if len(items) == 1:
        return (items[0],) * 4
    if len(items) == 2:
        return (items[0], items[1], items[0], items[1])
    if len(items) == 3:
        return (items[0], items[1], items[2], items[1])
    return (items[0], items[1], items[2], items[3])


@dataclass(frozen=True)
class FilePath(Rule):
    """A file's path (whether it exists is checked where it is used); None when optional."""

    optional: bool = True

    def __call__(self, key: str, value: Any) -> Any:
        if value is None and self.optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise _fail(key, value, "a file path" + (" or none" if self.optional else ""))
        return os.path.abspath(os.path.expanduser(value))  # a queued job may run in another folder

    def cli_options(self) -> dict[str, Any]:
        return {"metavar": "FILE"}


class ChunkSize(Rule):
    def __call__(self, key: str, value: Any) -> Any:
        if value == "auto":
            return value
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 86400:
            raise _fail(key, value, "'auto' or a whole number of seconds from 1 to 86400")
        return value

    def cli_options(self) -> dict[str, Any]:
        return {"metavar": "SECONDS|auto"}


class OptionValues(Rule):
    """Processor options: ``{processor: {option: value}}`` with JSON scalar values. Which options a
    processor takes is checked against its declaration where the processors are known (the registry)."""

    def __call__(self, key: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _fail(key, value, "an object of processor names to objects of option values")
        checked: dict[str, dict[str, Any]] = {}
        for processor, options in value.items():
            if not isinstance(processor, str) or not _NAME.match(processor) or not isinstance(options, Mapping):
                raise _fail(key, {processor: options}, "a processor name with an object of option values")
            for name, item in options.items():
                if not isinstance(name, str) or not isinstance(item, (bool, int, float, str)):
                    raise _fail(key, {processor: {name: item}}, "option names with true/false, numbers or text")
            checked[processor] = dict(options)
        return checked


def one_of(values: tuple[str, ...], optional: bool = False) -> Rule:
    return OneOf(values, optional)


def whole_number(low: int, high: int, optional: bool = False) -> Rule:
    return WholeNumber(low, high, optional)


def number(low: float, high: float, optional: bool = False) -> Rule:
    return Number(low, high, optional)


flag = Flag()
chunk_size = ChunkSize()
padding = Padding()
color = Color()


def names(values: tuple[str, ...] | None) -> Rule:
    return Names(values or ())


class Place(NamedTuple):
    """A setting's place on the page: its section, and its rank among that section's settings."""

    group: PageGroup
    rank: int


@dataclass(frozen=True)
class Facets:
    """What is known of a setting besides its rule and help, declared once beside it in ``Settings``; the
    lists of settings the other modules use are made from these."""

    frames: bool = True
    """Whether it can change the frames a run makes (in a chunk manifest's fingerprint); False for a
    setting that changes only how fast or in how much memory a run goes."""
    preset: int | None = None
    """Its rank among the values every preset file sets; None when presets do not set it."""
    page: tuple[Place, ...] = ()
    """Where the page shows it besides the preset values (the Settings tab, the Single tab)."""
    label: str | None = None
    """What the page calls it (None: its help text)."""
    worker: bool = False
    """Whether ``batch run`` and ``worker`` read it: their warm runtime and how they take jobs (every
    other setting comes with each job)."""


def _setting(
    default: Any,
    validator: Rule,
    help_text: str,
    *,
    frames: bool = True,
    preset: int | None = None,
    page: tuple[Place, ...] = (),
    label: str | None = None,
    worker: bool = False,
) -> Any:
    facets = Facets(frames, preset, page, label, worker)
    return field(default=default, metadata={"validate": validator, "help": help_text, "facets": facets})


def _options_setting(help_text: str) -> Any:
    metadata = {"validate": OptionValues(), "help": help_text, "cli": False, "facets": Facets()}
    return field(default_factory=dict, metadata=metadata)


@dataclass(frozen=True)
class Settings:
    """Every setting of the tool. Frozen: change it through ``StateManager`` or ``with_items``."""

    preset: PresetName = _setting("balanced", one_of(choices(PresetName)), "memory preset", frames=False, worker=True)
    processors: tuple[str, ...] = _setting(("face_swapper",), names(None), "processors applied in order")
    processor_options: dict[str, dict[str, Any]] = _options_setting(
        "options of the processors, by processor name (each processor declares its own)"
    )
    face_detector_model: FaceDetectorModel = _setting(
        "dlib_hog",
        one_of(choices(FaceDetectorModel)),
        "face detector",
        page=(Place("settings:faces", 1),),
        label="Face detector (dlib_hog: best recall, mediapipe_blazeface: faster)",
    )
    face_detector_size: int = _setting(
        640,
        WholeMultiple(DETECTOR_GRID, *DETECTOR_SIZE_RANGE),
        "detector input size (ONNX detectors; yoloface_8n and yunet_2023_mar take 640 only)",
    )
    face_detector_score: float = _setting(
        0.5, number(0.0, 1.0), "minimum detection confidence", page=(Place("settings:faces", 3),)
    )
    face_detector_upsample: int = _setting(1, whole_number(0, 3), "dlib upsampling steps for small faces")
    face_detector_interval: int = _setting(
        5,
        whole_number(1, 60),
        "videos: full-frame face detection every N frames, faces followed between (1: all)",
        page=(Place("settings:faces", 2),),
        label="Videos: full-frame detection every N frames, faces followed between",
    )
    face_landmarker_model: FaceLandmarkerModel = _setting(
        "dlib_68",
        one_of(choices(FaceLandmarkerModel)),
        "face landmarker",
        page=(Place("settings:faces", 4),),
    )
    face_recognizer_model: FaceRecognizerModel = _setting(
        "dlib_resnet",
        one_of(choices(FaceRecognizerModel)),
        "face recognizer",
        page=(Place("settings:faces", 5),),
    )
    face_swapper_model: FaceSwapperModel = _setting(
        "mesh_warp",
        one_of(choices(FaceSwapperModel)),
        "face swapper model",
    )
    face_swapper_pixel_boost: int | None = _setting(
        None,
        WholeChoice(typing.get_args(FaceSwapperPixelBoost), optional=True),
        "swap on an aligned crop this many px wide, in tiles of the model's size (none: the model's size)",
    )
    keep_source_glasses: bool = _setting(
        False,
        flag,
        "embedded swapper: keep the source photo's glasses (off: left out, the target's eyes show)",
    )
    face_enhancer_model: FaceEnhancerModel = _setting(
        "gfpgan_1.4",
        one_of(choices(FaceEnhancerModel)),
        "face enhancer model",
    )
    face_enhancer_weight: float = _setting(
        0.5,
        number(0.0, 1.0),
        "codeformer's fidelity weight: 0 restores most, 1 keeps the face closest",
    )
    face_enhancer_blend: int = _setting(
        80,
        whole_number(0, 100),
        "enhanced face weight in percent",
    )
    background_remover_model: BackgroundRemoverModel = _setting(
        "mediapipe_selfie_segmentation",
        one_of(choices(BackgroundRemoverModel)),
        "background remover model (mediapipe_selfie_segmentation: embedded, no download)",
    )
    background_remover_color: tuple[int, int, int, int] | None = _setting(
        None,
        color,
        "background remover: the background's colour as R G B A (A 0: transparent, 255: the colour alone); "
        "none: transparent for PNG and WebP images (they keep an alpha channel), green screen 0 255 0 255 "
        "for videos and JPEG",
    )
    age_modifier_model: AgeModifierModel = _setting(
        "fran", one_of(choices(AgeModifierModel)), "age modifier model (fran also needs the face classifier fairface)"
    )
    age_modifier_direction: int = _setting(
        0, whole_number(*AGE_MODIFIER_DIRECTION_RANGE), "age modifier: -100 younger .. 100 older (0: as is)"
    )
    frame_colorizer_model: FrameColorizerModel = _setting(
        "ddcolor", one_of(choices(FrameColorizerModel)), "frame colorizer model"
    )
    frame_colorizer_size: FrameColorizerSize = _setting(
        "256x256", one_of(choices(FrameColorizerSize)), "frame colorizer: the size the whole frame is coloured at"
    )
    frame_colorizer_blend: int = _setting(
        100, whole_number(0, 100), "frame colorizer: colorized frame weight in percent"
    )
    expression_restorer_model: ExpressionRestorerModel = _setting(
        "live_portrait", one_of(choices(ExpressionRestorerModel)), "expression restorer model"
    )
    expression_restorer_factor: int = _setting(
        80, whole_number(0, 100), "expression restorer: how much of the target's own expression comes back"
    )
    expression_restorer_areas: tuple[ExpressionRestorerArea, ...] = _setting(
        choices(ExpressionRestorerArea),
        names(choices(ExpressionRestorerArea)),
        "expression restorer: the face areas whose expression comes back",
    )
    face_editor_model: FaceEditorModel = _setting(
        "live_portrait", one_of(choices(FaceEditorModel)), "face editor model"
    )
    face_editor_eyebrow_direction: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: eyebrow direction (-1 .. 1, 0: as is)"
    )
    face_editor_eye_gaze_horizontal: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: eye gaze horizontal (-1 .. 1, 0: as is)"
    )
    face_editor_eye_gaze_vertical: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: eye gaze vertical (-1 .. 1, 0: as is)"
    )
    face_editor_eye_open_ratio: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: eye open ratio (-1 .. 1, 0: as is)"
    )
    face_editor_lip_open_ratio: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: lip open ratio (-1 .. 1, 0: as is)"
    )
    face_editor_mouth_grim: float = _setting(0.0, number(-1.0, 1.0), "face editor: mouth grim (-1 .. 1, 0: as is)")
    face_editor_mouth_pout: float = _setting(0.0, number(-1.0, 1.0), "face editor: mouth pout (-1 .. 1, 0: as is)")
    face_editor_mouth_purse: float = _setting(0.0, number(-1.0, 1.0), "face editor: mouth purse (-1 .. 1, 0: as is)")
    face_editor_mouth_smile: float = _setting(0.0, number(-1.0, 1.0), "face editor: mouth smile (-1 .. 1, 0: as is)")
    face_editor_mouth_position_horizontal: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: mouth position horizontal (-1 .. 1, 0: as is)"
    )
    face_editor_mouth_position_vertical: float = _setting(
        0.0, number(-1.0, 1.0), "face editor: mouth position vertical (-1 .. 1, 0: as is)"
    )
    face_editor_head_pitch: float = _setting(0.0, number(-1.0, 1.0), "face editor: head pitch (-1 .. 1, 0: as is)")
    face_editor_head_yaw: float = _setting(0.0, number(-1.0, 1.0), "face editor: head yaw (-1 .. 1, 0: as is)")
    face_editor_head_roll: float = _setting(0.0, number(-1.0, 1.0), "face editor: head roll (-1 .. 1, 0: as is)")
    deep_swapper_model: str | None = _setting(
        None,
        ModelName(),
        "deep swapper: your DeepFaceLab model, converted from .dfm to ONNX and added with 'models import FILE'",
    )
    deep_swapper_morph: int = _setting(
        100, whole_number(0, 100), "deep swapper: how far the face goes to the model's person (its morph input)"
    )
    source_audio: str | None = _setting(
        None,
        FilePath(),
        "lip syncer: the audio to sync the lips to (any audio file, or a video's audio track)",
    )
    face_selector_mode: FaceSelectorMode = _setting(
        "many",
        one_of(choices(FaceSelectorMode)),
        "faces to swap",
        page=(Place("single:faces", 1),),
        label="Which faces",
    )
    face_selector_order: FaceSelectorOrder = _setting(
        "large-small",
        one_of(choices(FaceSelectorOrder)),
        "face order for 'one' and positions",
        page=(Place("settings:faces", 8),),
    )
    face_selector_gender: FaceSelectorGender | None = _setting(
        None,
        one_of(choices(FaceSelectorGender), optional=True),
        "keep only faces of this gender (auto: the source face's; none: any); needs the fairface classifier",
        page=(Place("single:faces", 3),),
        label="Gender (none: any; auto: the source's; fairface)",
    )
    face_selector_race: FaceSelectorRace | None = _setting(
        None,
        one_of(choices(FaceSelectorRace), optional=True),
        "keep only faces of this race (auto: the source face's; none: any); needs the fairface classifier",
        page=(Place("single:faces", 4),),
        label="Race (none: any; auto: the source's; fairface)",
    )
    face_selector_age_start: int | None = _setting(
        None,
        whole_number(*FACE_SELECTOR_AGE_RANGE, optional=True),
        "keep only faces whose age range reaches this age or more (none: 0); needs the fairface classifier",
        page=(Place("single:faces", 5),),
        label="Age from (none: 0; fairface)",
    )
    face_selector_age_end: int | None = _setting(
        None,
        whole_number(*FACE_SELECTOR_AGE_RANGE, optional=True),
        "keep only faces whose age range reaches below this age (none: 100); needs the fairface classifier",
        page=(Place("single:faces", 6),),
        label="Age below (none: 100; fairface)",
    )
    reference_face_from: ReferenceFaceFrom = _setting(
        "frame", one_of(choices(ReferenceFaceFrom)), "reference mode: a face of the target, or the source person"
    )
    reference_face_position: int = _setting(0, whole_number(0, 1000), "reference face index in its frame")
    reference_frame_number: int = _setting(0, whole_number(0, 10**9), "frame holding the reference face")
    reference_face_distance: float | None = _setting(
        None,
        number(0.0, 4.0, optional=True),
        "same-person distance, recognizer's scale (none: its default)",
        page=(Place("single:faces", 2),),
        label="Reference: same-person distance",
    )
    face_recognition_score: float | None = _setting(
        None,
        number(0.0, 4.0, optional=True),
        "identity-cache match distance (none: recognizer default)",
        page=(Place("settings:faces", 6),),
        label="identity match distance",
    )
    face_cache_limit: int = _setting(
        100, whole_number(1, 100000), "identities kept in the cache", frames=False, preset=3
    )
    face_cache_lifetime: float = _setting(20.0, number(0.0, 86400.0), "seconds of video an identity lives", preset=4)
    face_identity_cache: bool = _setting(
        True, flag, "remember identities: skip the recognizer for tracked faces", page=(Place("settings:faces", 7),)
    )
    face_cache_scope: FaceCacheScope = _setting(
        "job",
        one_of(choices(FaceCacheScope)),
        "identities carry over chunks (job) or reset per chunk",
        preset=10,
    )
    face_mask_types: tuple[FaceMaskType, ...] = _setting(
        ("box",),
        names(choices(FaceMaskType)),
        "paste-back masks, combined by keeping the smallest value",
        page=(Place("single:mask", 1),),
    )
    face_mask_blur: float = _setting(
        0.3, number(0.0, 1.0), "paste-back mask feathering", page=(Place("single:mask", 2),)
    )
    face_mask_padding: tuple[int, int, int, int] = _setting(
        (0, 0, 0, 0),
        padding,
        "box mask padding in percent: top right bottom left (1 to 4 values)",
        page=(Place("single:mask", 3),),
    )
    face_mask_regions: tuple[FaceMaskRegion, ...] = _setting(
        choices(FaceMaskRegion),
        names(choices(FaceMaskRegion)),
        "region mask: the face parts swapped",
        page=(Place("single:mask", 4),),
    )
    face_mask_areas: tuple[FaceMaskArea, ...] = _setting(
        choices(FaceMaskArea),
        names(choices(FaceMaskArea)),
        "area mask: the face areas swapped",
        page=(Place("single:mask", 5),),
    )
    mouth_mask: bool = _setting(
        False, flag, "keep the target's mouth interior (teeth, tongue, lip motion)", page=(Place("single:mask", 6),)
    )
    video_chunk_size: int | str = _setting(
        60,
        chunk_size,
        "chunk length in seconds, or 'auto'",
        frames=False,
        preset=2,
        label="Chunk length (seconds or auto)",
    )
    face_occluder_model: FaceOccluderModel = _setting(
        "mediapipe",
        one_of(choices(FaceOccluderModel)),
        "occlusion mask's model: mediapipe (embedded) or an XSeg model (download)",
        page=(Place("single:mask", 7),),
    )
    face_parser_model: FaceParserModel = _setting(
        "mediapipe",
        one_of(choices(FaceParserModel)),
        "region mask's model: mediapipe (the embedded face mesh) or a BiSeNet face parser (download)",
        page=(Place("single:mask", 8),),
    )
    video_temp_frame_format: TempFrameFormat | None = _setting(
        None, one_of(choices(TempFrameFormat), optional=True), "write frames to disk (none: stream)"
    )
    video_copy_unchanged: VideoCopyMode = _setting(
        "auto",
        one_of(choices(VideoCopyMode)),
        "copy the GOPs no processor changes from the source instead of re-encoding them "
        "(auto: re-encode where that cannot be done; on: fail instead)",
        page=(Place("settings:output", 7), Place("single:output", 7)),
        label="Keep unchanged video as it is, not re-encoded (auto: where it can be; on: or stop)",
    )
    keep_temp: bool = _setting(False, flag, "keep the work directory after success", frames=False)
    fp16: Fp16Mode = _setting(
        "auto", one_of(choices(Fp16Mode)), "half-precision models", frames=False, preset=1, worker=True
    )
    frame_queue_size: int = _setting(
        32, whole_number(1, 1024), "frames buffered between stages", frames=False, preset=5
    )
    execution_providers: tuple[ExecutionProvider, ...] = _setting(
        ("cpu",),
        names(choices(ExecutionProvider)),
        "onnxruntime providers, in order of preference",
        frames=False,
        page=(Place("settings:execution", 1),),
        label="Execution providers (in order)",
        worker=True,
    )
    execution_device_id: int = _setting(
        0, whole_number(0, 64), "GPU index", frames=False, page=(Place("settings:execution", 2),), worker=True
    )
    execution_threads: int = _setting(
        2, whole_number(1, 128), "frame workers and intra-op threads", frames=False, preset=6, worker=True
    )
    max_concurrent_jobs: int = _setting(
        2, whole_number(1, 64), "jobs run at once by one worker process", frames=False, preset=7, worker=True
    )
    release_models: ReleasePolicy = _setting(
        "never", one_of(choices(ReleasePolicy)), "when to free models", frames=False, preset=8
    )
    memory_threshold_mb: int = _setting(
        1024, whole_number(0, 10**7), "free memory needed to start a job", frames=False, preset=9, worker=True
    )
    trim_frame_start: int | None = _setting(None, whole_number(0, 10**9, optional=True), "first frame")
    trim_frame_end: int | None = _setting(None, whole_number(1, 10**9, optional=True), "frame after the last")
    output_video_encoder: VideoEncoder = _setting(
        "libx264",
        one_of(choices(VideoEncoder)),
        "ffmpeg video encoder",
        page=(Place("settings:output", 1), Place("single:output", 2)),
    )
    output_video_quality: int | None = _setting(
        None,
        whole_number(0, 100, optional=True),
        "video quality, 100 is best (none: 80, but no finer than 5 CRF steps below the source's own CRF)",
        page=(Place("settings:output", 3), Place("single:output", 4)),
    )
    output_video_preset: VideoPreset = _setting(
        "veryfast",
        one_of(choices(VideoPreset)),
        "encoder speed",
        page=(Place("settings:output", 2), Place("single:output", 3)),
    )
    output_video_resolution: str | None = _setting(
        None,
        Resolution(),
        "videos: the output's frame size WIDTHxHEIGHT, e.g. 1280x720 (none: the source's)",
        page=(Place("settings:output", 4), Place("single:output", 5)),
    )
    output_video_fps: float | None = _setting(
        None,
        number(1.0, 240.0, optional=True),
        "videos: the output's frame rate, e.g. 25 (none: the source's)",
        page=(Place("settings:output", 5), Place("single:output", 6)),
    )
    output_image_quality: int = _setting(
        90,
        whole_number(0, 100),
        "image quality, 100 is best",
        page=(Place("settings:output", 6), Place("single:output", 1)),
    )

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = item.metadata["validate"](item.name, getattr(self, item.name))
            object.__setattr__(self, item.name, value)
        _check_detector_size(self.face_detector_model, self.face_detector_size)
        if (
            self.trim_frame_start is not None
            and self.trim_frame_end is not None
            and self.trim_frame_end <= self.trim_frame_start
        ):
            raise SettingsError(
                f"trim_frame_end ({self.trim_frame_end}) must be greater than "
                f"trim_frame_start ({self.trim_frame_start})"
            )
        _check_age_window(self.face_selector_age_start, self.face_selector_age_end)

    def with_items(self, **values: Any) -> Settings:
        unknown = sorted(set(values) - set(setting_keys()))
        if unknown:
            raise unknown_key_error(unknown[0])
        return dataclasses.replace(self, **values)

    def to_dict(self) -> dict[str, Any]:
        return {item.name: _jsonable(getattr(self, item.name)) for item in dataclasses.fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Settings:
        unknown = sorted(set(values) - set(setting_keys()))
        if unknown:
            raise unknown_key_error(unknown[0])
        return cls(**dict(values))

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls.from_dict(json.loads(text))


def _check_detector_size(model: str, size: int) -> None:
    """A detector exported at one size takes only that size (the others: any multiple of the grid)."""
    fixed = FIXED_DETECTOR_SIZES.get(model)
    if fixed is not None and size != fixed:
        raise _fail("face_detector_size", size, f"{fixed} only with face_detector_model {model} (its fixed input)")


def _check_age_window(start: int | None, end: int | None) -> None:
    """The age window holds at least one age: its end (exclusive, as FaceFusion's ``range``) after its start."""
    low, high = FACE_SELECTOR_AGE_RANGE
    if (end if end is not None else high) <= (start if start is not None else low):
        raise SettingsError(
            f"face_selector_age_end ({end}) must be greater than face_selector_age_start ({start})",
            setting="face_selector_age_end",
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return list(value) if isinstance(value, tuple) else value


def setting_keys() -> tuple[str, ...]:
    return tuple(item.name for item in dataclasses.fields(Settings))


def setting_help(key: str) -> str:
    return str(_field(key).metadata["help"])


def _field(key: str) -> dataclasses.Field[Any]:
    try:
        return _fields_by_name()[key]
    except KeyError:
        raise unknown_key_error(key) from None


@functools.cache
def _fields_by_name() -> Mapping[str, dataclasses.Field[Any]]:
    """Settings' fields by name, made once: the facets are read for every setting by many callers."""
    return types.MappingProxyType({item.name: item for item in dataclasses.fields(Settings)})


def unknown_key_error(key: str) -> SettingsError:
    return SettingsError(f"unknown setting '{key}': known settings are {', '.join(setting_keys())}", setting=key)


def setting_rule(key: str) -> Rule:
    rule: Rule = _field(key).metadata["validate"]
    return rule


def validate_item(key: str, value: Any) -> Any:
    """Check one value against its setting's rule and return it normalised (lists become tuples)."""
    return _field(key).metadata["validate"](key, value)


def merge_options(
    current: Mapping[str, Mapping[str, Any]], edits: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    merged = {processor: dict(options) for processor, options in current.items()}
    for processor, options in edits.items():
        merged.setdefault(processor, {}).update(options)
    return merged


def cli_setting_keys() -> tuple[str, ...]:
    """The settings with a ``--option`` of their own (processor options get one per option instead)."""
    return tuple(item.name for item in dataclasses.fields(Settings) if item.metadata.get("cli", True))


def setting_facets(key: str) -> Facets:
    facets: Facets = _field(key).metadata["facets"]
    return facets


def setting_label(key: str) -> str:
    """What the page calls setting ``key``: its label, else its help text."""
    return setting_facets(key).label or setting_help(key)


def frame_setting_keys() -> tuple[str, ...]:
    """The settings that can change the frames a run makes (a chunk manifest's fingerprint holds them)."""
    return tuple(key for key in setting_keys() if setting_facets(key).frames)


def preset_setting_keys() -> tuple[str, ...]:
    """The settings every preset file sets, in their rank's order."""
    ranked = [(facets.preset, key) for key in setting_keys() if (facets := setting_facets(key)).preset is not None]
    return tuple(key for _, key in sorted(ranked))


def page_setting_keys(group: PageGroup) -> tuple[str, ...]:
    """The settings the page shows in ``group``, in their rank's order."""
    ranked = [(place.rank, key) for key in setting_keys() for place in setting_facets(key).page if place.group == group]
    return tuple(key for _, key in sorted(ranked))


def worker_setting_keys() -> tuple[str, ...]:
    """The settings ``batch run`` and ``worker`` read themselves (their runtime, how they take jobs)."""
    return tuple(key for key in setting_keys() if setting_facets(key).worker)


class StateManager:
    """The mutable front of the settings, owned by the CLI or the UI (one per process, not global)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._lock = threading.Lock()
        self._settings = settings or Settings()

    def get_item(self, key: str) -> Any:
        _field(key)
        return getattr(self._settings, key)

    def set_item(self, key: str, value: Any) -> None:
        self.update({key: validate_item(key, value)})

    def update(self, values: Mapping[str, Any]) -> None:
        """Set several items at once: all are applied or, on the first bad one, none. Processor options
        merge option by option: an edit sets the options it names and keeps the others."""
        edits = dict(values)
        with self._lock:
            if "processor_options" in edits:
                edits["processor_options"] = merge_options(
                    self._settings.processor_options, validate_item("processor_options", edits["processor_options"])
                )
            self._settings = self._settings.with_items(**edits)

    def clear(self) -> None:
        with self._lock:
            self._settings = Settings()

    def snapshot(self) -> Settings:
        return self._settings

"""The lists made from the settings' facets (``state_manager``: whether a setting changes frames, whether
presets set it, where the page shows it and what it calls it), pinned to the values they had when each
was written out by hand; and every name any of them uses is a setting."""

from __future__ import annotations

import typing

import pytest

from facefusion_ui.cli import presets as presets_command
from facefusion_ui.errors import SettingsError
from facefusion_ui.presets import PRESET_KEYS
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import (
    Settings,
    page_setting_keys,
    setting_facets,
    setting_keys,
    setting_label,
    worker_setting_keys,
)
from facefusion_ui.types import FACE_EDITOR_CONTROLS, PageGroup, choices
from facefusion_ui.ui import processor_options, settings, single, single_request
from facefusion_ui.video.chunks import NOT_IN_FINGERPRINT

PRESET_VALUES = (
    "fp16",
    "video_chunk_size",
    "face_cache_limit",
    "face_cache_lifetime",
    "frame_queue_size",
    "execution_threads",
    "max_concurrent_jobs",
    "release_models",
    "memory_threshold_mb",
    "face_cache_scope",
)
SETTINGS_TAB = (
    ("Preset values (the preset fills them in; each can be changed)", PRESET_VALUES),
    ("Execution", ("execution_providers", "execution_device_id")),
    (
        "Faces",
        (
            "face_detector_model",
            "face_detector_interval",
            "face_detector_score",
            "face_landmarker_model",
            "face_recognizer_model",
            "face_recognition_score",
            "face_identity_cache",
            "face_selector_order",
        ),
    ),
    (
        "Output defaults",
        (
            "output_video_encoder",
            "output_video_preset",
            "output_video_quality",
            "output_video_resolution",
            "output_video_fps",
            "output_image_quality",
            "video_copy_unchanged",
        ),
    ),
)
SINGLE_FACES = (
    "face_selector_mode",
    "reference_face_distance",
    "face_selector_gender",
    "face_selector_race",
    "face_selector_age_start",
    "face_selector_age_end",
)
SINGLE_PROCESSORS = {
    "face_swapper": ("face_swapper_model", "face_swapper_pixel_boost", "keep_source_glasses"),
    "face_enhancer": ("face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight"),
    "lip_syncer": ("source_audio",),
    "background_remover": ("background_remover_model", "background_remover_color"),
    "age_modifier": ("age_modifier_model", "age_modifier_direction"),
    "frame_colorizer": ("frame_colorizer_model", "frame_colorizer_size", "frame_colorizer_blend"),
    "expression_restorer": ("expression_restorer_model", "expression_restorer_factor", "expression_restorer_areas"),
    "face_editor": ("face_editor_model", *(f"face_editor_{control}" for control in FACE_EDITOR_CONTROLS)),
    "deep_swapper": ("deep_swapper_model", "deep_swapper_morph"),
}
SINGLE_MASK = (
    "face_mask_types",
    "face_mask_blur",
    "face_mask_padding",
    "face_mask_regions",
    "face_mask_areas",
    "mouth_mask",
    "face_occluder_model",
    "face_parser_model",
)
SINGLE_OUTPUT = (
    "output_image_quality",
    "output_video_encoder",
    "output_video_preset",
    "output_video_quality",
    "output_video_resolution",
    "output_video_fps",
    "video_copy_unchanged",
)


def test_presets_set_the_same_settings_in_the_same_order() -> None:
    assert PRESET_KEYS == PRESET_VALUES


def test_the_fingerprint_leaves_out_the_settings_that_never_change_frames() -> None:
    assert set(NOT_IN_FINGERPRINT) == {
        "preset",
        "execution_providers",
        "execution_device_id",
        "execution_threads",
        "frame_queue_size",
        "max_concurrent_jobs",
        "release_models",
        "memory_threshold_mb",
        "keep_temp",
        "video_chunk_size",
        "face_cache_limit",
        "fp16",
    }


def test_the_settings_tab_shows_the_same_groups() -> None:
    assert tuple((title, tuple(keys)) for title, keys in settings.GROUPS) == SETTINGS_TAB
    assert settings.settings_keys() == tuple(key for _, keys in SETTINGS_TAB for key in keys)


def test_the_single_tab_shows_the_same_settings() -> None:
    assert single_request.FACE_SETTINGS == SINGLE_FACES
    registry = ProcessorRegistry.discover()
    assert {name: processor_options.processor_settings(registry, name) for name in SINGLE_PROCESSORS} == {
        name: keys for name, keys in SINGLE_PROCESSORS.items() if name in registry.names()
    }
    assert processor_options.MASK_SETTINGS == SINGLE_MASK
    assert single_request.OUTPUT_SETTINGS == SINGLE_OUTPUT
    processor_keys = tuple(key for name in registry.names() for key in SINGLE_PROCESSORS.get(name, ()))
    assert single_request.single_keys(registry) == (*SINGLE_FACES, *processor_keys, *SINGLE_MASK, *SINGLE_OUTPUT)


def test_batch_run_and_worker_read_only_their_runtime_and_scheduling_settings() -> None:
    assert worker_setting_keys() == (
        "preset",
        "fp16",
        "execution_providers",
        "execution_device_id",
        "execution_threads",
        "max_concurrent_jobs",
        "memory_threshold_mb",
    )


def test_the_page_calls_a_few_settings_by_a_label_of_their_own() -> None:
    labelled = {key: setting_label(key) for key in setting_keys() if setting_facets(key).label}
    assert labelled == {
        "face_detector_model": "Face detector (dlib_hog: best recall, mediapipe_blazeface: faster)",
        "face_detector_interval": "Videos: full-frame detection every N frames, faces followed between",
        "face_selector_mode": "Which faces",
        "reference_face_distance": "Reference: same-person distance",
        "face_selector_gender": "Gender (none: any; auto: the source's; fairface)",
        "face_selector_race": "Race (none: any; auto: the source's; fairface)",
        "face_selector_age_start": "Age from (none: 0; fairface)",
        "face_selector_age_end": "Age below (none: 100; fairface)",
        "face_recognition_score": "identity match distance",
        "video_chunk_size": "Chunk length (seconds or auto)",
        "execution_providers": "Execution providers (in order)",
        "video_copy_unchanged": "Keep unchanged video as it is, not re-encoded (auto: where it can be; on: or stop)",
    }
    assert setting_label("face_mask_blur") == "paste-back mask feathering"  # no label: its help text


def test_ranks_are_distinct_in_each_group() -> None:
    ranks = [setting_facets(key).preset for key in PRESET_KEYS]
    assert len(set(ranks)) == len(ranks)
    for group in choices(PageGroup):
        placed = [place.rank for key in setting_keys() for place in setting_facets(key).page if place.group == group]
        assert len(set(placed)) == len(placed), group
        assert placed, f"no setting is placed in {group}"


def test_every_name_a_list_of_settings_uses_is_a_setting() -> None:
    """A misspelt or removed name fails here instead of dropping out of the page silently."""
    named = {
        *PRESET_KEYS,
        *NOT_IN_FINGERPRINT,
        *settings.settings_keys(),
        *settings.MODEL_SETTINGS,
        *single_request.single_keys(ProcessorRegistry.discover()),
        *worker_setting_keys(),
        *presets_command.COLUMNS,
        *(key for group in typing.get_args(PageGroup) for key in page_setting_keys(group)),
    }
    assert named - set(setting_keys()) == set()
    assert {"face_selector_mode", "reference_face_distance"} <= set(single.FACE_INFOS)
    assert set(single.FACE_INFOS) <= set(setting_keys())
    with pytest.raises(SettingsError, match="unknown setting 'no_such_setting'"):
        setting_facets("no_such_setting")
    assert setting_keys() == tuple(field for field in Settings.__dataclass_fields__)

"""The lists made from the settings' facets (``state_manager``: whether a setting changes frames, whether
presets set it, where the page shows it and what it calls it), pinned to the values they had when each
was written out by hand; and every name any of them uses is a setting."""

from __future__ import annotations

from facefusion_ui.presets import PRESET_KEYS
from facefusion_ui.ui import processor_options, settings, single_request
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
SINGLE_FACES = ("face_selector_mode", "reference_face_distance")
SINGLE_PROCESSORS = {
    "face_swapper": ("face_swapper_model", "face_swapper_pixel_boost", "keep_source_glasses"),
    "face_enhancer": ("face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight"),
    "lip_syncer": ("source_audio",),
}
SINGLE_MASK = (
    "face_mask_types",
    "face_mask_blur",
    "face_mask_padding",
    "face_mask_regions",
    "face_mask_areas",
    "mouth_mask",
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
    assert {name: processor_options.processor_settings(name) for name in SINGLE_PROCESSORS} == SINGLE_PROCESSORS
    assert processor_options.MASK_SETTINGS == SINGLE_MASK
    assert single_request.OUTPUT_SETTINGS == SINGLE_OUTPUT
    processor_keys = tuple(key for keys in SINGLE_PROCESSORS.values() for key in keys)
    assert single_request.single_keys() == (*SINGLE_FACES, *processor_keys, *SINGLE_MASK, *SINGLE_OUTPUT)

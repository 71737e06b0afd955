"""Tiny third-party processor plugins, installed the way pip lays them out (module + .dist-info)."""

from __future__ import annotations

from pathlib import Path

from facefusion_ui.processors.registry import BUILTIN_PROCESSORS, ENTRY_POINT_GROUP, ProcessorEntry, ProcessorRegistry

PLUGIN_MODULE = '''
"""Test processors: invert (fast, no model), flaky (fails transiently, then works), tint (options),
outliner (the optional face parts), broken."""
import numpy as np

from facefusion_ui.errors import FfmpegError
from facefusion_ui.processors.options import ProcessorOption


class Invert:
    name = "invert"

    def __init__(self, settings, runtime):
        self.settings = settings

    def required_models(self):
        return ()

    def pre_check(self):
        return []

    def changes_frame(self, faces):
        return True

    def process_frame(self, frame, context):
        return (255 - frame).astype(np.uint8)

    def release(self):
        pass


class Flaky(Invert):
    """Fails with a transient ffmpeg error while ``failures_left`` > 0 (shared by all instances)."""

    name = "flaky"
    failures_left = 0

    def process_frame(self, frame, context):
        if Flaky.failures_left > 0:
            Flaky.failures_left -= 1
            raise FfmpegError("the encoder crashed (simulated)")
        return super().process_frame(frame, context)


class Tint(Invert):
    """Fills one colour channel of the whole frame with ``level`` x ``gain`` (its options)."""

    name = "tint"
    options = (
        ProcessorOption("level", int, 200, help="value written into the channel", low=0, high=255),
        ProcessorOption("channel", str, "red", help="which channel", choices=("blue", "green", "red")),
        ProcessorOption("enabled", bool, True, help="tint at all"),
        ProcessorOption("gain", float, 1.0, help="multiplies the level", low=0.0, high=1.0),
    )

    def process_frame(self, frame, context):
        if not context.options["enabled"]:
            return frame
        out = frame.copy()
        channel = ("blue", "green", "red").index(context.options["channel"])
        out[:, :, channel] = int(context.options["level"] * context.options["gain"])
        return out


class Outliner(Invert):
    """Declares the optional parts a built-in declares: what it does and a setting of its own (on its
    factory, as the built-ins do), and as the embedded swapper does, that it draws with the faces'
    smoothed meshes, never reads their 68 landmarks, and where it pastes a face back (the face's box
    grown by a tenth of its width on each side). Leaves the frame as it is."""

    name = "outliner"
    summary = "outlines the faces it would change"
    reads_settings = ("face_enhancer_model",)
    needs_68_landmarks = False
    needs_smoothed_mesh = True

    def changes_frame(self, faces):
        return bool(faces)

    def process_frame(self, frame, context):
        return frame

    def mask_outline(self, face):
        x1, y1, x2, y2 = (float(value) for value in face.bbox)
        grow = (x2 - x1) / 10
        x1, y1, x2, y2 = x1 - grow, y1 - grow, x2 + grow, y2 + grow
        return [np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], dtype=np.float32)]


class Broken:
    def __init__(self, settings, runtime):
        pass
'''


def install_plugin(site: Path) -> Path:
    """Write the plugin package into ``site`` (add it to sys.path or PYTHONPATH to use it)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "ffui_test_plugin.py").write_text(PLUGIN_MODULE)
    info = site / "ffui_test_plugin-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ffui-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ninvert = ffui_test_plugin:Invert\nflaky = ffui_test_plugin:Flaky\n"
        "tint = ffui_test_plugin:Tint\nbroken = ffui_test_plugin:Broken\n"
    )
    return site


def registry_with_plugins() -> ProcessorRegistry:
    """Built-ins plus the test plugins (their module must be importable)."""
    entries = [ProcessorEntry(name, target, "built-in") for name, target in BUILTIN_PROCESSORS.items()]
    entries += [
        ProcessorEntry(name, f"ffui_test_plugin:{cls}", "plugin from ffui-test-plugin")
        for name, cls in (("invert", "Invert"), ("flaky", "Flaky"), ("tint", "Tint"))
    ]
    return ProcessorRegistry(entries)

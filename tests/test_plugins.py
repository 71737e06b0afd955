"""Processor plugins: a third-party package registered through an entry point is listed and runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from facefusion_ui.errors import PluginError, UsageError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.base import FrameContext, Processor
from facefusion_ui.processors.registry import ProcessorEntry, ProcessorRegistry
from facefusion_ui.state_manager import Settings
from tests.support.plugins import install_plugin


def test_plugin_is_discovered_and_processes_a_frame(tmp_path: Path) -> None:
    install_plugin(tmp_path)
    script = textwrap.dedent(
        """
        import numpy as np
        from facefusion_ui.faces.runtime import ModelRuntime
        from facefusion_ui.processors.base import FrameContext
        from facefusion_ui.processors.registry import ProcessorRegistry
        from facefusion_ui.state_manager import Settings

        registry = ProcessorRegistry.discover()
        entry = registry.entry("invert")
        print(entry.origin)
        processor = registry.create("invert", Settings(), ModelRuntime.create(Settings()))
        frame = np.full((4, 6, 3), 10, dtype=np.uint8)
        out = processor.process_frame(frame, FrameContext(0, 0.0, Settings()))
        print(int(out[0, 0, 0]), out.shape)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["plugin from ffui-test-plugin", "245 (4, 6, 3)"]


def test_plugin_choices_reach_the_cli(tmp_path: Path) -> None:
    install_plugin(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    script = "from facefusion_ui.processors.registry import ProcessorRegistry as R; print(R.discover().names())"
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert "'invert'" in completed.stdout and "'broken'" in completed.stdout


def test_protocol_is_checked_when_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    runtime = ModelRuntime.create(Settings())
    registry = ProcessorRegistry(
        [
            ProcessorEntry("broken", "ffui_test_plugin:Broken", "plugin from test"),
            ProcessorEntry("gone", "no_such_module:Thing", "plugin from test"),
            ProcessorEntry("invert", "ffui_test_plugin:Invert", "plugin from test"),
        ]
    )
    with pytest.raises(PluginError, match="does not follow the Processor protocol"):
        registry.create("broken", Settings(), runtime)
    with pytest.raises(PluginError, match="cannot be loaded"):
        registry.create("gone", Settings(), runtime)
    with pytest.raises(UsageError, match="unknown processor 'nope'"):
        registry.create("nope", Settings(), runtime)
    processor = registry.create("invert", Settings(), runtime)
    assert isinstance(processor, Processor)
    frame = np.zeros((2, 2, 3), np.uint8)
    assert processor.process_frame(frame, FrameContext(3, 0.1, Settings())).max() == 255


def test_plugin_cannot_take_a_builtin_name() -> None:
    registry = ProcessorRegistry(
        [
            ProcessorEntry("face_swapper", "a:B", "built-in"),
            ProcessorEntry("face_swapper", "evil:C", "plugin from evil"),
        ]
    )
    assert registry.entry("face_swapper").origin == "built-in"

"""The public API README shows: a script imports it from the package, and the import stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cv2
import pytest

import facefusion_ui
from tests.support import media


def test_the_public_names_are_the_ones_listed() -> None:
    assert sorted(facefusion_ui.PUBLIC_API) == sorted(set(facefusion_ui.__all__) - {"__version__"})


@pytest.mark.slow  # a whole swap
def test_readme_example_runs_on_an_image(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "face.png"), media.grace_hopper())
    cv2.imwrite(str(tmp_path / "group.png"), media.t1())
    from facefusion_ui import RunContext, StateManager, SwapJob, apply_preset, process

    state = StateManager()
    apply_preset(state, "balanced")
    state.set_item("face_selector_mode", "many")
    snapshot = state.snapshot()
    result = process(
        SwapJob.of(snapshot, [tmp_path / "face.png"], tmp_path / "group.png", tmp_path / "out.png"), RunContext()
    ).to_json()
    assert result["faces_swapped"] >= 4 and (tmp_path / "out.png").exists()


def test_importing_the_package_imports_no_heavy_module() -> None:
    code = "import sys, facefusion_ui; print(sorted(m for m in ('cv2', 'numpy', 'gradio') if m in sys.modules))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"

"""Shared fixtures: the checkout root, a runner for ``run.py`` in a subprocess, and a private data home."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.state_manager import Settings
from tests.support import onnx_models as onnx_models_module

ROOT = Path(__file__).resolve().parent.parent

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep jobs, settings and models of the tests away from the user's own."""
    home = tmp_path / "home"
    monkeypatch.setenv("FACEFUSION_UI_HOME", str(home))
    return home


@pytest.fixture
def run_cli() -> RunCli:
    def run(
        args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "run.py"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
            check=False,
        )

    return run


@pytest.fixture(scope="session")
def shared_runtime() -> Iterator[ModelRuntime]:
    """Embedded models loaded once for the whole session (as a worker process keeps them)."""
    runtime = ModelRuntime.create(Settings())
    yield runtime
    runtime.release_all()


@pytest.fixture
def onnx_models(tmp_path: Path) -> Path:
    """A models folder holding small ONNX stand-ins under the manifest's file names."""
    folder = tmp_path / "models"
    folder.mkdir()
    onnx_models_module.build_scrfd(folder / "det_10g.onnx")
    onnx_models_module.build_arcface(folder / "arcface_w600k_r50.onnx")
    onnx_models_module.build_inswapper(folder / "inswapper_128.onnx")
    onnx_models_module.build_gfpgan(folder / "gfpgan_1.4.onnx")
    return folder

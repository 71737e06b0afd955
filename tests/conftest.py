"""Shared fixtures: the checkout root, a runner for ``run.py`` in a subprocess, and a private data home."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

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

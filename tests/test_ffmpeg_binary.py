"""ffmpeg resolution: the system binary when on PATH, else imageio-ffmpeg's, else a clear error."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from facefusion_ui.errors import DependencyError
from facefusion_ui.video.ffmpeg import ffmpeg_version, resolve_ffmpeg
from tests.conftest import RunCli


def test_without_ffmpeg_on_path_the_imageio_binary_runs(tmp_path: Path) -> None:
    binary = resolve_ffmpeg(search_path=str(tmp_path), override="")
    assert binary.source == "imageio-ffmpeg"
    assert "imageio_ffmpeg" in binary.path
    assert ffmpeg_version(binary).startswith("ffmpeg version")
    encoders = subprocess.run(
        [binary.path, "-hide_banner", "-encoders"], capture_output=True, text=True, check=True
    ).stdout
    assert "libx264" in encoders


def test_system_ffmpeg_on_path_wins(tmp_path: Path) -> None:
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\necho 'ffmpeg version 9.9-system'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    binary = resolve_ffmpeg(search_path=str(tmp_path), override="")
    assert binary.source == "system" and binary.path == str(fake)
    assert ffmpeg_version(binary) == "ffmpeg version 9.9-system"


def test_environment_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACEFUSION_UI_FFMPEG", str(tmp_path / "missing"))
    with pytest.raises(DependencyError, match="FACEFUSION_UI_FFMPEG"):
        resolve_ffmpeg()
    imageio_binary = resolve_ffmpeg(search_path=str(tmp_path), override="").path
    monkeypatch.setenv("FACEFUSION_UI_FFMPEG", imageio_binary)
    assert resolve_ffmpeg().source == "environment"


def test_cli_uses_imageio_ffmpeg_when_path_has_none(run_cli: RunCli, tmp_path: Path) -> None:
    completed = run_cli(["--version"], env={"PATH": str(tmp_path) + os.pathsep + "/bin"})
    assert completed.returncode == 0, completed.stderr
    assert "(imageio-ffmpeg; ffmpeg version" in completed.stdout

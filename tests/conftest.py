"""Shared fixtures (the checkout root, runners for ``run.py`` in a subprocess or in this process, a private
data home) and the test tiers.

``make test-fast`` (``pytest --tier fast``) runs the unit tier alone: the files in ``UNIT_FILES``, less the
tests marked ``slow``, each marked ``unit``; the other files are not even imported. ``make test`` runs every
tier. A new test file is in the full tier until it is listed here: list it when its tests take well under a
second each and start no browser, Redis, video encode of any length or ``run.py`` process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.state_manager import Settings

if TYPE_CHECKING:
    from facefusion_ui.ui.services import UiServices
from tests.support import onnx_models as onnx_models_module

ROOT = Path(__file__).resolve().parent.parent

RunCli = Callable[..., subprocess.CompletedProcess[str]]
UNIT_FILES = frozenset(
    {
        "test_change_gate.py",
        "test_environment.py",
        "test_ffmpeg_commands.py",
        "test_progress.py",
        "test_function_length.py",
        "test_identity_cache.py",
        "test_import_cycles.py",
        "test_layers.py",
        "test_models_cli.py",
        "test_people_units.py",
        "test_presets.py",
        "test_settings.py",
        "test_stream_queues.py",
        "test_yuv_frames.py",
        "test_model_families.py",
        "test_onnx_path.py",
        "test_mesh_warp.py",
        "test_seam_blend.py",
        "test_stream_reader_writer.py",
        "test_stream_chunk.py",
        "test_public_api.py",
        "test_ui_services.py",
        "test_setting_facets.py",
        "test_job_execution.py",
        "test_ffmpeg_binary.py",
        "test_models_download.py",
        "test_startup.py",
        "test_background_families.py",
        "test_age_modifier.py",
        "test_frame_colorizer.py",
        "test_expression_restorer.py",
        "test_frame_enhancer_models.py",
        "test_face_editor.py",
        "test_deep_swapper.py",
        "test_live_units.py",
        "test_model_loading.py",
        "test_swapper_hint.py",
        "test_mesh_model.py",
        "test_probe_prefetch.py",
    }
)
"""The unit tier: pure functions, small structures, in-process checks of the command line."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier", choices=("fast", "all"), default="all", help="fast: the unit tier alone (make test-fast)"
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("tier") != "fast" or collection_path.suffix != ".py":
        return None
    return collection_path.name.startswith("test_") and collection_path.name not in UNIT_FILES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fast = config.getoption("tier") == "fast"
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        unit = item.path.name in UNIT_FILES and item.get_closest_marker("slow") is None
        if unit:
            item.add_marker(pytest.mark.unit)
        (kept if unit or not fast else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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


@pytest.fixture
def cli_here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """``run.py ARGS`` in this process, for tests of the arguments' checks and the error lines, where the
    process boundary is not what is tested: the same parser, handlers and exit codes, without the second
    or two an interpreter takes to start and import."""
    from facefusion_ui.cli.app import run as run_here

    def run(
        args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        try:
            code = run_here(list(args))
        except SystemExit as stop:  # argparse's usage errors and --help
            code = stop.code if isinstance(stop.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["run.py", *args], code, out, err)

    return run


@pytest.fixture
def services(private_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UiServices]:
    """The page's services on the private home, queue only (nothing runs the jobs). Gradio copies the
    files it is given into its cache: kept in the home as ``start_ui`` does."""
    from facefusion_ui.ui.services import UiServices  # the page's modules only for the tests that use it

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(private_home / "ui-uploads"))
    created = UiServices.create(overrides={"output_video_preset": "ultrafast"}, start_worker=False)
    yield created
    created.stop()


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

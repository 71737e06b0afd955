"""A wheel built from the checkout carries its presets and model manifest, and keeps weights out of itself.

The wheel is built from a copy of the sources (pip builds in place and would leave ``build/`` behind),
installed with ``pip install --target`` and run from a folder outside the checkout, with the venv's
interpreter (its dependencies are there) and ``PYTHONPATH`` pointing at the installed copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PRESETS = ("balanced", "lightweight", "strict")
CLI = "from facefusion_ui.cli import main; raise SystemExit(main())"


def _run(command: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        list(command), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, check=False
    )
    assert completed.returncode == 0, f"{' '.join(command)}\n{completed.stdout}\n{completed.stderr}"
    return completed


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` + ``pip install --target``: the folder the package was installed into."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for folder in ("facefusion_ui", "presets"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    env = {**os.environ, "PIP_NO_INPUT": "1"}
    _run([*pip, "wheel", "--no-deps", str(source), "-w", str(work / "dist")], work, env, 600)
    wheels = list((work / "dist").glob("facefusion_ui-*.whl"))
    assert len(wheels) == 1, wheels
    site = work / "site"
    _run([*pip, "install", "--no-deps", "--target", str(site), str(wheels[0])], work, env, 600)
    return site


def _installed_env(site: Path, home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("FACEFUSION_UI_")}
    return {**env, "PYTHONPATH": str(site), "FACEFUSION_UI_HOME": str(home)}


def test_the_wheel_ships_presets_and_manifest(installed: Path, tmp_path: Path) -> None:
    data = installed / "facefusion_ui" / "data"
    assert sorted(p.stem for p in (data / "presets").glob("*.toml")) == list(PRESETS)
    assert (data / "models" / "manifest.json").is_file()


def test_installed_package_lists_presets_and_models_from_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    home = tmp_path / "user-home"
    env = _installed_env(installed, home)
    imported = _run([sys.executable, "-c", "import facefusion_ui; print(facefusion_ui.__file__)"], outside, env, 120)
    assert Path(imported.stdout.strip()).resolve().is_relative_to(installed.resolve()), imported.stdout

    presets = json.loads(_run([sys.executable, "-c", CLI, "presets", "list", "--json"], outside, env, 300).stdout)
    assert sorted(p["name"] for p in presets["presets"]) == list(PRESETS)
    assert all(Path(p["path"]).resolve().is_relative_to(installed.resolve()) for p in presets["presets"])
    table = _run([sys.executable, "-c", CLI, "presets", "list"], outside, env, 300).stdout
    assert all(name in table for name in PRESETS), table

    manifest = json.loads((ROOT / "facefusion_ui" / "data" / "models" / "manifest.json").read_text())
    expected = sorted(entry["name"] for entry in manifest["models"])
    models = json.loads(_run([sys.executable, "-c", CLI, "models", "list", "--json"], outside, env, 300).stdout)
    assert sorted(m["name"] for m in models["models"]) == expected
    # downloads go to the user's data home, never into the installed package
    assert Path(models["models_dir"]) == home / "models"
    table = _run([sys.executable, "-c", CLI, "models", "list"], outside, env, 300).stdout
    assert all(name in table for name in expected), table


def test_presets_override_still_replaces_the_shipped_files(installed: Path, tmp_path: Path) -> None:
    folder = tmp_path / "my-presets"
    shutil.copytree(installed / "facefusion_ui" / "data" / "presets", folder)
    text = (folder / "strict.toml").read_text().replace("frame_queue_size = 4", "frame_queue_size = 3")
    (folder / "strict.toml").write_text(text)
    env = {**_installed_env(installed, tmp_path / "user-home"), "FACEFUSION_UI_PRESETS": str(folder)}
    shown = _run([sys.executable, "-c", CLI, "presets", "show", "strict", "--json"], tmp_path, env, 300).stdout
    assert '"frame_queue_size": 3' in shown, shown


def test_the_wheel_declares_the_redis_extra(installed: Path) -> None:
    """``python -m facefusion_ui.installer --extras redis`` installs ``facefusion-ui[redis]``."""
    (metadata,) = installed.glob("facefusion_ui-*.dist-info/METADATA")
    lines = metadata.read_text(encoding="utf-8").splitlines()
    assert "Provides-Extra: redis" in lines
    redis_requirements = sorted(
        line.split(":", 1)[1].split(";")[0].strip()
        for line in lines
        if line.startswith("Requires-Dist:") and 'extra == "redis"' in line
    )
    assert redis_requirements == ["redis>=5", "rq>=2"]


@pytest.mark.parametrize("missing", ["rq", "redis"])
def test_a_redis_backend_without_the_extra_names_it_in_one_line(missing: str, tmp_path: Path) -> None:
    # a None entry in sys.modules makes the import fail as if the package were not installed
    hide = f"import sys; sys.modules[{missing!r}] = None; {CLI}"
    for args in (["batch", "list"], ["worker", "--burst"]):
        completed = subprocess.run(
            [sys.executable, "-c", hide, *args, "--backend", "redis://127.0.0.1:9/0"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
        assert completed.returncode == 1, completed.stderr
        assert "Traceback" not in completed.stderr
        (line,) = completed.stderr.strip().splitlines()
        assert f"'{missing}'" in line and "--extras redis" in line, line


def test_the_wheels_package_list_names_every_package() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "facefusion_ui").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(found - listed)}"

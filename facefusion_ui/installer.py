"""Install facefusion_ui with exactly one onnxruntime and one cv2 (standard library only).

A plain ``pip install`` of our dependencies ends broken in two ways:

* insightface requires the CPU ``onnxruntime``, which writes the same ``onnxruntime/`` module as
  ``onnxruntime-gpu`` and so hides the CUDA provider;
* insightface requires ``opencv-python`` while mediapipe requires ``opencv-contrib-python``; both write
  ``cv2/``.

The fix: before installing the project, build two empty "shim" distributions named ``onnxruntime`` and
``opencv-python`` that only depend on ``onnxruntime-gpu`` / ``opencv-contrib-python`` at the exact
versions installed. Every requirement is then satisfied (``pip check`` is clean) and each module is
written by one package only. If an earlier plain install left the real packages behind, pip replaces
them by the shims, which deletes shared files; the repair step reinstalls the real builds.

Run from the checkout: ``python -m facefusion_ui.installer`` (creates ``.venv``), or with
``--no-venv`` to install into the running interpreter.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

SUPPORTED_PYTHON = ((3, 10), (3, 12))
SHIM_MARKER = "facefusionui.shim"
PROJECT_ROOT = Path(__file__).resolve().parent.parent

VERIFY_SNIPPET = """
import importlib.metadata as md, sys
import cv2, onnxruntime
expected_cv2 = md.version("opencv-contrib-python")
if cv2.__version__ != expected_cv2.rsplit(".", 1)[0]:
    raise SystemExit(f"cv2 {cv2.__version__} does not come from opencv-contrib-python {expected_cv2}")
if not hasattr(onnxruntime, "InferenceSession"):
    raise SystemExit("onnxruntime is incomplete: its files were overwritten")
"""


class InstallError(Exception):
    """An install step failed; the message says which and what to do."""


def wants_gpu_runtime(system: str, machine: str) -> bool:
    """NVIDIA publishes onnxruntime-gpu for Linux and Windows on x86_64 only."""
    return system in ("Linux", "Windows") and machine.lower() in ("x86_64", "amd64")


def shim_pyproject(name: str, real_name: str, real_version: str) -> str:
    """The pyproject.toml of an empty distribution ``name`` that stands for ``real_name``."""
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{real_version}+{SHIM_MARKER}"\n'
        f'description = "facefusion_ui shim: {name} is provided by {real_name} {real_version}"\n'
        f'dependencies = ["{real_name}=={real_version}"]\n\n'
        "[tool.setuptools]\npackages = []\npy-modules = []\n"
    )


def write_shim(folder: Path, name: str, real_name: str, real_version: str) -> Path:
    shim = folder / name
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "pyproject.toml").write_text(shim_pyproject(name, real_name, real_version), encoding="utf-8")
    return shim


def venv_python(venv_dir: Path) -> Path:
    scripts = "Scripts" if platform.system() == "Windows" else "bin"
    return venv_dir / scripts / ("python.exe" if platform.system() == "Windows" else "python")


def run(command: list[str]) -> None:
    print("+ " + " ".join(command), flush=True)
    completed = subprocess.run(command, check=False)
    if completed.returncode != 0:
        raise InstallError(f"command failed with exit code {completed.returncode}: {' '.join(command)}")


def installed_version(python: Path, distribution: str) -> str:
    completed = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise InstallError(f"{distribution} is not installed after the first install step")
    return completed.stdout.strip()


def verify(python: Path) -> bool:
    return subprocess.run([str(python), "-c", VERIFY_SNIPPET], check=False).returncode == 0


def install(python: Path, extras: str, quiet: bool) -> None:
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"] + (["-q"] if quiet else [])
    gpu = wants_gpu_runtime(platform.system(), platform.machine())
    runtime = "onnxruntime-gpu" if gpu else "onnxruntime"
    run([*pip, f"{runtime}>=1.20,<2", "opencv-contrib-python>=4.8"])
    runtime_version = installed_version(python, runtime)
    opencv_version = installed_version(python, "opencv-contrib-python")
    with tempfile.TemporaryDirectory(prefix="facefusion_ui-shims-") as temp:
        shims = [str(write_shim(Path(temp), "opencv-python", "opencv-contrib-python", opencv_version))]
        if gpu:
            shims.append(str(write_shim(Path(temp), "onnxruntime", "onnxruntime-gpu", runtime_version)))
        target = f"{PROJECT_ROOT}[{extras}]" if extras else str(PROJECT_ROOT)
        run([*pip, "-e", target, *shims])
    if not verify(python):
        print("repairing files overwritten by an earlier install", flush=True)
        run(
            [
                *pip,
                "--force-reinstall",
                "--no-deps",
                f"{runtime}=={runtime_version}",
                f"opencv-contrib-python=={opencv_version}",
            ]
        )
        if not verify(python):
            raise InstallError("onnxruntime or cv2 is still broken: delete the virtual environment and rerun")
    run([str(python), "-m", "pip", "check"])


def check_python(version: tuple[int, int]) -> None:
    low, high = SUPPORTED_PYTHON
    if not low <= version <= high:
        raise InstallError(
            f"Python {version[0]}.{version[1]} is not supported: mediapipe 0.10.14 needs Python "
            f"{low[0]}.{low[1]}-{high[0]}.{high[1]}; run this installer with one of those"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install facefusion_ui and its dependencies.")
    parser.add_argument("--venv", default=".venv", help="virtual environment folder (default .venv)")
    parser.add_argument("--no-venv", action="store_true", help="install into this interpreter instead")
    parser.add_argument("--extras", default="", help="optional dependency groups, comma-separated: test, redis")
    parser.add_argument("--quiet", action="store_true", help="less pip output")
    args = parser.parse_args(argv)
    try:
        check_python(sys.version_info[:2])
        python = Path(sys.executable)
        if not args.no_venv:
            venv_dir = Path(args.venv)
            python = venv_python(venv_dir)
            if not python.exists():
                venv.EnvBuilder(with_pip=True).create(venv_dir)
            run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-U", "pip"])
        install(python, args.extras, args.quiet)
    except InstallError as error:
        print(f"install failed: {error}", file=sys.stderr)
        return 1
    print(f"facefusion_ui is installed for {python}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``run.py doctor`` and ``--version``: ffmpeg in use, onnxruntime providers really usable, memory."""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from facefusion_ui.cli.presets import describe_memory, machine_suggestion
from facefusion_ui.types import ExecutionProvider, choices
from facefusion_ui.version import __version__


def environment_report(requested: Sequence[ExecutionProvider]) -> dict[str, Any]:
    from facefusion_ui.inference import available_providers, check_provider, fallback_message
    from facefusion_ui.video.ffmpeg import ffmpeg_version, resolve_ffmpeg

    binary = resolve_ffmpeg()
    checks = [check_provider(name) for name in requested]
    cuda = check_provider("cuda")
    runtime = "onnxruntime-gpu"
    try:
        runtime_version = version(runtime)
    except PackageNotFoundError:
        runtime, runtime_version = "onnxruntime", version("onnxruntime")
    return {
        "facefusion_ui": __version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "ffmpeg": {"path": binary.path, "source": binary.source, "version": ffmpeg_version(binary)},
        "onnxruntime": {"package": runtime, "version": runtime_version, "providers": available_providers()},
        "cuda": {"usable": cuda.usable, "reason": cuda.reason},
        "requested_providers": [
            {
                "provider": c.requested,
                "usable": c.usable,
                "reason": c.reason,
                "notice": None if c.usable else fallback_message(c.requested, c.reason),
            }
            for c in checks
        ],
        "memory": describe_memory(),
        "suggested_preset": machine_suggestion(),
    }


def print_report(report: dict[str, Any]) -> None:
    ffmpeg = report["ffmpeg"]
    runtime = report["onnxruntime"]
    print(f"facefusion_ui {report['facefusion_ui']} (Python {report['python']}, {report['platform']})")
    print(f"ffmpeg: {ffmpeg['path']} ({ffmpeg['source']}; {ffmpeg['version']})")
    print(f"{runtime['package']} {runtime['version']}: built-in providers {', '.join(runtime['providers'])}")
    cuda = report["cuda"]
    print("CUDA: usable" if cuda["usable"] else f"CUDA: not usable ({cuda['reason']})")
    for check in report["requested_providers"]:
        print(f"requested {check['provider']}: " + ("in use" if check["usable"] else check["notice"]))
    print(f"memory: {report['memory']}; suggested preset: {report['suggested_preset']}")


def run_doctor(args: argparse.Namespace) -> int:
    report = environment_report(args.execution_providers)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def print_version() -> int:
    """``--version``: the version, ffmpeg in use and the CPU provider (``doctor`` says more)."""
    print_report(environment_report(["cpu"]))
    return 0


class VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show version, ffmpeg and providers, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.exit(print_version())


def add_doctor_parser(commands: Any) -> None:
    doctor = commands.add_parser("doctor", help="check ffmpeg, onnxruntime providers and memory")
    doctor.add_argument(
        "--execution-providers",
        nargs="+",
        choices=choices(ExecutionProvider),
        default=["cpu"],
        help="providers to check (default cpu)",
    )
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(handler=run_doctor)

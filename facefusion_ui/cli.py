"""The command line: ``run.py [ui|process|batch|worker|models|presets|doctor]``.

Errors are one line on stderr; exit code 2 for a user mistake, 1 for an internal failure, 130 on
Ctrl-C. ``--verbose`` adds the traceback. This is the only module that ends the process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NoReturn

from facefusion_ui import __version__, cli_batch, cli_models
from facefusion_ui.errors import FacefusionError, UsageError
from facefusion_ui.faults import FaultInjection
from facefusion_ui.memory import probe_gpus, system_memory
from facefusion_ui.presets import PRESET_KEYS, Preset, load_preset, load_presets, suggest_preset
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.state_manager import Settings, setting_help, setting_keys, setting_rule
from facefusion_ui.types import ExecutionProvider, JobStatus, PresetName, choices

BACKEND_HELP = "sqlite (default, this machine) or redis://HOST:PORT/DB (several machines)"
COMMANDS = ("ui", "process", "batch", "worker", "models", "presets", "doctor")
Handler = Callable[[argparse.Namespace], int]


class OneLineParser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# Settings options -------------------------------------------------------------------------------------
def add_settings_arguments(parser: argparse.ArgumentParser, processor_names: Sequence[str] = ()) -> None:
    """One ``--option`` per setting, typed and with choices from its rule (types.py Literals)."""
    parser.set_defaults(takes_settings=True)
    group = parser.add_argument_group("settings (defaults <- --preset <- these options)")
    group.add_argument(
        "--preset",
        "--video-memory",
        dest="preset",
        choices=choices(PresetName),
        default=argparse.SUPPRESS,
        help="memory preset (default: balanced); --video-memory is an alias",
    )
    for key in setting_keys():
        if key == "preset":
            continue
        options = setting_rule(key).cli_options()
        if key == "processors" and processor_names:
            options["choices"] = tuple(processor_names)
            options.pop("metavar", None)
        default = getattr(Settings(), key)
        shown = " ".join(default) if isinstance(default, tuple) else default
        group.add_argument(
            "--" + key.replace("_", "-"),
            dest=key,
            default=argparse.SUPPRESS,
            help=f"{setting_help(key)} (default: {shown})",
            **options,
        )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """defaults <- preset <- saved settings (the UI's Settings tab) <- command-line options, validated."""
    from facefusion_ui.config import build_state

    state = build_state(preset=getattr(args, "preset", None))
    edits = {key: getattr(args, key) for key in setting_keys() if key != "preset" and hasattr(args, key)}
    state.update(edits)
    return state.snapshot()


# presets ------------------------------------------------------------------------------------------------
def machine_suggestion() -> PresetName:
    gpus = probe_gpus()
    return suggest_preset(gpus[0].total_mb if gpus else None, system_memory().total_mb)


def format_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def preset_as_json(preset: Preset) -> dict[str, Any]:
    return {"name": preset.name, "description": preset.description, "path": str(preset.path), **preset.values}


def run_presets_list(args: argparse.Namespace) -> int:
    presets = load_presets()
    suggested = machine_suggestion()
    if args.json:
        print(json.dumps({"suggested": suggested, "presets": [preset_as_json(p) for p in presets]}, indent=2))
        return 0
    short = {
        "fp16": "fp16",
        "video_chunk_size": "chunk_s",
        "face_cache_limit": "cache",
        "face_cache_lifetime": "ttl_s",
        "frame_queue_size": "queue",
        "execution_threads": "threads",
        "max_concurrent_jobs": "jobs",
        "release_models": "release",
        "memory_threshold_mb": "min_free_mb",
        "face_cache_scope": "ids_per",
    }
    header = ["preset", *[short[key] for key in PRESET_KEYS]]
    rows = [
        [p.name + (" *" if p.name == suggested else ""), *[str(p.values[key]) for key in PRESET_KEYS]] for p in presets
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print(f"* suggested for this machine ({describe_memory()})")
    return 0


def run_presets_show(args: argparse.Namespace) -> int:
    preset = load_preset(args.name)
    if args.json:
        print(json.dumps(preset_as_json(preset), indent=2))
        return 0
    print(f"# {preset.name}: {preset.description}")
    print(f"# {preset.path}")
    for key in PRESET_KEYS:
        print(f"{key} = {format_value(preset.values[key])}")
    return 0


# doctor / --version -------------------------------------------------------------------------------------
def describe_memory() -> str:
    memory = system_memory()
    gpus = probe_gpus()
    gpu = ", ".join(f"GPU {g.index} {g.name} {g.total_mb} MiB" for g in gpus) or "no NVIDIA GPU"
    return f"RAM {memory.total_mb} MiB, {gpu}"


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


class VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show version, ffmpeg and providers, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print_report(environment_report(["cpu"]))
        parser.exit(0)


# ui ----------------------------------------------------------------------------------------------------------
def run_ui(args: argparse.Namespace) -> int:
    from facefusion_ui.ui.app import serve

    settings_from_args(args)  # bad option values are reported before anything starts
    edits = {key: getattr(args, key) for key in setting_keys() if key != "preset" and hasattr(args, key)}
    serve(args.host, args.port, args.share, args.auth, getattr(args, "preset", None), edits)
    return 0


def run_worker_command(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if args.backend.startswith(("redis://", "rediss://", "unix://")):
        return cli_batch.run_rq_workers(args, settings)
    if args.backend != "sqlite":
        raise UsageError(f"unknown backend '{args.backend}': use sqlite or redis://HOST:PORT/DB")
    args.until_empty, args.notify, args.on_complete, args.lease_seconds = args.burst, False, None, 30.0
    return cli_batch.run_worker(args, settings)


# process ------------------------------------------------------------------------------------------------
def run_process(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from facefusion_ui.core import process

    settings = settings_from_args(args)
    if not args.sources or not args.target or not args.output:
        raise UsageError("process needs -s SOURCE, -t TARGET and -o OUTPUT (see 'run.py process --help')")
    with tqdm(total=0, unit="frame", desc="processing", disable=None, leave=False) as bar:

        def progress(state: dict[str, Any]) -> None:
            bar.total = state["frames_total"]
            bar.set_postfix_str(f"chunk {state['chunk']}/{state['chunks_total']}", refresh=False)
            bar.update(state["frames_done"] - bar.n)

        injected = os.environ.get("FACEFUSION_UI_INJECT_FAULT")
        fault = FaultInjection.parse(injected) if injected else None
        result = process(
            settings,
            [Path(s) for s in args.sources],
            Path(args.target),
            Path(args.output),
            progress=progress,
            fault=fault,
        )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        stats = result.stats
        print(
            f"{result.output}: {stats.get('faces_swapped', 0)} of {stats.get('faces_detected', 0)} faces swapped "
            f"in {result.seconds:.1f} s"
        )
    return 0


# parser -----------------------------------------------------------------------------------------------
def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="run.py",
        description="facefusion_ui: swap faces in images and long videos (UI, command line, batches).",
        epilog="With no command, 'ui' opens the web page on http://127.0.0.1:7860.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    ui = commands.add_parser("ui", help="open the web page (default)")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    ui.add_argument("--share", action="store_true", help="ask Gradio for a public link")
    ui.add_argument("--auth", metavar="USER:PASS|FILE", help="protect the page with a password")
    add_settings_arguments(ui)
    ui.set_defaults(handler=run_ui)

    process = commands.add_parser("process", help="swap faces in one image or video")
    process.add_argument(
        "-s",
        "--source",
        dest="sources",
        action="append",
        metavar="SRC",
        help="source face image (repeat for several photos of one person)",
    )
    process.add_argument(
        "-t", "--target", "--input-video", dest="target", metavar="TARGET", help="target image or video"
    )
    process.add_argument("-o", "--output", "--output-video", dest="output", metavar="OUT", help="output path")
    process.add_argument("--json", action="store_true", help="print one JSON summary object")
    add_settings_arguments(process, processor_names=ProcessorRegistry.discover().names())
    process.set_defaults(handler=run_process)

    add_batch_parser(commands)

    worker = commands.add_parser("worker", help="run a queue worker (SQLite or Redis + RQ)")
    worker.add_argument("--backend", default="sqlite", help="sqlite (default) or redis://HOST:PORT/DB")
    worker.add_argument("--concurrency", type=int, default=1, help="jobs at once (Redis: worker processes)")
    worker.add_argument("--gpu-id", type=int, help="GPU index for this worker (sets CUDA_VISIBLE_DEVICES)")
    worker.add_argument("--burst", action="store_true", help="stop when the queues are empty")
    add_settings_arguments(worker)
    worker.set_defaults(handler=run_worker_command)

    models = commands.add_parser("models", help="list, verify, download or import models")
    model_commands = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    listing = model_commands.add_parser("list", help="known models and their state")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=lambda args: cli_models.run_models_list(args))
    verify = model_commands.add_parser("verify", help="check sha256 of installed models")
    verify.add_argument("names", nargs="*", metavar="NAME")
    verify.set_defaults(handler=lambda args: cli_models.run_models_verify(args))
    download = model_commands.add_parser("download", help="download models (resumable, verified)")
    download.add_argument("names", nargs="+", metavar="NAME")
    download.set_defaults(handler=lambda args: cli_models.run_models_download(args))
    importing = model_commands.add_parser("import", help="add a model file you already have")
    importing.add_argument("path", metavar="PATH")
    importing.add_argument("--name", help="manifest name, when the file name does not say it")
    importing.set_defaults(handler=lambda args: cli_models.run_models_import(args))

    presets = commands.add_parser("presets", help="memory presets")
    preset_commands = presets.add_subparsers(dest="presets_command", metavar="ACTION", required=True)
    preset_list = preset_commands.add_parser("list", help="the presets and their key values")
    preset_list.add_argument("--json", action="store_true")
    preset_list.set_defaults(handler=run_presets_list)
    preset_show = preset_commands.add_parser("show", help="every value one preset sets")
    preset_show.add_argument("name", choices=choices(PresetName))
    preset_show.add_argument("--json", action="store_true")
    preset_show.set_defaults(handler=run_presets_show)

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
    return parser


def add_batch_parser(commands: Any) -> None:
    batch = commands.add_parser("batch", help="the persistent job queue")
    actions = batch.add_subparsers(dest="batch_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="queue jobs: sources x targets")
    add.add_argument("-s", "--source", dest="sources", action="append", required=True, metavar="SRC")
    add.add_argument("-t", "--target", dest="targets", action="append", metavar="TARGET")
    add.add_argument("--targets-dir", metavar="DIR", help="queue every matching file of a folder")
    add.add_argument("--pattern", default="*.mp4", help="file pattern for --targets-dir (default *.mp4)")
    add.add_argument("--output-dir", required=True, metavar="OUT")
    add.add_argument("--priority", type=int, default=0, help="higher runs first")
    add.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    add_settings_arguments(add, processor_names=ProcessorRegistry.discover().names())
    add.set_defaults(handler=lambda args: cli_batch.run_add(args, settings_from_args(args)))
    importing = actions.add_parser("import", help="queue jobs from a JSON list")
    importing.add_argument("file", metavar="JOBS.json")
    importing.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    add_settings_arguments(importing)
    importing.set_defaults(handler=lambda args: cli_batch.run_import(args, settings_from_args(args)))
    listing = actions.add_parser("list", help="jobs and their progress")
    listing.add_argument("--status", choices=choices(JobStatus), action="append")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    listing.set_defaults(handler=lambda args: cli_batch.run_list(args))
    show = actions.add_parser("show", help="one job with its log")
    show.add_argument("id")
    show.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    show.set_defaults(handler=lambda args: cli_batch.run_show(args))
    run = actions.add_parser("run", help="work through the queue")
    run.add_argument("--until-empty", action="store_true", help="stop when nothing is queued")
    run.add_argument("--concurrency", type=int, help="jobs at once (default: the preset's)")
    run.add_argument("--notify", action="store_true", help="desktop notification per finished job")
    run.add_argument("--on-complete", metavar="CMD", help="command run with the job's JSON on stdin")
    run.add_argument(
        "--lease-seconds",
        type=float,
        default=30.0,
        help="a job whose worker is silent this long goes back to the queue (default 30)",
    )
    add_settings_arguments(run)
    run.set_defaults(handler=lambda args: cli_batch.run_worker(args, settings_from_args(args)))
    cancel = actions.add_parser("cancel", help="cancel a job")
    cancel.add_argument("id")
    cancel.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    cancel.set_defaults(handler=lambda args: cli_batch.run_cancel(args))
    retry = actions.add_parser("retry", help="queue failed jobs again")
    retry.add_argument("id", nargs="?")
    retry.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    retry.add_argument("--failed", action="store_true", help="every failed job")
    retry.set_defaults(handler=lambda args: cli_batch.run_retry(args))
    remove = actions.add_parser("remove", help="delete a job")
    remove.add_argument("id")
    remove.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    remove.set_defaults(handler=lambda args: cli_batch.run_remove(args))
    for name, text in (("pause", "start no new job"), ("resume", "start jobs again")):
        actions.add_parser(name, help=text).set_defaults(handler=lambda args: cli_batch.run_pause(args))


def normalise_argv(argv: Sequence[str]) -> list[str]:
    """With no command, run 'ui' (also when only options are given: ``run.py --port 8000``)."""
    arguments = list(argv)
    first = next((i for i, arg in enumerate(arguments) if arg != "--verbose"), None)
    if first is None:
        return [*arguments, "ui"]
    if arguments[first] in COMMANDS or arguments[first] in ("-h", "--help", "--version"):
        return arguments
    if arguments[first].startswith("-"):
        return [*arguments[:first], "ui", *arguments[first:]]
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    arguments = normalise_argv(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in arguments
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(message)s")
    for chatty in ("httpx", "httpcore", "urllib3", "uvicorn.access"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        args = build_parser().parse_args(arguments)
        handler: Handler = args.handler
        return handler(args)
    except FacefusionError as error:
        if verbose:
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if verbose:
            traceback.print_exc()
        detail = str(error).splitlines()[0] if str(error) else ""
        print(
            f"internal error: {type(error).__name__}: {detail} (run with --verbose and report it)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

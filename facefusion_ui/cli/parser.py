"""The whole argument parser, composed from each command's own ``add_*_parser``."""

from __future__ import annotations

from facefusion_ui.cli.batch import add_batch_parser
from facefusion_ui.cli.doctor import VersionAction, add_doctor_parser
from facefusion_ui.cli.live import add_live_parser
from facefusion_ui.cli.models import add_models_parser
from facefusion_ui.cli.options import OneLineParser, backend_parent
from facefusion_ui.cli.people import add_people_parser
from facefusion_ui.cli.presets import add_presets_parser
from facefusion_ui.cli.process import add_process_parser
from facefusion_ui.cli.ui import add_ui_parser
from facefusion_ui.cli.worker import add_worker_parser
from facefusion_ui.processors.registry import ProcessorRegistry


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="run.py",
        description="facefusion_ui: swap faces in images and long videos (UI, command line, batches).",
        epilog="With no command, 'ui' opens the web page on http://127.0.0.1:7860.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    registry = ProcessorRegistry.discover()  # once per run
    processor_names, processor_options = registry.names(), registry.option_table()
    backend = backend_parent()
    add_ui_parser(commands, processor_options)
    add_process_parser(commands, processor_names, processor_options)
    add_people_parser(commands, processor_names, processor_options)
    add_live_parser(commands, processor_names, processor_options)
    add_batch_parser(commands, processor_names, backend, processor_options)
    add_worker_parser(commands, backend)
    add_models_parser(commands)
    add_presets_parser(commands)
    add_doctor_parser(commands)
    return parser

"""The whole argument parser, composed from each command's own ``add_*_parser``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from facefusion_ui.cli.argv import COMMANDS
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
from facefusion_ui.processors.options import OptionTable
from facefusion_ui.processors.registry import ProcessorRegistry

READS_PROCESSORS = frozenset({"ui", "process", "people", "live", "batch"})
"""The commands that take the processors' names and options (every processor's module imported)."""


def build_parser(command: str | None = None) -> OneLineParser:
    """The parser of every command, or of ``command`` alone: a run parses one command, and the others'
    arguments would only cost start-up time. None or a name that is no command: all of them (the
    top-level help, the error that names the commands)."""
    parser = OneLineParser(
        prog="run.py",
        description="facefusion_ui: swap faces in images and long videos (UI, command line, batches).",
        epilog="With no command, 'ui' opens the web page on http://127.0.0.1:7860.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = (command,) if command in COMMANDS else COMMANDS
    names: Sequence[str] = ()
    options: OptionTable = {}
    if READS_PROCESSORS.intersection(wanted):
        registry = ProcessorRegistry.discover()  # once per run
        names, options = registry.names(), registry.option_table()
    backend = backend_parent()
    adders: dict[str, Callable[[], None]] = {
        "ui": lambda: add_ui_parser(commands, options),
        "process": lambda: add_process_parser(commands, names, options),
        "people": lambda: add_people_parser(commands, names, options),
        "live": lambda: add_live_parser(commands, names, options),
        "batch": lambda: add_batch_parser(commands, names, backend, options),
        "worker": lambda: add_worker_parser(commands, backend),
        "models": lambda: add_models_parser(commands),
        "presets": lambda: add_presets_parser(commands),
        "doctor": lambda: add_doctor_parser(commands),
    }
    for name in wanted:
        adders[name]()
    return parser


def command_of(arguments: Sequence[str]) -> str | None:
    """The command ``arguments`` (normalised) run: the first that is not an option; None if none."""
    return next((argument for argument in arguments if not argument.startswith("-")), None)

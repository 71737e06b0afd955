"""Options shared by several commands: the settings (one ``--option`` per setting, one per processor
option) and ``--backend``."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from facefusion_ui.errors import SettingsError, UsageError
from facefusion_ui.processors.options import OptionTable, OptionValue, ProcessorOption, check_option_values
from facefusion_ui.state_manager import Settings, cli_setting_keys, setting_help, setting_rule
from facefusion_ui.types import PresetName, choices

logger = logging.getLogger(__name__)
OPTION_DEST = "processor_option:"
"""Namespace attributes ``processor_option:PROCESSOR:OPTION`` hold the processor options given."""

BACKEND_HELP = "sqlite (default, this machine) or redis://HOST:PORT/DB (several machines)"


class OneLineParser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def backend_parent() -> argparse.ArgumentParser:
    """``--backend``, defined once and composed into every queue command as a parent parser."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--backend", default="sqlite", help=BACKEND_HELP)
    return parent


def add_settings_arguments(
    parser: argparse.ArgumentParser,
    processor_names: Sequence[str] = (),
    processor_options: OptionTable | None = None,
    keys: Sequence[str] | None = None,
) -> None:
    """One ``--option`` per setting (of ``keys`` when given: the settings the command reads), typed and with
    choices from its rule (types.py Literals), and one per option a processor declares
    (``--my-filter-strength``) when ``processor_options`` is given."""
    parser.set_defaults(takes_settings=True)
    group = parser.add_argument_group("settings (defaults <- --preset <- these options)")
    wanted = cli_setting_keys() if keys is None else tuple(key for key in cli_setting_keys() if key in keys)
    if "preset" in wanted:
        group.add_argument(
            "--preset",
            "--video-memory",
            dest="preset",
            choices=choices(PresetName),
            default=argparse.SUPPRESS,
            help="memory preset (default: balanced); --video-memory is an alias",
        )
    for key in wanted:
        if key == "preset":
            continue
        options = setting_rule(key).cli_options()
        if key == "processors" and processor_names:
            options["choices"] = tuple(processor_names)
            options.pop("metavar", None)
        default = getattr(Settings(), key)
        shown = " ".join(str(item) for item in default) if isinstance(default, tuple) else default
        group.add_argument(
            "--" + key.replace("_", "-"),
            dest=key,
            default=argparse.SUPPRESS,
            help=f"{setting_help(key)} (default: {shown})",
            **options,
        )
    if processor_options is not None:
        add_processor_option_arguments(parser, processor_options)


def add_processor_option_arguments(parser: argparse.ArgumentParser, table: OptionTable) -> None:
    parser.set_defaults(processor_option_table=table)
    group = parser.add_argument_group("processor options (each processor's own)")
    for processor, declared in table.items():
        for option in declared:
            described = f"{processor}: {option.help or option.name} ({option.allowed()}; default: {option.default})"
            try:
                group.add_argument(
                    option.flag(processor),
                    dest=f"{OPTION_DEST}{processor}:{option.name}",
                    default=argparse.SUPPRESS,
                    help=described.replace("%", "%%"),
                    **option_cli_options(processor, option),
                )
            except argparse.ArgumentError as error:
                logger.warning("option %s of processor '%s' left out: %s", option.name, processor, error)


def option_cli_options(processor: str, option: ProcessorOption) -> dict[str, Any]:
    """``add_argument`` keywords: a flag pair for bool, choices for str, a checked number otherwise."""
    if option.type is bool:
        return {"action": argparse.BooleanOptionalAction}
    if option.type is str:
        return {"choices": option.choices}
    return {"type": option_parser(processor, option), "metavar": "N" if option.type is int else "X"}


def option_parser(processor: str, option: ProcessorOption) -> Callable[[str], OptionValue]:
    def parse(text: str) -> OptionValue:
        try:
            return option.validate(processor, option.type(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {option.allowed()}") from None
        except SettingsError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def option_edits(args: argparse.Namespace) -> dict[str, dict[str, OptionValue]]:
    """The processor options given on the command line, by processor."""
    edits: dict[str, dict[str, OptionValue]] = {}
    for dest, value in vars(args).items():
        if dest.startswith(OPTION_DEST):
            processor, _, name = dest.removeprefix(OPTION_DEST).partition(":")
            edits.setdefault(processor, {})[name] = value
    return edits


def setting_edits(args: argparse.Namespace) -> dict[str, object]:
    """The settings given on the command line (those left out are absent)."""
    edits: dict[str, object] = {
        key: getattr(args, key) for key in cli_setting_keys() if key != "preset" and hasattr(args, key)
    }
    options = option_edits(args)
    if options:
        edits["processor_options"] = options
    return edits


def settings_from_args(args: argparse.Namespace) -> Settings:
    """defaults <- preset <- saved settings (the UI's Settings tab) <- command-line options, validated."""
    from facefusion_ui.config import build_state

    state = build_state(preset=getattr(args, "preset", None))
    state.update(setting_edits(args))
    settings = state.snapshot()
    table: Mapping[str, Sequence[ProcessorOption]] | None = getattr(args, "processor_option_table", None)
    if table is not None:
        check_option_values(table, settings.processor_options)
    return settings

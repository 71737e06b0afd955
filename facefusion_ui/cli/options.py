"""Options shared by several commands: the settings (one ``--option`` per setting) and ``--backend``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from facefusion_ui.errors import UsageError
from facefusion_ui.state_manager import Settings, setting_help, setting_keys, setting_rule
from facefusion_ui.types import PresetName, choices

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
        shown = " ".join(str(item) for item in default) if isinstance(default, tuple) else default
        group.add_argument(
            "--" + key.replace("_", "-"),
            dest=key,
            default=argparse.SUPPRESS,
            help=f"{setting_help(key)} (default: {shown})",
            **options,
        )


def setting_edits(args: argparse.Namespace) -> dict[str, object]:
    """The settings given on the command line (those left out are absent)."""
    return {key: getattr(args, key) for key in setting_keys() if key != "preset" and hasattr(args, key)}


def settings_from_args(args: argparse.Namespace) -> Settings:
    """defaults <- preset <- saved settings (the UI's Settings tab) <- command-line options, validated."""
    from facefusion_ui.config import build_state

    state = build_state(preset=getattr(args, "preset", None))
    state.update(setting_edits(args))
    return state.snapshot()

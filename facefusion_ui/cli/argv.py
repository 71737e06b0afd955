"""The command line before parsing: with no command, ``ui`` runs."""

from __future__ import annotations

from collections.abc import Sequence

COMMANDS = ("ui", "process", "people", "live", "batch", "worker", "models", "presets", "doctor")
"""Every command, in the order the help lists them."""


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

"""The command line: ``run.py [ui|process|live|batch|worker|models|presets|doctor]``.

Errors are one line on stderr; exit code 2 for a user mistake, 1 for an internal failure, 130 on
Ctrl-C. ``--verbose`` adds the traceback. This package is the only place that ends the process.
Importing it is light: ``main`` sets the process environment before the heavy libraries load.
"""

from __future__ import annotations

from collections.abc import Sequence

from facefusion_ui.cli.argv import normalise_argv
from facefusion_ui.process_environment import configure_process

__all__ = ["main", "normalise_argv"]


def main(argv: Sequence[str] | None = None) -> int:
    configure_process()
    from facefusion_ui.cli.app import run

    return run(argv)

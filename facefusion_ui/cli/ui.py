"""``run.py ui``: the web page."""

from __future__ import annotations

import argparse
from typing import Any

from facefusion_ui.cli.options import add_settings_arguments, setting_edits, settings_from_args
from facefusion_ui.processors.options import OptionTable


def run_ui(args: argparse.Namespace) -> int:
    from facefusion_ui.ui.app import serve

    settings_from_args(args)  # bad option values are reported before anything starts
    serve(args.host, args.port, args.share, args.auth, getattr(args, "preset", None), setting_edits(args))
    return 0


def add_ui_parser(commands: Any, processor_options: OptionTable) -> None:
    ui = commands.add_parser("ui", help="open the web page (default)")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    ui.add_argument("--share", action="store_true", help="ask Gradio for a public link")
    ui.add_argument("--auth", metavar="USER:PASS|FILE", help="protect the page with a password")
    add_settings_arguments(ui, processor_options=processor_options)
    ui.set_defaults(handler=run_ui)

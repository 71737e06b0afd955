"""``run.py process``: one image or video, with a progress bar and a one-line (or JSON) summary."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.errors import UsageError
from facefusion_ui.faults import ChunkHold, FaultInjection, parse_fault


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
        fault = parse_fault(injected) if injected else None
        if isinstance(fault, ChunkHold):
            progress = fault.around(progress, fault.released_by_ctrl_c())
        result = process(
            settings,
            [Path(s) for s in args.sources],
            Path(args.target),
            Path(args.output),
            progress=progress,
            fault=fault if isinstance(fault, FaultInjection) else None,
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


def add_process_parser(commands: Any, processor_names: Sequence[str]) -> None:
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
    add_settings_arguments(process, processor_names=processor_names)
    process.set_defaults(handler=run_process)

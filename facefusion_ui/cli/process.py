"""``run.py process``: one image or video, with a progress bar and a one-line (or JSON) summary."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.errors import RunInterrupted, UsageError
from facefusion_ui.faults import ChunkHold, FaultInjection, parse_fault
from facefusion_ui.processors.options import OptionTable

if TYPE_CHECKING:
    from facefusion_ui.faces.face_map import FaceMapEntry
    from facefusion_ui.job import ProcessResult, SwapJob
    from facefusion_ui.state_manager import Settings


def run_process(args: argparse.Namespace) -> int:
    from facefusion_ui.job import SwapJob

    released = stop_on_signals()
    settings = settings_from_args(args)
    face_map = face_map_from_args(args)
    if not args.target or not args.output or not (args.sources or face_map or not source_needed(settings)):
        raise UsageError(
            "process needs -s SOURCE (or --face-map WHO=SOURCE), -t TARGET and -o OUTPUT "
            "(see 'run.py process --help'; -s only when a processor puts a source face in: face_swapper)"
        )
    job = SwapJob.of(settings, args.sources or (), args.target, args.output, face_map)
    try:
        result = run_with_progress_bar(job, released)
    except KeyboardInterrupt as interrupt:
        if isinstance(interrupt, RunInterrupted):
            raise
        raise RunInterrupted(
            "interrupted: finished chunks are kept; run the same command again to resume", 130
        ) from None
    swaps = "face_swapper" in job.settings.processors
    shown = summary_line(result.output, result.seconds, result.stats, swaps)
    print(json.dumps(result.to_json()) if args.json else shown)
    return 0


def source_needed(settings: Settings) -> bool:
    """Whether the job's processors need -s (``pipeline.source_face_needed``)."""
    from facefusion_ui.pipeline import source_face_needed

    return source_face_needed(settings)


def face_map_from_args(args: argparse.Namespace) -> list[FaceMapEntry]:
    """``--face-map`` as given; with -s or --face-selector-mode too, a UsageError (the map replaces both)."""
    from facefusion_ui.faces.face_map import parse_face_map

    face_map = [parse_face_map(text) for text in getattr(args, "face_map", None) or ()]
    if face_map and args.sources:
        raise UsageError("give either -s SOURCE or --face-map WHO=SOURCE, not both: --face-map replaces -s")
    if face_map and hasattr(args, "face_selector_mode"):
        raise UsageError(
            "give either --face-selector-mode or --face-map, not both: with --face-map only the mapped people change"
        )
    return face_map


def add_face_map_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--face-map",
        dest="face_map",
        action="append",
        metavar="WHO=SOURCE",
        help="give one person of the target their own source face (repeat per person); WHO: the person's number "
        "from 'run.py people TARGET' or a photo of them; SOURCE: a photo, or several of one person joined by "
        "commas. Only mapped people change. Replaces -s and --face-selector-mode (giving -s too is an error)",
    )


def run_with_progress_bar(job: SwapJob, released: threading.Event) -> ProcessResult:
    """Run the job with a progress bar; ``FACEFUSION_UI_INJECT_FAULT`` (tests, drills) puts a frame fault
    before the processors or holds the run at a chunk until ``released`` (a signal) or its file."""
    from tqdm import tqdm

    from facefusion_ui.core import process
    from facefusion_ui.job import RunContext

    injected = os.environ.get("FACEFUSION_UI_INJECT_FAULT")
    fault = parse_fault(injected) if injected else None
    with tqdm(total=0, unit="frame", desc="processing", disable=None, leave=False) as bar:
        shown = ["processing"]  # the bar's stage (a bar that is off, not a terminal, keeps no description)

        def progress(state: dict[str, Any]) -> None:
            stage = "finding people" if state.get("stage") == "people" else "processing"
            if shown[0] != stage:  # the people pass, then the frames: a bar each
                shown[0] = stage
                bar.reset(total=state["frames_total"])
                bar.set_description_str(stage, refresh=False)
            bar.total = state["frames_total"]
            if state["chunks_total"]:
                bar.set_postfix_str(f"chunk {state['chunk']}/{state['chunks_total']}", refresh=False)
            bar.update(state["frames_done"] - bar.n)

        held = fault.around(progress, released) if isinstance(fault, ChunkHold) else progress
        wrap = fault.wrap if isinstance(fault, FaultInjection) else None
        return process(job, RunContext(progress=held, wrap_stages=wrap))


def summary_line(output: str, seconds: float, stats: dict[str, Any], swaps: bool = True) -> str:
    """``out.mp4: 500 of 500 faces swapped in 3.1 s (3 of 8 chunks reused from an earlier run)``, and a
    second line when the embedded swapper left faces alone for their pose; ``swaps``: whether the face
    swapper ran (else ``out.png: written in 1.1 s``)."""
    swapped, detected = stats.get("faces_swapped", 0), stats.get("faces_detected", 0)
    done = f"{swapped} of {detected} faces swapped" if swaps else "written"
    line = f"{output}: {done} in {seconds:.1f} s"
    if stats.get("chunks_skipped"):
        line += f" ({stats['chunks_skipped']} of {stats['chunks_total']} chunks reused from an earlier run)"
    turned = stats.get("faces_skipped_pose", 0)
    if turned:
        faces = "face" if turned == 1 else "faces"
        line += f"\n{turned} {faces} left as they were: turned too far for the embedded swapper"
    return line


def stop_on_signals() -> threading.Event:
    """SIGTERM ends a run as Ctrl-C does (ffmpeg stopped, finished chunks kept), with its own line and 143.
    Both first set the returned event, which lets go of a run held by a test's fault (call from the main
    thread)."""
    released = threading.Event()

    def terminate(signum: int, frame: FrameType | None) -> None:
        released.set()
        raise RunInterrupted(
            "stopped by SIGTERM: finished chunks are kept; run the same command again to resume", 128 + signum
        )

    def interrupt(signum: int, frame: FrameType | None) -> None:
        released.set()
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, interrupt)
    return released


def add_process_parser(commands: Any, processor_names: Sequence[str], processor_options: OptionTable) -> None:
    process = commands.add_parser("process", help="swap faces in one image or video")
    process.add_argument(
        "-s",
        "--source",
        dest="sources",
        action="append",
        metavar="SRC",
        help="source face image (repeat for several photos of one person); only the face swapper needs one",
    )
    process.add_argument(
        "-t", "--target", "--input-video", dest="target", metavar="TARGET", help="target image or video"
    )
    process.add_argument("-o", "--output", "--output-video", dest="output", metavar="OUT", help="output path")
    process.add_argument("--json", action="store_true", help="print one JSON summary object")
    add_face_map_argument(process)
    add_settings_arguments(process, processor_names=processor_names, processor_options=processor_options)
    process.set_defaults(handler=run_process)

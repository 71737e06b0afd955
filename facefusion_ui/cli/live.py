"""``run.py live``: swap faces on a camera, a stream or a video file read at its own frame rate, into a
video file and/or a virtual camera, frame by frame; ``--json`` reports what was measured at the end or
on Ctrl-C (exit 130, the report still printed)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.cli.process import add_face_map_argument, face_map_from_args
from facefusion_ui.errors import InputError, UsageError
from facefusion_ui.processors.options import OptionTable
from facefusion_ui.types import LiveSize, choices

if TYPE_CHECKING:
    from facefusion_ui.live.commands import LiveInput
    from facefusion_ui.live.session import LiveSession
    from facefusion_ui.live.sinks import FrameSink


def run_live(args: argparse.Namespace) -> int:
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.live.commands import LIVE_SIZES
    from facefusion_ui.live.face_map import start_engine
    from facefusion_ui.live.session import LiveSession
    from facefusion_ui.live.source import FrameSource

    settings = settings_from_args(args)
    face_map = face_map_from_args(args)
    if not (args.sources or face_map) or args.input is None:
        raise UsageError(
            "live needs -s SOURCE (or --face-map PHOTO=SOURCE) and --input CAMERA|DEVICE|FILE|URL "
            "(see 'run.py live --help')"
        )
    missing = [path for path in args.sources or () if not Path(path).is_file()]
    if missing:
        raise InputError(f"source photo {missing[0]} does not exist: give a photo with a face", paths=missing[:1])
    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration {args.duration:g}: give a number of seconds above 0")
    source = live_source(args)
    sinks = open_sinks(args)  # a missing virtual camera is reported before the models load
    try:
        runtime = ModelRuntime.create(settings)
        engine = start_engine(settings, runtime, [Path(path) for path in args.sources or ()], face_map)
        width, height = LIVE_SIZES[args.size]
        session = LiveSession(engine, FrameSource(source, width, height), sinks)
    except BaseException:
        close_quietly(sinks)
        raise
    interrupted = False
    try:
        session.run(duration=args.duration, on_first_frame=lambda: announce(args, session))
    except KeyboardInterrupt:
        interrupted = True
    failures = session.close()
    if not session.frames_shown:
        failure = session.source.failure()
        if failure is not None:
            raise failure
    report = session.report()
    print(json.dumps(report) if args.json else summary_line(report))
    for problem in failures:
        print(f"error: {problem}", file=sys.stderr)
    return 130 if interrupted else (1 if failures else 0)


def open_sinks(args: argparse.Namespace) -> list[FrameSink]:
    from facefusion_ui.live.commands import LIVE_SIZES
    from facefusion_ui.live.sinks import RECORD_FPS, Recorder, VirtualCamera

    width, height = LIVE_SIZES[args.size]
    sinks: list[FrameSink] = []
    if args.virtual_camera:
        sinks.append(VirtualCamera(width, height, RECORD_FPS))
    if args.output:
        Path(args.output).resolve().parent.mkdir(parents=True, exist_ok=True)
        sinks.append(Recorder(args.output, width, height))
    return sinks


def live_source(args: argparse.Namespace) -> LiveInput:
    """``--input`` as ffmpeg will open it, a file checked to exist."""
    from facefusion_ui.live.commands import live_input
    from facefusion_ui.video.ffmpeg import ffmpeg_version, resolve_ffmpeg

    source = live_input(args.input, sys.platform, ffmpeg_version(resolve_ffmpeg()), loop=args.loop)
    if source.kind == "file" and not Path(args.input).is_file():
        raise InputError(
            f"--input {args.input}: no such file, camera index or device; give a camera (0, /dev/video0), "
            "a video file or a stream URL",
            paths=(args.input,),
        )
    if args.output and source.kind == "file" and Path(args.output).resolve() == Path(args.input).resolve():
        raise UsageError(f"--output {args.output} is the input: record into another file", paths=(args.output,))
    return source


def close_quietly(sinks: Sequence[FrameSink]) -> None:
    """The sinks of a run that did not start (their own failures are not the news)."""
    for sink in sinks:
        with contextlib.suppress(Exception):  # an encoder that got no frame fails: expected here
            sink.close()


def announce(args: argparse.Namespace, session: LiveSession) -> None:
    """The line said once the first swapped frame is ready (tests wait for it before pressing Ctrl-C)."""
    targets = [name for name, given in (("virtual camera", args.virtual_camera), (args.output, args.output)) if given]
    into = f" into {' and '.join(str(target) for target in targets)}" if targets else ""
    width, height = session.source.width, session.source.height
    print(f"live: swapping {session.source.source.label} at {width}x{height}{into} (Ctrl-C to stop)", file=sys.stderr)
    sys.stderr.flush()


def summary_line(report: dict[str, Any]) -> str:
    latency = report["latency_ms"]
    return (
        f"{report['frames_shown']} of {report['frames_in']} frames shown ({report['frames_dropped']} dropped), "
        f"{report['fps']:g} fps, latency median {latency['median']} ms, p95 {latency['p95']} ms"
    )


def add_live_parser(commands: Any, processor_names: Sequence[str], processor_options: OptionTable) -> None:
    live = commands.add_parser(
        "live",
        help="swap faces on a camera, a stream or a video file in real time",
        description="Swap faces frame by frame on a camera (0, /dev/video0), a stream URL or a video file read "
        "at its own frame rate; frames the swapper cannot keep up with are dropped, never queued.",
    )
    live.add_argument("-s", "--source", dest="sources", action="append", metavar="SRC", help="source face photo")
    live.add_argument("--input", metavar="CAMERA|FILE|URL", help="camera index or device, video file or stream URL")
    live.add_argument("-o", "--output", metavar="OUT", help="also record the swapped frames into this video file")
    live.add_argument("--virtual-camera", action="store_true", help="send the swapped frames to a virtual camera")
    live.add_argument("--size", choices=choices(LiveSize), default="480p", help="frame size (480p: 640x480)")
    live.add_argument("--loop", action="store_true", help="a video file input starts again at its end")
    live.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    live.add_argument("--json", action="store_true", help="print one JSON report at the end (or on Ctrl-C)")
    add_face_map_argument(live)
    add_settings_arguments(live, processor_names=processor_names, processor_options=processor_options)
    live.set_defaults(handler=run_live)

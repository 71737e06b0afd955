"""Parse, dispatch to a command's handler, and turn every error into one line and an exit code."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from facefusion_ui.cli.argv import normalise_argv
from facefusion_ui.cli.doctor import print_version
from facefusion_ui.cli.parser import build_parser, command_of
from facefusion_ui.errors import FacefusionError, RunInterrupted

Handler = Callable[..., int]


def stdout_to_devnull() -> None:
    """The reader of stdout went away (``| head``): not an error. Point stdout at /dev/null so the
    interpreter's final flush of what is left does not fail too."""
    try:
        target = sys.stdout.fileno()
    except (OSError, ValueError):  # stdout replaced by an object without a file (embedding, tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, target)
    os.close(devnull)


def run(argv: Sequence[str] | None = None) -> int:
    arguments = normalise_argv(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in arguments
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(message)s")
    for chatty in ("httpx", "httpcore", "urllib3", "uvicorn.access"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        if arguments[:1] == ["--version"]:  # answered before the whole parser loads every processor
            return print_version()
        args = build_parser(command_of(arguments)).parse_args(arguments)
        handler: Handler = args.handler
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        stdout_to_devnull()
        return 0
    except FacefusionError as error:
        if verbose:
            traceback.print_exc()
        if verbose and error.detail:
            print(error.detail, file=sys.stderr)
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except RunInterrupted as interrupt:
        print(interrupt.message, file=sys.stderr)
        return interrupt.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if verbose:
            traceback.print_exc()
        detail = str(error).splitlines()[0] if str(error) else ""
        print(
            f"internal error: {type(error).__name__}: {detail} (run with --verbose and report it)",
            file=sys.stderr,
        )
        return 1

"""``run.py people TARGET``: the distinct people of an image or a video, numbered for ``--face-map``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.processors.options import OptionTable


def run_people(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.people_job import find_people, write_thumbnails

    settings = settings_from_args(args)
    target = Path(args.target)
    runtime = ModelRuntime.create(settings)
    with tqdm(total=0, unit="frame", desc="finding people", disable=None, leave=False) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        result = find_people(target, settings, runtime, progress)
    thumbnails = write_thumbnails(result, Path(args.thumbnails)) if args.thumbnails else None
    if args.json:
        print(json.dumps(result.to_json(thumbnails)))
    else:
        print(people_lines(result.to_json(thumbnails), result.kind))
    return 0


def people_lines(listed: dict[str, Any], kind: str) -> str:
    """One line per person: ``person 1: frames 0-199 (180 frames), first at x1,y1-x2,y2``."""
    people = listed["people"]
    if not people:
        return "no people found"
    lines = [f"{len(people)} {'person' if len(people) == 1 else 'people'} (use their numbers with --face-map N=PHOTO)"]
    for person in people:
        x1, y1, x2, y2 = person["box"]
        seen = (
            ""
            if kind == "image"
            else (f" frames {person['first_frame']}-{person['last_frame']} ({person['frames']} seen),")
        )
        line = f"person {person['id']}:{seen} at {x1},{y1}-{x2},{y2}"
        if "thumbnail" in person:
            line += f" -> {person['thumbnail']}"
        lines.append(line)
    return "\n".join(lines)


def add_people_parser(commands: Any, processor_names: Sequence[str], processor_options: OptionTable) -> None:
    people = commands.add_parser(
        "people",
        help="list the distinct people of an image or video (numbers for --face-map)",
        description="List the distinct people in TARGET, numbered 1..N by first appearance, then left to right. "
        "A video is read once (the pass is cached for a process right after).",
    )
    people.add_argument("target", metavar="TARGET", help="target image or video")
    people.add_argument("--json", action="store_true", help="print one JSON object")
    people.add_argument("--thumbnails", metavar="DIR", help="write each person's most frontal, largest view here")
    add_settings_arguments(people, processor_names=processor_names, processor_options=processor_options)
    people.set_defaults(handler=run_people)

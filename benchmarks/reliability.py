"""Reliability corpus: bad and unusual inputs through ``run.py process`` and through the SQLite batch queue.

Every case is built at run time (ffmpeg from ``resolve_ffmpeg()``, face photos from tests/support/media.py)
and sent twice: through ``run.py process`` (a subprocess), and through ``run.py batch add`` (``batch import``
where the output cannot be derived from ``--output-dir``) + ``batch run --until-empty`` under a private
FACEFUSION_UI_HOME whose queue also holds good jobs. Prints one row per case and path, then whether every
good job completed. Exit code 1 when a case shows a traceback or an internal error, exit 1 for a user
mistake, a lost, mixed or stray output, or when a good job did not complete.

The cases that need root (a read-only mount, a full tmpfs as the output folder or as FACEFUSION_UI_HOME) say
why they were skipped elsewhere.

Run: ``.venv/bin/python benchmarks/reliability.py [--parallel N] [--keep]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cv2
import numpy as np

from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from tests.support import media, videos

RunPath = Literal["process", "batch"]
Expect = Literal["output", "refused", "either"]
Kind = Literal[
    "output",
    "refused",
    "job_failed",
    "error_exit",
    "internal",
    "exit",
    "lost",
    "mixed",
    "stray",
    "unfinished",
    "skipped",
]
KIND_TEXT: dict[Kind, str] = {
    "output": "output written",
    "refused": "exit 2 with the line",
    "job_failed": "job failed with its reason",
    "error_exit": "exit 1 with the line",
    "internal": "INTERNAL ERROR or traceback",
    "exit": "exit code",
    "lost": "LOST OUTPUT",
    "mixed": "MIXED OUTPUT",
    "stray": "STRAY OUTPUT left",
    "unfinished": "job not finished",
    "skipped": "skipped",
}
BAD_KINDS: frozenset[Kind] = frozenset({"internal", "exit", "lost", "mixed", "stray", "unfinished"})
CLIP = (160, 120, 25)
"""Width, height and frame count of an ordinary clip (one second)."""
RUN_TIMEOUT_S = 600
PATH_TOKEN = re.compile(r"\S*/\S*")
FrameMaker = videos.FrameMaker


class Skip(Exception):
    """A case that cannot be built here; the message says why."""


@dataclass(frozen=True)
class Inputs:
    sources: tuple[Path, ...]
    target: Path
    output: Path
    home: Path | None = None
    """A FACEFUSION_UI_HOME of the case's own (else the path's shared one)."""


@dataclass(frozen=True)
class Case:
    name: str
    expect: Expect
    build: Callable[[Workshop, Path], Inputs]
    mentions: tuple[str, ...] = ()
    """For a refusal: the line names one of these (lower case)."""
    user_mistake: bool = True
    """An exit code 1 (internal or environment failure) would be wrong for it."""


@dataclass(frozen=True)
class Outcome:
    case: str
    path: RunPath
    kind: Kind
    detail: str
    seconds: float = 0.0
    """How long ``run.py process`` (or ``batch add``) took."""


@dataclass(frozen=True)
class Snapshot:
    target: str
    output: str


@dataclass
class Report:
    outcomes: list[Outcome]
    good_jobs: dict[str, str]
    """Each good job of the batch queue: 'completed' or what went wrong."""
    worker_seconds: float
    """How long ``batch run --until-empty`` took for the whole queue."""
    seconds: float
    problems: list[str] = field(default_factory=list)


# Building media -------------------------------------------------------------------------------------------------
class Workshop:
    """Makes the corpus files in ``root`` and remembers the mounts it made, to undo them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ffmpeg = resolve_ffmpeg().path
        self.mounts: list[Path] = []
        root.mkdir(parents=True, exist_ok=True)
        self.face = root / "astronaut.jpg"
        self.wall = root / "wall.jpg"
        cv2.imwrite(str(self.face), media.astronaut())
        cv2.imwrite(str(self.wall), np.full((300, 300, 3), 128, np.uint8))

    def ffmpeg_run(self, args: Sequence[str], data: bytes | None = None) -> None:
        command = [self.ffmpeg, "-hide_banner", "-loglevel", "error", *args]
        completed = subprocess.run(command, input=data, capture_output=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"ffmpeg failed ({' '.join(args[-1:])}): {completed.stderr.decode(errors='replace')}")

    def encode(self, path: Path, make: FrameMaker, frames: int, pix_fmt: str = "yuv420p") -> Path:
        height, width = make(0).shape[:2]
        raw = b"".join(np.ascontiguousarray(make(index)).tobytes() for index in range(frames))
        args = ["-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-framerate", "25", "-i", "-"]
        self.ffmpeg_run([*args, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", pix_fmt, "-y", str(path)], raw)
        return path

    def clip(self, path: Path) -> Path:
        width, height, frames = CLIP
        return self.encode(path, videos.moving_face(width, height, frames), frames)

    def ten_bit_format(self) -> str:
        """``yuv420p10le`` when libx264 of this ffmpeg encodes it, else a Skip saying why not."""
        completed = subprocess.run(
            [self.ffmpeg, "-hide_banner", "-h", "encoder=libx264"], capture_output=True, text=True, check=False
        )
        formats = [line for line in completed.stdout.splitlines() if "pixel formats" in line.lower()]
        if not formats or "yuv420p10le" not in formats[0]:
            raise Skip(f"{self.ffmpeg} has no 10-bit H.264 encoder (libx264 lists {formats or 'no pixel formats'})")
        return "yuv420p10le"

    def mount_tmpfs(self, folder: Path, options: str) -> None:
        if os.geteuid() != 0:
            raise Skip("needs root to mount a tmpfs (run the benchmark as root)")
        folder.mkdir(parents=True, exist_ok=True)
        command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as error:
            raise Skip(f"cannot run mount ({error})") from error
        if completed.returncode != 0:
            raise Skip(f"mount -t tmpfs -o {options} failed: {completed.stderr.strip() or completed.returncode}")
        self.mounts.append(folder)

    def release(self) -> None:
        for folder in reversed(self.mounts):
            completed = subprocess.run(["umount", str(folder)], capture_output=True, text=True, check=False)
            if completed.returncode != 0:
                print(f"warning: umount {folder} failed: {completed.stderr.strip()}", file=sys.stderr)
        self.mounts.clear()


def ordinary(shop: Workshop, folder: Path, name: str = "clip.mp4", source: Path | None = None) -> Inputs:
    """A one-second face clip called ``name``, its output in ``folder/out``."""
    target = shop.clip(folder / name)
    return swap_into(folder / "out", (source or shop.face,), target)


def swap_into(out: Path, sources: tuple[Path, ...], target: Path) -> Inputs:
    out.mkdir(parents=True, exist_ok=True)
    return Inputs(sources, target, out / f"{target.stem}_swapped{target.suffix}")


def named(stem: str) -> Callable[[Workshop, Path], Inputs]:
    def build(shop: Workshop, folder: Path) -> Inputs:
        source = folder / f"{stem} face.jpg"
        shutil.copyfile(shop.face, source)
        return ordinary(shop, folder, f"{stem}.mp4", source)

    return build


def written(name: str, data: bytes) -> Callable[[Workshop, Path], Inputs]:
    def build(shop: Workshop, folder: Path) -> Inputs:
        (folder / name).write_bytes(data)
        return swap_into(folder / "out", (shop.face,), folder / name)

    return build


def encoded(name: str, make: Callable[[], FrameMaker], frames: int, pix_fmt: str = "yuv420p") -> Callable[..., Inputs]:
    def build(shop: Workshop, folder: Path) -> Inputs:
        target = shop.encode(folder / name, make(), frames, pix_fmt)
        return swap_into(folder / "out", (shop.face,), target)

    return build


def build_truncated(shop: Workshop, folder: Path) -> Inputs:
    whole = shop.clip(folder / "whole.mp4").read_bytes()
    return written("truncated.mp4", whole[: len(whole) * 2 // 5])(shop, folder)


def build_image_as_mp4(shop: Workshop, folder: Path) -> Inputs:
    ok, data = cv2.imencode(".jpg", media.grace_hopper())
    assert ok
    return written("photo.mp4", data.tobytes())(shop, folder)


def build_audio_only(shop: Workshop, folder: Path) -> Inputs:
    target = folder / "tone.mp4"
    shop.ffmpeg_run(["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac", "-y", str(target)])
    return swap_into(folder / "out", (shop.face,), target)


def build_target_folder(shop: Workshop, folder: Path) -> Inputs:
    target = folder / "movie.mp4"
    target.mkdir()
    return swap_into(folder / "out", (shop.face,), target)


def build_ten_bit(shop: Workshop, folder: Path) -> Inputs:
    pix_fmt = shop.ten_bit_format()
    width, height, frames = CLIP
    return encoded("tenbit.mp4", lambda: videos.moving_face(width, height, frames), frames, pix_fmt)(shop, folder)


def build_rotated(shop: Workshop, folder: Path) -> Inputs:
    width, height, frames = CLIP
    target = videos.write_video(folder / "phone.mp4", videos.moving_face(width, height, frames), frames, rotation=90)
    return swap_into(folder / "out", (shop.face,), target)


def build_vfr(shop: Workshop, folder: Path) -> Inputs:
    width, height, frames = CLIP
    durations = [0.02 if index % 3 else 0.08 for index in range(frames)]
    maker = videos.moving_face(width, height, frames)
    target = videos.write_video(folder / "vfr.mp4", maker, frames, frame_durations=durations)
    return swap_into(folder / "out", (shop.face,), target)


def build_source_without_face(shop: Workshop, folder: Path) -> Inputs:
    return ordinary(shop, folder, source=shop.wall)


def build_output_is_target(shop: Workshop, folder: Path) -> Inputs:
    inputs = ordinary(shop, folder)
    return Inputs(inputs.sources, inputs.target, inputs.target)


def build_output_is_folder(shop: Workshop, folder: Path) -> Inputs:
    inputs = ordinary(shop, folder)
    inputs.output.mkdir()
    return inputs


def build_read_only_folder(shop: Workshop, folder: Path) -> Inputs:
    inputs = ordinary(shop, folder)
    if os.geteuid() == 0:  # root writes through permission bits: only a read-only mount refuses it
        shop.mount_tmpfs(inputs.output.parent, "ro,size=1m")
    else:
        inputs.output.parent.chmod(0o555)
    return inputs


def fill_up(folder: Path) -> Path:
    """Write ``folder/filler.bin`` until its disk is full; returns the file (remove it to free the disk)."""
    filler_path = folder / "filler.bin"
    try:
        with filler_path.open("wb") as filler:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
    except OSError:  # ENOSPC: the folder is full, as wanted
        pass
    return filler_path


def build_full_folder(shop: Workshop, folder: Path) -> Inputs:
    inputs = ordinary(shop, folder)
    shop.mount_tmpfs(inputs.output.parent, "size=2m")
    fill_up(inputs.output.parent)
    return inputs


def build_full_home(shop: Workshop, folder: Path) -> Inputs:
    inputs = ordinary(shop, folder)
    home = folder / "home"
    shop.mount_tmpfs(home, "size=2m")
    fill_up(home)
    return Inputs(inputs.sources, inputs.target, inputs.output, home)


def source_as_output(link: Callable[[Path, Path], None] | None) -> Callable[[Workshop, Path], Inputs]:
    """A photo job whose output is its source photo, or (``link``) another name of it."""

    def build(shop: Workshop, folder: Path) -> Inputs:
        inputs = photo_job(shop, folder)
        source = folder / "face.jpg"
        shutil.copyfile(shop.face, source)
        output = source if link is None else folder / "out" / "face_link.jpg"
        if link is not None:
            link(source, output)
        return Inputs((source,), inputs.target, output)

    return build


def tiny_frames(index: int) -> np.ndarray:
    return np.full((2, 2, 3), 40 + 8 * index, np.uint8)


CASES: tuple[Case, ...] = (
    Case("zero-byte file", "refused", written("empty.mp4", b""), ("empty", "0 bytes", "cannot read")),
    Case("truncated mp4", "refused", build_truncated, ("truncated", "cannot read", "damaged", "incomplete")),
    Case("text named .mp4", "refused", written("notes.mp4", b"just some notes\n" * 40), ("video",)),
    Case("image named .mp4", "either", build_image_as_mp4, ("image", "video")),
    Case("audio only .mp4", "refused", build_audio_only, ("no video", "audio")),
    Case("target is a folder", "refused", build_target_folder, ("folder", "directory")),
    Case("2x2 video", "either", encoded("tiny.mp4", lambda: tiny_frames, 10), ("small", "tiny", "size")),
    Case("odd-size video", "output", encoded("odd.mp4", lambda: videos.moving_face(161, 121, 25), 25, "yuv444p")),
    Case("yuv444 video", "output", encoded("yuv444.mp4", lambda: videos.moving_face(*CLIP), 25, "yuv444p")),
    Case("10-bit video", "output", build_ten_bit),
    Case("rotation metadata", "output", build_rotated),
    Case("variable frame rate", "output", build_vfr),
    Case("4K (3 frames)", "output", encoded("uhd.mp4", lambda: videos.moving_face(3840, 2160, 3), 3)),
    Case("no face in target", "output", encoded("empty_room.mp4", lambda: videos.blank(160, 120), 25)),
    Case("source with no face", "refused", build_source_without_face, ("no face",)),
    Case("name with spaces", "output", named("my holiday clip")),
    Case("unicode name", "output", named("vidéo été 日本語")),
    Case("shell metacharacters", "output", named("a;b&c|d $(touch PWNED) `id` 'q' \"dq\" *?")),
    Case("output = target", "refused", build_output_is_target, ("target itself", "same file")),
    Case("output is a directory", "refused", build_output_is_folder, ("folder", "directory")),
    Case("read-only output folder", "refused", build_read_only_folder, ("read-only", "cannot write")),
    Case("full output folder", "refused", build_full_folder, ("space", "full"), user_mistake=False),
    Case("full FACEFUSION_UI_HOME", "refused", build_full_home, ("space",), user_mistake=False),
    Case("output = a source photo", "refused", source_as_output(None), ("source photo",)),
    Case("output = a hard link to a source", "refused", source_as_output(os.link), ("source photo",)),
)
GOOD_JOBS: tuple[tuple[str, Callable[[Workshop, Path], Inputs]], ...] = (
    ("good clip A", lambda shop, folder: ordinary(shop, folder, "good_a.mp4")),
    ("good clip B", encoded("good_b.mp4", lambda: videos.moving_face(192, 144, 30), 30)),
    ("good photo", lambda shop, folder: photo_job(shop, folder)),
)


def photo_job(shop: Workshop, folder: Path) -> Inputs:
    target = folder / "grace.jpg"
    cv2.imwrite(str(target), media.grace_hopper())
    return swap_into(folder / "out", (shop.face,), target)


# Classifying ----------------------------------------------------------------------------------------------------
def path_state(path: Path) -> str:
    """What is at ``path``: absent, a folder (with its names) or a file (with its digest)."""
    if path.is_dir():
        return "dir:" + ",".join(sorted(child.name for child in path.iterdir()))
    if path.is_file():
        return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return "absent"


def snapshot(inputs: Inputs) -> Snapshot:
    return Snapshot(path_state(inputs.target), path_state(inputs.output))


def error_line(stderr: str) -> str:
    """The last ``error:``/``internal error:`` line, else the last line of stderr."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    marked = [line for line in lines if line.startswith(("error:", "internal error:"))]
    return (marked or lines or [""])[-1]


def shape_of(path: Path) -> tuple[int, int, int]:
    """(width, height, frames) as a viewer shows it: upright, one frame for a photo."""
    if path.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp"):
        image = cv2.imread(str(path))
        if image is None:
            raise ValueError(f"{path.name} is not a readable image")
        return image.shape[1], image.shape[0], 1
    info = probe_video(path)  # width and height are upright already
    return info.width, info.height, info.frame_count


def expected_shape(target: Path) -> tuple[int, int, int]:
    """The output of ``target``: the same picture; a video of odd size gets one pixel of padding (yuv420p)."""
    width, height, frames = shape_of(target)
    if frames == 1 and target.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp"):
        return width, height, frames
    return width + width % 2, height + height % 2, frames


def check_output(inputs: Inputs) -> tuple[Kind, str]:
    """A written output: there, readable, and the picture of its own target (size and frame count)."""
    if inputs.output == inputs.target:
        return "lost", "reported done with the target as its output: nothing new was written"
    if not inputs.output.is_file() or inputs.output.stat().st_size == 0:
        return "lost", f"reported done but {inputs.output.name} is missing or empty"
    try:
        expected, got = expected_shape(inputs.target), shape_of(inputs.output)
    except Exception as error:  # any reading failure means the output is not usable
        return "lost", f"{inputs.output.name} cannot be read back: {error}"
    if expected != got:
        return "mixed", f"{inputs.output.name} is {got} (w, h, frames), its target {expected}"
    return "output", f"{got[0]}x{got[1]}, {got[2]} frame(s)"


def after_failure(inputs: Inputs, before: Snapshot, kind: Kind, detail: str) -> tuple[Kind, str]:
    """A failed run must leave the output path as it found it."""
    if path_state(inputs.output) != before.output:
        return "stray", f"{detail} / but {inputs.output.name} was left behind or changed"
    return kind, detail


def classify_process(rc: int, stderr: str, inputs: Inputs, before: Snapshot) -> tuple[Kind, str]:
    """One ``run.py process`` run, from its exit code, its stderr and what it left on disk."""
    line = error_line(stderr)
    if "Traceback (most recent call last)" in stderr or line.startswith("internal error"):
        return after_failure(inputs, before, "internal", line)
    if path_state(inputs.target) != before.target:
        return "lost", f"the target {inputs.target.name} was changed or overwritten"
    if rc == 0:
        return check_output(inputs)
    if rc == 2 and line.startswith("error:"):
        return after_failure(inputs, before, "refused", line)
    if rc == 1 and line.startswith("error:"):
        return after_failure(inputs, before, "error_exit", line)
    return after_failure(inputs, before, "exit", f"exit {rc}: {line}")


def classify_batch(
    add_rc: int, add_stderr: str, job: dict[str, Any] | None, inputs: Inputs, before: Snapshot
) -> tuple[Kind, str]:
    """A job through ``batch add`` and the worker: rejected at once, failed with a reason, or done."""
    line = error_line(add_stderr)
    if "Traceback (most recent call last)" in add_stderr or line.startswith("internal error"):
        return after_failure(inputs, before, "internal", f"batch add: {line}")
    if path_state(inputs.target) != before.target:
        return "lost", f"the target {inputs.target.name} was changed or overwritten"
    if add_rc == 2 and line.startswith("error:"):
        return after_failure(inputs, before, "refused", line)
    if add_rc != 0:
        return after_failure(inputs, before, "exit", f"batch add exit {add_rc}: {line}")
    if job is None:
        return "lost", "batch add said queued but the queue has no job for this target"
    reason = str(job.get("last_error") or "")
    if job["status"] == "completed":
        return check_output(inputs)
    if job["status"] == "failed" and reason.startswith("internal error"):
        return after_failure(inputs, before, "internal", f"job {job['id']}: {reason}")
    if job["status"] == "failed":
        return after_failure(inputs, before, "job_failed", f"job {job['id']} failed: {reason}")
    return "unfinished", f"job {job['id']} is still {job['status']} ({reason or job.get('status_line')})"


def meets_expectation(case: Case, outcome: Outcome) -> bool:
    """What the case asks for: an output, or a refusal (exit 2 with one line) that names the problem."""
    if outcome.kind == "skipped":
        return True
    if outcome.kind == "output":
        return case.expect in ("output", "either")
    # a user mistake is refused at once (batch add rejects it); a full disk shows up only while writing
    refusals: tuple[Kind, ...] = ("refused",) if case.user_mistake else ("refused", "error_exit", "job_failed")
    if outcome.kind not in refusals or case.expect == "output":
        return False
    words = PATH_TOKEN.sub(" ", outcome.detail).lower()  # a word in a path name is no explanation
    return not case.mentions or any(word in words for word in case.mentions)


def problems_of(case: Case, outcome: Outcome) -> list[str]:
    """What makes the run fail: a traceback, exit 1 for a user mistake, a lost/mixed/stray output..."""
    label = f"{case.name} ({outcome.path})"
    if outcome.kind in BAD_KINDS:
        return [f"{label}: {KIND_TEXT[outcome.kind]}: {outcome.detail}"]
    if outcome.kind == "error_exit" and case.user_mistake:
        return [f"{label}: exit 1 for a user mistake: {outcome.detail}"]
    return []


# Running --------------------------------------------------------------------------------------------------------
def cli(args: Sequence[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "run.py"), *args],
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        cwd=cwd,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def prepare(shop: Workshop, case: Case, path: RunPath) -> Inputs | str:
    """The case's files for one path (each path gets its own), or the reason it is skipped."""
    folder = shop.root / path / case.name.replace(" ", "_").replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return case.build(shop, folder)
    except Skip as skip:
        return str(skip)


def run_process_case(shop: Workshop, case: Case) -> Outcome:
    inputs = prepare(shop, case, "process")
    if isinstance(inputs, str):
        return Outcome(case.name, "process", "skipped", inputs)
    before = snapshot(inputs)
    sources = [arg for source in inputs.sources for arg in ("-s", str(source))]
    started = time.perf_counter()
    completed = cli(
        ["process", *sources, "-t", str(inputs.target), "-o", str(inputs.output)],
        inputs.home or shop.root / "home-process",
        shop.root,
    )
    seconds = time.perf_counter() - started
    kind, detail = classify_process(completed.returncode, completed.stderr, inputs, before)
    return Outcome(case.name, "process", kind, detail, seconds)


def add_job(shop: Workshop, inputs: Inputs, home: Path) -> subprocess.CompletedProcess[str]:
    """``batch add`` when the output is the name it derives, else ``batch import`` with the exact output."""
    sources = [arg for source in inputs.sources for arg in ("-s", str(source))]
    if inputs.output.name == f"{inputs.target.stem}_swapped{inputs.target.suffix}":
        return cli(
            ["batch", "add", *sources, "-t", str(inputs.target), "--output-dir", str(inputs.output.parent)],
            home,
            shop.root,
        )
    listing = inputs.output.parent / f".{inputs.target.name}.jobs.json"
    entry = {"sources": [str(s) for s in inputs.sources], "target": str(inputs.target), "output": str(inputs.output)}
    listing.write_text(json.dumps([entry]), encoding="utf-8")
    return cli(["batch", "import", str(listing)], home, shop.root)


@dataclass(frozen=True)
class Queued:
    name: str
    case: Case | None
    inputs: Inputs | str
    before: Snapshot | None
    rc: int
    stderr: str
    seconds: float


def queue_one(shop: Workshop, name: str, build: Callable[[Workshop, Path], Inputs], case: Case | None) -> Queued:
    folder = shop.root / "batch" / name.replace(" ", "_")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        inputs = build(shop, folder)
    except Skip as skip:
        return Queued(name, case, str(skip), None, 0, "", 0.0)
    before = snapshot(inputs)
    started = time.perf_counter()
    added = add_job(shop, inputs, inputs.home or shop.root / "home-batch")
    return Queued(name, case, inputs, before, added.returncode, added.stderr, time.perf_counter() - started)


def run_batch(shop: Workshop, parallel: int) -> tuple[list[Outcome], dict[str, str], float]:
    """Good jobs first, in the middle and last; every case in between; then one worker until the queue is empty."""
    good = [(name, build, None) for name, build in GOOD_JOBS]
    middle = len(CASES) // 2
    order = [
        good[0],
        *[(c.name, c.build, c) for c in CASES[:middle]],
        good[1],
        *[(c.name, c.build, c) for c in CASES[middle:]],
        good[2],
    ]
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        queued = list(pool.map(lambda item: queue_one(shop, *item), order))
    home = shop.root / "home-batch"
    started = time.perf_counter()
    worker = cli(["batch", "run", "--until-empty"], home, shop.root)
    worker_seconds = time.perf_counter() - started
    listed = cli(["batch", "list", "--json"], home, shop.root)
    jobs = {str(Path(job["payload"]["target"])): job for job in json.loads(listed.stdout or "[]")}
    outcomes: list[Outcome] = []
    good_jobs: dict[str, str] = {}
    worker_line = error_line(worker.stderr) if worker.returncode != 0 else ""
    for item in queued:
        if isinstance(item.inputs, str) or item.before is None:
            outcomes.append(Outcome(item.name, "batch", "skipped", str(item.inputs)))
            continue
        job = jobs.get(str(item.inputs.target.resolve()))
        kind, detail = classify_batch(item.rc, item.stderr, job, item.inputs, item.before)
        if item.case is None:
            good_jobs[item.name] = "completed" if kind == "output" else f"{KIND_TEXT[kind]}: {detail}"
        else:
            outcomes.append(Outcome(item.name, "batch", kind, detail, item.seconds))
    if worker_line or "Traceback (most recent call last)" in worker.stderr:
        outcomes.append(
            Outcome("batch run --until-empty", "batch", "internal", f"exit {worker.returncode}: {worker_line}")
        )
    return outcomes, good_jobs, worker_seconds


@contextmanager
def workshop(root: Path) -> Iterator[Workshop]:
    shop = Workshop(root)
    try:
        yield shop
    finally:
        shop.release()


def run_corpus(root: Path, parallel: int = 2) -> Report:
    """Every case through both paths; the report holds the outcomes and the verdict's problems."""
    started = time.perf_counter()
    with workshop(root) as shop:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            processed = list(pool.map(lambda case: run_process_case(shop, case), CASES))
        batched, good_jobs, worker_seconds = run_batch(shop, parallel)
    by_name = {case.name: case for case in CASES}
    outcomes = sorted(
        processed + batched, key=lambda o: (list(by_name).index(o.case) if o.case in by_name else 99, o.path)
    )
    report = Report(outcomes, good_jobs, worker_seconds, time.perf_counter() - started)
    for outcome in outcomes:
        case = by_name.get(outcome.case)
        report.problems += problems_of(case, outcome) if case else [f"{outcome.case}: {outcome.detail}"]
    report.problems += [f"good job '{name}': {state}" for name, state in good_jobs.items() if state != "completed"]
    # the shell-metacharacter name holds $(touch PWNED): a file of that name means a shell ran it
    report.problems += [f"a file name was run by a shell: {found} exists" for found in root.rglob("PWNED")]
    if len(good_jobs) != len(GOOD_JOBS):
        report.problems.append(f"only {len(good_jobs)} of {len(GOOD_JOBS)} good jobs were queued")
    return report


def print_report(report: Report) -> None:
    by_name = {case.name: case for case in CASES}
    header = ("case", "path", "outcome", "as wanted", "s", "detail")
    rows = []
    for outcome in report.outcomes:
        case = by_name.get(outcome.case)
        wanted = (
            "-" if case is None or outcome.kind == "skipped" else "yes" if meets_expectation(case, outcome) else "NO"
        )
        seconds = f"{outcome.seconds:.1f}" if outcome.seconds else "-"
        rows.append((outcome.case, outcome.path, KIND_TEXT[outcome.kind], wanted, seconds, outcome.detail[:150]))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + " | " + row[5])
    done = sum(state == "completed" for state in report.good_jobs.values())
    print(f"\ngood jobs in the batch queue: {done} of {len(GOOD_JOBS)} completed")
    for name, state in report.good_jobs.items():
        print(f"  {name}: {state}")
    print(f"batch run --until-empty: {report.worker_seconds:.0f} s; {report.seconds:.0f} s in all")
    print("verdict: " + ("all good" if not report.problems else f"{len(report.problems)} problem(s)"))
    for problem in report.problems:
        print(f"  - {problem}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--parallel", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the folder with the corpus and the outputs")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ffui-reliability-"))
    try:
        report = run_corpus(root, max(1, args.parallel))
        print_report(report)
    finally:
        if args.keep:
            print(f"corpus and outputs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

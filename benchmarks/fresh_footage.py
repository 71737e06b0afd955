"""The default settings on footage made here, unlike the clips the other benchmarks tuned on, run as a new
user runs them (``run.py process -s FACE -t CLIP -o OUT --json``, start-up included), side by side with a
plain ``ffmpeg -c:v libx264 -preset veryfast`` transcode of the same clip, in interleaved pairs.

Clips (720p, 25 fps, stored as a camera stores them: x264 ``veryfast``, GOPs of 2 s, with audio):

- ``zoom pan``: a camera panning and zooming over a textured scene of other photos than the other
  benchmarks' (scikit-image's retina, cat, stained tissue and gravel), no face;
- ``walk-in``: the same, with a person (Tom Hanks' photo, about 150 px wide) walking across the middle fifth;
- ``talking head``: the astronaut photo's head, about 200 px wide, drifting and nodding a little.

``--footage second`` makes another set from other photos, sizes and motion, to check that a figure does not
hold on the first set only (the source face is then Tom Hanks' photo instead of Grace Hopper's):

- ``zoom pan``: coffee, a rocket, the Hubble deep field, the moon and grass, a diagonal pan with a zoom from
  1x to 1.9x and back and the shake of a hand-held camera;
- ``walk-in``: the astronaut's head (a 280 px picture, face about 125 px) crossing from the right, twice (a tenth
  of the clip each);
- ``talking head``: Grace Hopper's photo (face about 180 px wide) tilting a few degrees and swaying in front
  of a blurred photo, not a flat backdrop.

Each contender runs ``--pairs`` times, ours and the transcode taken in turn (and ``--baseline DIR``, another
checkout such as the release before, beside them); a ratio is the mean of the rounds' own ratios (the sides
of a round ran seconds apart, under the same load from the other users of a shared machine). ``--json``
figures (fps, the detection schedule, faces, recognizer calls) do not depend on the load; CPU seconds (of
the processes, user + system) depend on it far less than wall seconds, so both ratios are printed. Run:
``.venv/bin/python benchmarks/fresh_footage.py [--seconds 30 120] [--clips "zoom pan" ...] [--pairs 2]
[--baseline DIR] [--footage first|second]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2
import numpy as np

from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media, videos

ROOT = Path(__file__).resolve().parent.parent
FPS = 25
WIDTH, HEIGHT = 1280, 720
FrameMaker = Callable[[int], np.ndarray]


def side_by_side(parts: list[np.ndarray], height: int) -> np.ndarray:
    """RGB or grey pictures scaled to ``height`` and put side by side, as one BGR picture."""
    coloured = [part if part.ndim == 3 else np.dstack([part] * 3) for part in parts]
    resized = [cv2.resize(part, (round(part.shape[1] * height / part.shape[0]), height)) for part in coloured]
    return np.ascontiguousarray(np.hstack(resized)[:, :, ::-1])


def textured_scene() -> np.ndarray:
    """A wide picture without people, from photos the other benchmarks do not use."""
    from skimage import data

    parts = [data.retina(), data.gravel(), data.chelsea(), data.immunohistochemistry(), data.brick()]  # type: ignore[no-untyped-call]
    return side_by_side(parts, 1000)


def zoom_pan(frames: int) -> FrameMaker:
    """A camera panning left to right and zooming in and out (1x to 1.6x) over ``textured_scene``."""
    picture = textured_scene()

    def make(index: int) -> np.ndarray:
        t = index / max(frames - 1, 1)
        zoom = 1.3 + 0.3 * np.sin(t * 2 * np.pi * 3)
        view_w, view_h = round(picture.shape[0] * 16 / 9 / zoom), round(picture.shape[0] / zoom)
        x = round((picture.shape[1] - view_w) * t)
        y = round((picture.shape[0] - view_h) * (0.5 + 0.5 * np.sin(t * 2 * np.pi * 2)))
        view = picture[y : y + view_h, x : x + view_w]
        return np.ascontiguousarray(cv2.resize(view, (WIDTH, HEIGHT), interpolation=cv2.INTER_AREA))

    return make


def hanks_head() -> np.ndarray:
    """Tom Hanks' head and shoulders from the insightface package's photo."""
    image = media.read(media.tom_hanks_path())
    height, width = image.shape[:2]
    return np.ascontiguousarray(image[: min(height, width), :width])


def walk_in(frames: int) -> FrameMaker:
    """``zoom_pan`` with a person walking in from the left across the middle fifth of the clip."""
    scene, head = zoom_pan(frames), cv2.resize(hanks_head(), (220, 220))
    start, end = 2 * frames // 5, 3 * frames // 5

    def make(index: int) -> np.ndarray:
        canvas = scene(index)
        if start <= index < end:
            t = (index - start) / max(end - start - 1, 1)
            x = round(-220 + (WIDTH + 220) * t)
            y = 260 + round(12 * np.sin(index / 3))  # the bob of a walk
            videos.paste(canvas, head, x, y)
        return canvas

    return make


def astronaut_head() -> np.ndarray:
    return videos.face_crop(media.astronaut(), (150, 20, 350, 260))


def talking_head(frames: int) -> FrameMaker:
    """The astronaut's head (face about 200 px wide) with the small motion of someone talking."""
    head = astronaut_head()

    def make(index: int) -> np.ndarray:
        canvas = videos.background(WIDTH, HEIGHT)
        size = round(520 * (1 + 0.03 * np.sin(index / 8)))
        patch = cv2.resize(head, (round(size * head.shape[1] / head.shape[0]), size))
        x = (WIDTH - patch.shape[1]) // 2 + round(8 * np.sin(index / 6))
        y = (HEIGHT - size) // 2 + round(5 * np.cos(index / 5))
        videos.paste(canvas, patch, x, y)
        return canvas

    return make


def second_scene() -> np.ndarray:
    """Another wide picture without people: coffee, a rocket, the Hubble deep field, the moon, grass."""
    from skimage import data

    parts = [data.coffee(), data.moon(), data.rocket(), data.grass(), data.hubble_deep_field()]  # type: ignore[no-untyped-call]
    return side_by_side(parts, 900)


def shaky_zoom(frames: int) -> FrameMaker:
    """A diagonal pan over ``second_scene`` zooming from 1x to 1.9x and back, with a hand-held shake."""
    picture = second_scene()
    shake = np.random.default_rng(7).normal(0, 4, (frames, 2)).cumsum(axis=0) * 0.2

    def make(index: int) -> np.ndarray:
        t = index / max(frames - 1, 1)
        zoom = 1.0 + 0.9 * np.sin(t * np.pi)
        view_w, view_h = round(picture.shape[0] * 16 / 9 / zoom), round(picture.shape[0] / zoom)
        x = int(np.clip((picture.shape[1] - view_w) * (1 - t) + shake[index, 0], 0, picture.shape[1] - view_w))
        y = int(np.clip((picture.shape[0] - view_h) * t + shake[index, 1], 0, picture.shape[0] - view_h))
        view = picture[y : y + view_h, x : x + view_w]
        return np.ascontiguousarray(cv2.resize(view, (WIDTH, HEIGHT), interpolation=cv2.INTER_LINEAR))

    return make


def astronaut_walks_twice(frames: int) -> FrameMaker:
    """``shaky_zoom`` with the astronaut's head crossing from the right twice, a tenth of the clip each time."""
    scene, head = shaky_zoom(frames), cv2.resize(astronaut_head(), (280, 336))
    visits = [(frames // 5, frames // 5 + frames // 10), (13 * frames // 20, 13 * frames // 20 + frames // 10)]

    def make(index: int) -> np.ndarray:
        canvas = scene(index)
        for number, (start, end) in enumerate(visits):
            if start <= index < end:
                t = (index - start) / max(end - start - 1, 1)
                x = round(WIDTH - (WIDTH + 280) * t)
                y = 120 + 180 * number + round(10 * np.sin(index / 4))
                videos.paste(canvas, head, x, y)
        return canvas

    return make


def tilting_grace(frames: int) -> FrameMaker:
    """Grace Hopper's photo (face about 180 px wide) tilting a few degrees and swaying before a blurred photo."""
    from skimage import data

    backdrop: np.ndarray = cv2.GaussianBlur(cv2.resize(data.coffee()[:, :, ::-1], (WIDTH, HEIGHT)), (0, 0), 6)  # type: ignore[no-untyped-call]
    photo = media.grace_hopper()
    scale = 0.88
    head = cv2.resize(photo, (round(photo.shape[1] * scale), round(photo.shape[0] * scale)))

    def make(index: int) -> np.ndarray:
        canvas: np.ndarray = backdrop.copy()
        angle = 5 * np.sin(index / 11)
        centre = (head.shape[1] / 2, head.shape[0] / 2)
        turned = cv2.warpAffine(
            head, cv2.getRotationMatrix2D(centre, angle, 1.0), head.shape[1::-1], borderMode=cv2.BORDER_REFLECT
        )
        x = WIDTH // 3 + round(30 * np.sin(index / 17))
        y = (HEIGHT - head.shape[0]) // 2 + round(6 * np.cos(index / 9))
        videos.paste(canvas, turned, x, y)
        return canvas

    return make


FOOTAGE: dict[str, dict[str, Callable[[int], FrameMaker]]] = {
    "first": {"zoom pan": zoom_pan, "walk-in": walk_in, "talking head": talking_head},
    "second": {"zoom pan": shaky_zoom, "walk-in": astronaut_walks_twice, "talking head": tilting_grace},
}
CLIPS = tuple(FOOTAGE["first"])


def camera_clip(work: Path, name: str, maker: FrameMaker, frames: int) -> Path:
    """A clip stored as a camera or an editor stores it: x264 ``veryfast``, GOPs of 2 s, with audio."""
    raw = videos.write_video(work / f"{name}.raw.mp4", maker, frames, fps=Fraction(FPS), audio=True)
    clip = work / f"{name}.mp4"
    gop = ["-g", str(2 * FPS), "-keyint_min", str(2 * FPS), "-sc_threshold", "0"]
    encode = [resolve_ffmpeg().path, "-loglevel", "error", "-i", str(raw), "-c:v", "libx264", "-preset", "veryfast"]
    subprocess.run([*encode, *gop, "-c:a", "copy", "-y", str(clip)], check=True)
    raw.unlink()
    return clip


Timing = tuple[float, float]
"""Wall seconds, and CPU seconds (user + system of the child processes)."""


def timed_run(command: list[str], environment: dict[str, str] | None = None) -> tuple[Timing, str]:
    """Run ``command`` to its end: its wall and CPU seconds, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return (wall, cpu), done.stdout


def transcode(clip: Path, output: Path) -> Timing:
    """A plain transcode of ``clip``."""
    command = [resolve_ffmpeg().path, "-loglevel", "error", "-i", str(clip), "-c:v", "libx264"]
    timing, _ = timed_run([*command, "-preset", "veryfast", "-y", str(output)])
    return timing


def ours(checkout: Path, clip: Path, face: Path, output: Path, work: Path) -> tuple[Timing, dict[str, object]]:
    """``run.py process`` of ``checkout`` with the default settings (start-up included), and its JSON summary."""
    shutil.rmtree(work, ignore_errors=True)
    command = [sys.executable, str(checkout / "run.py"), "process", "-s", str(face), "-t", str(clip)]
    environment = {**os.environ, "FACEFUSION_UI_HOME": str(work), "PYTHONPATH": str(checkout)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules compiled once, not at every start
    timing, stdout = timed_run([*command, "-o", str(output), "--json"], environment)
    summary: dict[str, object] = json.loads(stdout.strip().splitlines()[-1])
    return timing, summary


SHOWN = ("fps", "first_frame_s", "faces_detected", "recognizer_calls", "face_detection", "copy", "peak_rss_mb")


def measure(name: str, clip: Path, face: Path, work: Path, pairs: int, baseline: Path | None) -> None:
    """``pairs`` rounds of: the transcode, ours, and (``--baseline``) the other checkout, in turn. Wall
    and CPU ratios: on a machine shared with other work the wall times wander far more than the CPU's."""
    checkouts = {"ours": ROOT, **({"baseline": baseline} if baseline is not None else {})}
    ratios: dict[str, list[tuple[float, float]]] = {label: [] for label in checkouts}
    summaries: dict[str, dict[str, object]] = {}
    for _ in range(pairs):
        plain = transcode(clip, work / "plain.mp4")
        line = f"    transcode {plain[0]:6.2f} s (CPU {plain[1]:6.2f} s)"
        for label, checkout in checkouts.items():
            (wall, cpu), summaries[label] = ours(checkout, clip, face, work / f"{label}.mp4", work / "run_home")
            ratios[label].append((wall / plain[0], cpu / plain[1]))
            line += f", {label} {wall:6.2f} s = {wall / plain[0]:5.2f}x (CPU {cpu / plain[1]:5.2f}x)"
        print(f"{line}  (load average {os.getloadavg()[0]:.1f})", flush=True)
    for label in checkouts:
        shown = {key: summaries[label][key] for key in SHOWN if key in summaries[label]}
        wall_ratio, cpu_ratio = np.mean(ratios[label], axis=0)
        print(
            f"  {name}, {label}: {wall_ratio:.2f}x a plain transcode's wall time, {cpu_ratio:.2f}x its CPU time "
            f"(mean of {pairs})  {json.dumps(shown)}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, nargs="+", default=[30, 120])
    parser.add_argument("--clips", nargs="+", choices=CLIPS, default=CLIPS)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. the release before) run beside ours")
    parser.add_argument("--footage", choices=tuple(FOOTAGE), default="first", help="which set of generated clips")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-fresh-"))
    face = work / "source.jpg"
    cv2.imwrite(str(face), media.grace_hopper() if args.footage == "first" else media.read(media.tom_hanks_path()))
    print(f"{args.footage} footage, default settings, 1280x720 at {FPS} fps, GOPs of 2 s; ours = run.py process")
    try:
        for seconds in args.seconds:
            for name in args.clips:
                maker = FOOTAGE[args.footage][name](seconds * FPS)
                clip = camera_clip(work, name.replace(" ", "_"), maker, seconds * FPS)
                print(f"{name}, {seconds} s:", flush=True)
                measure(name, clip, face, work, args.pairs, args.baseline)
                clip.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

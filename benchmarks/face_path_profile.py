"""Where the CPU of the face path goes: ``run.py process`` with the default settings on ``fresh_footage.py``'s
720p talking head (a face about 200 px wide in every frame), run in a child process per checkout that
times each stage by the CPU of its own thread (``time.thread_time``: on a shared machine the wall time
wanders with the load, a thread's CPU far less).

Per checkout it prints: fps by ``--json``; CPU per frame of our process (start-up included) and of the
ffmpeg processes (decoder, encoder, assembly); each thread's CPU (the analysis, the frame workers, the
reader and writer, and threads Python did not start: OpenCV's or mediapipe's pools); and each stage's
(inclusive: ``apply_to`` holds the swap, which holds the mesh read). A stage a checkout lacks is left
out. With ``--baseline DIR`` (another checkout, e.g. the release before) the two run in turn,
``--rounds`` times each; the figures are the medians, the load average is printed beside each run.

Run: ``.venv/bin/python benchmarks/face_path_profile.py [--seconds 20] [--rounds 2] [--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import importlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = dict(os.environ)
"""The environment as the user started the benchmark: importing ``tests`` configures this process as an
entry point does (thread pools pinned), which the checkouts' own entry points must do for themselves."""

STAGES = (
    ("facefusion_ui.video.stream", "apply_to"),
    ("facefusion_ui.video.stream", "StreamedChunk._flush"),
    ("facefusion_ui.video.yuv", "YuvFrame.bgr"),
    ("facefusion_ui.video.yuv", "yuv_to_bgr"),
    ("facefusion_ui.video.yuv", "YuvFrame.store"),
    ("facefusion_ui.pipeline", "FramePipeline.follow_meshes"),
    ("facefusion_ui.pipeline", "FramePipeline.smooth_meshes"),
    ("facefusion_ui.pipeline", "FramePipeline.analyse_faces"),
    ("facefusion_ui.faces.analyser", "FaceAnalyser.detect_view"),
    ("facefusion_ui.faces.analyser", "FaceAnalyser.landmarks_68"),
    ("facefusion_ui.faces.analyser", "FaceAnalyser.mesh_at"),
    ("facefusion_ui.faces.mesh_model", "MeshModel.read"),
    ("facefusion_ui.processors.mesh_warp_swapper", "MeshWarpSwapper.swap_face"),
    ("facefusion_ui.processors.mesh_warp_swapper", "MeshWarpSwapper.warp_mesh"),
    ("facefusion_ui.processors.mesh_warp", "mesh_warp_swap"),
    ("facefusion_ui.processors.mesh_warp", "render_maps"),
    ("facefusion_ui.processors.mesh_warp", "oval_mask"),
    ("facefusion_ui.processors.mesh_warp", "transfer_colour"),
    ("facefusion_ui.processors.seam_blend", "multiband_blend"),
    ("facefusion_ui.video.writer", "FrameWriter.write"),
)
"""(module, qualified name) of the stages timed; a function is timed where it is defined and wherever a
module imported it by name."""


class StageClock:
    """CPU seconds and calls per stage, on the thread that runs it (a stage inside itself counts once)."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.local = threading.local()

    def timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            running: set[str] = self.local.__dict__.setdefault("running", set())
            if name in running:
                return function(*args, **kwargs)
            running.add(name)
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.thread_time() - start
                self.calls[name] += 1
                running.discard(name)

        return wrapper

    def install(self) -> None:
        for module_name, qualified in STAGES:
            try:
                owner: Any = importlib.import_module(module_name)
                *path, attribute = qualified.split(".")
                for part in path:
                    owner = getattr(owner, part)
                original = getattr(owner, attribute)
            except (ImportError, AttributeError):
                continue  # a checkout without this stage
            timed = self.timed(qualified, original)
            setattr(owner, attribute, timed)
            if not path:  # a function: also where other modules imported it by name
                for module in list(sys.modules.values()):
                    if module is not None and module.__dict__.get(attribute) is original:
                        setattr(module, attribute, timed)


class ThreadClock:
    """Each OS thread's CPU (``/proc/self/task``), named by the Python thread it runs when there is one,
    read every 0.2 s so threads that end (a chunk's) are counted too."""

    def __init__(self) -> None:
        self.threads: dict[str, tuple[str, float]] = {}
        self.tick = os.sysconf("SC_CLK_TCK")
        self.stop = threading.Event()
        self.reader = threading.Thread(target=self.run, name="profile-clock", daemon=True)

    def sample(self) -> None:
        names = {str(thread.native_id): thread.name for thread in threading.enumerate()}
        for task in os.listdir("/proc/self/task"):
            try:
                stat = Path(f"/proc/self/task/{task}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            known = self.threads.get(task, (None, 0.0))[0]
            name = names.get(task) or known or f"native {stat[stat.index('(') + 1 : stat.rindex(')')]}"
            self.threads[task] = (name, (int(fields[11]) + int(fields[12])) / self.tick)

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.sample()

    def by_name(self) -> dict[str, float]:
        self.sample()
        totals: collections.Counter[str] = collections.Counter()
        for name, seconds in self.threads.values():
            if name != "profile-clock":
                totals[name.split("/")[0]] += seconds
        return dict(totals)


def profile_child(arguments: list[str]) -> None:
    """In the child process: configure it as ``run.py`` does, time the stages, run the command, print JSON."""
    from facefusion_ui.process_environment import configure_process

    configure_process()
    import facefusion_ui.cli.app
    import facefusion_ui.core
    import facefusion_ui.video_job  # their modules loaded, so the stages are found

    stages, threads = StageClock(), ThreadClock()
    stages.install()
    threads.reader.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        facefusion_ui.cli.app.run(arguments)
    after = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(output.getvalue().strip().splitlines()[-1])
    result = {
        "fps": summary["fps"],
        "frames": summary["frames"],
        "ours": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "ffmpeg": children.ru_utime + children.ru_stime,
        "threads": threads.by_name(),
        "stages": dict(stages.seconds),
        "calls": dict(stages.calls),
        "load": os.getloadavg()[0],
    }
    print("PROFILE " + json.dumps(result))


def run_checkout(checkout: Path, clip: Path, face: Path, work: Path) -> dict[str, Any]:
    environment = {**ENVIRONMENT, "PYTHONPATH": str(checkout), "FACEFUSION_UI_HOME": str(work / "home")}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--"]
    arguments = ["process", "-s", str(face), "-t", str(clip), "-o", str(work / "out.mp4"), "--json"]
    done = subprocess.run([*command, *arguments], capture_output=True, text=True, env=environment, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("PROFILE "))
    result: dict[str, Any] = json.loads(line.removeprefix("PROFILE "))
    return result


def median_of(runs: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float]) -> float:
    return statistics.median(pick(run) for run in runs)


def report(label: str, runs: list[dict[str, Any]]) -> None:
    frames = runs[0]["frames"]

    def per_frame(seconds: float) -> str:
        return f"{1000 * seconds / frames:6.2f} ms"

    ours = median_of(runs, lambda run: run["ours"])
    ffmpeg = median_of(runs, lambda run: run["ffmpeg"])
    print(
        f"{label}: {median_of(runs, lambda run: run['fps']):.2f} fps by --json (median of {len(runs)}), {frames} frames"
    )
    print(f"  CPU a frame: ours {per_frame(ours)}, ffmpeg {per_frame(ffmpeg)}, all {per_frame(ours + ffmpeg)}")
    names = sorted({name for run in runs for name in run["threads"]}, key=lambda name: -runs[0]["threads"].get(name, 0))
    shown = [(name, median_of(runs, lambda run, name=name: run["threads"].get(name, 0.0))) for name in names]
    print("  threads: " + ", ".join(f"{name} {per_frame(seconds).strip()}" for name, seconds in shown if seconds > 0))
    stages = sorted({name for run in runs for name in run["stages"]}, key=lambda name: -runs[0]["stages"].get(name, 0))
    for name in stages:
        seconds = median_of(runs, lambda run, name=name: run["stages"].get(name, 0.0))
        calls = runs[0]["calls"].get(name, 0)
        print(f"  {name:36s} {per_frame(seconds)} a frame ({calls} calls)")


def main() -> None:
    if "--child" in sys.argv:
        profile_child(sys.argv[sys.argv.index("--") + 1 :])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout, run in turn with this one")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import cv2

    from benchmarks import fresh_footage
    from tests.support import media

    work = Path(tempfile.mkdtemp(prefix="ffui-face-path-"))
    face = work / "source.jpg"
    cv2.imwrite(str(face), media.grace_hopper())
    frames = args.seconds * fresh_footage.FPS
    clip = fresh_footage.camera_clip(work, "talking_head", fresh_footage.talking_head(frames), frames)
    checkouts = {"ours": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in checkouts}
    print(f"talking head, 1280x720, {args.seconds} s, default settings; CPU per frame is start-up included")
    try:
        for round_number in range(args.rounds):
            for label, checkout in checkouts.items():
                result = run_checkout(checkout, clip, face, work)
                runs[label].append(result)
                print(
                    f"  round {round_number + 1}, {label}: {result['fps']:.2f} fps, "
                    f"CPU {1000 * (result['ours'] + result['ffmpeg']) / result['frames']:.2f} ms a frame, "
                    f"load average {result['load']:.2f}",
                    flush=True,
                )
        for label in checkouts:
            report(label, runs[label])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

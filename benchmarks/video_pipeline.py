"""Our streaming pipeline vs (a) a plain ffmpeg transcode and (b) extract-all-frames-to-JPEG + merge,
side by side in one run, on the same 720p clips with no faces (30 s by default): a flat synthetic one
(a gradient and a moving dot: the cheapest possible encode, so our own costs weigh the most) and a
camera panning over textured photos (what a real shot without faces costs to encode).

(c) is the floor of any design that hands raw frames between two ffmpeg processes: the same transcode
with the frames crossing one pipe and no Python (ours has two pipes, the decoder's and the encoder's).

Ours encodes with the same x264 settings as (a) and (b) (CRF 23 = x264's default, ``veryfast``), so the
ratios measure the pipeline, not a choice of quality. Detection runs with the default schedule (a
full-frame detection every ``face_detector_interval`` frames; groups without faces are skipped).

Each contender runs ``--repeat`` times, interleaved, and its shortest time counts (this machine's timings
wander by 10-20 % from run to run; the shortest is the one least disturbed). CPU seconds (all processes,
user + system) are printed too: on 2 busy cores they follow the wall time and wander less.

Copying untouched GOPs (``--video-copy-unchanged``) is measured on three 720p clips stored as a camera or
an editor stores them (x264 ``veryfast``, GOPs of 2 s): no face, a face in view a fifth of the time (the
middle fifth), a face all the time; each against the plain transcode of the same clip and against our
pipeline with copying off. Each runs twice: with the embedded swapper, and with the face debugger (the
same analysis, a processor that costs almost nothing), which tells the copy path's own cost from the
swapper's. On the clip with a face a fifth of the time, the face stretch is also cut out (its packets
copied, from a keyframe) and run alone: what the face frames cost by themselves, which copying cannot
save. The frames outside the re-encoded GOPs are checked bit-exact (per-frame md5). The floor of copying
on that clip is timed too: (f) ffmpeg alone doing the work copying leaves (every frame decoded, the face
GOPs re-encoded, side by side), with an analysis and a swap that would cost nothing; and (g) the same on
the face fifth cut out, to tell ffmpeg's share of the face frames from ours. What the 0.6x goal leaves
per face frame after (f) is printed beside what our analysis and swap take.

Run: ``.venv/bin/python benchmarks/video_pipeline.py [--seconds 30] [--repeat 3] [--copy-only]
[--copy-clips "no face" ...]``. Prints wall times and ratios.
"""

from __future__ import annotations

import argparse
import functools
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
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from facefusion_ui.core import process
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import largest_group
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.presets import apply_preset
from facefusion_ui.state_manager import StateManager
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from tests.support import media, videos


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its finished children (the ffmpeg processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """Wall and CPU seconds of ``action``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    action()
    return time.perf_counter() - start, cpu_seconds() - cpu


SAME_AS_X264_DEFAULT = 55
"""output_video_quality 55 is CRF 23 (``commands.crf_for``), what (a) and (b) get from x264 by default."""


X264 = ("-c:v", "libx264", "-preset", "veryfast")


def transcode_args(ffmpeg: str, clip: Path, output: Path) -> list[str]:
    """(a): a plain transcode of the clip."""
    return [ffmpeg, "-loglevel", "error", "-i", str(clip), *X264, "-y", str(output)]


def frames_to_jpg_args(ffmpeg: str, clip: Path, folder: Path) -> list[str]:
    """(b), first half: every frame to a JPEG file, as temp-frame tools do."""
    return [ffmpeg, "-loglevel", "error", "-i", str(clip), "-q:v", "2", str(folder / "%06d.jpg")]


def merge_jpg_args(ffmpeg: str, folder: Path, clip: Path, fps: int, output: Path) -> list[str]:
    """(b), second half: the JPEG files back into a video with the clip's audio."""
    inputs = ["-framerate", str(fps), "-i", str(folder / "%06d.jpg"), "-i", str(clip)]
    mapping = ["-map", "0:v", "-map", "1:a", *X264, "-pix_fmt", "yuv420p", "-c:a", "aac"]
    return [ffmpeg, "-loglevel", "error", *inputs, *mapping, "-y", str(output)]


def raw_encode_args(ffmpeg: str, width: int, height: int, fps: int, output: Path) -> list[str]:
    """(c), the encoder: raw YUV frames from stdin, as our pipeline's encoder takes them."""
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}", "-r", str(fps), "-i", "-"]
    return [ffmpeg, "-loglevel", "error", *raw, *X264, "-y", str(output)]


def baselines(work: Path, clip: Path, fps: int) -> dict[str, Callable[[], None]]:
    """(a), (b) and (c): what our pipeline is measured against, on the same clip."""
    ffmpeg = resolve_ffmpeg().path
    info = probe_video(clip)  # outside the timed run: (c) is the transcode alone

    def plain() -> None:
        subprocess.run(transcode_args(ffmpeg, clip, work / "plain.mp4"), check=True)

    def temp_frames() -> None:
        frames_dir = work / "frames"
        shutil.rmtree(frames_dir, ignore_errors=True)
        frames_dir.mkdir()
        subprocess.run(frames_to_jpg_args(ffmpeg, clip, frames_dir), check=True)
        subprocess.run(merge_jpg_args(ffmpeg, frames_dir, clip, fps, work / "merged.mp4"), check=True)

    def piped() -> None:
        decode = [ffmpeg, "-loglevel", "error", "-i", str(clip), "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]
        decoder = subprocess.Popen(decode, stdout=subprocess.PIPE)
        encode = raw_encode_args(ffmpeg, info.width, info.height, fps, work / "piped.mp4")
        subprocess.run(encode, stdin=decoder.stdout, check=True)
        assert decoder.wait() == 0

    return {
        "(a) ffmpeg transcode": plain,
        "(b) frames to jpg + merge": temp_frames,
        "(c) ffmpeg | raw | ffmpeg": piped,
    }


def ours(work: Path, clip: Path, face: Path, fps: int, detector: str) -> Callable[[], None]:
    """Our pipeline with ``detector``, its models warmed first (a worker loads them once, not per clip)."""
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"face_detector_model": detector, "output_video_quality": SAME_AS_X264_DEFAULT})
    settings = state.snapshot()
    runtime = ModelRuntime.create(settings)
    warm = videos.write_video(work / "warm.mp4", videos.moving_face(320, 240, fps), fps, fps=Fraction(fps))
    process(
        SwapJob.of(settings, [face], warm, work / "warm_out.mp4"),
        RunContext(runtime=runtime, work_dir=work / "warm_work"),
    )
    work_dir = work / f"work_{detector}"

    def run() -> None:
        shutil.rmtree(work_dir, ignore_errors=True)
        process(SwapJob.of(settings, [face], clip, work / "ours.mp4"), RunContext(runtime=runtime, work_dir=work_dir))

    return run


def compare(work: Path, clip: Path, face: Path, fps: int, repeat: int) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each contender, the shortest of ``repeat`` runs, taken in turn."""
    contenders = baselines(work, clip, fps)
    for detector in ("dlib_hog", "mediapipe_blazeface"):
        contenders[f"ours, {detector}"] = ours(work, clip, face, fps, detector)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, action in contenders.items():
            times[name].append(timed(action))
    return {name: (min(wall for wall, _ in runs), min(cpu for _, cpu in runs)) for name, runs in times.items()}


def camera_clip(work: Path, name: str, maker: videos.FrameMaker, frames: int, fps: int) -> Path:
    """A clip stored as a camera or an editor stores it: x264 ``veryfast``, GOPs of 2 s, with audio."""
    raw = videos.write_video(work / f"{name}.raw.mp4", maker, frames, fps=Fraction(fps), audio=True)
    clip = work / f"{name}.mp4"
    gop = ["-g", str(2 * fps), "-keyint_min", str(2 * fps), "-sc_threshold", "0"]
    encode = [resolve_ffmpeg().path, "-loglevel", "error", "-i", str(raw), "-c:v", "libx264", "-preset", "veryfast"]
    subprocess.run([*encode, *gop, "-c:a", "copy", "-y", str(clip)], check=True)
    raw.unlink()
    return clip


def face_stretch(clip: Path, work: Path, start: float, duration: float) -> Path:
    """The stretch of ``clip`` from ``start`` (a keyframe) for ``duration`` seconds, its packets copied:
    what the face frames cost by themselves, which no copying can save."""
    stretch = work / f"{clip.stem}_stretch.mp4"
    span = ["-ss", f"{start}", "-i", str(clip), "-t", f"{duration}"]
    subprocess.run([resolve_ffmpeg().path, "-loglevel", "error", *span, "-c", "copy", "-y", str(stretch)], check=True)
    return stretch


def frame_md5s(path: Path) -> list[str]:
    listed = subprocess.run(
        [resolve_ffmpeg().path, "-loglevel", "error", "-i", str(path), "-map", "0:v:0", "-f", "framemd5", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split(",")[-1].strip() for line in listed.splitlines() if line and not line.startswith("#")]


FLOOR = "(f) ffmpeg alone, the same work"
"""The floor of copying on the clip with a face a fifth of the time: what ffmpeg alone spends on the work
copying leaves (every frame decoded for the analysis, the face GOPs re-encoded, side by side as our
pipeline runs them), with an analysis and a swap that cost nothing."""


def decode_to_nothing_args(ffmpeg: str, clip: Path) -> list[str]:
    """``FLOOR``, the analysis's share: every frame of the clip decoded to raw YUV, kept nowhere."""
    return [ffmpeg, "-loglevel", "error", "-i", str(clip), "-map", "0:v:0", "-pix_fmt", "yuv420p", "-f", "null", "-"]


def reencode_span_args(ffmpeg: str, clip: Path, start: float, duration: float, output: Path) -> list[str]:
    """``FLOOR``, the encoder's share: the GOPs from ``start`` (a keyframe) for ``duration`` seconds
    decoded and encoded again with (a)'s settings."""
    span = ["-ss", f"{start}", "-i", str(clip), "-t", f"{duration}", "-map", "0:v:0"]
    return [ffmpeg, "-loglevel", "error", *span, *X264, "-y", str(output)]


def decode_and_reencode(ffmpeg: str, clip: Path, start: float, duration: float, output: Path) -> None:
    """``FLOOR``: both shares, side by side."""
    decoder = subprocess.Popen(decode_to_nothing_args(ffmpeg, clip))
    subprocess.run(reencode_span_args(ffmpeg, clip, start, duration, output), check=True)
    assert decoder.wait() == 0


STRETCH_FLOOR = "(g) ffmpeg alone, the fifth alone"
"""``FLOOR`` on the face fifth cut out: what of ``FIFTH_ALONE`` is ffmpeg's."""
FIFTH_ALONE = "ours, the face fifth alone"


def print_face_budget(times: dict[str, list[tuple[float, float]]], base: float, face_frames: int) -> None:
    """What the 0.6x goal leaves per face frame once ``FLOOR`` is spent (an upper bound: the probes of
    the frames without a face come out of it too), next to what our analysis and swap take per face
    frame beyond ffmpeg's share (the face fifth alone less ``STRETCH_FLOOR``)."""

    def shortest(key: str) -> float:
        return min(wall for wall, _ in times[key])

    left = 0.6 * base - shortest(FLOOR)
    ours = shortest(FIFTH_ALONE) - shortest(STRETCH_FLOOR)
    print(
        f"    0.6x (a) is {0.6 * base:.1f} s; after (f) {left:.1f} s are left: {1000 * left / face_frames:.1f} ms"
        f" of wall per face frame at most; our analysis and swap take {1000 * ours / face_frames:.1f} ms per"
        " face frame beyond ffmpeg's share (the face fifth alone less (g))"
    )


COPY_CLIPS = ("no face", "face a fifth of the time", "face all the time")


def copy_figures(
    work: Path, face: Path, seconds: int, fps: int, repeat: int, chosen: tuple[str, ...] = COPY_CLIPS
) -> None:
    frames = seconds * fps
    scenery, head = videos.panning_scene(1280, 720, frames), videos.talking_head(1280, 720, frames)

    def fifth(index: int) -> np.ndarray:
        return head(index) if 2 * frames // 5 <= index < 3 * frames // 5 else scenery(index)

    makers = {"no face": scenery, "face a fifth of the time": fifth, "face all the time": head}
    clips = {name: maker for name, maker in makers.items() if name in chosen}
    state = StateManager()
    apply_preset(state, "balanced")
    state.update({"face_detector_model": "mediapipe_blazeface", "output_video_quality": SAME_AS_X264_DEFAULT})
    settings = state.snapshot()
    runtime = ModelRuntime.create(settings)
    ffmpeg = resolve_ffmpeg().path
    print(f"\ncopying untouched GOPs: 1280x720, {frames} frames, GOPs of 2 s, blazeface, shortest of {repeat}")
    for name, maker in clips.items():
        clip = camera_clip(work, name.replace(" ", "_"), maker, frames, fps)
        stats: dict[str, dict[str, object]] = {}

        def plain(clip: Path = clip) -> None:
            subprocess.run(transcode_args(ffmpeg, clip, work / "plain.mp4"), check=True)

        def ours(
            mode: str, processor: str = "face_swapper", clip: Path = clip, stats: dict[str, dict[str, object]] = stats
        ) -> None:
            shutil.rmtree(work / "copy_work", ignore_errors=True)
            chosen = settings.with_items(video_copy_unchanged=mode, processors=(processor,))
            job = SwapJob.of(chosen, [face], clip, work / f"copy_{mode}_{processor}_{clip.stem}.mp4")
            result = process(job, RunContext(runtime=runtime, work_dir=work / "copy_work"))
            stats[f"{mode} {processor} {clip.stem}"] = result.stats

        contenders: dict[str, Callable[[], None]] = {
            "(a) ffmpeg transcode": plain,
            "ours, copy auto": lambda: ours("auto"),
            "ours, copy off": lambda: ours("off"),
            "debugger, copy auto": lambda: ours("auto", "face_debugger"),
            "debugger, copy off": lambda: ours("off", "face_debugger"),
        }
        if name == "face a fifth of the time":
            stretch = face_stretch(clip, work, 2 * seconds / 5, seconds / 5)
            contenders[FIFTH_ALONE] = functools.partial(ours, "auto", clip=stretch)
            contenders[FLOOR] = functools.partial(
                decode_and_reencode, ffmpeg, clip, 2 * seconds / 5, seconds / 5, work / "floor.mp4"
            )
            contenders[STRETCH_FLOOR] = functools.partial(
                decode_and_reencode, ffmpeg, stretch, 0.0, seconds / 5, work / "stretch_floor.mp4"
            )
        times: dict[str, list[tuple[float, float]]] = {key: [] for key in contenders}
        for _ in range(repeat):
            for key, action in contenders.items():
                times[key].append(timed(action))
        base = min(wall for wall, _ in times["(a) ffmpeg transcode"])
        copy = stats[f"auto face_swapper {clip.stem}"]["copy"]
        assert isinstance(copy, dict)
        want, got = frame_md5s(clip), frame_md5s(work / f"copy_auto_face_swapper_{clip.stem}.mp4")
        same = sum(a == b for a, b in zip(want, got, strict=True))
        print(f"  {name}: copy {copy}, frames equal to the source's: {same} of {len(want)}")
        for key, runs in times.items():
            wall, cpu = min(wall for wall, _ in runs), min(cpu for _, cpu in runs)
            print(f"    {key:36s} {wall:6.1f} s {wall / base:5.2f} x (a)   CPU {cpu:5.1f} s")
        if FLOOR in times:
            print_face_budget(times, base, seconds * fps // 5)
        debugged = stats[f"auto face_debugger {clip.stem}"]["copy"]
        print(f"    (the face debugger, which only draws the analysis, copies {debugged})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copy-only", action="store_true", help="only the figures of copying untouched GOPs")
    parser.add_argument(
        "--copy-clips", nargs="+", choices=COPY_CLIPS, default=COPY_CLIPS, help="which clips the copy figures use"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ffui-bench-"))
    fps = 30
    frames = args.seconds * fps
    face = work / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    if args.copy_only:
        copy_figures(work, face, args.seconds, fps, args.repeat, tuple(args.copy_clips))
        shutil.rmtree(work, ignore_errors=True)
        return
    scenes = {
        "flat": videos.blank(1280, 720),
        "scenery": videos.panning_scene(1280, 720, frames),
    }
    print(f"clips: 1280x720, {frames} frames, {args.seconds} s, no faces, with audio; ffmpeg {resolve_ffmpeg().path}")
    for scene, maker in scenes.items():
        clip = videos.write_video(work / f"{scene}.mp4", maker, frames, fps=Fraction(fps), audio=True)
        results = compare(work, clip, face, fps, args.repeat)
        base, base_cpu = results["(a) ffmpeg transcode"]
        merged = results["(b) frames to jpg + merge"][0]
        print(f"\n{scene}:{'wall':>32s}{'CPU':>34s}")
        for name, (seconds, cpu) in results.items():
            print(
                f"  {name:28s} {seconds:5.1f} s {seconds / base:5.2f} x (a)  (b) / it = {merged / seconds:4.2f}"
                f"   {cpu:5.1f} s {cpu / base_cpu:5.2f} x (a)"
            )
    held = 3 * 32 + 2 + largest_group(5) + 1
    print(
        f"\nframes in memory: at most 3 x queue + threads + largest detection group + 1 = {held} "
        f"(one 720p frame = {1280 * 720 * 1.5 / 2**20:.1f} MiB as YUV 4:2:0)"
    )
    copy_figures(work, face, args.seconds, fps, args.repeat)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

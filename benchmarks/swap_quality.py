"""How well the embedded swapper (``mesh_warp``) swaps, per goal, with the goal and the verdict printed.

- identity: the share of swapped faces that the dlib 128-d recognizer (the embedded one) puts nearer the
  source than the target face they replaced, in its own L2 distance. Sources: the astronaut, Tom Hanks,
  Grace Hopper; targets: t1.jpg's six faces and the other two portraits, each also scaled by 0.5,
  flipped, 30 levels brighter and darker and saved as JPEG quality 40. Goal >= 90 %.
  Beside it, the same share against the source photo with its glasses painted out by the swapper's own
  rule (dlib counts glasses as part of the person; the swap leaves them out).
- looks (``swap_looks.py``): colour streaks (Lab a*/b* fine detail in each face box, swap over target,
  goal <= 1.05x for every face), faces of t1.jpg carrying each source (goals 5, 5, 3 of 6; beside each
  count, every face's dlib distance to the source and to itself before the swap) and how far shut or
  cast-down eyes open after the swap (goal within 2 px of the target's).
- occluder kept / face swapped: ``mask_quality.py``'s measure (a cup and coins held over Grace Hopper's
  lower face): goals >= 95 % of the object unchanged with occlusion on, >= 90 % of the visible face
  swapped.
- seam: mean gradient along the blend weight's 0.5 outline over the mean just inside and just outside
  (``seam_blend.seam_ratio``), divided by the same on the target before the swap: goal <= 1.2 (the
  mean over the swaps; the worst is printed beside).
- temporal: Grace Hopper's photo repeated ``--frames`` frames under gaussian noise (sigma 3), encoded
  with libx264 CRF 18, swapped through the video pipeline (``process`` at the default quality: CRF 13, 5
  steps below the clip's); the mean absolute change from
  frame to frame inside the face, output over input: goal <= 1.2x the input's (or <= 0.5 grey level
  when the input is stiller). The same without mesh smoothing is printed for comparison.
- speed: the portrait in a 1280x720 frame, the swap with each mask setting, ms per face (median of
  ``--repeat``).

Run: ``.venv/bin/python benchmarks/swap_quality.py [--repeat 10] [--frames 60] [--variants all|none]``
(about three minutes on two cores with the defaults; ``--variants none`` skips the altered targets).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from facefusion_ui.process_environment import configure_process

configure_process()

import cv2
import numpy as np

from benchmarks.mask_quality import SETTINGS, Swapper, frame_720p, occluder_swaps, swap_ms
from benchmarks.swap_looks import GOALS as LOOKS_GOALS
from benchmarks.swap_looks import Looks, write_tiles
from facefusion_ui import pipeline as pipeline_module
from facefusion_ui.core import process
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.face import Face, box_iou, face_distance
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.mesh_warp import FACE_OVAL, WarpSource, mesh_warp_swap, without_glasses
from facefusion_ui.processors.seam_blend import seam_ratio
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.video.ffmpeg import resolve_ffmpeg, run_tool, stderr_tail
from tests.support import media, videos

GOALS = {"identity": 0.90, "occluder kept": 0.95, "face swapped": 0.90, "seam": 1.2, "temporal": 1.2}
STILL_ENOUGH = 0.5
"""Grey levels of change from frame to frame below which a clip counts as still whatever its input's."""
NOISE_SIGMA = 3.0
SETTING_NAMES = {"box": "box (no extra mask)", **{name: name for name in SETTINGS if name != "box"}}
ALL_SETTINGS = {"box": {"face_mask_types": ("box",)}, **SETTINGS}


@dataclass(frozen=True)
class Row:
    measure: str
    setting: str
    value: str
    goal: str
    verdict: str


def verdict_at_least(value: float, goal: float, unit: str = "%") -> str:
    scale = 100 if unit == "%" else 1
    if value >= goal:
        return "met"
    return f"missed by {scale * (goal - value):.1f}{unit}"


def verdict_at_most(value: float, goal: float, unit: str = "x") -> str:
    if value <= goal:
        return "met"
    return f"missed by {value - goal:.2f}{unit}"


# identity ------------------------------------------------------------------------------------------------
def variants(image: Frame, which: str) -> Iterator[tuple[str, Frame]]:
    yield "original", image
    if which == "none":
        return
    yield "scale 0.5", np.asarray(cv2.resize(image, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA))
    yield "flip", np.ascontiguousarray(image[:, ::-1])
    for shift in (30, -30):
        yield f"brightness {shift:+d}", np.asarray(np.clip(image.astype(np.int16) + shift, 0, 255), dtype=np.uint8)
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 40])
    assert ok
    yield "jpeg q40", np.asarray(cv2.imdecode(encoded, cv2.IMREAD_COLOR), dtype=np.uint8)


class Identity:
    """Swaps every source onto every target face, embedding the results with the dlib recognizer."""

    def __init__(self, swapper: Swapper) -> None:
        self.swapper = swapper
        self.analyser = swapper.analyser
        self.settings = Settings()

    def faces(self, image: Frame) -> list[Face]:
        return self.analyser.analyse(image, self.settings, embeddings=True, mesh=True)

    def embed_at(self, image: Frame, face: Face) -> Face | None:
        """The face of ``image`` in ``face``'s box, landmarks found again, with its embedding."""
        found = self.analyser.analyse(
            image, self.settings, embeddings=True, detections=[Detection(face.bbox, face.score, face.kps)]
        )
        return max(found, key=lambda other: box_iou(other.bbox, face.bbox), default=None)

    def bare(self, image: Frame, face: Face) -> Face:
        """``face`` (of the source photo ``image``) embedded again with its glasses painted out by the
        swapper's rule (``without_glasses``): a swap that leaves the glasses out is not held against it."""
        if face.mesh is None:
            return face
        painted = without_glasses(image, face.mesh.points)
        return face if painted is image else (self.embed_at(painted, face) or face)

    def run(self, which: str, crops: Path | None) -> Results:
        """Every source onto every face of every target variant."""
        named = {"astronaut": media.astronaut(), "hanks": media.read(media.tom_hanks_path())}
        named["grace"] = media.grace_hopper()
        sources = {name: self.faces(image)[0] for name, image in named.items()}
        warp = {name: WarpSource.of(named[name], face.mesh) for name, face in sources.items() if face.mesh}
        bare = {name: self.bare(named[name], face) for name, face in sources.items()}
        targets = {**named, "t1": media.t1()}
        results = Results()
        for target_name, target_image in targets.items():
            for variant, image in variants(target_image, which):
                for face in self.faces(image):
                    if face.mesh is None or face.embedding is None:
                        continue
                    for source_name, source in warp.items():
                        if source_name == target_name:
                            continue
                        result = mesh_warp_swap(image, face.mesh, source, self.settings.face_mask_blur)
                        swapped = self.embed_at(result.frame, face)
                        won = swapped is not None and face_distance(
                            swapped, sources[source_name], "euclidean"
                        ) < face_distance(swapped, face, "euclidean")
                        won_bare = swapped is not None and face_distance(
                            swapped, bare[source_name], "euclidean"
                        ) < face_distance(swapped, face, "euclidean")
                        results.add(variant, target_name, won, source_name)
                        results.nearer_bare.append(won_bare)
                        if variant == "original":
                            results.seams.append(seam_ratio(result.frame, result.mask) / seam_ratio(image, result.mask))
                            if crops is not None:
                                results.crops.append(crop_pair(image, result.frame, face, won))
        if crops is not None and results.crops:
            cv2.imwrite(str(crops / "quality_identity.png"), montage(results.crops))
        return results


@dataclass
class Results:
    nearer: list[bool] = field(default_factory=list)
    nearer_bare: list[bool] = field(default_factory=list)
    """Whether each swap is nearer the source photo with its glasses painted out than its original."""
    by_variant: dict[str, list[bool]] = field(default_factory=dict)
    by_target: dict[str, list[bool]] = field(default_factory=dict)
    by_source: dict[str, list[bool]] = field(default_factory=dict)
    seams: list[float] = field(default_factory=list)
    """Seam ratio over the target's own, per swap of an unaltered target."""
    crops: list[Frame] = field(default_factory=list)

    def add(self, variant: str, target: str, won: bool, source: str = "") -> None:
        self.nearer.append(won)
        self.by_variant.setdefault(variant, []).append(won)
        self.by_target.setdefault(target, []).append(won)
        self.by_source.setdefault(source, []).append(won)


def crop_pair(before: Frame, after: Frame, face: Face, won: bool) -> Frame:
    """The face before and after the swap side by side, 128 px high, a red bar under a lost one."""
    x1, y1, x2, y2 = (int(value) for value in face.bbox)
    margin = (x2 - x1) // 4
    x1, y1 = max(x1 - margin, 0), max(y1 - margin, 0)
    pair = np.hstack([before[y1 : y2 + margin, x1 : x2 + margin], after[y1 : y2 + margin, x1 : x2 + margin]])
    pair = cv2.resize(pair, (256, 128))
    if not won:
        pair[-6:] = (0, 0, 255)
    return np.asarray(pair, dtype=np.uint8)


def montage(tiles: list[Frame], columns: int = 4) -> Frame:
    blank = np.zeros_like(tiles[0])
    rows = [tiles[start : start + columns] for start in range(0, len(tiles), columns)]
    return np.vstack([np.hstack(row + [blank] * (columns - len(row))) for row in rows])


def shares(groups: dict[str, list[bool]]) -> str:
    return ", ".join(f"{name} {100 * np.mean(wins):.0f}%" for name, wins in groups.items())


def identity_rows(swapper: Swapper, which: str, crops: Path | None) -> list[Row]:
    results = Identity(swapper).run(which, crops)
    share = float(np.mean(results.nearer))
    count = len(results.nearer)
    rows = [
        Row("identity", "box", f"{100 * share:.1f}% of {count}", ">= 90%", verdict_at_least(share, GOALS["identity"])),
        Row("  source without glasses", "box", f"{100 * float(np.mean(results.nearer_bare)):.1f}% of {count}", "", ""),
        Row("  by target change", "", shares(results.by_variant), "", ""),
        Row("  by target photo", "", shares(results.by_target), "", ""),
        Row("  by source photo", "", shares(results.by_source), "", ""),
    ]
    finite = [value for value in results.seams if np.isfinite(value)]
    mean = float(np.mean(finite))
    value = f"{mean:.2f}x (worst {max(finite):.2f}x, {len(finite)} swaps)"
    rows.append(Row("seam vs target, all sources", "box", value, "<= 1.2x", verdict_at_most(mean, GOALS["seam"])))
    return rows


# looks ---------------------------------------------------------------------------------------------------
def looks_rows(runtime: ModelRuntime, crops: Path | None) -> list[Row]:
    """The looks measures, one row per source and target, beside their goals."""
    results = Looks(runtime).run()
    rows = []
    for name, ratios in results.streaks.items():
        worst = max(ratios)
        value = f"worst {worst:.2f}x (" + " ".join(f"{ratio:.2f}" for ratio in ratios) + ")"
        rows.append(
            Row(
                f"colour streaks, {name} on t1",
                "box",
                value,
                "<= 1.05x",
                verdict_at_most(worst, LOOKS_GOALS["streaks"]),
            )
        )
    for name, count in results.carried.items():
        goal = LOOKS_GOALS["carried"][name]
        verdict = "met" if count >= goal else f"missed by {goal - count}"
        rows.append(Row(f"faces carrying {name} on t1", "box", f"{count} of 6", f">= {goal} of 6", verdict))
        # per face, dlib's distance to the source / to the face before the swap: how near a miss is
        pairs = " ".join(f"{to_source:.2f}/{to_original:.2f}" for to_source, to_original in results.distances[name])
        rows.append(Row("  to source/to original", "", pairs, "", ""))
    rows += seen_rows(results.seen)
    for name, left in results.rims.items():
        rows.append(Row(f"glasses rims left under the eyes, {name}", "", f"{left:.2f}x the photo's", "", ""))
    for target, errors in results.shut_eye_errors.items():
        worst = max(errors)
        value = f"worst {worst:.1f} px ({len(errors)} eyes)"
        rows.append(
            Row(
                f"shut eyes, opening change, {target}",
                "box",
                value,
                "<= 2 px",
                verdict_at_most(worst, LOOKS_GOALS["eyes"], " px"),
            )
        )
    if crops is not None and results.tiles:
        write_tiles(results.tiles, crops / "quality_looks.png")
    return rows


SEEN = {
    "grain": "cheek grain vs target",
    "chroma": "cheek chroma vs target",
    "colour off": "cheek colour off target (Lab)",
    "lightness shift": "lower-face lightness shift (L)",
    "darker cheek": "darker cheek's lightness shift (L)",
    "rim arcs": "thin lines under the eyes vs target",
    "corner dots": "mouth-corner darkness vs target (L)",
    "band detail": "eye band's fine detail vs cheeks', vs target",
    "band paler": "eye band lighter than cheeks, vs target (L)",
    "creases": "cheek creases vs the source photo's own",
}
"""The row names of ``swap_looks.looks_measures``'s measures (no goals: what a person sees, in numbers)."""


def seen_rows(seen: dict[str, dict[str, list[float]]]) -> list[Row]:
    """One row per source and measure of ``swap_looks.looks_measures``: the mean and each face's value."""
    rows = []
    for name, measures in seen.items():
        for measure, values in measures.items():
            each = " ".join(f"{value:.2f}" for value in values)
            rows.append(Row(f"{SEEN[measure]}, {name}", "box", f"mean {np.nanmean(values):.2f} ({each})", "", ""))
    return rows


# occluders and seams per mask setting --------------------------------------------------------------------
def occluder_rows(swapper: Swapper, runtime: ModelRuntime, crops: Path | None) -> list[Row]:
    rows, pictures = [], []
    for swap in occluder_swaps(swapper, runtime):
        name, label, kept, swapped = swap.occluder, swap.label, swap.kept, swap.swapped
        if "occlusion" not in swap.values.get("face_mask_types", ()):
            rows.append(Row(f"occluder kept ({name})", label, f"{100 * kept:.1f}%", "(no goal)", ""))
            continue
        kept_verdict = verdict_at_least(kept, GOALS["occluder kept"])
        swapped_verdict = verdict_at_least(swapped, GOALS["face swapped"])
        rows.append(Row(f"occluder kept ({name})", label, f"{100 * kept:.1f}%", ">= 95%", kept_verdict))
        rows.append(Row(f"face swapped ({name})", label, f"{100 * swapped:.1f}%", ">= 90%", swapped_verdict))
        pictures.append(crop_pair(swap.held, swap.output, swap.held_face, True))
    if crops is not None:
        cv2.imwrite(str(crops / "quality_occluders.png"), montage(pictures, columns=1))
    return rows


def seam_rows(swapper: Swapper, runtime: ModelRuntime) -> list[Row]:
    """The seam ratio against the target's own, per mask setting, over the portraits' and t1's faces."""
    source = swapper.source
    targets = [media.grace_hopper(), media.read(media.tom_hanks_path()), media.t1()]
    faces = [(image, face) for image in targets for face in swapper.analyser.analyse(image, Settings(), False, True)]
    rows = []
    for label, values in ALL_SETTINGS.items():
        settings = Settings().with_items(**values)
        stage = MaskStage(settings, runtime)
        ratios = []
        for image, face in faces:
            if face.mesh is None:
                continue
            hook = stage.blend_mask(image, face, face.mesh.points)
            result = mesh_warp_swap(image, face.mesh, source, settings.face_mask_blur, hook)
            ratios.append(seam_ratio(result.frame, result.mask) / seam_ratio(image, result.mask))
        finite = [value for value in ratios if np.isfinite(value)]
        mean = float(np.mean(finite))
        value = f"{mean:.2f}x (worst {max(finite):.2f}x)"
        rows.append(Row("seam vs target", label, value, "<= 1.2x", verdict_at_most(mean, GOALS["seam"])))
    return rows


# temporal ------------------------------------------------------------------------------------------------
def still_clip(folder: Path, frames: int) -> Path:
    """Grace Hopper's photo ``frames`` times under per-frame gaussian noise, libx264 CRF 18, 30 fps."""
    photo = media.grace_hopper().astype(np.float32)
    rng = np.random.default_rng(7)
    for index in range(frames):
        noisy = np.clip(photo + rng.normal(0, NOISE_SIGMA, photo.shape) + 0.5, 0, 255).astype(np.uint8)
        cv2.imwrite(str(folder / f"still_{index:04d}.png"), noisy)
    clip = folder / "still.mp4"
    pattern = str(folder / "still_%04d.png")
    encode = ["-c:v", "libx264", "-crf", "18", "-pix_fmt", "yuv420p", "-y", str(clip)]
    done = run_tool([resolve_ffmpeg().path, "-loglevel", "error", "-framerate", "30", "-i", pattern, *encode])
    if done.returncode != 0:
        raise SystemExit(f"ffmpeg could not encode the still clip: {stderr_tail(done.stderr)}")
    return clip


def frame_change(frames: list[Frame], area: np.ndarray) -> float:
    """Mean absolute change (grey levels, channels averaged) from frame to frame inside ``area``."""
    pairs = itertools.pairwise(frames)
    return float(np.mean([np.abs(a.astype(np.int16) - b.astype(np.int16)).mean(axis=2)[area].mean() for a, b in pairs]))


def swap_clip(clip: Path, face: Path, folder: Path, name: str, runtime: ModelRuntime) -> list[Frame]:
    output = folder / f"{name}.mp4"
    job = SwapJob.of(Settings(), [face], clip, output)  # the default quality: CRF 13, 5 steps below the clip's
    process(job, RunContext(runtime=runtime, work_dir=folder / f"{name}_work"))
    return videos.decode_all(output)


def without_smoothing(action: Callable[[], list[Frame]]) -> list[Frame]:
    """``action`` with the video pipeline's mesh smoothing turned off (for comparison only)."""
    kept = pipeline_module.smooths_meshes
    pipeline_module.smooths_meshes = lambda processors: False
    try:
        return action()
    finally:
        pipeline_module.smooths_meshes = kept


def temporal_rows(swapper: Swapper, runtime: ModelRuntime, frames: int, crops: Path | None) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="ffui-swap-quality-") as name:
        folder = Path(name)
        clip = still_clip(folder, frames)
        face = folder / "astronaut.png"
        cv2.imwrite(str(face), media.astronaut())
        before = videos.decode_all(clip)
        smoothed = swap_clip(clip, face, folder, "smoothed", runtime)
        plain = without_smoothing(lambda: swap_clip(clip, face, folder, "plain", runtime))
    target = swapper.face(before[0])
    assert target.mesh is not None
    area = np.zeros(before[0].shape[:2], dtype=np.uint8)
    cv2.fillConvexPoly(area, cv2.convexHull(target.mesh.points[list(FACE_OVAL)]).astype(np.int32), 1)
    inside = area > 0
    change_in = frame_change(before, inside)
    goal = max(GOALS["temporal"] * change_in, STILL_ENOUGH)
    rows = [Row("temporal: input change", "", f"{change_in:.2f} grey levels/frame", "", "")]
    for label, output in (("with smoothing", smoothed), ("without (comparison)", plain)):
        change = frame_change(output, inside)
        value = f"{change:.2f} ({change / change_in:.2f}x input)"
        verdict = verdict_at_most(change, goal, " levels") if label == "with smoothing" else ""
        rows.append(Row("temporal: output change", label, value, f"<= {goal:.2f}", verdict))
    if crops is not None:  # a frame of each, and the change to the next frame (x10)
        pictures = [crop_pair(output[10], output[10], target, True)[:, :128] for output in (before, smoothed, plain)]
        steps = [np.abs(o[10].astype(np.int16) - o[11].astype(np.int16)) * 10 for o in (before, smoothed, plain)]
        steps = [step.clip(0, 255).astype(np.uint8) for step in steps]
        changes = [crop_pair(step, step, target, True)[:, :128] for step in steps]
        cv2.imwrite(str(crops / "quality_temporal.png"), np.vstack([np.hstack(pictures), np.hstack(changes)]))
    return rows


# speed ---------------------------------------------------------------------------------------------------
def speed_rows(swapper: Swapper, runtime: ModelRuntime, repeat: int) -> list[Row]:
    frame = frame_720p()
    face = swapper.face(frame)
    rows = []
    for label, values in ALL_SETTINGS.items():
        milliseconds = swap_ms(swapper, runtime, frame, face, values, repeat)
        rows.append(Row(f"speed, face {face.width:.0f} px", label, f"{milliseconds:.1f} ms/face", "", ""))
    return rows


def print_table(rows: list[Row]) -> None:
    widths = [max(len(getattr(row, column)) for row in rows) for column in ("measure", "setting", "value", "goal")]
    for row in rows:
        cells = (row.measure, row.setting, row.value, row.goal)
        print("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + "  " + row.verdict)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per mask setting (median)")
    parser.add_argument("--frames", type=int, default=60, help="frames of the still clip")
    parser.add_argument("--variants", choices=("all", "none"), default="all", help="altered copies of the targets")
    parser.add_argument("--crops", type=Path, help="a folder to write pictures of the results into, to look at")
    args = parser.parse_args()
    if args.crops is not None:
        args.crops.mkdir(parents=True, exist_ok=True)
    runtime = ModelRuntime.create(Settings())
    swapper = Swapper(runtime)
    rows = [Row("measure", "masks", "value", "goal", "verdict")]
    for part in (
        lambda: identity_rows(swapper, args.variants, args.crops),
        lambda: looks_rows(runtime, args.crops),
        lambda: seam_rows(swapper, runtime),
        lambda: occluder_rows(swapper, runtime, args.crops),
        lambda: temporal_rows(swapper, runtime, args.frames, args.crops),
        lambda: speed_rows(swapper, runtime, args.repeat),
    ):
        started = time.perf_counter()
        rows += part()
        print(f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    print_table(rows)
    runtime.release_all()


if __name__ == "__main__":
    main()

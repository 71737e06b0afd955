"""How the embedded swapper's results look, measured (``swap_quality.py`` prints these rows):

- colour streaks: inside each face box, the high-frequency energy of the Lab colour channels (a*, b*:
  each channel minus its Gaussian blur with sigma 3, mean absolute, the two averaged), the swap's over
  the target's own; every face of t1.jpg with each packaged source. Goal <= 1.05x for every one.
- faces carrying the source: of t1.jpg's six faces, how many dlib puts under 0.6 from the source and
  nearer it than their original. Goals >= 5 (Grace Hopper, the astronaut), >= 3 (Tom Hanks).
- eye opening: per eye that is shut or cast down in the target, the opening the mesh finds after the
  swap against the one it finds in the target, in pixels: on t1.jpg the eyes open under ``SHUT`` of
  their width, and both eyes of the astronaut with its eyes closed by a mesh warp (``with_eyes_shut``).
  Goal <= 2 px.
- what a person sees on t1.jpg's crops (``looks_measures``, no goals, each face against the target before
  the swap): the cheeks' finest lightness detail (grain), their chroma and how far their colour is off the
  target's, the lower face's lightness beside the neck, the darker cheek's lightness (a grey shadow), thin
  lines under the eyes (glasses rims), the mouth corners' darkness (dark dots), the fine detail and the
  lightness of the band round the eyes against the cheeks' (a flat, pale band where glasses were painted
  out), the cheeks' creases against the source photo's own at the same size (``creases``); and per source
  how much of its glasses' lower rims is left once painted out (``rim_left``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face, face_distance
from facefusion_ui.faces.landmarker import face_mesh
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.mesh_parts import face_size
from facefusion_ui.processors.mesh_warp import (
    EYES,
    MOUTH_CORNERS,
    WarpSource,
    features_mask,
    inside_outline,
    mesh_triangles,
    render_maps,
)
from facefusion_ui.processors.mesh_warp_swapper import MeshWarpSwapper
from facefusion_ui.processors.source_glasses import LINE_WIDTH, kept_eyes, lens_rings
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media

SAME_PERSON = 0.6
"""dlib's distance under which two faces are the same person."""
SHUT = 0.2
"""An eye opening (lid to lid) under this share of the eye's width counts as shut or cast down."""
LIDS = (((159, 145), (158, 153), (160, 144)), ((386, 374), (385, 380), (387, 373)))
"""Per eye (image left, then right), pairs of upper and lower lid points across the opening."""
EYE_WIDTHS = ((33, 133), (362, 263))
LID_MOVES = (
    ((246, 7), (161, 163), (160, 144), (159, 145), (158, 153), (157, 154), (173, 155)),
    ((466, 249), (388, 390), (387, 373), (386, 374), (385, 380), (384, 381), (398, 382)),
)
"""Upper lid points and the lower lid point each closes onto (``with_eyes_shut``)."""
CREASES = ((247, 30, 29, 27, 28, 56, 190), (467, 260, 259, 257, 258, 286, 414))
"""The ring above each upper lid: it follows the lid half way, so the lid's skin stretches evenly."""
GOALS = {"streaks": 1.05, "carried": {"grace": 5, "astronaut": 5, "hanks": 3}, "eyes": 2.0}


def lab_streaks(image: Frame, box: tuple[int, int, int, int]) -> float:
    """The mean absolute high-frequency part (channel minus its Gaussian blur, sigma 3) of Lab a* and b*
    inside ``box`` (x1, y1, x2, y2), the two channels averaged."""
    x1, y1, x2, y2 = box
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    colour = lab[..., 1:]
    detail = np.abs(colour - cv2.GaussianBlur(colour, (0, 0), 3.0))[y1:y2, x1:x2]
    return float(detail.mean())


def with_eyes_shut(image: Frame, points: np.ndarray) -> Frame:
    """``image`` with the face whose mesh is ``points`` made to close its eyes: each upper lid point moved
    onto its lower lid point, the ring above half way, the rest of the mesh kept; drawn by the mesh's
    triangles (what no triangle covers is kept)."""
    moved = points.astype(np.float32).copy()
    for lid, crease in zip(LID_MOVES, CREASES, strict=True):
        for upper, lower in lid:
            moved[upper] = points[lower] + (points[upper] - points[lower]) * 0.08
        for point, (upper, _) in zip(crease, lid, strict=True):
            moved[point] = points[point] + (moved[upper] - points[upper]) * 0.5
    region = (0, 0, image.shape[1], image.shape[0])
    map_x, map_y, covered = render_maps(moved, np.zeros(len(moved), dtype=np.float32), points, region, mesh_triangles())
    warped = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return np.asarray(np.where(covered[..., None], warped, image), dtype=np.uint8)


def eye_openings(points: np.ndarray) -> list[tuple[float, float]]:
    """Per eye, its opening (mean lid-to-lid distance, pixels) and its width (corner to corner)."""
    openings = []
    for pairs, (first, second) in zip(LIDS, EYE_WIDTHS, strict=True):
        opening = float(np.mean([np.linalg.norm(points[a] - points[b]) for a, b in pairs]))
        openings.append((opening, float(np.linalg.norm(points[first] - points[second]))))
    return openings


@dataclass
class LooksResults:
    streaks: dict[str, list[float]] = field(default_factory=dict)
    carried: dict[str, int] = field(default_factory=dict)
    distances: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """Per source, on t1, each swapped face's dlib distance to the source and to its original."""
    shut_eye_errors: dict[str, list[float]] = field(default_factory=dict)
    """Per target, |opening after - opening before| (pixels) of its shut or cast-down eyes, all sources."""
    rims: dict[str, float] = field(default_factory=dict)
    """Per source, ``rim_left``."""
    seen: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Per source, on t1, each measure of ``looks_measures`` per face."""
    tiles: list[Frame] = field(default_factory=list)


class Looks:
    """Swaps each packaged source onto t1.jpg's faces and the astronaut with shut eyes, with the page's
    swapper (the mesh with its irises, the mask stage's default masks)."""

    def __init__(self, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.settings = Settings()
        self.analyser = FaceAnalyser(runtime)
        self.swapper = MeshWarpSwapper(self.settings, runtime)

    def faces(self, image: Frame) -> list[Face]:
        return self.analyser.analyse(image, self.settings, embeddings=True, mesh=True)

    def mesh_points(self, image: Frame, face: Face) -> np.ndarray | None:
        with self.runtime.using("mediapipe_face_mesh") as model:
            mesh = face_mesh(image, face.bbox, model)
        return None if mesh is None else mesh.points

    def prepared(self, image: Frame) -> tuple[Face, WarpSource]:
        face = self.faces(image)[0]
        prepared = self.swapper.prepare_face(image, face)
        assert prepared is not None
        return face, prepared

    def run(self) -> LooksResults:
        named = {
            "grace": media.grace_hopper(),
            "astronaut": media.astronaut(),
            "hanks": media.read(media.tom_hanks_path()),
        }
        sources = {name: self.prepared(image) for name, image in named.items()}
        results = LooksResults()
        for name, (face, prepared) in sources.items():
            mesh = self.swapper.warp_mesh(named[name], face)
            assert mesh is not None
            results.rims[name] = rim_left(prepared, WarpSource.of(named[name], mesh, keep_glasses=True))
        astronaut = self.faces(named["astronaut"])[0]
        assert astronaut.mesh is not None
        targets = {"t1": media.t1(), "astronaut shut": with_eyes_shut(named["astronaut"], astronaut.mesh.points)}
        for target_name, target in targets.items():
            faces = self.faces(target)
            for name, (source_face, prepared) in sources.items():
                if target_name.startswith(name):
                    continue
                swapped = target
                for face in faces:
                    result = self.swapper.swap_face(swapped, face, prepared, self.settings)
                    swapped = swapped if result is None else result
                self.measure(results, target_name, target, swapped, faces, (name, source_face, named[name]))
        return results

    def measure(
        self,
        results: LooksResults,
        target_name: str,
        target: Frame,
        swapped: Frame,
        faces: list[Face],
        source: tuple[str, Face, Frame],
    ) -> None:
        name, source_face, source_image = source
        for face in faces:
            x1, y1, x2, y2 = (int(value) for value in face.bbox)
            box = (max(x1, 0), max(y1, 0), x2, y2)
            if target_name == "t1":
                results.streaks.setdefault(name, []).append(lab_streaks(swapped, box) / lab_streaks(target, box))
                after = self.embed_at(swapped, face)
                to_source, to_original = (
                    (face_distance(after, source_face, "euclidean"), face_distance(after, face, "euclidean"))
                    if after is not None
                    else (np.inf, 0.0)
                )
                results.distances.setdefault(name, []).append((to_source, to_original))
                carried = to_source < min(SAME_PERSON, to_original)
                results.carried[name] = results.carried.get(name, 0) + int(carried)
                if face.mesh is not None:
                    seen = results.seen.setdefault(name, {})
                    for measure, values in looks_measures(target, swapped, [face.mesh.points]).items():
                        seen.setdefault(measure, []).extend(values)
                    if source_face.mesh is not None:
                        own = creases(source_image, source_face.mesh.points, face_size(face.mesh.points))
                        ratio = creases(swapped, face.mesh.points) / max(own, 1e-3)
                        seen.setdefault("creases", []).append(ratio)
            before_points, after_points = self.mesh_points(target, face), self.mesh_points(swapped, face)
            if before_points is not None and after_points is not None:
                for (opening, width), (after_opening, _) in zip(
                    eye_openings(before_points), eye_openings(after_points), strict=True
                ):
                    if opening < SHUT * width or target_name != "t1":
                        results.shut_eye_errors.setdefault(target_name, []).append(abs(after_opening - opening))
            results.tiles.append(side_by_side(target, source_image, swapped, face))

    def embed_at(self, image: Frame, face: Face) -> Face | None:
        from facefusion_ui.faces.detection import Detection
        from facefusion_ui.faces.face import box_iou

        found = self.analyser.analyse(
            image, self.settings, embeddings=True, detections=[Detection(face.bbox, face.score, face.kps)]
        )
        return max(found, key=lambda other: box_iou(other.bbox, face.bbox), default=None)


def side_by_side(target: Frame, source: Frame, swapped: Frame, face: Face, height: int = 160) -> Frame:
    """The face before, the source photo and the face after, each ``height`` px square."""
    x1, y1, x2, y2 = (int(value) for value in face.bbox)
    margin = (x2 - x1) // 4
    x1, y1 = max(x1 - margin, 0), max(y1 - margin, 0)
    x2, y2 = x2 + margin, y2 + margin

    def square(image: Frame) -> Frame:
        return np.asarray(cv2.resize(image, (height, height), interpolation=cv2.INTER_AREA), dtype=np.uint8)

    return np.hstack([square(target[y1:y2, x1:x2]), square(source), square(swapped[y1:y2, x1:x2])])


# what a person sees on the crops (issue 31's looks) ------------------------------------------------------
GRAIN_SIGMA = 1.0
"""The fine detail the grain measure reads: lightness minus its Gaussian blur over this many pixels."""
LOWER_BAND = (0.06, 0.2)
"""The band inside the face's outline (shares of the face's size) whose lightness ``lightness_shift`` reads."""
CORNER_REACH = 0.035
"""The disc round each mouth corner ``corner_dots`` reads (a share of the face's size)."""


def face_frame(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The mouth's middle, the face's unit up direction (mouth to eyes) and the eyes' height above it."""
    eyes = points[list(EYES)].mean(axis=0)
    mouth = points[list(MOUTH_CORNERS)].mean(axis=0)
    up = eyes - mouth
    height = float(np.linalg.norm(up)) or 1.0
    return mouth, up / height, height


def height_above_mouth(points: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Per pixel, how far above the mouth's middle it lies along the face's up direction, in eye heights."""
    mouth, up, height = face_frame(points)
    ys, xs = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float32)
    return np.asarray(((xs - mouth[0]) * up[0] + (ys - mouth[1]) * up[1]) / height, dtype=np.float32)


def cheeks(points: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """True on the cheeks: inside the face's outline, off its features (grown a little), between the
    mouth's level and just under the eyes."""
    outline = inside_outline(points, shape, ramp=1.0) > 0.5
    grow = max(3, int(face_size(points) * 0.04)) | 1
    features = cv2.dilate(features_mask(points, shape), np.ones((grow, grow), np.uint8)) > 0
    level = height_above_mouth(points, shape)
    return np.asarray(outline & ~features & (level > 0.0) & (level < 0.75))


def cheek_grain(image: Frame, target: Frame, points: np.ndarray) -> float:
    """The cheeks' fine lightness detail (mean absolute lightness minus its blur, ``GRAIN_SIGMA``) in
    ``image`` over the target's own: a small or noisy source's grain shows as more than 1."""
    area = cheeks(points, image.shape)

    def fine(picture: Frame) -> float:
        lightness = cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
        return float(np.abs(lightness - cv2.GaussianBlur(lightness, (0, 0), GRAIN_SIGMA))[area].mean())

    return fine(image) / max(fine(target), 1e-3) if area.any() else float("nan")


def cheek_colour(image: Frame, target: Frame, points: np.ndarray) -> tuple[float, float]:
    """On the cheeks, the swap's colour against the target's: the mean Lab chroma over the target's
    (under 1: greyer) and the mean distance in a*, b* (Lab units) of their colours smoothed (sigma 2)."""
    area = cheeks(points, image.shape)
    if not area.any():
        return float("nan"), float("nan")
    colours = []
    for picture in (image, target):
        lab = cv2.GaussianBlur(cv2.cvtColor(picture, cv2.COLOR_BGR2LAB).astype(np.float32), (0, 0), 2.0)
        colours.append(lab[..., 1:][area] - 128.0)
    swapped, own = colours
    chroma_ratio = float(np.hypot(*swapped.T).mean() / max(float(np.hypot(*own.T).mean()), 1e-3))
    return chroma_ratio, float(np.hypot(*(swapped - own).T).mean())


def lightness_shift(image: Frame, target: Frame, points: np.ndarray) -> float:
    """How much lighter (Lab L, 0..255) the swap is than the target in a band just inside the lower face's
    outline (``LOWER_BAND``, below the eyes: the cheeks and jaw beside the neck and ears), where a paler
    face shows against the target's own neck."""
    size = face_size(points)
    depth = inside_outline(points, image.shape, ramp=size)
    band = (depth > LOWER_BAND[0]) & (depth < LOWER_BAND[1]) & (height_above_mouth(points, image.shape) < 0.75)
    if not band.any():
        return float("nan")
    lightness = [
        cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)[band] for picture in (image, target)
    ]
    return float(lightness[0].mean() - lightness[1].mean())


MIDLINE = (1, 4, 5, 195, 197, 6, 168)
"""Mesh points down the nose: the face's middle, which ``darker_cheek`` splits the cheeks at."""


def darker_cheek(image: Frame, target: Frame, points: np.ndarray) -> float:
    """How much lighter (Lab L; negative: darker) the swap's cheeks are than the target's, per side of the
    face, the darker side: a source lit from the side or turned brought a grey shadow onto a cheek."""
    area = cheeks(points, image.shape)
    _, up, _ = face_frame(points)
    middle = points[list(MIDLINE)].mean(axis=0)
    ys, xs = np.mgrid[0 : image.shape[0], 0 : image.shape[1]].astype(np.float32)
    across = (xs - middle[0]) * -up[1] + (ys - middle[1]) * up[0]
    swapped, own = (cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32) for picture in (image, target))
    shifts = [
        float(swapped[side].mean() - own[side].mean())
        for side in (area & (across < 0), area & (across >= 0))
        if side.any()
    ]
    return min(shifts, default=float("nan"))


def rim_arcs(image: Frame, target: Frame, points: np.ndarray) -> float:
    """Thin lines (a top-hat and a black-hat of the lightness, as wide as a glasses frame, summed) on the
    lower half of the band along each lens's edge (``lens_rings``: where a source's lower rims land),
    off the eyes, in the swap over the target's own."""
    level = height_above_mouth(points, image.shape)
    rings = lens_rings(points, image.shape[:2]) > 0
    area = rings & (level < 1.0) & (kept_eyes(points, image.shape[:2]) == 0)
    if not area.any():
        return float("nan")
    kernel = max(3, int(face_size(points) * LINE_WIDTH)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))

    def lines(picture: Frame) -> float:
        lightness = cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0]
        thin = cv2.morphologyEx(lightness, cv2.MORPH_TOPHAT, element).astype(np.float32)
        thin += cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, element)
        return float(thin[area].mean())

    return lines(image) / max(lines(target), 1e-3)


def corner_dots(image: Frame, target: Frame, points: np.ndarray) -> float:
    """How much darker (Lab L) than the skin round it the darkest tenth of a small disc round each mouth
    corner is in the swap, less the same in the target; the worse corner."""
    reach = max(2.0, CORNER_REACH * face_size(points))
    lightness = [cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32) for picture in (image, target)]
    ys, xs = np.mgrid[0 : image.shape[0], 0 : image.shape[1]].astype(np.float32)
    worst = -np.inf
    for corner in MOUTH_CORNERS:
        distance = np.hypot(xs - points[corner, 0], ys - points[corner, 1])
        disc, ring = distance <= reach, (distance > 2 * reach) & (distance <= 3 * reach)
        if not disc.any() or not ring.any():
            continue
        depths = [float(np.median(light[ring]) - np.percentile(light[disc], 10)) for light in lightness]
        worst = max(worst, depths[0] - depths[1])
    return float(worst)


BAND_SIGMA = 1.5
"""The fine detail ``eye_band`` reads: lightness minus its Gaussian blur over this many pixels."""


def eye_band(image: Frame, target: Frame, points: np.ndarray) -> tuple[float, float]:
    """Round the eyes (the band along each lens's edge, ``lens_rings``, off the eyes), against the cheeks: the
    fine lightness detail's ratio (``BAND_SIGMA``) and the lightness difference (L), each in the swap over
    (less) the same in the target. A flat painted band where a source's glasses were shows as a detail
    ratio under 1, a pale one as a positive lightness difference."""
    band = (lens_rings(points, image.shape[:2]) > 0) & (kept_eyes(points, image.shape[:2]) == 0)
    area = cheeks(points, image.shape)
    band &= inside_outline(points, image.shape, ramp=1.0) > 0.5
    if not band.any() or not area.any():
        return float("nan"), float("nan")
    figures = []
    for picture in (image, target):
        lightness = cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32)
        fine = np.abs(lightness - cv2.GaussianBlur(lightness, (0, 0), BAND_SIGMA))
        ratio = float(fine[band].mean()) / max(float(fine[area].mean()), 1e-3)
        figures.append((ratio, float(lightness[band].mean() - lightness[area].mean())))
    (ratio, paler), (own_ratio, own_paler) = figures
    return ratio / max(own_ratio, 1e-3), paler - own_paler


CREASE_WIDTH = 0.03
"""The widest crease ``creases`` reads, a share of the face's size (a black-hat's kernel)."""


def creases(image: Frame, points: np.ndarray, size: float | None = None) -> float:
    """How dark the thin lines on the cheeks are (a black-hat of the lightness, ``CREASE_WIDTH`` of the face,
    mean over the cheeks), with the face first resized to ``size`` pixels across (its own size when None):
    a swap's over its source photo's at the swap's size says whether the source's wrinkles come across
    darker than its own (over 1) or fainter. What the target's own cheeks keep (its smile lines, where the
    source's fade at the edge) counts too: for a smooth-skinned source it reads over 1 without any change."""
    scale = 1.0 if size is None else size / max(face_size(points), 1.0)
    if abs(scale - 1.0) > 1e-3:
        interpolation = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
        image = np.asarray(cv2.resize(image, None, fx=scale, fy=scale, interpolation=interpolation), dtype=np.uint8)
        points = points * scale
    area = cheeks(points, image.shape)
    if not area.any():
        return float("nan")
    kernel = max(3, int(face_size(points) * CREASE_WIDTH)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))
    lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0]
    return float(cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, element)[area].mean())


def write_tiles(tiles: list[Frame], path: Path) -> None:
    cv2.imwrite(str(path), np.vstack(tiles))


def looks_measures(target: Frame, swapped: Frame, points: list[np.ndarray]) -> dict[str, list[float]]:
    """Per face (``points``: each face's mesh in ``target``), the measures of what a person sees."""
    measures: dict[str, list[float]] = {}
    for mesh in points:
        chroma, colour_off = cheek_colour(swapped, target, mesh)
        band_detail, band_paler = eye_band(swapped, target, mesh)
        for name, value in (
            ("grain", cheek_grain(swapped, target, mesh)),
            ("chroma", chroma),
            ("colour off", colour_off),
            ("lightness shift", lightness_shift(swapped, target, mesh)),
            ("darker cheek", darker_cheek(swapped, target, mesh)),
            ("rim arcs", rim_arcs(swapped, target, mesh)),
            ("corner dots", corner_dots(swapped, target, mesh)),
            ("band detail", band_detail),
            ("band paler", band_paler),
        ):
            measures.setdefault(name, []).append(value)
    return measures


def rim_left(bare: WarpSource, kept: WarpSource) -> float:
    """How much of a source photo's lower glasses rims is left once painted out: the dark thin lines (a
    black-hat of the lightness, as wide as a frame) on the lower half of the band along each lens's edge
    (``lens_rings``), off the eyes, in the source as drawn (``bare``) over the same with its glasses kept
    (``kept``). About 1 for a face without glasses (nothing painted)."""
    points = bare.mesh.points
    shape = bare.image.shape[:2]
    level = height_above_mouth(points, shape)
    area = (lens_rings(points, shape) > 0) & (level < 1.0) & (kept_eyes(points, shape) == 0)
    kernel = max(3, int(face_size(points) * LINE_WIDTH)) | 1
    element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (kernel, kernel))

    def lines(picture: Frame) -> float:
        lightness = cv2.cvtColor(picture, cv2.COLOR_BGR2LAB)[..., 0]
        return float(cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, element)[area].mean())

    return lines(bare.image) / max(lines(kept.image), 1e-3)

"""The paste-back masks on known geometry: the box with its padding and blur, the mesh's regions and areas
on a real face, the mouth mask, combining by the minimum, a masker plugged in by name, the settings."""

from __future__ import annotations

from typing import get_args

import cv2
import numpy as np
import pytest

from facefusion_ui.errors import SettingsError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.box import box_mask
from facefusion_ui.masks.maskers import mouth_interior
from facefusion_ui.masks.mesh_parts import area_polygon_mask, part_indices, region_polygon_mask
from facefusion_ui.masks.occlusion import clean, hand_mask
from facefusion_ui.masks.stage import MASKERS, MaskerFactory, MaskStage
from facefusion_ui.masks.view import FaceView, crop_view
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import FaceMaskRegion, Mask
from tests.conftest import RunCli
from tests.support import media

SETTINGS = Settings()


@pytest.fixture(scope="module")
def astronaut_face(shared_runtime: ModelRuntime) -> Face:
    face = FaceAnalyser(shared_runtime).analyse(media.astronaut(), SETTINGS, embeddings=False, mesh=True)[0]
    assert face.mesh is not None
    return face


def inside(mask: Mask, polygon: np.ndarray, level: float = 0.5) -> float:
    """The share of the pixels of ``mask`` above ``level`` that lie inside ``polygon`` (or on its edge)."""
    ys, xs = np.nonzero(mask > level)
    hits = [
        cv2.pointPolygonTest(polygon.astype(np.float32), (float(x), float(y)), True) >= -1.0
        for x, y in zip(xs, ys, strict=True)
    ]
    return float(np.mean(hits))


def test_box_mask_padding_trims_each_side_and_the_middle_stays_whole() -> None:
    mask = box_mask((200, 100), (10, 0, 30, 20), blur=0.0, border=0.0)
    assert mask.shape == (200, 100)
    assert mask[100, 50] == pytest.approx(1.0)
    assert mask[10, 50] < 0.5 < mask[30, 50]  # top: 10 % of 200 rows
    assert mask[150, 50] < 0.5 < mask[120, 50]  # bottom: 30 % of 200 rows (from row 140)
    assert mask[100, 10] < 0.5 < mask[100, 30]  # left: 20 % of 100 columns
    assert mask[100, 99] == pytest.approx(1.0)  # right: nothing trimmed, nothing faded


def test_box_mask_of_a_crop_keeps_its_border_and_blur_softens_the_edge() -> None:
    sharp = box_mask((128, 128), (0, 0, 0, 0), blur=0.0)
    soft = box_mask((128, 128), (0, 0, 0, 0), blur=0.8)
    assert sharp[0, 64] < 0.5 and soft[0, 64] < 0.5  # the crop's own edge hardly shows
    assert sharp[64, 64] == pytest.approx(1.0)
    partial = (sharp > 0.05) & (sharp < 0.95)
    assert ((soft > 0.05) & (soft < 0.95)).sum() > 4 * partial.sum()
    # the fade is monotonic from the edge inward
    row = soft[64, :64]
    assert np.all(np.diff(row) >= -1e-6)


def test_mouth_region_lies_inside_the_lips(astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    points = astronaut_face.mesh.points * 4  # drawn 4x larger: edge pixels count little
    shape = (512 * 4, 512 * 4)
    outer = points[list(part_indices()["lips-outer"])]
    inner = points[list(part_indices()["lips-inner"])]
    mouth = region_polygon_mask(points, "mouth", shape)
    assert mouth.sum() > 50  # the astronaut smiles with her teeth showing
    assert inside(mouth, inner) == 1.0
    for lip in ("upper-lip", "lower-lip"):
        mask = region_polygon_mask(points, lip, shape)
        assert mask.sum() > 50 and inside(mask, outer) == 1.0
        shared_edge = cv2.arcLength(inner.astype(np.float32), closed=True) / 2
        assert (mask * mouth).sum() < 1.5 * shared_edge, f"{lip} covers the mouth's opening"
    upper, lower = (region_polygon_mask(points, lip, shape) for lip in ("upper-lip", "lower-lip"))
    assert upper.nonzero()[0].mean() < lower.nonzero()[0].mean()


def test_every_region_is_inside_the_face_and_skin_leaves_the_features_out(astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    points = astronaut_face.mesh.points
    shape = media.astronaut().shape[:2]
    regions: tuple[FaceMaskRegion, ...] = get_args(FaceMaskRegion)
    masks = {region: region_polygon_mask(points, region, shape) for region in regions}
    oval = points[list(part_indices()["oval"])]
    for region, mask in masks.items():
        assert mask.sum() > 20, region
        assert inside(mask, oval) > 0.97, region
    for feature in ("left-eye", "right-eye", "nose", "mouth", "upper-lip"):
        assert (masks["skin"] * masks[feature]).sum() < 0.1 * masks[feature].sum(), feature  # edge pixels
    # the person's left eye is on the image's right
    assert masks["left-eye"].nonzero()[1].mean() > masks["right-eye"].nonzero()[1].mean()
    glasses = masks["glasses"]
    for point in ((points[168] + points[6]) / 2, points[list(part_indices()["left-eye"])].mean(axis=0)):
        assert glasses[int(point[1]), int(point[0])] == 1.0
    assert (glasses * masks["mouth"]).sum() == 0


def test_upper_and_lower_face_meet_at_the_nose_base(astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    points = astronaut_face.mesh.points
    shape = media.astronaut().shape[:2]
    upper = area_polygon_mask(points, "upper-face", shape)
    lower = area_polygon_mask(points, "lower-face", shape)
    mouth = area_polygon_mask(points, "mouth", shape)
    eye = points[list(part_indices()["left-eye"])].mean(axis=0).astype(int)
    lips = points[14].astype(int)
    assert upper[eye[1], eye[0]] == 1.0 and lower[eye[1], eye[0]] == 0.0
    assert lower[lips[1], lips[0]] == 1.0 and upper[lips[1], lips[0]] == 0.0
    assert (upper * lower).sum() < 0.02 * upper.sum()
    assert (mouth * upper).sum() == 0 and (mouth * lower).sum() > 0.9 * mouth.sum()


def test_mouth_mask_covers_the_opening_and_the_inner_lip_edges(astronaut_face: Face) -> None:
    assert astronaut_face.mesh is not None
    points = astronaut_face.mesh.points
    shape = media.astronaut().shape[:2]
    interior = mouth_interior(points, shape)
    opening = region_polygon_mask(points, "mouth", shape)
    assert (interior * opening).sum() >= 0.99 * opening.sum()
    assert interior.sum() > 1.2 * opening.sum()  # reaches over the lips' inner edges
    eye = points[list(part_indices()["left-eye"])].mean(axis=0).astype(int)
    assert interior[eye[1], eye[0]] == 0


class Constant:
    """A masker that returns one value everywhere (a stand-in for a model-backed masker)."""

    needs_mesh = False

    def __init__(self, name: str, value: float) -> None:
        self.name = name
        self.value = value

    def required_models(self) -> tuple[str, ...]:
        return (f"model_of_{self.name}",)

    def mask(self, view: FaceView) -> Mask:
        mask = np.full(view.shape, self.value, dtype=np.float32)
        mask[: view.shape[0] // 2] = 1.0
        return mask


def test_the_stage_combines_by_the_minimum_and_takes_maskers_by_name(shared_runtime: ModelRuntime) -> None:
    factories: dict[str, MaskerFactory] = {
        **MASKERS,
        "occlusion": lambda settings, runtime: Constant("occlusion", 0.25),
        "region": lambda settings, runtime: Constant("region", 0.6),
    }
    settings = SETTINGS.with_items(face_mask_types=("box", "occlusion", "region"), face_mask_blur=0.0)
    stage = MaskStage(settings, shared_runtime, factories)
    assert stage.required_models() == ("model_of_occlusion", "model_of_region")
    frame = np.zeros((100, 100, 3), dtype=np.uint8)
    face = Face(np.array([0, 0, 100, 100], np.float32), 1.0, np.zeros((5, 2), np.float32), "test")
    matrix = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    view = crop_view(frame, face, None, matrix, 100)
    mask = stage.mask(view)
    box = box_mask((100, 100), (0, 0, 0, 0), 0.0)
    np.testing.assert_allclose(mask[75], np.minimum(box[75], 0.25))
    np.testing.assert_allclose(mask[25], box[25])
    counts = stage.counts()
    assert counts["faces_masked"] == 1
    assert counts["occlusion_pixels"] == 50 * 100  # the lower half, below 0.5, in frame pixels


def test_a_hand_covers_its_landmarks_hull_and_a_margin() -> None:
    fingers = np.array([[40 + 5 * i, 20 + (i % 3) * 4] for i in range(16)], dtype=np.float32)
    palm = np.array([[40, 60], [60, 70], [80, 60], [60, 40], [50, 50]], dtype=np.float32)
    landmarks = np.vstack([fingers, palm])
    identity = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    mask = hand_mask([landmarks], identity, (100, 120))
    hull = cv2.convexHull(landmarks)
    assert inside(1.0 - mask, hull) < 0.02  # nothing of the hull left uncovered
    assert mask[60, 60] == 1.0 and mask[60, 85] == 1.0 and mask[95, 5] == 0.0


def test_cleaning_drops_specks_and_fills_an_object_ring() -> None:
    oval = np.zeros((200, 200), dtype=np.float32)
    cv2.circle(oval, (100, 100), 95, 1.0, -1)
    candidates = np.zeros((200, 200), dtype=np.float32)
    rng = np.random.default_rng(0)
    specks = rng.integers(0, 200, size=(60, 2))
    candidates[specks[:, 1], specks[:, 0]] = 1.0  # skin texture: single pixels
    cv2.circle(candidates, (100, 130), 30, 1.0, thickness=8)  # a cup's rim, its inside skin-coloured
    occluded = clean(candidates, oval, size=190.0)
    assert occluded[130, 100] > 0.9, "the inside of the rim is part of the object"
    assert occluded[40, 40] < 0.05 and occluded[60, 150] < 0.05


def test_cleaning_drops_the_faces_own_folds_even_where_they_touch_an_object() -> None:
    oval = np.zeros((200, 200), dtype=np.float32)
    cv2.circle(oval, (100, 100), 95, 1.0, -1)
    candidates = np.zeros((200, 200), dtype=np.float32)
    for x in (60, 85, 110, 135):  # a row of coins over the mouth
        cv2.circle(candidates, (x, 150), 11, 1.0, -1)
    cv2.line(candidates, (60, 140), (75, 80), 1.0, thickness=5)  # nasolabial folds, dark lines
    cv2.line(candidates, (140, 140), (125, 80), 1.0, thickness=5)
    occluded = clean(candidates, oval, size=190.0)
    assert all(occluded[150, x] > 0.9 for x in (60, 85, 110, 135)), "the coins are kept"
    assert occluded[105, 69] < 0.05 and occluded[105, 131] < 0.05, "the folds are face, not an occluder"


def test_mask_settings_validate_and_padding_reads_like_css() -> None:
    assert SETTINGS.face_mask_types == ("box",)
    assert SETTINGS.face_mask_padding == (0, 0, 0, 0)
    assert SETTINGS.with_items(face_mask_padding=[5]).face_mask_padding == (5, 5, 5, 5)
    assert SETTINGS.with_items(face_mask_padding=[5, 10]).face_mask_padding == (5, 10, 5, 10)
    assert SETTINGS.with_items(face_mask_padding=(1, 2, 3)).face_mask_padding == (1, 2, 3, 2)
    loaded = Settings.from_json(SETTINGS.with_items(face_mask_padding=(1, 2, 3, 4), mouth_mask=True).to_json())
    assert loaded.face_mask_padding == (1, 2, 3, 4) and loaded.mouth_mask
    for bad in ((1, 2, 3, 4, 5), (101,), (50, 0, 50, 0), ("10",), ()):
        with pytest.raises(SettingsError, match="face_mask_padding"):
            SETTINGS.with_items(face_mask_padding=bad)
    with pytest.raises(SettingsError, match="'hat' for setting 'face_mask_regions'"):
        SETTINGS.with_items(face_mask_regions=("nose", "hat"))
    with pytest.raises(SettingsError, match="face_mask_types"):
        SETTINGS.with_items(face_mask_types=())


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--face-mask-types", "box", "hat"], "invalid choice: 'hat'"),
        (["--face-mask-padding", "1", "2", "3", "4", "5"], "face_mask_padding"),
        (["--face-mask-padding", "60", "0", "50"], "opposite sides"),
        (["--face-mask-areas", "chin"], "invalid choice: 'chin'"),
        (["--face-mask-padding", "ten"], "invalid int value: 'ten'"),
    ],
)
def test_bad_mask_options_are_one_line_and_exit_2(run_cli: RunCli, options: list[str], expected: str) -> None:
    result = run_cli(["process", "-s", "a.jpg", "-t", "b.jpg", "-o", "c.jpg", *options])
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr

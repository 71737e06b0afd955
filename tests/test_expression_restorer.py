"""The expression restorer on stand-in LivePortrait parts (``tests/support/face_edit_models.py``): the
target's expression (the stand-in reads the mouth's redness) is moved onto the swapped face through the
generator's source and target points; the factor, the areas and FaceFusion's fixed points; the target's
face read from the frame as it was before the chain; the head's rotation as scipy makes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation  # type: ignore[import-untyped]

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors import live_portrait as lp
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.expression_restorer import ExpressionRestorer, restored_expression
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support.face_edit_models import build_live_portrait

ARCFACE_128 = np.array([(0.362, 0.404), (0.637, 0.402), (0.500, 0.560), (0.387, 0.722), (0.615, 0.720)], np.float32)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_live_portrait(folder)
    return folder


def face() -> Face:
    kps = (ARCFACE_128 - 0.5) * 240 + (250, 230)
    return Face(np.array([130, 110, 370, 350], np.float32), 0.9, kps.astype(np.float32), "test")


def frames(mouth: tuple[int, int, int] = (40, 40, 220)) -> tuple[Frame, Frame]:
    """The target (its mouth coloured ``mouth``) and the same frame after a swap that greyed the mouth."""
    swapped = np.full((460, 500, 3), 128, np.uint8)
    target = swapped.copy()
    corners = face().kps[3:5]
    x1, x2 = int(corners[:, 0].min()) - 6, int(corners[:, 0].max()) + 6
    y = int(corners[:, 1].mean())
    target[y - 12 : y + 12, x1:x2] = mouth
    return target, swapped


def restorer(folder: Path, **values: object) -> ExpressionRestorer:
    settings = Settings(processors=("face_swapper", "expression_restorer"), **values)  # type: ignore[arg-type]
    return ExpressionRestorer(settings, ModelRuntime(load_manifest(folder=folder), folder, SessionPool(("cpu",))))


def run(processor: ExpressionRestorer, target: Frame, swapped: Frame) -> Frame:
    context = FrameContext(0, 0.0, processor.settings, faces=(face(),), extras={"target_frame": target})
    return processor.process_frame(swapped, context)


def brightening(result: Frame, swapped: Frame) -> float:
    centre = face().kps[2].round().astype(int)
    x, y = centre
    return float(result[y - 10 : y + 10, x - 10 : x + 10].astype(np.float32).mean() - swapped[y, x].mean())


def test_the_targets_expression_moves_the_swapped_face(models: Path) -> None:
    target, swapped = frames()
    assert brightening(run(restorer(models), target, swapped), swapped) > 40
    # the target's mouth as the swapped one: nothing to restore
    assert abs(brightening(run(restorer(models), swapped, swapped), swapped)) < 4
    # a mouth less red than grey: the other way
    darker, _ = frames(mouth=(128, 128, 20))
    assert brightening(run(restorer(models), darker, swapped), swapped) < -20


def test_factor_and_areas(models: Path) -> None:
    target, swapped = frames()
    both = brightening(run(restorer(models), target, swapped), swapped)
    upper = brightening(run(restorer(models, expression_restorer_areas=("upper-face",)), target, swapped), swapped)
    weaker = brightening(run(restorer(models, expression_restorer_factor=30), target, swapped), swapped)
    assert 0 < upper < both and 0 < weaker < both
    assert np.array_equal(run(restorer(models, expression_restorer_factor=0), target, swapped), swapped)


def test_a_wrong_template_misses_the_mouth(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, swapped = frames()
    monkeypatch.setattr(lp, "TEMPLATE", "arcface_112_v2")
    assert brightening(run(restorer(models), target, swapped), swapped) < 15


def test_restored_expression_keeps_facefusions_fixed_points() -> None:
    current, target = np.zeros((1, 21, 3), np.float32), np.full((1, 21, 3), 0.01, np.float32)
    mixed = restored_expression(target, current, 1.0, ("lower-face",))
    assert (mixed[0, list(lp.KEPT)] == 0).all() and (mixed[0, list(lp.UPPER_FACE)] == 0).all()
    assert (mixed[0, list(lp.LOWER_FACE)] == np.minimum(0.01, lp.EXPRESSION_MAX[list(lp.LOWER_FACE)])).all()


def test_rotation_is_scipys_xyz() -> None:
    for angles in ((10.0, -25.0, 7.0), (-30.0, 50.0, -12.0)):
        expected = Rotation.from_euler("xyz", list(angles), degrees=True).as_matrix()
        assert np.abs(lp.rotation(*angles) - expected).max() < 1e-6


def test_the_catalog_has_the_three_parts(models: Path) -> None:
    assert restorer(models).required_models()[:3] == (
        "live_portrait_feature_extractor",
        "live_portrait_motion_extractor",
        "live_portrait_generator",
    )
    manifest = load_manifest()
    assert all("MIT" in manifest[name].description for name in restorer(models).required_models()[:3])

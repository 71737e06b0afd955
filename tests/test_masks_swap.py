"""The masks in a real swap: a cup held over a face stays with occlusion on and is painted over with it
off (embedded and ONNX swappers), the mouth mask keeps the target's teeth, ``--json`` says which masks ran.

No photo of a hand in front of a face ships in an installed package, so mediapipe's hand model is only
run here on faces without hands (it must find none); objects are caught by the appearance model."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.core import process
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.masks.maskers import mouth_interior
from facefusion_ui.masks.mesh_parts import region_polygon_mask
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.mesh_warp import WarpSource, mesh_warp_swap
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.conftest import RunCli
from tests.support import media, occluders

SETTINGS = Settings()
OCCLUSION = SETTINGS.with_items(face_mask_types=("box", "occlusion"))


def analysed(runtime: ModelRuntime, frame: Frame) -> Face:
    face = FaceAnalyser(runtime).analyse(frame, SETTINGS, embeddings=False, mesh=True)[0]
    assert face.mesh is not None
    return face


def unchanged(before: Frame, after: Frame) -> np.ndarray:
    return np.asarray(np.abs(before.astype(np.int16) - after.astype(np.int16)).max(axis=2) <= 8)


@pytest.fixture(scope="module")
def cup_held() -> tuple[Frame, np.ndarray]:
    """Grace Hopper with the coffee cup held over her mouth and chin, and the cup's pixels."""
    runtime = ModelRuntime.create(SETTINGS)
    portrait = media.grace_hopper()
    face = analysed(runtime, portrait)
    assert face.mesh is not None
    mesh = face.mesh.points
    runtime.release_all()
    return occluders.held_over(portrait, occluders.cup(), mesh[14] + (mesh[14] - mesh[168]) * 0.15, face.width * 0.7)


@pytest.fixture(scope="module")
def astronaut_source(shared_runtime: ModelRuntime) -> WarpSource:
    face = analysed(shared_runtime, media.astronaut())
    assert face.mesh is not None
    return WarpSource.of(media.astronaut(), face.mesh)


def embedded_swap(runtime: ModelRuntime, frame: Frame, source: WarpSource, settings: Settings) -> Frame:
    face = analysed(runtime, frame)
    assert face.mesh is not None
    hook = MaskStage(settings, runtime).blend_mask(frame, face, face.mesh.points)
    return mesh_warp_swap(frame, face.mesh, source, settings.face_mask_blur, hook).frame


def test_the_embedded_swap_leaves_a_held_cup_with_occlusion_on(
    shared_runtime: ModelRuntime, astronaut_source: WarpSource, cup_held: tuple[Frame, np.ndarray]
) -> None:
    held, cup = cup_held
    plain = embedded_swap(shared_runtime, held, astronaut_source, SETTINGS)
    masked = embedded_swap(shared_runtime, held, astronaut_source, OCCLUSION)
    assert unchanged(held, plain)[cup].mean() < 0.6, "without occlusion the swap paints over the cup"
    assert unchanged(held, masked)[cup].mean() > 0.9
    # the face beside the cup is still swapped: the eyes and the nose
    face_changed = ~unchanged(plain, held) & ~cup
    assert (~unchanged(masked, held))[face_changed].mean() > 0.8


def test_the_onnx_swap_leaves_a_held_cup_with_occlusion_on(
    onnx_models: Path, tmp_path: Path, cup_held: tuple[Frame, np.ndarray]
) -> None:
    held, cup = cup_held
    runtime = ModelRuntime(load_manifest(folder=onnx_models), onnx_models, SessionPool(("cpu",)))
    source, target = tmp_path / "astronaut.png", tmp_path / "held.png"
    cv2.imwrite(str(source), media.astronaut())
    cv2.imwrite(str(target), held)
    kept = {}
    for name, settings in (("plain", SETTINGS), ("occlusion", OCCLUSION)):
        output = tmp_path / f"{name}.png"
        settings = settings.with_items(face_swapper_model="inswapper_128")
        result = process(SwapJob.of(settings, [source], target, output), RunContext(runtime=runtime))
        assert result.stats["faces_swapped"] == 1
        kept[name] = unchanged(held, media.read(output))[cup].mean()
    assert kept["occlusion"] > 0.9 and kept["occlusion"] > kept["plain"] + 0.2, kept
    runtime.release_all()


def test_the_mouth_mask_keeps_the_targets_teeth(shared_runtime: ModelRuntime) -> None:
    target = media.astronaut()
    face = analysed(shared_runtime, target)
    assert face.mesh is not None
    # a source whose mouth opening is bright green: drawn, it shows at once
    painted = target.copy()
    painted[region_polygon_mask(face.mesh.points, "mouth", target.shape[:2]) > 0] = (0, 255, 0)
    source = WarpSource.of(painted, face.mesh)
    teeth = cv2.erode(region_polygon_mask(face.mesh.points, "mouth", target.shape[:2]), np.ones((3, 3))) > 0
    assert teeth.sum() > 30
    plain = embedded_swap(shared_runtime, target, source, SETTINGS)
    kept = embedded_swap(shared_runtime, target, source, SETTINGS.with_items(mouth_mask=True))
    assert unchanged(target, plain)[teeth].mean() < 0.2, "the source's green mouth is drawn"
    assert unchanged(target, kept)[teeth].mean() > 0.95
    # the rest of the face is swapped as before
    outside = mouth_interior(face.mesh.points, target.shape[:2]) == 0
    difference = np.abs(plain.astype(np.int16) - kept.astype(np.int16)).max(axis=2)
    assert (difference[outside] > 8).mean() < 0.01


def test_json_reports_the_masks_that_ran(run_cli: RunCli, tmp_path: Path, cup_held: tuple[Frame, np.ndarray]) -> None:
    source, target, output = tmp_path / "astronaut.png", tmp_path / "held.png", tmp_path / "out.png"
    cv2.imwrite(str(source), media.astronaut())
    cv2.imwrite(str(target), cup_held[0])
    options = ["--face-mask-types", "box", "occlusion", "--mouth-mask", "--json"]
    result = run_cli(["process", "-s", str(source), "-t", str(target), "-o", str(output), *options], timeout=300)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    masks = summary["masks"]
    assert masks["types"] == ["box", "occlusion"] and masks["mouth_mask"] is True
    assert masks["faces_masked"] == 1
    assert masks["occlusion_pixels"] > 0.5 * cup_held[1].sum()
    assert {"mediapipe_hands", "mediapipe_selfie_segmentation"} <= set(summary["models_used"])

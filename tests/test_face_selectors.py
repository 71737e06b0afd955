"""FaceFusion's face selectors: the fairface classifier (a stand-in run both our way and by FaceFusion's steps,
written out here from ``facefusion/face_classifier.py`` and ``face_helper.py``), the order and the gender,
race and age filters of ``sort_and_filter_faces`` (``facefusion/face_selector.py``) on hand-made faces, the
one line without the classifier, and a run with the stand-in installed selecting by gender."""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort
import pytest

from facefusion_ui.errors import ModelError, SettingsError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.classifier import (
    categorize_age,
    categorize_gender,
    categorize_race,
    check_classifier,
    classifier_input,
    classify,
)
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.recognizer import RecognizerScale
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.selector import filters_in_use, select_faces, sort_and_filter_faces, sort_faces
from facefusion_ui.inference import SessionPool
from facefusion_ui.jobs.payload import make_payload, validate_job
from facefusion_ui.model_download import download_model
from facefusion_ui.models import load_manifest
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points
from tests.conftest import RunCli
from tests.support import media
from tests.support.http_server import ServedFile, serve
from tests.support.onnx_models import build_fairface

# FaceFusion's face_helper.py WARP_TEMPLATE_SET['arcface_112_v2'] and face_classifier.py's model options
ARCFACE_112_V2 = np.array(
    [
        [0.34191607, 0.46157411],
        [0.65653393, 0.45983393],
        [0.50022500, 0.64050536],
        [0.37097589, 0.82469196],
        [0.63151696, 0.82325089],
    ]
)
ARCFACE_112_V1 = np.array(
    [
        [0.35473214, 0.45658929],
        [0.64526786, 0.45658929],
        [0.50000000, 0.61154464],
        [0.37913393, 0.77687500],
        [0.62086607, 0.77687500],
    ]
)
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def facefusion_input(
    frame: Frame, kps: Points, template: np.ndarray = ARCFACE_112_V2, rgb: bool = True, std: bool = True
) -> np.ndarray:
    """face_classifier.classify_face up to the session, step by step (the keywords: the wrong variants)."""
    matrix = cv2.estimateAffinePartial2D(kps, template * 224, method=cv2.RANSAC, ransacReprojThreshold=100)[0]
    crop = cv2.warpAffine(frame, matrix, (224, 224), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_AREA)
    crop = crop.astype(np.float32)[:, :, ::-1] / 255.0 if rgb else crop.astype(np.float32) / 255.0
    crop -= MEAN
    if std:
        crop /= STD
    return np.expand_dims(crop.transpose(2, 0, 1), axis=0).astype(np.float32)


def facefusion_classes(session: ort.InferenceSession, blob: np.ndarray) -> tuple[str, range, str]:
    """forward() and the categorize_* of face_classifier.py, written out."""
    race_id, gender_id, age_id = (int(output[0]) for output in session.run(None, {"input": blob}))
    gender = "female" if gender_id == 1 else "male"
    ages = {0: (0, 2), 1: (3, 9), 2: (10, 19), 3: (20, 29), 4: (30, 39), 5: (40, 49), 6: (50, 59), 7: (60, 69)}
    age = range(*ages.get(age_id, (70, 100)))
    races = {1: "black", 2: "latino", 3: "asian", 4: "asian", 5: "indian", 6: "arabic"}
    return gender, age, races.get(race_id, "white")


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("classifier_models")
    build_fairface(folder / "fairface.onnx")
    return folder


@pytest.fixture(scope="module")
def session(stand_in: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(stand_in / "fairface.onnx"), providers=["CPUExecutionProvider"])


def textured_frame() -> tuple[Frame, Points]:
    """A smooth random picture (every crop of it differs) and 5 points of a tilted face on it."""
    noise = np.random.default_rng(3).integers(0, 256, (60, 80, 3)).astype(np.uint8)
    frame = np.asarray(cv2.resize(noise, (480, 360), interpolation=cv2.INTER_CUBIC), dtype=np.uint8)
    kps = np.array([[200, 150], [262, 160], [228, 192], [203, 222], [252, 230]], np.float32)
    return frame, kps


def face(x: float, y: float, side: float = 50.0, score: float = 0.9, **classes: object) -> Face:
    bbox = np.array([x, y, x + side, y + side], np.float32)
    return Face(bbox, score, np.zeros((5, 2), np.float32), "test", **classes)  # type: ignore[arg-type]


def test_the_input_is_facefusions_and_a_wrong_step_is_not() -> None:
    frame, kps = textured_frame()
    ours, theirs = classifier_input(frame, kps), facefusion_input(frame, kps)
    assert ours.shape == theirs.shape == (1, 3, 224, 224) and ours.dtype == np.float32
    assert np.abs(ours - theirs).mean() < 0.005  # the same to a pixel's rounding here and there
    for wrong in (
        facefusion_input(frame, kps, template=ARCFACE_112_V1),
        facefusion_input(frame, kps, rgb=False),
        facefusion_input(frame, kps, std=False),
    ):
        assert np.abs(wrong - theirs).mean() > 20 * np.abs(ours - theirs).mean()


def test_the_stand_in_says_what_facefusions_steps_say(session: ort.InferenceSession) -> None:
    frame, kps = textured_frame()
    expected = facefusion_classes(session, facefusion_input(frame, kps))
    assert tuple(classify(frame, Face(np.zeros(4, np.float32), 1.0, kps, "test"), session)) == expected
    for wrong in (
        facefusion_input(frame, kps, template=ARCFACE_112_V1),
        facefusion_input(frame, kps, rgb=False),
        facefusion_input(frame, kps, std=False),
    ):
        assert facefusion_classes(session, wrong) != expected


def test_the_ids_read_as_facefusion_reads_them() -> None:
    assert [categorize_gender(i) for i in (0, 1)] == ["male", "female"]
    assert [categorize_race(i) for i in range(8)] == [
        "white",
        "black",
        "latino",
        "asian",
        "asian",
        "indian",
        "arabic",
        "white",
    ]
    assert [categorize_age(i) for i in (0, 3, 8, 9, -1)] == [
        range(0, 2),
        range(20, 29),
        range(70, 100),
        range(70, 100),
        range(70, 100),
    ]


SCALE = RecognizerScale("test", "cosine", 0.5)


def settings(**values: object) -> Settings:
    return Settings(**values)  # type: ignore[arg-type]


def test_the_orders_facefusion_has() -> None:
    high, low = face(10, 10, score=0.6), face(80, 90, score=0.95)
    assert sort_faces([high, low], "bottom-top") == [low, high]
    assert sort_faces([low, high], "top-bottom") == [high, low]
    assert sort_faces([low, high], "worst-best") == [high, low]
    assert sort_faces([high, low], "best-worst") == [low, high]


CROWD = (
    face(0, 0, 90, gender="male", age=range(30, 39), race="white"),
    face(100, 0, 80, gender="female", age=range(20, 29), race="asian"),
    face(200, 0, 70, gender="female", age=range(60, 69), race="black"),
    face(300, 0, 60, gender="male", age=range(3, 9), race="asian"),
)


def test_filters_keep_faces_by_their_classes_in_order() -> None:
    man, woman, older_woman, boy = CROWD
    assert sort_and_filter_faces(CROWD, settings(face_selector_gender="female")) == [woman, older_woman]
    assert sort_and_filter_faces(CROWD, settings(face_selector_race="asian")) == [woman, boy]
    kept = sort_and_filter_faces(CROWD, settings(face_selector_race="asian", face_selector_order="small-large"))
    assert kept == [boy, woman]
    assert sort_and_filter_faces(CROWD, settings(face_selector_age_start=25, face_selector_age_end=40)) == [
        man,
        woman,
    ]
    assert sort_and_filter_faces(CROWD, settings(face_selector_age_end=10)) == [boy]
    assert sort_and_filter_faces(CROWD, settings(face_selector_age_start=9, face_selector_age_end=10)) == []
    both = settings(face_selector_gender="male", face_selector_age_start=18)
    assert sort_and_filter_faces(CROWD, both) == [man]


def test_auto_takes_the_source_faces_class_and_without_one_keeps_all() -> None:
    _, woman, older_woman, _ = CROWD
    source = face(0, 0, gender="female", age=range(20, 29), race="black")
    assert sort_and_filter_faces(CROWD, settings(face_selector_gender="auto"), source) == [woman, older_woman]
    assert sort_and_filter_faces(CROWD, settings(face_selector_race="auto"), source) == [older_woman]
    assert sort_and_filter_faces(CROWD, settings(face_selector_gender="auto")) == list(CROWD)


def test_every_mode_filters() -> None:
    _, woman, older_woman, _ = CROWD
    female = {"face_selector_gender": "female"}
    assert select_faces(CROWD, settings(face_selector_mode="many", **female), None, SCALE) == [woman, older_woman]
    assert select_faces(CROWD, settings(face_selector_mode="one", **female), None, SCALE) == [woman]
    embedded = [item.with_embedding(np.array([1.0, 0.0], np.float32), "test") for item in CROWD]
    reference = np.array([1.0, 0.0], np.float32)
    by_source = settings(face_selector_mode="reference", reference_face_from="source", **female)
    assert [item.gender for item in select_faces(embedded, by_source, reference, SCALE)] == ["female", "female"]
    by_frame = settings(face_selector_mode="reference", **female)  # the filters chose the reference face there
    assert len(select_faces(embedded, by_frame, reference, SCALE)) == 4


def test_the_debugger_says_a_faces_classes_and_why_the_filters_dropped_it() -> None:
    from facefusion_ui.processors.base import FaceReport, FrameContext
    from facefusion_ui.processors.face_debugger import frame_annotations

    man, woman, _, _ = CROWD
    report = FaceReport([man, woman], [woman], [None, None], None, "cosine", 0.5, "many")
    dropped, kept = frame_annotations(FrameContext(0, 0.0, Settings(), [woman], report=report))
    assert "male, 30-38, white" in dropped.lines and "skipped: filtered out (face selector)" in dropped.lines
    assert "female, 20-28, asian" in kept.lines and kept.selected


def test_the_filters_default_to_none_and_the_age_window_holds_an_age() -> None:
    assert filters_in_use(Settings()) == ()
    assert filters_in_use(settings(face_selector_age_start=0, face_selector_age_end=100)) == ()
    assert filters_in_use(settings(face_selector_age_end=30, face_selector_race="auto")) == (
        "face_selector_race",
        "face_selector_age_end",
    )
    with pytest.raises(SettingsError, match="face_selector_age_end"):
        settings(face_selector_age_start=40, face_selector_age_end=40)


@pytest.fixture
def photos(tmp_path: Path) -> tuple[Path, Path]:
    source, target = tmp_path / "source.png", tmp_path / "t1.png"
    cv2.imwrite(str(source), media.astronaut())
    cv2.imwrite(str(target), media.t1())
    return source, target


def test_a_filter_without_the_classifier_is_one_line_before_any_work(
    cli_here: RunCli, photos: tuple[Path, Path], tmp_path: Path
) -> None:
    source, target = photos
    empty = tmp_path / "no_models"
    empty.mkdir()
    args = ["process", "-s", str(source), "-t", str(target), "-o", str(tmp_path / "out.png")]
    completed = cli_here([*args, "--face-selector-gender", "female"], {"FACEFUSION_UI_MODELS": str(empty)})
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "fairface" in lines[0] and "python run.py models download fairface" in lines[0]
    assert not (tmp_path / "out.png").exists()


def test_a_job_with_a_filter_is_refused_at_add_without_the_classifier(
    photos: tuple[Path, Path], tmp_path: Path
) -> None:
    source, target = photos
    payload = make_payload([source], target, tmp_path / "out.png", settings(face_selector_age_start=30))
    with pytest.raises(ModelError, match=r"face_selector_age_start needs the face classifier fairface.*download"):
        validate_job(payload, ModelRuntime.create(Settings(), tmp_path / "no_models"))


def test_without_filters_the_classifier_is_never_loaded(
    shared_runtime: ModelRuntime, photos: tuple[Path, Path]
) -> None:
    source, _ = photos
    pipeline = FramePipeline.build(Settings(processors=("face_debugger",)), shared_runtime, [source])
    assert len(pipeline.analyse(media.t1()).selected) == 6
    assert "fairface" not in shared_runtime.onnx_models_used() and "fairface" not in pipeline.models_used()


def expected_genders(session: ort.InferenceSession, runtime: ModelRuntime) -> list[str]:
    """The gender FaceFusion's steps give each face of the six-person photo, with the stand-in."""
    frame = media.t1()
    faces = FaceAnalyser(runtime).analyse(frame, Settings(), embeddings=False)
    return [facefusion_classes(session, facefusion_input(frame, item.kps))[0] for item in faces]


def test_a_run_with_the_stand_in_selects_by_gender(
    cli_here: RunCli,
    photos: tuple[Path, Path],
    tmp_path: Path,
    stand_in: Path,
    session: ort.InferenceSession,
    shared_runtime: ModelRuntime,
) -> None:
    genders = expected_genders(session, shared_runtime)
    assert len(genders) == 6 and 0 < genders.count("female") < 6  # the stand-in splits the photo
    source, target = photos
    selected = {}
    for gender in ("female", "male"):
        args = ["process", "-s", str(source), "-t", str(target), "-o", str(tmp_path / f"{gender}.png"), "--json"]
        args += ["--processors", "face_debugger", "--face-selector-gender", gender]
        completed = cli_here(args, {"FACEFUSION_UI_MODELS": str(stand_in)})
        assert completed.returncode == 0, completed.stderr
        stats = json.loads(completed.stdout)
        assert "fairface" in stats["models_used"]
        selected[gender] = stats["faces_selected"]
    assert selected == {"female": genders.count("female"), "male": genders.count("male")}


def test_auto_takes_the_source_photos_gender(
    cli_here: RunCli, photos: tuple[Path, Path], tmp_path: Path, stand_in: Path, session: ort.InferenceSession
) -> None:
    source, target = photos
    runtime = ModelRuntime.create(Settings(), stand_in)
    astronaut = media.astronaut()
    largest = FaceAnalyser(runtime).analyse(astronaut, Settings(), embeddings=False)[0]
    source_gender = facefusion_classes(session, facefusion_input(astronaut, largest.kps))[0]
    args = ["process", "-s", str(source), "-t", str(target), "-o", str(tmp_path / "auto.png"), "--json"]
    args += ["--processors", "face_debugger", "--face-selector-gender", "auto"]
    completed = cli_here(args, {"FACEFUSION_UI_MODELS": str(stand_in)})
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["faces_selected"] == expected_genders(session, runtime).count(source_gender)


def test_fairface_is_in_the_catalog_and_downloads_like_the_others(tmp_path: Path) -> None:
    manifest = load_manifest(folder=tmp_path)
    spec = manifest["fairface"]
    base = "https://huggingface.co/facefusion/models-3.0.0/resolve/main/"  # FaceFusion's models-3.0.0
    assert (spec.url, spec.hash_url, spec.role, spec.verification) == (
        base + "fairface.onnx",
        base + "fairface.hash",
        "classifier",
        "hash_sidecar",
    )
    body = build_fairface(tmp_path / "built.onnx").read_bytes()
    folder = tmp_path / "models"
    served = ServedFile(body, extra={"model.hash": format(zlib.crc32(body), "08x").encode()})
    with serve(served) as url:
        loopback = dataclasses.replace(spec, url=url, hash_url=url.rsplit("/", 1)[0] + "/model.hash")
        download_model(loopback, folder)
    runtime = ModelRuntime({**manifest, "fairface": loopback}, folder, SessionPool(("cpu",)))
    check_classifier(settings(face_selector_race="asian"), runtime)  # downloaded: nothing to say
    frame, kps = textured_frame()
    classes = FaceAnalyser(runtime).classify(frame, [Face(np.zeros(4, np.float32), 1.0, kps, "test")])[0]
    assert classes.gender in ("female", "male") and classes.age is not None and classes.race is not None
    assert "fairface" in runtime.onnx_models_used()

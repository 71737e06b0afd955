"""Face analysis on real photos with the embedded models: detection, landmarks, mesh, identity."""

from __future__ import annotations

import itertools
from typing import Any

import cv2
import numpy as np
import pytest

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.detection import Detection, fit_within, shrink_interpolation
from facefusion_ui.faces.detector_blazeface import blazeface_boxes, detect_blazeface
from facefusion_ui.faces.face import Face, face_distance
from facefusion_ui.faces.landmarker import MESH_ROI_EYES, dlib_landmarks, mesh_roi, roi_matrix
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.frames import BgrImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media, videos

SETTINGS = Settings()


@pytest.fixture(scope="module")
def t1_faces(shared_runtime: ModelRuntime) -> list[Face]:
    return FaceAnalyser(shared_runtime).analyse(media.t1(), SETTINGS)


def test_t1_has_six_faces_with_sane_boxes(t1_faces: list[Face]) -> None:
    assert len(t1_faces) == 6
    height, width = media.t1().shape[:2]
    for face in t1_faces:
        x1, y1, x2, y2 = face.bbox
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height
        assert 60 <= face.width <= 200 and 0.7 <= face.width / face.height <= 1.4
        assert face.kps.shape == (5, 2) and face.landmarks_68 is not None
        # keypoints inside the box, eyes above the mouth, image-left eye left of the image-right eye
        assert np.all((face.kps[:, 0] >= x1 - 5) & (face.kps[:, 0] <= x2 + 5))
        assert face.kps[0, 0] < face.kps[1, 0] and face.kps[0, 1] < face.kps[3, 1]
    centres = sorted(face.center[0] for face in t1_faces)
    assert min(b - a for a, b in itertools.pairwise(centres)) > 60  # six different people, no duplicates


@pytest.mark.parametrize("photo", ["astronaut", "grace_hopper"])
def test_single_portraits_have_exactly_one_face(shared_runtime: ModelRuntime, photo: str) -> None:
    image = getattr(media, photo)()
    faces = FaceAnalyser(shared_runtime).analyse(image, SETTINGS, embeddings=False)
    assert len(faces) == 1
    assert faces[0].width > 80


def test_recognizer_threshold_comes_from_the_manifest(shared_runtime: ModelRuntime) -> None:
    scale = FaceAnalyser(shared_runtime).recognizer_scale(SETTINGS)
    assert (scale.name, scale.metric, scale.threshold) == ("dlib_resnet", "euclidean", 0.6)
    onnx_scale = FaceAnalyser(shared_runtime).recognizer_scale(
        SETTINGS.with_items(face_recognizer_model="arcface_w600k_r50")
    )
    assert onnx_scale.metric == "cosine"


def test_the_six_people_are_pairwise_different(shared_runtime: ModelRuntime, t1_faces: list[Face]) -> None:
    threshold = FaceAnalyser(shared_runtime).recognizer_scale(SETTINGS).threshold
    for a, b in itertools.combinations(t1_faces, 2):
        assert face_distance(a, b, "euclidean") > threshold


def flip(image: Frame) -> tuple[Any, np.ndarray]:
    width = image.shape[1]
    return np.ascontiguousarray(image[:, ::-1]), np.array([[-1, 0, width - 1], [0, 1, 0]], dtype=np.float64)


def rotate(degrees: float) -> object:
    def apply(image: Frame) -> tuple[Any, np.ndarray]:
        height, width = image.shape[:2]
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)
        return cv2.warpAffine(image, matrix, (width, height), borderMode=cv2.BORDER_REFLECT), matrix

    return apply


def rescale(factor: float) -> object:
    def apply(image: Frame) -> tuple[Any, np.ndarray]:
        resized = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        return resized, np.array([[factor, 0, 0], [0, factor, 0]], dtype=np.float64)

    return apply


def jpeg(image: Frame) -> tuple[Any, np.ndarray]:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 35])
    assert ok
    return cv2.imdecode(data, cv2.IMREAD_COLOR), np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float64)


TRANSFORMS = [flip, rotate(8), rotate(-8), rescale(0.75), rescale(1.4), jpeg]
TRANSFORM_IDS = ["flipped", "rotated+8", "rotated-8", "scaled0.75", "scaled1.4", "jpeg35"]


def moved_box(face: Face, matrix: np.ndarray) -> np.ndarray:
    """The face's box carried through ``matrix`` (same size, scaled with the image)."""
    centre = matrix @ np.array([*face.center, 1.0])
    scale = float(np.sqrt(abs(np.linalg.det(matrix[:, :2]))))
    half = np.array([face.width, face.height]) * scale / 2
    return np.array([*(centre - half), *(centre + half)], dtype=np.float32)


@pytest.mark.parametrize("transform", TRANSFORMS, ids=TRANSFORM_IDS)
def test_each_person_is_the_same_as_their_altered_self(
    shared_runtime: ModelRuntime, t1_faces: list[Face], transform: object
) -> None:
    """Identity is about the recognizer: each altered face is taken at its known place (the detector's
    recall under the same changes is the next test)."""
    altered, matrix = transform(media.t1())  # type: ignore[operator]
    analyser = FaceAnalyser(shared_runtime)
    rgb = np.ascontiguousarray(altered[:, :, ::-1])
    threshold = analyser.recognizer_scale(SETTINGS).threshold
    for face in t1_faces:
        found = analyser.complete(altered, Detection(moved_box(face, matrix), 1.0), SETTINGS, False)
        assert found is not None
        altered_face = analyser.embed(altered, rgb, found, SETTINGS)
        distance = face_distance(face, altered_face, "euclidean")
        assert distance < threshold
        others = [other for other in t1_faces if other is not face]
        assert distance < min(face_distance(other, altered_face, "euclidean") for other in others)


@pytest.mark.parametrize("transform", TRANSFORMS, ids=TRANSFORM_IDS)
def test_detector_finds_the_altered_faces_again(
    shared_runtime: ModelRuntime, t1_faces: list[Face], transform: object
) -> None:
    """HOG is a frontal detector: every face turned less than 30 degrees is found again; the two
    half profiles of t1 (yaw ~ -46) may be lost once the photo is rotated or heavily compressed."""
    altered, matrix = transform(media.t1())  # type: ignore[operator]
    found = FaceAnalyser(shared_runtime).analyse(altered, SETTINGS, embeddings=False)
    assert 4 <= len(found) <= 6
    for face in t1_faces:
        if abs(face.yaw) >= 30:
            continue
        expected = matrix @ np.array([*face.center, 1.0])
        assert min(float(np.hypot(*(np.array(f.center) - expected))) for f in found) < face.width / 3


def test_mesh_on_crops_finds_every_face_of_the_group_photo(shared_runtime: ModelRuntime) -> None:
    image = media.t1()
    faces = FaceAnalyser(shared_runtime).analyse(image, SETTINGS, embeddings=False, mesh=True)
    assert len(faces) == 6
    for face in faces:
        assert face.mesh is not None and face.mesh.points.shape == (468, 2) and face.mesh.depth.shape == (468,)
        xs = face.mesh.points[:, 0]
        inside = (xs > face.bbox[0] - face.width * 0.3) & (xs < face.bbox[2] + face.width * 0.3)
        assert inside.mean() > 0.95
        # depth: the nose tip is nearer the camera than the face's outline
        assert face.mesh.depth[1] < np.median(face.mesh.depth[[234, 454, 10, 152]])
    # mediapipe alone on the whole photo misses them: the reason the mesh runs on crops
    with shared_runtime.using("mediapipe_face_mesh") as whole:
        result = whole.process(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
    assert len(result.multi_face_landmarks or []) < 6


@pytest.mark.parametrize("roll", [0.0, 30.0, -45.0])
def test_a_known_mesh_is_read_again_in_its_turned_region(shared_runtime: ModelRuntime, roll: float) -> None:
    """The astronaut's head rolled ``roll`` degrees in the picture: her mesh read by the landmark model
    alone in the region her known mesh gives (turned with her eyes, so they lie level in what it reads)
    is within 2 % of her face's size of the mesh found with mediapipe's detector; a region with no face
    in it reads nothing."""
    image = media.astronaut()
    height, width = image.shape[:2]
    turn = cv2.getRotationMatrix2D((width / 2, height / 3), roll, 1.0)
    rolled = np.asarray(cv2.warpAffine(image, turn, (width, height), borderMode=cv2.BORDER_REPLICATE), np.uint8)
    analyser = FaceAnalyser(shared_runtime)
    # the upright face's mesh turned with the head: the detectors want upright faces
    [face] = analyser.analyse(image, SETTINGS, embeddings=False, mesh=True)
    assert face.mesh is not None
    known = cv2.transform(face.mesh.points[None], turn)[0]
    roi = mesh_roi(known)
    assert abs(np.degrees(roi.angle) + roll) < 8  # the eyes' line, clockwise in the image
    level = cv2.transform(known[list(MESH_ROI_EYES)][None], roi_matrix(roi))[0]
    assert abs(level[0, 1] - level[1, 1]) < 1.0
    read = analyser.mesh_at(BgrImage(rolled), known)
    assert read is not None and read.points.shape == (468, 2)
    apart = np.linalg.norm(read.points - known, axis=1).mean()
    assert apart < 0.02 * face.width, apart
    assert np.corrcoef(read.depth, face.mesh.depth)[0, 1] > 0.95  # depth on the same scale, turned or not
    assert analyser.mesh_at(BgrImage(np.full(image.shape, 128, dtype=np.uint8)), known) is None


def test_mesh_landmarker_gives_keypoints(shared_runtime: ModelRuntime) -> None:
    settings = SETTINGS.with_items(face_landmarker_model="mediapipe_face_mesh")
    faces = FaceAnalyser(shared_runtime).analyse(media.grace_hopper(), settings)
    assert len(faces) == 1 and faces[0].mesh is not None and faces[0].landmarks_68 is None
    dlib_faces = FaceAnalyser(shared_runtime).analyse(media.grace_hopper(), SETTINGS, embeddings=False)
    assert np.abs(faces[0].kps - dlib_faces[0].kps).max() < faces[0].width * 0.12


def test_blazeface_detector_on_photos(shared_runtime: ModelRuntime) -> None:
    settings = SETTINGS.with_items(face_detector_model="mediapipe_blazeface")
    analyser = FaceAnalyser(shared_runtime)
    assert len(analyser.analyse(media.astronaut(), settings, embeddings=False)) == 1
    assert len(analyser.analyse(media.t1(), settings, embeddings=False)) >= 3


def test_blazeface_drops_small_shapes_it_cannot_find_again_up_close(shared_runtime: ModelRuntime) -> None:
    """A rocket's nose cone and a galaxy in the panning scene pass BlazeFace's first look at the whole
    frame; searched again in a crop around them they are not faces, while every real face is found again."""
    scene = videos.panning_scene(1280, 720, 900)
    with shared_runtime.using("mediapipe_blazeface") as detector:
        for index in (410, 560, 890):
            frame, _ = fit_within(scene(index), 640)
            assert blazeface_boxes(frame, detector, 0.5), f"frame {index}: the first look should see a shape"
            assert detect_blazeface(frame, detector, 640, 0.5) == []
        for photo in (media.t1(), media.astronaut(), media.grace_hopper()):
            image, _ = fit_within(photo, 640)
            assert len(detect_blazeface(image, detector, 640, 0.5)) == len(blazeface_boxes(image, detector, 0.5)) > 0


def test_dlib_5_landmarker_keypoints_agree_with_68(shared_runtime: ModelRuntime) -> None:
    settings = SETTINGS.with_items(face_landmarker_model="dlib_5")
    five = FaceAnalyser(shared_runtime).analyse(media.astronaut(), settings, embeddings=False)[0]
    full = FaceAnalyser(shared_runtime).analyse(media.astronaut(), SETTINGS, embeddings=False)[0]
    assert np.abs(five.kps[:3] - full.kps[:3]).max() < full.width * 0.08
    assert np.abs(five.kps[3:] - full.kps[3:]).max() < full.width * 0.2


def test_pose_tells_frontal_from_turned(shared_runtime: ModelRuntime) -> None:
    face = FaceAnalyser(shared_runtime).analyse(media.grace_hopper(), SETTINGS, embeddings=False)[0]
    assert abs(face.yaw) < 20
    turned = face.kps.copy()
    turned[2, 0] = turned[1, 0]  # nose at the eye: a half profile
    from facefusion_ui.faces.alignment import estimate_pose

    assert abs(estimate_pose(turned)[0]) > 35


def test_analyser_counts_its_work(shared_runtime: ModelRuntime) -> None:
    analyser = FaceAnalyser(shared_runtime)
    analyser.analyse(media.t1(), SETTINGS)
    analyser.analyse(media.astronaut(), SETTINGS, embeddings=False)
    assert (analyser.counters.frames, analyser.counters.faces_detected, analyser.counters.recognizer_calls) == (2, 7, 6)


def test_concurrent_detection_uses_pooled_copies(shared_runtime: ModelRuntime) -> None:
    """dlib's HOG detector is not thread-safe: each thread borrows an instance of its own, results stay identical."""
    import threading

    image = media.t1()
    expected = [d.bbox.tolist() for d in FaceAnalyser(shared_runtime).detect(image, SETTINGS)]
    results: list[list[list[float]]] = []
    errors: list[BaseException] = []

    def detect() -> None:
        try:
            for _ in range(3):
                results.append([d.bbox.tolist() for d in FaceAnalyser(shared_runtime).detect(image, SETTINGS)])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=detect) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 12
    assert all(result == expected for result in results)
    assert shared_runtime.embedded.loads["dlib_hog"] == 1
    # a pool of instances, at most one per thread that used it at once, reused by later threads and jobs
    copies = shared_runtime.embedded.copies["dlib_hog"]
    assert copies <= 3
    later = threading.Thread(target=detect)
    later.start()
    later.join()
    assert not errors and shared_runtime.embedded.copies["dlib_hog"] == copies


@pytest.mark.parametrize("detector", ["dlib_hog", "mediapipe_blazeface"])
def test_search_around_a_followed_face_finds_it_again(shared_runtime: ModelRuntime, detector: str) -> None:
    """The detection schedule's crop search: around last frame's box, the same face is found, in frame
    coordinates, on a smaller image than the whole frame (HOG: the face scaled to ~110 px, no upsampling)."""
    from facefusion_ui.faces.face import box_iou

    settings = SETTINGS.with_items(face_detector_model=detector)
    analyser = FaceAnalyser(shared_runtime)
    frame = media.t1()
    whole = analyser.detect(frame, settings)
    assert len(whole) >= 3
    for detection in whole[:3]:
        moved = detection.bbox + np.array([6, -4, 6, -4], dtype=np.float32)  # where it was a frame before
        around = analyser.detect_around(frame, [moved], settings)
        assert around, f"{detector} lost the face at {detection.bbox}"
        assert max(box_iou(found.bbox, detection.bbox) for found in around) > 0.6
    assert analyser.detect_around(frame, [np.array([0, 0, 40, 40], dtype=np.float32)], settings) == []


def test_dlib_landmarks_are_the_same_on_bgr_and_rgb(shared_runtime: ModelRuntime, t1_faces: list[Face]) -> None:
    """The analyser gives dlib the BGR frame as it is (no RGB copy of every video frame): its shape
    predictors read a pixel as the mean of its channels, so the points are identical."""
    image = media.t1()
    rgb = np.ascontiguousarray(image[:, :, ::-1])
    for model in ("dlib_68", "dlib_5"):
        with shared_runtime.using(model) as predictor:
            for face in t1_faces:
                assert np.array_equal(
                    dlib_landmarks(image, predictor, face.bbox), dlib_landmarks(rgb, predictor, face.bbox)
                )


def test_detection_views_shrink_by_area_at_whole_or_large_factors_else_bilinear() -> None:
    frame = np.zeros((720, 1280, 3), dtype=np.uint8)
    assert shrink_interpolation(frame, (640, 360)) == cv2.INTER_AREA  # 2x: OpenCV's fast path
    assert shrink_interpolation(frame, (300, 169)) == cv2.INTER_AREA  # over 2x: sampling would alias
    assert shrink_interpolation(frame[:, :1100], (640, 419)) == cv2.INTER_LINEAR  # an uneven factor below 2
    small, scale = fit_within(frame[:, :1100], 640)
    assert small.shape[:2] == (419, 640) and scale == pytest.approx(640 / 1100)

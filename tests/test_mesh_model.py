"""The face mesh reader: mediapipe's landmarks read into an array (from the serialized message when every
landmark has x, y and z alone, field by field otherwise, the same numbers either way), on the calling
thread, as mediapipe's own call gives them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np

from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.faces.mesh_model import MESH_INPUT_SIZE, MeshModel, landmark_array
from tests.support import media, videos


def landmark_list(points: np.ndarray, visibility: float | None = None) -> object:
    import_mediapipe()
    from mediapipe.framework.formats import landmark_pb2

    message = landmark_pb2.NormalizedLandmarkList()
    for x, y, z in points.tolist():
        landmark = message.landmark.add(x=x, y=y, z=z)
        if visibility is not None:
            landmark.visibility = visibility
    return message


def test_landmarks_read_from_their_bytes_are_the_fields_values() -> None:
    points = np.random.default_rng(3).normal(0.5, 0.3, (478, 3)).astype(np.float32)
    points[5] = 0.0  # a zero is written too (the fields are set), so every landmark keeps its length
    read = landmark_array(landmark_list(points))
    assert read.dtype == np.float32 and read.shape == (478, 3)
    assert np.array_equal(read, points)


def test_landmarks_with_other_fields_are_read_field_by_field() -> None:
    points = np.random.default_rng(4).normal(0.5, 0.3, (468, 3)).astype(np.float32)
    assert np.array_equal(landmark_array(landmark_list(points, visibility=0.9)), points)
    # 17 landmarks of 22 bytes: a whole number of packed ones' length, but not their layout
    seventeen = landmark_list(points[:17], visibility=0.9)
    assert len(seventeen.SerializeToString()) % 17 == 0  # type: ignore[attr-defined]
    assert np.array_equal(landmark_array(seventeen), points[:17])
    assert landmark_array(landmark_list(points[:0])).shape == (0, 3)


def test_a_read_gives_the_landmarks_of_mediapipe_s_own_call_on_any_thread() -> None:
    """The reader runs on the thread that reads (no pool of mediapipe's own): from another thread than the
    one that made it, the landmarks are those ``SolutionBase.process`` gives, and no face reads as None."""
    face = cv2.resize(videos.face_crop(media.astronaut(), (150, 20, 350, 260)), (MESH_INPUT_SIZE, MESH_INPUT_SIZE))
    rgb = np.ascontiguousarray(face[:, :, ::-1])
    model = MeshModel(with_attention=True)
    try:
        with ThreadPoolExecutor(1) as pool:
            read = pool.submit(model.read, rgb).result()
            empty = pool.submit(model.read, np.zeros_like(rgb)).result()
        theirs = model.reader.process({"image": rgb, "roi": model._whole}).face_landmarks
        assert read is not None and read.shape == (478, 3) and empty is None
        assert np.array_equal(read, np.array([[p.x, p.y, p.z] for p in theirs.landmark], dtype=np.float32))
    finally:
        model.close()

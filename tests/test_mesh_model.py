"""Reading mediapipe's landmarks into an array: from the serialized message when every landmark has x, y
and z alone, field by field otherwise, the same numbers either way."""

from __future__ import annotations

import numpy as np

from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.faces.mesh_model import landmark_array


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
    read = landmark_array(landmark_list(points, visibility=0.9))
    assert np.array_equal(read, points)
    assert landmark_array(landmark_list(points[:0])).shape == (0, 3)

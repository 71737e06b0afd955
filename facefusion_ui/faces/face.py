"""The ``Face`` record every stage passes along, and distances between faces."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from facefusion_ui.types import DistanceMetric, Embedding, Gender, Points, Race


@dataclass(frozen=True, eq=False)
class FaceMesh:
    """mediapipe's face-mesh points of one face, in frame pixels: 468, or 478 with the irises (points
    468-477, from the embedded swapper's own mesh model); code that reads face parts uses indices below 468."""

    points: Points
    """(478, 2) or (468, 2) x, y."""
    depth: Points
    """(478,) or (468,) distance from the camera relative to the face's centre, in the same pixels: smaller is
    nearer (on a turned head the near cheek and the nose hide parts of the far side)."""


@dataclass(frozen=True, eq=False)
class Face:
    """One detected face. ``kps`` are 5 points in ArcFace order: image-left eye, image-right eye, nose
    tip, image-left mouth corner, image-right mouth corner."""

    bbox: Points
    """x1, y1, x2, y2 as a (4,) float32 array."""
    score: float
    kps: Points
    detector: str
    landmarks_68: Points | None = None
    landmarks_68_score: float | None = None
    """How sure the landmarker is of ``landmarks_68`` (0..1: 2DFAN4's heatmap score); none when it says not."""
    mesh: FaceMesh | None = None
    """The face mesh (468 points and the irises), when requested."""
    embedding: Embedding | None = None
    normed_embedding: Embedding | None = None
    recognizer: str | None = None
    yaw: float = 0.0
    pitch: float = 0.0
    gender: Gender | None = None
    """What the face classifier says (``faces/classifier.py``); none where it did not run."""
    age: range | None = None
    """The age bracket the classifier says, e.g. ``range(20, 29)`` (FaceFusion's ``Age``)."""
    race: Race | None = None

    @property
    def width(self) -> float:
        return float(self.bbox[2] - self.bbox[0])

    @property
    def height(self) -> float:
        return float(self.bbox[3] - self.bbox[1])

    @property
    def area(self) -> float:
        return max(self.width, 0.0) * max(self.height, 0.0)

    @property
    def center(self) -> tuple[float, float]:
        return float(self.bbox[0] + self.bbox[2]) / 2, float(self.bbox[1] + self.bbox[3]) / 2

    def with_embedding(self, embedding: Embedding, recognizer: str) -> Face:
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector)) or 1.0
        return replace(self, embedding=vector, normed_embedding=vector / norm, recognizer=recognizer)

    def with_classes(self, gender: Gender, age: range, race: Race) -> Face:
        return replace(self, gender=gender, age=age, race=race)


def embedding_distance(a: Embedding, b: Embedding, metric: DistanceMetric) -> float:
    """Cosine distance (1 - cos similarity) of normed vectors, or the L2 distance of raw vectors."""
    if metric == "cosine":
        a_n = a / (np.linalg.norm(a) or 1.0)
        b_n = b / (np.linalg.norm(b) or 1.0)
        return float(1.0 - np.dot(a_n, b_n))
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


def face_distance(a: Face, b: Face, metric: DistanceMetric) -> float:
    if a.embedding is None or b.embedding is None:
        raise ValueError("both faces need an embedding to be compared")
    if a.recognizer != b.recognizer:
        raise ValueError(f"faces from different recognizers ({a.recognizer}, {b.recognizer}) cannot be compared")
    return embedding_distance(a.embedding, b.embedding, metric)


def box_iou(a: Points, b: Points) -> float:
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, float(x2 - x1)) * max(0.0, float(y2 - y1))
    union = float((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])) - inter
    return inter / union if union > 0 else 0.0

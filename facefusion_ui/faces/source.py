"""Source faces: the person to put into the target, read from one or more photos of them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, Frame

MIN_FACE_PX = 80
"""The smallest face the default detector finds reliably (dlib HOG's window, at detection scale)."""


@dataclass(frozen=True, eq=False)
class SourceFace:
    path: str
    image: Frame
    face: Face
    content_hash: str


@dataclass(frozen=True, eq=False)
class SourceIdentity:
    """One person, seen in one or more photos. ``key`` identifies the photos' content (not their paths)."""

    faces: tuple[SourceFace, ...]
    key: str

    def best_frontal(self) -> SourceFace:
        """The most frontal, then largest, source face: the one the embedded swapper copies."""
        return min(self.faces, key=lambda s: (abs(s.face.yaw) + abs(s.face.pitch) / 2, -s.face.area))

    def mean_raw_embedding(self) -> Embedding | None:
        vectors = [s.face.embedding for s in self.faces if s.face.embedding is not None]
        return np.asarray(np.mean(np.stack(vectors), axis=0), dtype=np.float32) if vectors else None


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_image(path: Path, role: str) -> Frame:
    """An image as BGR, or an InputError that says what is wrong with the file."""
    if not path.exists():
        raise InputError(f"{role} {path} does not exist: check the path", paths=(path,))
    if not path.is_file():
        raise InputError(f"{role} {path} is not a file: give the path of an image", paths=(path,))
    data = np.fromfile(str(path), dtype=np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise InputError(f"{role} {path} cannot be read as an image: use a JPEG, PNG, WebP or BMP file", paths=(path,))
    return np.asarray(image, dtype=np.uint8)


def analysis_key(content_hash: str, settings: Settings) -> tuple[Any, ...]:
    return (
        content_hash,
        settings.face_detector_model,
        settings.face_detector_size,
        settings.face_detector_score,
        settings.face_detector_upsample,
        settings.face_landmarker_model,
        settings.face_recognizer_model,
    )


def load_source(path: Path, analyser: FaceAnalyser, settings: Settings) -> SourceFace:
    """The largest face of a source photo, analysed once per content (the runtime's source cache)."""
    if not path.is_file():
        raise InputError(f"source {path} does not exist: check the path", paths=(path,))
    content_hash = file_hash(path)

    def analyse() -> SourceFace:
        image = read_image(path, "source")
        faces = analyser.analyse(image, settings)
        if not faces:
            raise InputError(
                f"no face found in {path}: use a photo where the face is visible and at least {MIN_FACE_PX} px wide",
                paths=(path,),
            )
        return SourceFace(str(path), image, faces[0], content_hash)

    return analyser.runtime.sources.get_or_create(analysis_key(content_hash, settings), analyse)  # type: ignore[no-any-return]


def load_sources(paths: list[Path], analyser: FaceAnalyser, settings: Settings) -> SourceIdentity:
    if not paths:
        raise InputError("no source image given: add -s PHOTO with the face to put in")
    faces = tuple(load_source(path, analyser, settings) for path in paths)
    key = hashlib.sha256("".join(sorted(f.content_hash for f in faces)).encode()).hexdigest()
    return SourceIdentity(faces, key)

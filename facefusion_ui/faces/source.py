"""Source faces: the person to put into the target, read from one or more photos of them."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.detection import Detection
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


@dataclass(frozen=True)
class CheckedPhoto:
    """A source photo as read, and the faces the detector found in it (a video's photos are checked first)."""

    image: Frame
    detections: tuple[Detection, ...]


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

    def check(self) -> None:
        """Raise what made the photos unusable (no face...): they were read when this was made."""

    def raise_if_failed(self) -> None:
        """``check`` without waiting: photos still being read are not waited for."""

    def prefetch(self) -> None:
        """Have the faces ready soon: a face was found in the target."""

    def settle(self) -> None:
        """Wait until no model is in use reading the photos (before models are released)."""


class LoadingIdentity(SourceIdentity):
    """A ``SourceIdentity`` read in two steps (``load_sources_in_background``): on a thread of its own at
    once, each photo's faces are detected (a photo without one is the same InputError as ``load_sources``
    gives, raised by ``check``, ``raise_if_failed`` and ``faces``); the whole analysis (landmarks,
    recognizer, mesh: models a video without faces never loads) once ``prefetch`` says a face was found
    in the target, on that thread, or when ``faces`` is first asked for. The analysis starts from the
    photos and faces the check found (the detector is not run on them twice)."""

    _read: tuple[list[Path], FaceAnalyser, Settings, bool]
    """The photos, the analyser, the settings and ``load_source``'s ``mesh_only``."""
    _lock: threading.Lock
    _checked: Future[list[CheckedPhoto]]
    _analysed: Future[SourceIdentity] | None

    def __init__(
        self, paths: list[Path], key: str, analyser: FaceAnalyser, settings: Settings, mesh_only: bool = False
    ) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "_read", (paths, analyser, settings, mesh_only))
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_analysed", None)
        checked: Future[list[CheckedPhoto]] = Future()
        object.__setattr__(self, "_checked", checked)
        threading.Thread(target=self._run, args=(checked, self._check), name="source-photos", daemon=True).start()

    @staticmethod
    def _run(future: Future[Any], work: Any) -> None:
        try:
            future.set_result(work())
        except BaseException as error:  # handed to whoever asks
            future.set_exception(error)

    def _check(self) -> list[CheckedPhoto]:
        paths, analyser, settings, _ = self._read
        checked = []
        for path in paths:
            image = read_image(path, "source")
            detections = analyser.detect(image, settings)
            if not detections:
                raise no_face_error(path)
            checked.append(CheckedPhoto(image, tuple(detections)))
        return checked

    def _analyse(self) -> SourceIdentity:
        paths, analyser, settings, mesh_only = self._read
        return load_sources(paths, analyser, settings, self._checked.result(), mesh_only)

    def _analysis(self) -> Future[SourceIdentity]:
        """The whole analysis, started on a thread of its own the first time it is asked for."""
        with self._lock:
            analysed: Future[SourceIdentity] | None = self._analysed
            if analysed is None:
                analysed = Future()
                object.__setattr__(self, "_analysed", analysed)
                threading.Thread(
                    target=self._run, args=(analysed, self._analyse), name="source-faces", daemon=True
                ).start()
            return analysed

    @property
    def faces(self) -> tuple[SourceFace, ...]:
        self._checked.result()
        return self._analysis().result().faces

    def check(self) -> None:
        self._checked.result()
        analysed: Future[SourceIdentity] | None = self._analysed
        if analysed is not None:
            analysed.result()

    def raise_if_failed(self) -> None:
        for future in (self._checked, self._analysed):
            if future is not None and future.done():
                future.result()

    def prefetch(self) -> None:
        """The analysis starts now, unless the check failed (a check still running: it waits for it)."""
        if not (self._checked.done() and self._checked.exception() is not None):
            self._analysis()

    def settle(self) -> None:
        futures: list[Future[Any]] = [future for future in (self._checked, self._analysed) if future is not None]
        wait(futures)

    def __repr__(self) -> str:
        return f"LoadingIdentity(key={self.key!r})"


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


def analysis_key(content_hash: str, settings: Settings, mesh_only: bool = False) -> tuple[Any, ...]:
    return (
        content_hash,
        mesh_only,
        settings.face_detector_model,
        settings.face_detector_size,
        settings.face_detector_score,
        settings.face_detector_upsample,
        settings.face_landmarker_model,
        settings.face_recognizer_model,
    )


def no_face_error(path: Path) -> InputError:
    return InputError(
        f"no face found in {path}: use a photo where the face is visible and at least {MIN_FACE_PX} px wide",
        paths=(path,),
    )


def load_source(
    path: Path,
    analyser: FaceAnalyser,
    settings: Settings,
    checked: CheckedPhoto | None = None,
    mesh_only: bool = False,
) -> SourceFace:
    """The largest face of a source photo, analysed once per content (the runtime's source cache);
    ``checked``: the photo as read and the faces detected in it before (``LoadingIdentity``'s check),
    completed instead of searched for again. ``mesh_only``: the face with its mesh and no 68 landmarks or
    embedding (``FaceAnalyser.complete``), all the embedded swapper reads of it."""
    if not path.is_file():
        raise InputError(f"source {path} does not exist: check the path", paths=(path,))
    content_hash = file_hash(path)

    def analyse() -> SourceFace:
        image = read_image(path, "source") if checked is None else checked.image
        detections = None if checked is None else list(checked.detections)
        faces = analyser.analyse(
            image, settings, embeddings=not mesh_only, mesh=mesh_only, detections=detections, landmarks=not mesh_only
        )
        if not faces:
            raise no_face_error(path)
        return SourceFace(str(path), image, faces[0], content_hash)

    return analyser.runtime.sources.get_or_create(analysis_key(content_hash, settings, mesh_only), analyse)  # type: ignore[no-any-return]


def identity_key(content_hashes: list[str]) -> str:
    """The key of a person's photos: their contents, in any order."""
    return hashlib.sha256("".join(sorted(content_hashes)).encode()).hexdigest()


def load_sources(
    paths: list[Path],
    analyser: FaceAnalyser,
    settings: Settings,
    checked: Sequence[CheckedPhoto] | None = None,
    mesh_only: bool = False,
) -> SourceIdentity:
    """The source person from ``paths``; ``checked``: each photo as read and detected before, in order;
    ``mesh_only``: ``load_source``'s."""
    if not paths:
        raise InputError("no source image given: add -s PHOTO with the face to put in")
    photos = checked if checked is not None else [None] * len(paths)
    faces = tuple(
        load_source(path, analyser, settings, photo, mesh_only) for path, photo in zip(paths, photos, strict=True)
    )
    return SourceIdentity(faces, identity_key([face.content_hash for face in faces]))


def load_sources_in_background(
    paths: list[Path], analyser: FaceAnalyser, settings: Settings, mesh_only: bool = False
) -> SourceIdentity:
    """``load_sources`` for a video (``LoadingIdentity``): its frames are decoded and probed while the
    photos are checked for a face, and their faces analysed only once one is found in the video. The
    photos' key at once (a missing photo: the InputError at once too)."""
    if not paths:
        raise InputError("no source image given: add -s PHOTO with the face to put in")
    for path in paths:
        if not path.is_file():
            raise InputError(f"source {path} does not exist: check the path", paths=(path,))
    key = identity_key([file_hash(path) for path in paths])
    return LoadingIdentity(paths, key, analyser, settings, mesh_only)

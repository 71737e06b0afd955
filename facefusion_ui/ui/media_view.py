"""What the page shows of the media a person gives: a target's frame, the faces in it and in each source
photo as square thumbnails (the whole face, never cut to its forehead), and frame numbers as times."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.classifier import FACE_CLASSIFIER
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.selector import filters_in_use, sort_and_filter_faces
from facefusion_ui.faces.source import load_source, read_image
from facefusion_ui.media_files import media_kind
from facefusion_ui.models import model_state
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from facefusion_ui.ui.services import UiServices
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.probe import probe_video
from facefusion_ui.video.stream import read_frame

THUMB_PX = 160
FACE_MARGIN = 1.8
"""A thumbnail's side, as a multiple of the face box's longer side: hair, chin and a little background."""


@dataclass(frozen=True)
class TargetInfo:
    """What the page needs to know about a target: image or video, its length and rate."""

    kind: str
    frame_count: int
    fps: float

    @property
    def is_video(self) -> bool:
        return self.kind == "video"


def target_info(target: Path) -> TargetInfo:
    if media_kind(target) != "video":
        return TargetInfo("image", 1, 0.0)
    info = probe_video(target)
    return TargetInfo("video", info.frame_count, float(info.fps))


def frame_of(target: Path, frame_number: int) -> Frame:
    """The frame to analyse: the image itself, or frame N of a video (clamped to its length)."""
    if media_kind(target) != "video":
        return read_image(target, "target")
    info = probe_video(target)
    index = min(max(int(frame_number), 0), info.frame_count - 1)
    return read_frame(resolve_ffmpeg().path, info, index)


def rgb(frame: Frame) -> np.ndarray:
    """RGB for the page; a BGRA frame (a cut-out that keeps its alpha) as RGBA, shown transparent."""
    if frame.ndim == 3 and frame.shape[2] == 4:
        return np.ascontiguousarray(frame[:, :, [2, 1, 0, 3]])
    return np.ascontiguousarray(frame[:, :, ::-1])


def face_thumbnail(image: Frame, face: Face) -> np.ndarray:
    """A square RGB crop centred on the face, padded where the face is near an edge."""
    x1, y1, x2, y2 = (float(v) for v in face.bbox)
    side = max(int(max(x2 - x1, y2 - y1) * FACE_MARGIN), 8)
    left, top = int((x1 + x2) / 2 - side / 2), int((y1 + y2) / 2 - side / 2)
    padded = cv2.copyMakeBorder(image, side, side, side, side, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    crop = padded[top + side : top + 2 * side, left + side : left + 2 * side]
    return rgb(np.asarray(cv2.resize(crop, (THUMB_PX, THUMB_PX), interpolation=cv2.INTER_AREA), dtype=np.uint8))


def target_faces(services: UiServices, image: Frame, settings: Settings) -> list[tuple[np.ndarray, str]]:
    """The faces of a frame as gallery items, in the order positions count them: sorted, and kept by the
    face selector's filters when one is in use and fairface is downloaded (``auto`` keeps every face here:
    the gallery knows no source face)."""
    analyser = FaceAnalyser(services.runtime)
    faces = analyser.analyse(image, settings, embeddings=False)
    runtime = services.runtime
    if filters_in_use(settings) and model_state(runtime.spec(FACE_CLASSIFIER), runtime.folder).installed:
        faces = analyser.classify(image, faces)
    found = sort_and_filter_faces(faces, settings)
    return [(face_thumbnail(image, face), f"face {number}") for number, face in enumerate(found)]


def source_face(services: UiServices, path: Path, settings: Settings) -> tuple[np.ndarray, str]:
    """The face a source photo gives (the largest), as a gallery item captioned with the photo's name;
    an InputError when there is none."""
    found = load_source(path, FaceAnalyser(services.runtime), settings)
    return face_thumbnail(found.image, found.face), path.name


def clock(seconds: float) -> str:
    minutes, rest = divmod(max(seconds, 0.0), 60)
    return f"{int(minutes)}:{rest:05.2f}"


def frame_time(frame: int, fps: float) -> str:
    return clock(frame / fps) if fps > 0 else "0:00.00"

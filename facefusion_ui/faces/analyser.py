"""``analyse(frame, settings, runtime)``: detector -> landmarks -> (mesh) -> embedding -> pose.

The one entry point processors use. A ``FaceAnalyser`` counts its work (detections, recognizer calls)
so jobs can report it; models come from the ``ModelRuntime`` and stay warm across frames and jobs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import cv2
import numpy as np

from facefusion_ui.errors import UsageError
from facefusion_ui.faces.alignment import estimate_pose, kps_from_68
from facefusion_ui.faces.detection import Detection, non_max_suppression, to_frame
from facefusion_ui.faces.detector_blazeface import detect_blazeface
from facefusion_ui.faces.detector_dlib import detect_dlib_hog
from facefusion_ui.faces.detector_scrfd import detect_scrfd
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.landmarker import dlib_landmarks, face_mesh, kps_from_dlib_5, kps_from_mesh
from facefusion_ui.faces.recognizer import RecognizerScale, embed_arcface, embed_dlib
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import roi_box
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, Frame, Points

HOG_FACE_PX = 110
"""Around a followed face, HOG runs on a crop scaled so the face is about this wide: above its 80 px
window, so no upsampling is needed whatever the face's size in the frame."""


@dataclass
class AnalysisCounters:
    frames: int = 0
    faces_detected: int = 0
    recognizer_calls: int = 0
    meshes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, frames: int = 0, faces: int = 0, recognitions: int = 0, meshes: int = 0) -> None:
        with self._lock:
            self.frames += frames
            self.faces_detected += faces
            self.recognizer_calls += recognitions
            self.meshes += meshes


class FaceAnalyser:
    def __init__(self, runtime: ModelRuntime) -> None:
        self.runtime = runtime
        self.counters = AnalysisCounters()

    def recognizer_scale(self, settings: Settings) -> RecognizerScale:
        return RecognizerScale.of(self.runtime.spec(settings.face_recognizer_model))

    def detect(self, frame: Frame, settings: Settings) -> list[Detection]:
        name = settings.face_detector_model
        size = settings.face_detector_size
        score = settings.face_detector_score
        if name == "dlib_hog":
            with self.runtime.using(name) as model:
                return detect_dlib_hog(frame, model, size, settings.face_detector_upsample, score)
        if name == "mediapipe_blazeface":
            with self.runtime.using(name) as model:
                return detect_blazeface(frame, model, size, score)
        _, session = self.runtime.onnx_session(name)
        return detect_scrfd(frame, session, size, score)

    def detect_around(self, frame: Frame, boxes: list[Points], settings: Settings) -> list[Detection]:
        """Faces searched only in a crop around each of ``boxes`` (faces followed from the frame before)."""
        height, width = frame.shape[:2]
        found: list[Detection] = []
        for box in boxes:
            x0, y0, x1, y1 = roi_box(box, width, height)
            crop = frame[y0:y1, x0:x1]
            scale = 1.0
            if settings.face_detector_model == "dlib_hog":
                scale = HOG_FACE_PX / max(float(box[2] - box[0]), 1.0)
                size = (max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale)))
                interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
                crop = np.asarray(cv2.resize(crop, size, interpolation=interpolation), dtype=np.uint8)
                with self.runtime.using("dlib_hog") as model:
                    detections = detect_dlib_hog(crop, model, max(size), 0, settings.face_detector_score)
            else:
                detections = self.detect(np.ascontiguousarray(crop), settings)
            found.extend(to_frame(detection, scale, x0, y0) for detection in detections)
        if len(found) < 2:
            return found
        kept = non_max_suppression(np.array([d.bbox for d in found]), np.array([d.score for d in found]))
        return [found[i] for i in kept]

    def analyse(
        self, frame: Frame, settings: Settings, embeddings: bool = True, mesh: bool = False,
        detections: list[Detection] | None = None,
    ) -> list[Face]:  # fmt: skip
        """Every face in ``frame``, largest first, with landmarks and (optionally) embedding and mesh.
        ``detections``: boxes already found (a probe, or a search around followed faces)."""
        if frame is None or frame.ndim != 3 or frame.shape[2] != 3:
            raise UsageError("a frame must be a colour image (height x width x 3)")
        if detections is None:
            detections = self.detect(frame, settings)
        rgb: Frame = np.ascontiguousarray(frame[:, :, ::-1])
        completed = [self.complete(frame, rgb, detection, settings, mesh) for detection in detections]
        faces = [face for face in completed if face is not None]
        if embeddings:
            faces = [self.embed(frame, rgb, face, settings) for face in faces]
        self.counters.add(frames=1, faces=len(faces), meshes=sum(face.mesh is not None for face in faces))
        return sorted(faces, key=lambda face: -face.area)

    def complete(
        self, frame: Frame, rgb: Frame, detection: Detection, settings: Settings, want_mesh: bool
    ) -> Face | None:
        landmarks_68 = None
        mesh_points = None
        kps = detection.kps
        landmarker = settings.face_landmarker_model
        if landmarker == "dlib_68":
            with self.runtime.using("dlib_68") as predictor:
                landmarks_68 = dlib_landmarks(rgb, predictor, detection.bbox)
            kps = kps if kps is not None else kps_from_68(landmarks_68)
        elif landmarker == "dlib_5":
            with self.runtime.using("dlib_5") as predictor:
                points = dlib_landmarks(rgb, predictor, detection.bbox)
            kps = kps if kps is not None else kps_from_dlib_5(points)
        if landmarker == "mediapipe_face_mesh" or want_mesh:
            mesh_points = self.mesh(frame, detection)
            if kps is None and mesh_points is not None:
                kps = kps_from_mesh(mesh_points)
        if kps is None:
            return None  # the landmarker found no face in this box: a false detection
        yaw, pitch = estimate_pose(kps)
        return Face(
            bbox=np.asarray(detection.bbox, dtype=np.float32),
            score=detection.score,
            kps=np.asarray(kps, dtype=np.float32),
            detector=settings.face_detector_model,
            landmarks_68=landmarks_68,
            mesh=mesh_points,
            yaw=yaw,
            pitch=pitch,
        )

    def mesh(self, frame: Frame, detection: Detection) -> np.ndarray | None:
        with self.runtime.using("mediapipe_face_mesh") as model:
            return face_mesh(frame, detection.bbox, model)

    def embedding(self, frame: Frame, rgb: Frame, face: Face, settings: Settings) -> Embedding:
        name = settings.face_recognizer_model
        self.counters.add(recognitions=1)
        if name == "dlib_resnet":
            with self.runtime.using("dlib_resnet") as recognizer, self.runtime.using("dlib_5") as predictor:
                return embed_dlib(rgb, face, recognizer, predictor)
        spec, session = self.runtime.onnx_session(name)
        return embed_arcface(frame, face, session, spec)

    def embed(self, frame: Frame, rgb: Frame, face: Face, settings: Settings) -> Face:
        return face.with_embedding(self.embedding(frame, rgb, face, settings), settings.face_recognizer_model)


def analyse(
    frame: Frame, settings: Settings, runtime: ModelRuntime, embeddings: bool = True, mesh: bool = False
) -> list[Face]:
    """Analyse one frame with a throw-away analyser (its counters are not kept)."""
    return FaceAnalyser(runtime).analyse(frame, settings, embeddings=embeddings, mesh=mesh)

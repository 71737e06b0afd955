"""``analyse(frame, settings, runtime)``: detector -> landmarks -> (mesh) -> embedding -> pose.

The one entry point processors use. A ``FaceAnalyser`` counts its work (detections, recognizer calls)
so jobs can report it; models come from the ``ModelRuntime`` and stay warm across frames and jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from facefusion_ui.errors import UsageError
from facefusion_ui.faces.alignment import estimate_pose, kps_from_68
from facefusion_ui.faces.change_gate import Area
from facefusion_ui.faces.classifier import FACE_CLASSIFIER, classified
from facefusion_ui.faces.detection import Detection, non_max_suppression, to_frame
from facefusion_ui.faces.detector_blazeface import blazeface_boxes, detect_blazeface
from facefusion_ui.faces.detector_dlib import detect_dlib_hog
from facefusion_ui.faces.detector_families import detect_onnx
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.landmarker import (
    dlib_landmarks,
    face_mesh,
    face_mesh_in,
    kps_from_dlib_5,
    kps_from_mesh,
    mesh_roi,
)
from facefusion_ui.faces.landmarker_fan import face_angle, landmarks_2dfan4
from facefusion_ui.faces.recognizer import RecognizerScale, embed_arcface, embed_dlib
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import roi_box
from facefusion_ui.frames import BgrImage, FrameImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, Frame, Points

LANDMARKERS_68 = ("dlib_68", "2dfan4")
"""The landmarkers that give the 68 points (``FaceAnalyser.landmarks_68``)."""
HOG_FACE_PX = 110
"""Around a followed face, HOG runs on a crop scaled so the face is about this wide: above its 80 px
window, so no upsampling is needed whatever the face's size in the frame."""
PROPOSER = "mediapipe_blazeface"
"""The cheap detector whose boxes HOG confirms in crops (``propose``, the probes of ``detection_schedule.py``)."""
PROPOSAL_SCORE = 0.3
"""BlazeFace's score for a candidate: low, as HOG confirms each one (the graph itself stops at 0.2)."""


@dataclass(frozen=True)
class SearchView:
    """What a detector searches for a frame: ``image`` (``scale`` times the frame's size), and the
    upsampling steps HOG still applies (0 for the other detectors)."""

    image: Frame
    scale: float
    upsample: int


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

    def search_view(self, image: FrameImage, settings: Settings) -> SearchView:
        """The copy of ``image`` the detector searches, at the detector size: grey for HOG (for video the
        Y plane as decoded, no colour conversion), BGR for the others."""
        if settings.face_detector_model == "dlib_hog":
            grey, scale = image.luma(settings.face_detector_size)
            return SearchView(grey, scale, settings.face_detector_upsample)
        small, scale = image.preview(settings.face_detector_size)
        return SearchView(small, scale, 0)

    def detect_view(self, view: SearchView, settings: Settings, area: Area | None = None) -> list[Detection]:
        """Faces in ``view`` (or only in its ``area``), in the frame's coordinates."""
        x0, y0 = (area[0], area[1]) if area is not None else (0, 0)
        image = view.image if area is None else np.ascontiguousarray(view.image[area[1] : area[3], area[0] : area[2]])
        name = settings.face_detector_model
        size = settings.face_detector_size
        score = settings.face_detector_score
        if name == "dlib_hog":
            with self.runtime.using(name) as model:
                found = detect_dlib_hog(image, model, view.upsample, score)
        elif name == "mediapipe_blazeface":
            with self.runtime.using(name) as model:
                found = detect_blazeface(image, model, size, score)
        else:
            _, session = self.runtime.onnx_session(name)
            found = detect_onnx(name, image, session, size, score)
        return [to_frame(detection, view.scale, x0 / view.scale, y0 / view.scale) for detection in found]

    def detect(self, frame: Frame, settings: Settings) -> list[Detection]:
        """Every face in a BGR ``frame`` (a full-frame detection)."""
        return self.detect_view(self.search_view(BgrImage(frame), settings), settings)

    def area_search_pays(self, settings: Settings) -> bool:
        """Whether searching parts of a frame costs less than the whole: HOG's time follows the pixels
        searched; the other detectors bring any image to one input size, so a part costs the same."""
        return settings.face_detector_model == "dlib_hog"

    def detect_in_areas(self, view: SearchView, areas: list[Area], settings: Settings) -> list[Detection]:
        """Faces searched only in ``areas`` of ``view`` (what changed, see ``change_gate.py``)."""
        return without_overlaps([found for area in areas for found in self.detect_view(view, settings, area)])

    def detect_around(self, frame: Frame, boxes: list[Points], settings: Settings) -> list[Detection]:
        """Faces searched only in a crop around each of ``boxes`` (faces followed from the frame before)."""
        if settings.face_detector_model == "dlib_hog":
            return self.hog_around(frame, boxes, settings)
        height, width = frame.shape[:2]
        found: list[Detection] = []
        for box in boxes:
            x0, y0, x1, y1 = roi_box(box, width, height)
            detections = self.detect(np.ascontiguousarray(frame[y0:y1, x0:x1]), settings)
            found.extend(to_frame(detection, 1.0, x0, y0) for detection in detections)
        return without_overlaps(found)

    def hog_around(self, image: Frame, boxes: Sequence[Points], settings: Settings) -> list[Detection]:
        """HOG in a crop around each of ``boxes`` of ``image`` (BGR, or grey: a video frame's Y plane),
        each crop scaled so the face in the box is about ``HOG_FACE_PX`` wide."""
        height, width = image.shape[:2]
        found: list[Detection] = []
        for box in boxes:
            x0, y0, x1, y1 = roi_box(box, width, height)
            crop = np.ascontiguousarray(image[y0:y1, x0:x1])
            grey = crop if crop.ndim == 2 else cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
            scale = HOG_FACE_PX / max(float(box[2] - box[0]), 1.0)
            size = (max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale)))
            interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
            view = np.asarray(cv2.resize(grey, size, interpolation=interpolation), dtype=np.uint8)
            with self.runtime.using("dlib_hog") as model:
                detections = detect_dlib_hog(view, model, 0, settings.face_detector_score)
            found.extend(to_frame(detection, scale, x0, y0) for detection in detections)
        return without_overlaps(found)

    def propose(self, image: FrameImage, settings: Settings) -> list[Points]:
        """Boxes (frame pixels) where a face may be: mediapipe's full-range BlazeFace on the detector-size
        colour preview, a sixth of the cost of HOG's full-frame search. Candidates only: it misses faces
        HOG finds (a third of the package photos' smaller faces), and the caller confirms what it finds."""
        small, scale = image.preview(settings.face_detector_size)
        with self.runtime.using(PROPOSER) as model:
            boxes = blazeface_boxes(small, model, PROPOSAL_SCORE)
        return [np.asarray(box, dtype=np.float32) / scale for box, _ in boxes]

    def analyse(
        self,
        frame: Frame,
        settings: Settings,
        embeddings: bool = True,
        mesh: bool = False,
        detections: list[Detection] | None = None,
        known: Sequence[Face] = (),
        counted: bool = True,
        landmarks: bool = True,
    ) -> list[Face]:
        """Every face in ``frame``, largest first, with landmarks and (optionally) embedding and mesh.
        ``detections``: boxes already found (a probe, or a search around followed faces); ``known``:
        faces already complete (followed by their meshes, ``face_of_mesh``), taken as they are;
        ``counted``: whether the run's counters take them (not for a second look at a frame, e.g. the
        reference frame's); ``landmarks``: False when nothing reads the 68 landmarks (see ``complete``)."""
        if frame is None or frame.ndim != 3 or frame.shape[2] != 3:
            raise UsageError("a frame must be a colour image (height x width x 3)")
        if detections is None:
            detections = self.detect(frame, settings)
        completed = [self.complete(frame, detection, settings, mesh, landmarks) for detection in detections]
        faces = [*known, *(face for face in completed if face is not None)]
        if embeddings and faces:
            rgb: Frame = np.ascontiguousarray(frame[:, :, ::-1])  # the dlib recognizer reads colours
            faces = [self.embed(frame, rgb, face, settings) for face in faces]
        return self.taken(faces, counted)

    def taken(self, faces: Sequence[Face], counted: bool = True) -> list[Face]:
        """Complete faces (``known`` to ``analyse``, with no detection to complete) as ``analyse`` gives
        them: largest first, counted by the run's counters when ``counted``."""
        if counted:
            self.counters.add(frames=1, faces=len(faces), meshes=sum(face.mesh is not None for face in faces))
        return sorted(faces, key=lambda face: -face.area)

    def complete(
        self, frame: Frame, detection: Detection, settings: Settings, want_mesh: bool, landmarks: bool = True
    ) -> Face | None:
        """The face of ``detection``: its landmarks, 5 points and pose (and its mesh when ``want_mesh``).
        Without ``landmarks`` (nothing reads the 68 landmarks) and with the mesh wanted, the mesh is found
        first and the 68-point landmarker runs only where it is not found and the detector gave no 5
        points; the 5 points come from the mesh then, as for a face followed by its mesh
        (``face_of_mesh``): a video's faces need no 68-point model (dlib's takes 0.4 s of CPU to load)."""
        landmarks_68 = None
        mesh_points = None
        kps = detection.kps
        landmarker = settings.face_landmarker_model
        landmarks_score = None
        mesh_first = want_mesh and not landmarks and landmarker in LANDMARKERS_68
        if mesh_first:
            mesh_points = self.mesh(frame, detection)
            if kps is None and mesh_points is not None:
                kps = kps_from_mesh(mesh_points.points)
        if landmarker in LANDMARKERS_68:
            if not mesh_first or kps is None:
                landmarks_68, landmarks_score = self.landmarks_68(frame, detection.bbox, landmarker, kps)
                kps = kps if kps is not None else kps_from_68(landmarks_68)
        elif landmarker == "dlib_5":
            with self.runtime.using("dlib_5") as predictor:
                points = dlib_landmarks(frame, predictor, detection.bbox)
            kps = kps if kps is not None else kps_from_dlib_5(points)
        if (landmarker == "mediapipe_face_mesh" or want_mesh) and not mesh_first:
            mesh_points = self.mesh(frame, detection)
            if kps is None and mesh_points is not None:
                kps = kps_from_mesh(mesh_points.points)
        if kps is None:
            return None  # the landmarker found no face in this box: a false detection
        yaw, pitch = estimate_pose(kps)
        return Face(
            bbox=np.asarray(detection.bbox, dtype=np.float32),
            score=detection.score,
            kps=np.asarray(kps, dtype=np.float32),
            detector=settings.face_detector_model,
            landmarks_68=landmarks_68,
            landmarks_68_score=landmarks_score,
            mesh=mesh_points,
            yaw=yaw,
            pitch=pitch,
        )

    def face_of_mesh(
        self, image: FrameImage, mesh: FaceMesh, bbox: Points, score: float, settings: Settings, landmarks: bool
    ) -> Face:
        """A face known by its mesh alone (followed from the frame before, no detection): its 5 points
        from the mesh, and the 68 landmarks only when ``landmarks`` (a processor reads them)."""
        landmarker = settings.face_landmarker_model
        wanted = landmarks and landmarker in LANDMARKERS_68
        kps = kps_from_mesh(mesh.points)
        yaw, pitch = estimate_pose(kps)
        landmarks_68, landmarks_score = (
            self.landmarks_68(image.bgr(), bbox, landmarker, kps) if wanted else (None, None)
        )
        return Face(
            bbox=np.asarray(bbox, dtype=np.float32),
            score=score,
            kps=kps,
            detector=settings.face_detector_model,
            landmarks_68=landmarks_68,
            landmarks_68_score=landmarks_score,
            mesh=mesh,
            yaw=yaw,
            pitch=pitch,
        )

    def landmarks_68(
        self, frame: Frame, bbox: Points, landmarker: str, kps: Points | None
    ) -> tuple[Points, float | None]:
        """The 68 landmarks of the face in ``bbox`` by ``landmarker`` (dlib_68, or 2dfan4 on the crop turned
        upright by the roll of ``kps``, when known) and the landmarker's score (2dfan4's alone)."""
        if landmarker == "dlib_68":
            with self.runtime.using("dlib_68") as predictor:
                return dlib_landmarks(frame, predictor, bbox), None
        _, session = self.runtime.onnx_session("2dfan4")
        return landmarks_2dfan4(frame, bbox, session, face_angle(kps))

    def mesh(self, frame: Frame, detection: Detection) -> FaceMesh | None:
        """The mesh found in the crop around ``detection``'s box (a face seen for the first time)."""
        with self.runtime.using("mediapipe_face_mesh") as model:
            return face_mesh(frame, detection.bbox, model)

    def mesh_at(self, image: FrameImage, points: Points) -> FaceMesh | None:
        """The mesh read in the region a known mesh (``points``: the same face a frame before) gives, from
        that region of ``image`` alone."""
        with self.runtime.using("mediapipe_face_mesh") as model:
            return face_mesh_in(image, mesh_roi(points), model)

    def embedding(self, frame: Frame, rgb: Frame, face: Face, settings: Settings) -> Embedding:
        name = settings.face_recognizer_model
        self.counters.add(recognitions=1)
        if name == "dlib_resnet":
            with self.runtime.using("dlib_resnet") as recognizer:
                return embed_dlib(rgb, face, recognizer, lambda: self.runtime.using("dlib_5"))
        spec, session = self.runtime.onnx_session(name)
        return embed_arcface(frame, face, session, spec)

    def classify(self, frame: Frame, faces: Sequence[Face]) -> list[Face]:
        """``faces`` with their gender, age bracket and race (fairface; the face selector's filters)."""
        if not faces:
            return []
        _, session = self.runtime.onnx_session(FACE_CLASSIFIER)
        return [classified(frame, face, session) for face in faces]

    def embed(self, frame: Frame, rgb: Frame, face: Face, settings: Settings) -> Face:
        return face.with_embedding(self.embedding(frame, rgb, face, settings), settings.face_recognizer_model)


def without_overlaps(found: list[Detection]) -> list[Detection]:
    """One detection per face where crops searched separately overlap."""
    if len(found) < 2:
        return found
    kept = non_max_suppression(np.array([d.bbox for d in found]), np.array([d.score for d in found]))
    return [found[i] for i in kept]


def analyse(
    frame: Frame, settings: Settings, runtime: ModelRuntime, embeddings: bool = True, mesh: bool = False
) -> list[Face]:
    """Analyse one frame with a throw-away analyser (its counters are not kept)."""
    return FaceAnalyser(runtime).analyse(frame, settings, embeddings=embeddings, mesh=mesh)

"""A job's frame pipeline, in two stages, with the models and sources prepared once.

``analyse`` (detect -> landmarks -> identity through tracker and cache -> select) keeps state from frame
to frame, so it must see frames in order; ``apply`` (the processors) is stateless per frame and runs on
several threads. Shared by the image and the video workflows; one per job, on the process's runtime.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.errors import InputError, ModelError
from facefusion_ui.faces.analyser import FaceAnalyser, SearchView
from facefusion_ui.faces.change_gate import FacelessFrame, thumbnail
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.identity_cache import IdentityCache
from facefusion_ui.faces.mesh_smoother import MeshSmoother
from facefusion_ui.faces.recognizer import RecognizerScale
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import STRETCH_GROWTH, ScheduleState, ScheduleStats, group_size_at, plan_group
from facefusion_ui.faces.selector import pick_face, reference_threshold, select_faces
from facefusion_ui.faces.source import SourceIdentity, load_sources
from facefusion_ui.faces.tracker import IdentityTracker
from facefusion_ui.frames import FrameImage
from facefusion_ui.masks.stage import MaskingProcessor, masks_summary
from facefusion_ui.processors.base import (
    CountingProcessor,
    FaceReport,
    FrameContext,
    Processor,
    ReportingProcessor,
    ResizingProcessor,
)
from facefusion_ui.processors.options import OptionValue
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.processors.scaling import scale_context
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, Frame, Points


@dataclass(frozen=True)
class VideoState:
    """What the pipeline knows after a video frame: the detection schedule and the identities (cache and
    tracked faces). Carried from chunk to chunk; saved with each finished chunk so a resumed run goes on
    as the interrupted one would have; restored when a chunk is tried again after running out of memory."""

    schedule: ScheduleState
    identities: dict[str, Any] | None = None
    """``IdentityTracker.to_json()``; None when the identity cache is off (or nothing was saved)."""
    meshes: dict[str, Any] | None = None
    """``MeshSmoother.to_json()``; None when no mesh is smoothed (or nothing was saved)."""

    def to_json(self) -> dict[str, Any]:
        return {"schedule": self.schedule.to_json(), "identities": self.identities, "meshes": self.meshes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VideoState:
        if "schedule" not in data:  # saved before identities were: the schedule's state alone
            return cls(ScheduleState.from_json(data))
        return cls(ScheduleState.from_json(data["schedule"]), data.get("identities"), data.get("meshes"))


@dataclass(frozen=True)
class FrameAnalysis:
    faces: list[Face]
    selected: list[Face]
    track_ids: tuple[int | None, ...] = ()
    """The identity of each of ``faces`` when the identity cache is on."""


NO_FACES = FrameAnalysis([], [])


@dataclass
class PipelineStats:
    frames: int = 0
    faces_selected: int = 0
    started: float = field(default_factory=time.perf_counter)


class FramePipeline:
    def __init__(
        self,
        settings: Settings,
        runtime: ModelRuntime,
        processors: Sequence[Processor],
        sources: SourceIdentity,
        analyser: FaceAnalyser,
        options: Sequence[Mapping[str, OptionValue]] = (),
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.processors = list(processors)
        self.options = list(options) or [{} for _ in self.processors]
        """Each processor's option values (``FrameContext.options`` when it is called)."""
        self.sources = sources
        self.analyser = analyser
        self.scale: RecognizerScale = analyser.recognizer_scale(settings)
        self.reference: Embedding | None = None
        self.stats = PipelineStats()
        self.schedule = ScheduleStats()
        self.followed: list[Points] | None = None
        """Face boxes of the last frame analysed in a video (None: not known, e.g. at a chunk's start)."""
        self.stretch = 1
        """Groups span this many intervals: doubled by each group skipped or tracked, back to 1 at a new face."""
        self.faceless = FacelessFrame()
        """The last frame a full-frame detection found no face in: probes search only what changed since."""
        self.first_frame = 0
        """The job's first frame: the detection groups' grid counts from it."""
        self.identities: IdentityTracker | None = None
        if settings.face_identity_cache:
            threshold = (
                settings.face_recognition_score if settings.face_recognition_score is not None else self.scale.threshold
            )
            cache = IdentityCache(self.scale.metric, threshold, settings.face_cache_limit, settings.face_cache_lifetime)
            self.identities = IdentityTracker(cache)
        if settings.face_selector_mode == "reference" and settings.reference_face_from == "source":
            self.reference = sources.mean_raw_embedding()
        self.meshes: MeshSmoother | None = None
        """Set by ``start_video`` when a processor draws with the faces' meshes (single images: never)."""
        self.reads_68 = not set(settings.processors) <= WITHOUT_68_LANDMARKS
        """Whether a processor may read the 68 landmarks (faces followed by their meshes then get them too)."""

    @classmethod
    def build(
        cls,
        settings: Settings,
        runtime: ModelRuntime,
        source_paths: Sequence[Path],
        registry: ProcessorRegistry | None = None,
    ) -> FramePipeline:
        """Create the processors, check their models, and read the source photos (fails fast)."""
        registry = registry or ProcessorRegistry.discover()
        processors = [registry.create(name, settings, runtime) for name in settings.processors]
        options = [registry.options_for(name, settings) for name in settings.processors]
        problems = [problem for processor in processors for problem in processor.pre_check()]
        if problems:
            raise ModelError("; ".join(problems))
        # sources get their own analyser so the job's counts speak of the target only
        sources = load_sources(list(source_paths), FaceAnalyser(runtime), settings)
        return cls(settings, runtime, processors, sources, FaceAnalyser(runtime), options)

    @property
    def needs_embeddings(self) -> bool:
        return self.settings.face_selector_mode == "reference"

    def group_size_from(self, index: int) -> int:
        """How many consecutive video frames from frame ``index`` ``analyse_group`` wants next (see
        ``faces/schedule.py``: groups never cross the grid counted from the job's first frame)."""
        return group_size_at(index - self.first_frame, self.settings.face_detector_interval, self.stretch)

    def start_video(self, first_frame: int, state: VideoState | None = None) -> None:
        """Called before a video's first chunk that runs: the job starts at ``first_frame``; ``state`` is
        what the pipeline knew after the last finished chunk when a run resumes (None: nothing known)."""
        self.first_frame = first_frame
        if smooths_meshes(self.settings):
            self.meshes = MeshSmoother()
        self.restore_video_state(state or VideoState(ScheduleState()))

    def video_state(self) -> VideoState:
        followed = None
        if self.followed is not None:
            followed = tuple((float(b[0]), float(b[1]), float(b[2]), float(b[3])) for b in self.followed)
        identities = self.identities.to_json() if self.identities is not None else None
        meshes = self.meshes.to_json() if self.meshes is not None else None
        return VideoState(ScheduleState(followed, self.stretch, self.faceless.cells), identities, meshes)

    def restore_video_state(self, state: VideoState) -> None:
        """Back to ``state`` (a resumed run; a chunk tried again after running out of memory)."""
        schedule = state.schedule
        followed = schedule.followed
        self.followed = None if followed is None else [np.array(box, dtype=np.float32) for box in followed]
        self.stretch = schedule.stretch
        if schedule.faceless is None:
            self.faceless.forget()
        else:
            self.faceless.keep(schedule.faceless)
        if self.identities is not None:
            if state.identities is not None:
                self.identities.load_json(state.identities)
            else:
                self.identities.cache.clear()
                self.identities.reset()
        if self.meshes is not None:
            if state.meshes is not None:
                self.meshes.load_json(state.meshes)
            else:
                self.meshes.reset()

    def begin_chunk(self) -> None:
        """Called before each chunk: the strict scope forgets identities between chunks. The schedule
        carries on from the chunk before (``faces/schedule.py``)."""
        if self.identities is not None and self.settings.face_cache_scope == "chunk":
            self.identities.cache.clear()
            self.identities.reset()

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]
    ) -> list[FrameAnalysis]:
        """Consecutive video frames (as many as ``group_size_from`` their first), analysed with the
        detection schedule of ``faces/schedule.py``. Call with the frames in order."""
        results: list[FrameAnalysis] = []
        first = 0
        if self.followed is None:  # nothing known before: the first frame alone tells what is in view
            results.append(self.analyse_followed(images[0], indices[0], timestamps[0], None))
            self.schedule.frames_full += 1
            first = 1
            if len(images) == 1:
                return results
        probe = self.probe(images[-1])
        plan = plan_group(self.followed, [detection.bbox for detection in probe])
        if plan == "skip":
            rest = len(images) - first
            self.stats.frames += rest
            self.schedule.frames_skipped += rest - 1
            self.followed = []
            self.stretch = min(self.stretch * 2, STRETCH_GROWTH)
            return results + [NO_FACES] * rest
        # the same faces go on: the next group may be longer; a face that appeared: back to the interval
        self.stretch = min(self.stretch * 2, STRETCH_GROWTH) if plan == "track" else 1
        for position in range(first, len(images) - 1):
            around = self.followed if plan == "track" else None
            results.append(self.analyse_followed(images[position], indices[position], timestamps[position], around))
            if plan == "track":
                self.schedule.frames_tracked += 1
            else:
                self.schedule.frames_full += 1
        results.append(self.analyse(images[-1].bgr(), indices[-1], timestamps[-1], probe))
        return results

    def probe(self, image: FrameImage) -> list[Detection]:
        """A detection on the frame's search view, in frame coordinates: full-frame, or when no face was
        in view before, only in the areas that changed since the last faceless frame (``change_gate.py``)."""
        view = self.analyser.search_view(image, self.settings)
        cells = thumbnail(view.image)
        height, width = view.image.shape[:2]
        gated = self.followed == [] and self.settings.face_detector_interval > 1  # interval 1: every frame in full
        areas = self.faceless.areas_to_search(cells, width, height) if gated else None
        if areas and not self.analyser.area_search_pays(self.settings):
            areas = None
        if areas is None:
            found = self.detect_whole(view, cells)
            self.schedule.frames_full += 1
        elif areas:
            found = self.analyser.detect_in_areas(view, areas, self.settings)
            self.schedule.probes_of_areas += 1
        else:
            found = []
            self.schedule.probes_unchanged += 1
        return found

    def detect_whole(self, view: SearchView, cells: np.ndarray | None = None) -> list[Detection]:
        """A full-frame detection of a video frame; an empty frame becomes the one probes compare with."""
        found = self.analyser.detect_view(view, self.settings)
        if found:
            self.faceless.forget()
        else:
            self.faceless.keep(thumbnail(view.image) if cells is None else cells)
        return found

    def analyse_followed(
        self, image: FrameImage, index: int, timestamp: float, around: list[Points] | None
    ) -> FrameAnalysis:
        """A frame searched around the ``around`` boxes only (faces followed), or whole when None."""
        if around is not None and not around:
            self.stats.frames += 1
            self.followed = []
            return NO_FACES
        frame = image.bgr()
        known: list[Face] = []
        if around is None:
            detections = self.detect_whole(self.analyser.search_view(image, self.settings))
        else:
            known, rest = self.follow_meshes(frame, index, around)
            self.schedule.faces_followed_by_mesh += len(known)
            detections = self.analyser.detect_around(frame, rest, self.settings) if rest else []
        result = self.analyse(frame, index, timestamp, detections, known)
        if around is not None:
            # a followed face missed in this frame (blur, a hand) is still searched for in the next ones
            found = [face.bbox for face in result.faces]
            missed = [box for box in around if not any(_overlaps(box, other) for other in found)]
            self.followed = found + missed
        return result

    def follow_meshes(self, frame: Frame, index: int, boxes: list[Points]) -> tuple[list[Face], list[Points]]:
        """The faces of ``boxes`` (followed from the frame before) whose smoothed mesh goes on into this
        frame, read from their meshes alone (no detection); and the boxes left to search round."""
        if self.meshes is None:
            return [], boxes
        known: list[Face] = []
        rest: list[Points] = []
        for box, track in zip(boxes, self.meshes.followed_tracks(frame, index, boxes), strict=True):
            mesh = None if track is None else self.analyser.mesh_at(frame, track.smoothed_points())
            if track is None or mesh is None:
                rest.append(box)
                continue
            bbox = track.placed_box(mesh.points)
            known.append(self.analyser.face_of_mesh(frame, mesh, bbox, track.score, self.settings, self.reads_68))
        return known, rest

    def analyse(
        self,
        frame: Frame,
        index: int = 0,
        timestamp: float = 0.0,
        detections: list[Detection] | None = None,
        known: Sequence[Face] = (),
    ) -> FrameAnalysis:
        """Faces of ``frame`` and the ones to process. Call in frame order (tracking state).
        ``detections``: the boxes when already found (else a full-frame detection runs); ``known``:
        faces followed by their meshes (``follow_meshes``)."""
        faces = self.analyser.analyse(frame, self.settings, embeddings=False, detections=detections, known=known)
        self.followed = [face.bbox for face in faces]
        track_ids: tuple[int | None, ...] = ()
        if self.needs_embeddings and faces:
            rgb: list[Frame] = []  # made on the first recognizer call only: tracked frames need none

            def embed(face: Face) -> Embedding:
                if not rgb:
                    rgb.append(np.ascontiguousarray(frame[:, :, ::-1]))
                return self.analyser.embedding(frame, rgb[0], face, self.settings)

            if self.identities is not None:
                resolved = self.identities.resolve(faces, index, timestamp, embed)
                faces = [face for face, _ in resolved]
                track_ids = tuple(identity.id if identity is not None else None for _, identity in resolved)
            else:
                faces = [face.with_embedding(embed(face), self.settings.face_recognizer_model) for face in faces]
        selected = select_faces(faces, self.settings, self.reference, self.scale)
        if self.meshes is not None and selected:
            faces, selected = self.smooth_meshes(frame, index, timestamp, faces, selected, track_ids)
        self.stats.frames += 1
        self.stats.faces_selected += len(selected)
        return FrameAnalysis(faces, selected, track_ids)

    def smooth_meshes(
        self,
        frame: Frame,
        index: int,
        timestamp: float,
        faces: list[Face],
        selected: list[Face],
        track_ids: tuple[int | None, ...],
    ) -> tuple[list[Face], list[Face]]:
        """The selected faces with their meshes (found here when the landmarker gave none) smoothed over
        time; ``faces`` with the same faces replaced."""
        assert self.meshes is not None
        ids = {id(face): track_id for face, track_id in zip(faces, track_ids, strict=False)}
        identities = [ids.get(id(face)) for face in selected]
        smoothed = self.meshes.smooth(frame, index, timestamp, selected, identities, FrameMeshes(self.analyser, frame))
        replaced = {id(before): after for before, after in zip(selected, smoothed, strict=True)}
        return [replaced.get(id(face), face) for face in faces], smoothed

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        """The size of the frames ``apply`` returns for frames of ``width`` x ``height`` (an upscaler)."""
        for processor in self.processors:
            if isinstance(processor, ResizingProcessor):
                width, height = processor.output_size(width, height)
        return width, height

    def changes(self, analysis: FrameAnalysis) -> bool:
        """Whether ``apply`` can change a frame with this analysis (else the frame passes through as is);
        always when the processors change the frame's size."""
        if self.output_size(64, 64) != (64, 64):
            return True
        report: FaceReport | None = None
        for processor in self.processors:
            if isinstance(processor, ReportingProcessor):
                report = report or self.report(analysis)
                if processor.changes_frame_with(report):
                    return True
            elif processor.changes_frame(analysis.selected):
                return True
        return False

    def report(self, analysis: FrameAnalysis) -> FaceReport:
        return FaceReport(
            analysis.faces,
            analysis.selected,
            analysis.track_ids or (None,) * len(analysis.faces),
            self.reference,
            self.scale.metric,
            reference_threshold(self.settings, self.scale),
            self.settings.face_selector_mode,
        )

    def apply(self, frame: Frame, analysis: FrameAnalysis, index: int = 0, timestamp: float = 0.0) -> Frame:
        """Run the processors on the selected faces; safe to call from several threads. After a processor
        that changed the frame's size the faces are scaled for the ones after it."""
        context = FrameContext(index, timestamp, self.settings, analysis.selected, self.sources)
        context = dataclasses.replace(context, report=self.report(analysis))
        for processor, options in zip(self.processors, self.options, strict=True):
            height, width = frame.shape[:2]
            frame = processor.process_frame(
                frame, dataclasses.replace(context, options=options) if options else context
            )
            if frame.shape[:2] != (height, width):
                context = scale_context(context, frame.shape[1] / width, frame.shape[0] / height)
        return frame

    def set_reference_from(self, frame: Frame) -> None:
        """Mode 'reference' with a face of the target: take it from ``frame`` (the reference frame)."""
        if self.settings.face_selector_mode != "reference" or self.settings.reference_face_from != "frame":
            return
        faces = self.analyser.analyse(frame, self.settings, embeddings=True)
        chosen = pick_face(faces, self.settings.face_selector_order, self.settings.reference_face_position)
        if chosen is None or chosen.embedding is None:
            raise InputError(
                f"no face in reference frame {self.settings.reference_frame_number}: pick another "
                "--reference-frame-number or use --face-selector-mode many"
            )
        self.reference = chosen.embedding

    def process(self, frame: Frame, index: int = 0, timestamp: float = 0.0) -> Frame:
        return self.apply(frame, self.analyse(frame, index, timestamp), index, timestamp)

    def release(self) -> None:
        """Free the processors' caches and the models no other running job holds (they reload on next use)."""
        for processor in self.processors:
            processor.release()
        self.runtime.release_models()

    def models_used(self) -> list[str]:
        settings = self.settings
        names: list[str] = [settings.face_detector_model, settings.face_landmarker_model]
        if self.needs_embeddings:
            names.append(settings.face_recognizer_model)
        for processor in self.processors:
            names.extend(processor.required_models())
        return list(dict.fromkeys(names))

    def counts(self) -> collections.Counter[str]:
        """Everything counted so far, by name: the faces found and selected, each counting processor's
        counts (a plugin's too) and the mask stage's. A video job saves these per chunk, so that a resumed
        run reports the whole output."""
        done = collections.Counter(
            {"faces_detected": self.analyser.counters.faces_detected, "faces_selected": self.stats.faces_selected}
        )
        for processor in self.processors:
            if isinstance(processor, CountingProcessor):
                done.update(processor.counts())
            if isinstance(processor, MaskingProcessor):
                done.update(processor.mask_counts())
        return done

    def summary(self) -> dict[str, Any]:
        done: collections.Counter[str] = collections.Counter()
        for processor in self.processors:
            if isinstance(processor, CountingProcessor):
                done.update(processor.counts())
        cache = self.identities.cache.stats.to_json() if self.identities is not None else None
        return {
            "faces_detected": self.analyser.counters.faces_detected,
            "faces_selected": self.stats.faces_selected,
            "faces_swapped": done["faces_swapped"],
            **{key: count for key, count in sorted(done.items()) if key != "faces_swapped"},
            "recognizer_calls": self.analyser.counters.recognizer_calls,
            "identity_cache": cache,
            "face_detection": {"interval": self.settings.face_detector_interval, **self.schedule.to_json()},
            "models_used": self.models_used(),
            "masks": masks_summary(self.settings, self.processors),
        }


WITHOUT_68_LANDMARKS = frozenset({"face_swapper", "face_enhancer", "frame_enhancer"})
"""Built-in processors that never read a face's 68 landmarks (the debugger draws them, the lip syncer
crops the mouth with them, a plugin may read them)."""


@dataclass(frozen=True)
class FrameMeshes:
    """Where the mesh smoother finds the meshes of one frame's faces (``MeshFinder``)."""

    analyser: FaceAnalyser
    frame: Frame

    def find(self, face: Face) -> FaceMesh | None:
        return self.analyser.mesh(self.frame, Detection(face.bbox, face.score, face.kps))

    def follow(self, points: Points) -> FaceMesh | None:
        return self.analyser.mesh_at(self.frame, points)


def smooths_meshes(settings: Settings) -> bool:
    """Whether a video's face meshes are smoothed over time: the embedded swapper draws with them."""
    return "face_swapper" in settings.processors and settings.face_swapper_model == "mesh_warp"


def _overlaps(a: Points, b: Points) -> bool:
    return bool(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])

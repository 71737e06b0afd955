"""A job's frame pipeline, in two stages, with the models and sources prepared once.

``analyse`` (detect -> landmarks -> identity through tracker and cache -> select; a video's frames in groups
through its detection schedule, ``faces/detection_schedule.py``) keeps state from frame to frame, so it
must see frames in order; ``apply`` (the processors) is stateless per frame and runs on
several threads. Shared by the image and the video workflows; one per job, on the process's runtime.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import InputError, ModelError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.classifier import FACE_CLASSIFIER, check_classifier
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.detection_schedule import DetectionSchedule
from facefusion_ui.faces.face import Face, FaceMesh
from facefusion_ui.faces.face_map import PeopleSwap
from facefusion_ui.faces.frame_analysis import NO_FACES as NO_FACES  # re-exported: callers name it here
from facefusion_ui.faces.frame_analysis import FrameAnalysis as FrameAnalysis
from facefusion_ui.faces.identity_cache import IdentityCache
from facefusion_ui.faces.mesh_smoother import MeshSmoother
from facefusion_ui.faces.probe_prefetch import FrameAt, PrefetchStats, ProbePrefetch
from facefusion_ui.faces.recognizer import RecognizerScale
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import ScheduleState, largest_group
from facefusion_ui.faces.selector import (
    classifies_source,
    classifies_targets,
    filters_in_use,
    pick_face,
    reference_threshold,
    select_faces,
)
from facefusion_ui.faces.source import SourceIdentity, load_sources, load_sources_in_background
from facefusion_ui.faces.tracker import IdentityTracker
from facefusion_ui.frames import BgrImage, FrameImage
from facefusion_ui.masks.stage import MaskingProcessor, masks_summary
from facefusion_ui.processors.base import (
    CountingProcessor,
    FaceReadingProcessor,
    FaceReport,
    FrameContext,
    LandmarkReadingProcessor,
    MeshDrawingProcessor,
    OutliningProcessor,
    Processor,
    RegionalProcessor,
    ReportingProcessor,
    ResizingProcessor,
    SourcePreparingProcessor,
)
from facefusion_ui.processors.crop import Region, even_union, moved_analysis
from facefusion_ui.processors.options import OptionValue
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.processors.scaling import scale_context
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Embedding, Frame, Points

logger = logging.getLogger(__name__)

PERSON_COUNT = "person_"
"""The prefix of the counts kept per mapped person (``person_3_faces_swapped``, ``person_3_frames``)."""


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


@dataclass
class PipelineStats:
    frames: int = 0
    faces_selected: int = 0
    person_frames: collections.Counter[int] = field(default_factory=collections.Counter)
    """With a face map: the frames in which each mapped person was found."""
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
        people: PeopleSwap | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.processors = list(processors)
        self.options = list(options) or [{} for _ in self.processors]
        """Each processor's option values (``FrameContext.options`` when it is called)."""
        self.sources = sources
        self.people = people
        """A face map (``faces/face_map.py``): each mapped person their own source, instead of the selector."""
        self.analyser = analyser
        self.scale: RecognizerScale = analyser.recognizer_scale(settings)
        self.reference: Embedding | None = None
        self.stats = PipelineStats()
        self.schedule = DetectionSchedule(analyser, settings)
        """Which video frames get a full-frame detection, and what it knows from frame to frame."""
        self.prefetch_stats = PrefetchStats()
        """The probes' full searches computed ahead by the video pipeline's helper thread (``prefetch_with``)."""
        self.identities: IdentityTracker | None = None
        if settings.face_identity_cache:
            threshold = (
                settings.face_recognition_score if settings.face_recognition_score is not None else self.scale.threshold
            )
            cache = IdentityCache(self.scale.metric, threshold, settings.face_cache_limit, settings.face_cache_lifetime)
            self.identities = IdentityTracker(cache)
        if settings.face_selector_mode == "reference" and settings.reference_face_from == "source":
            self.reference = sources.mean_raw_embedding()
        self.source_face = self.classified_source() if classifies_source(settings) else None
        """The source face, classified, whose gender or race an ``auto`` filter takes (else None)."""
        self.classifies = classifies_targets(settings)
        """Whether each frame's faces are classified (the face selector's filters keep faces by class)."""
        self.meshes: MeshSmoother | None = None
        """Set by ``start_video`` when a processor draws with the faces' meshes (single images: never)."""
        self.reads_68 = reads_68_landmarks(self.processors)
        """Whether a processor may read the 68 landmarks (faces followed by their meshes then get them too)."""
        self.mask_outline = first_mask_outline(self.processors)
        """Where the chain's first processor that says so pastes a face back (``FrameContext.mask_outline``)."""
        self.reads_faces = reads_faces(self.processors)
        """Whether a processor reads the faces (else no frame is analysed: a whole-frame chain)."""
        self.preparing: threading.Thread | None = None
        """The source prepared for the processors ahead of the first swap (``prepare_soon``), once started."""

    @classmethod
    def build(
        cls,
        settings: Settings,
        runtime: ModelRuntime,
        source_paths: Sequence[Path],
        registry: ProcessorRegistry | None = None,
        people: PeopleSwap | None = None,
        background: bool = False,
    ) -> FramePipeline:
        """Create the processors, check their models, and read the source photos (fails fast; with
        ``background``, a video's, on a thread of their own: ``load_sources_in_background``, their error
        raised by the next group analysed or ``sources.check()``). With a face map (``people``) its sources
        are the people's own and ``source_paths`` is not read."""
        check_classifier(settings, runtime)
        registry = registry or ProcessorRegistry.discover()
        processors = [registry.create(name, settings, runtime) for name in settings.processors]
        options = [registry.options_for(name, settings) for name in settings.processors]
        problems = [problem for processor in processors for problem in processor.pre_check()]
        if problems:
            raise ModelError("; ".join(problems))
        # sources get their own analyser so the job's counts speak of the target only
        if people is not None:
            return cls(settings, runtime, processors, people.first_source(), FaceAnalyser(runtime), options, people)
        if source_paths or source_face_needed(settings, registry):
            load = load_sources_in_background if background else load_sources
            mesh_only = meshes_the_source(settings, processors, len(source_paths))
            sources = load(list(source_paths), FaceAnalyser(runtime), settings, mesh_only=mesh_only)
        else:
            sources = NO_SOURCE
        return cls(settings, runtime, processors, sources, FaceAnalyser(runtime), options)

    def classified_source(self) -> Face:
        """The largest face of the source photos with its classes (FaceFusion takes the largest source face)."""
        largest = max(self.sources.faces, key=lambda source: source.face.area)
        return self.analyser.classify(largest.image, [largest.face])[0]

    @property
    def needs_embeddings(self) -> bool:
        return self.settings.face_selector_mode == "reference" or self.people is not None

    @property
    def sources_key(self) -> str:
        """The source person's photos, or the face map's people and sources (a video's fingerprint)."""
        return self.people.key if self.people is not None else self.sources.key

    def group_size_from(self, index: int) -> int:
        """How many consecutive video frames from frame ``index`` ``analyse_group`` wants next (see
        ``faces/schedule.py``: groups never cross the grid counted from the job's first frame)."""
        return self.schedule.group_size_from(index)

    def start_video(self, first_frame: int, state: VideoState | None = None) -> None:
        """Called before a video's first chunk that runs: the job starts at ``first_frame``; ``state`` is
        what the pipeline knew after the last finished chunk when a run resumes (None: nothing known)."""
        if smooths_meshes(self.processors):
            self.meshes = MeshSmoother()
        self.schedule.first_frame = first_frame
        self.restore_video_state(state or VideoState(ScheduleState()))

    def video_state(self) -> VideoState:
        identities = self.identities.to_json() if self.identities is not None else None
        meshes = self.meshes.to_json() if self.meshes is not None else None
        return VideoState(self.schedule.state(), identities, meshes)

    def restore_video_state(self, state: VideoState) -> None:
        """Back to ``state`` (a resumed run; a chunk tried again after running out of memory)."""
        self.schedule.restore(state.schedule)
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

    def prefetch_with(self, executor: Executor | None, frame_at: FrameAt | None = None) -> None:
        """From now on compute probes' full searches ahead on ``executor``, of the frames ``frame_at``
        gives (``DetectionSchedule.search_next_probe``); None: stop, dropping a search still pending
        (waited for if it runs: its frame is not read after this)."""
        if self.schedule.prefetch is not None:
            self.schedule.prefetch.discard()
        self.schedule.prefetch = None
        if executor is not None and frame_at is not None and self.reads_faces:
            self.schedule.prefetch = ProbePrefetch(executor, frame_at, self.prefetch_stats)

    def converts_next_group(self) -> bool:
        """Whether the analysis will convert each frame of the next group whole to BGR: it is analysed (not
        skipped: faces were in view in the last frame, or nothing is known yet) and its followed faces are
        not read from their meshes alone (that reads each face's region, ``follow_meshes``), or each frame
        is classified or recognised. The video pipeline then converts their colours ahead."""
        if not self.reads_faces or not self.schedule.faces_in_view():
            return False
        recognises_each = self.needs_embeddings and self.identities is None
        return self.meshes is None or self.reads_68 or self.classifies or recognises_each

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
        detection schedule (``faces/detection_schedule.py``). Call with the frames in order."""
        self.sources.raise_if_failed()  # source photos read in the background: their error at once
        if not self.reads_faces:
            self.stats.frames += len(images)
            return [NO_FACES] * len(images)
        results = self.schedule.analyse_group(images, indices, timestamps, self)
        self.stats.frames += len(results)
        return results

    def skips_unseen(self) -> bool:
        """Whether a group whose probe finds no face needs none of its other frames (sparse decoding,
        ``video/sparse.py``): faces are read, nothing is changed in a frame without them, and the schedule
        skips such a group (``DetectionSchedule.skips_unseen``)."""
        return self.reads_faces and not self.changes(NO_FACES) and self.schedule.skips_unseen()

    def probe_ahead(self, image: FrameImage, index: int) -> bool:
        """The probe of the group ending at frame ``index``, before its other frames are decoded (only when
        ``skips_unseen``): whether the group is skipped (``DetectionSchedule.probe_ahead``)."""
        return self.schedule.probe_ahead(image, index)

    def probe_grid(self) -> tuple[int, int]:
        """The job's first frame and the longest group: groups at their longest end on this grid."""
        return self.schedule.first_frame, largest_group(self.settings.face_detector_interval)

    def follow_meshes(self, image: FrameImage, index: int, boxes: list[Points]) -> tuple[list[Face], list[Points]]:
        """The faces of ``boxes`` (followed from the frame before) whose smoothed mesh goes on into this
        frame, read from their meshes alone (no detection; in the region each mesh gives, the rest of the
        frame not converted); and the boxes left to search round."""
        if self.meshes is None:
            return [], boxes
        known: list[Face] = []
        rest: list[Points] = []
        for box, track in zip(boxes, self.meshes.followed_tracks(image, index, boxes), strict=True):
            mesh = None if track is None else self.analyser.mesh_at(image, track.smoothed_points())
            if track is None or mesh is None:
                rest.append(box)
                continue
            bbox = track.placed_box(mesh.points)
            known.append(self.analyser.face_of_mesh(image, mesh, bbox, track.score, self.settings, self.reads_68))
        return known, rest

    def probe_meshes(
        self, image: FrameImage, index: int, detections: list[Detection], known: Sequence[Face]
    ) -> tuple[list[Detection], list[Face]]:
        """Detected faces (a probe's) that continue a face followed in the frame before, made from the mesh
        read in the region its smoothed mesh gives (the read the smoother makes for them anyway), with the
        detector's box and score: their 5 points from that mesh and the 68 landmarks only when a processor
        reads them, as between the probes; and the detections left for the landmarker."""
        assert self.meshes is not None
        boxes = [detection.bbox for detection in detections]
        tracks = self.meshes.detected_tracks(image, index, [*boxes, *(face.bbox for face in known)])
        probed: list[Face] = []
        rest: list[Detection] = []
        for detection, track in zip(detections, tracks, strict=False):
            mesh = None if track is None else self.analyser.mesh_at(image, track.smoothed_points())
            if mesh is None:
                rest.append(detection)
                continue
            face = self.analyser.face_of_mesh(
                image, mesh, detection.bbox, detection.score, self.settings, self.reads_68
            )
            probed.append(face)
        self.schedule.stats.faces_probed_by_mesh += len(probed)
        return rest, probed

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
        self.stats.frames += 1
        if not self.reads_faces:
            return NO_FACES
        return self.analyse_faces(BgrImage(frame), index, timestamp, detections, known)

    def analyse_faces(
        self,
        image: FrameImage,
        index: int,
        timestamp: float,
        detections: list[Detection] | None,
        known: Sequence[Face],
    ) -> FrameAnalysis:
        """``analyse`` without counting the frame (``analyse_group`` counts its frames, skipped ones too).
        The whole frame is converted only when a detection is completed, a face recognised or classified."""
        if detections and self.meshes is not None:
            detections, probed = self.probe_meshes(image, index, detections, known)
            known = [*known, *probed]
        meshed = self.meshes_new_faces()
        if detections is not None and not detections:
            faces = self.analyser.taken(known)
        else:
            faces = self.analyser.analyse(
                image.bgr(),
                self.settings,
                embeddings=False,
                mesh=meshed,
                detections=detections,
                known=known,
                landmarks=not meshed,
            )
        if faces:
            self.sources.prefetch()  # a video's source photos, read in the background: their faces now
            self.prepare_soon()
        track_ids: tuple[int | None, ...] = ()
        if self.needs_embeddings and faces:
            rgb: list[Frame] = []  # made on the first recognizer call only: tracked frames need none

            def embed(face: Face) -> Embedding:
                if not rgb:
                    rgb.append(np.ascontiguousarray(image.bgr()[:, :, ::-1]))
                return self.analyser.embedding(image.bgr(), rgb[0], face, self.settings)

            if self.identities is not None:
                resolved = self.identities.resolve(faces, index, timestamp, embed)
                faces = [face for face, _ in resolved]
                track_ids = tuple(identity.id if identity is not None else None for _, identity in resolved)
            else:
                faces = [face.with_embedding(embed(face), self.settings.face_recognizer_model) for face in faces]
        if self.classifies:
            faces = self.analyser.classify(image.bgr(), faces)
        persons: tuple[int, ...] = ()
        if self.people is not None:
            selected, persons = self.select_people(faces)
        else:
            selected = select_faces(faces, self.settings, self.reference, self.scale, self.source_face)
        if self.meshes is not None and selected:
            faces, selected = self.smooth_meshes(image, index, timestamp, faces, selected, track_ids)
        self.stats.faces_selected += len(selected)
        for person in set(persons):
            self.stats.person_frames[person] += 1
        return FrameAnalysis(faces, selected, track_ids, persons)

    def meshes_new_faces(self) -> bool:
        """Whether a newly detected face gets its mesh instead of 68 landmarks: every face is selected
        ("many", nothing classified or recognised from its 5 points) and nothing reads the 68 landmarks, so
        the mesh the smoother reads for each anyway is found at once."""
        return (
            self.meshes is not None
            and not self.reads_68
            and self.settings.face_selector_mode == "many"
            and not self.classifies
            and not self.needs_embeddings
        )

    def prepare_soon(self) -> None:
        """Once, at the first face found: the source person prepared for the processors that prepare one
        (``SourcePreparingProcessor``), on a thread of its own, beside the analysis of the face's group.
        An error is left to the frame workers, whose own ``prepare`` raises it (a photo without a face:
        the analysis raises it first). Not with a face map: each person's source is prepared when swapped."""
        if self.preparing is not None or self.people is not None or self.sources is NO_SOURCE:
            return
        preparers = [processor for processor in self.processors if isinstance(processor, SourcePreparingProcessor)]
        if not preparers:
            return

        def prepare() -> None:
            for processor in preparers:
                try:
                    processor.prepare(self.sources)
                except Exception as error:  # raised again where a frame worker asks for it
                    logger.debug("preparing the source ahead failed: %s", error)

        self.preparing = threading.Thread(target=prepare, name="source-prepare", daemon=True)
        self.preparing.start()

    def select_people(self, faces: Sequence[Face]) -> tuple[list[Face], tuple[int, ...]]:
        """With a face map: the faces of mapped people (each person once: their nearest face), with who each is."""
        assert self.people is not None
        chosen: dict[int, Face] = {}
        for face in faces:
            person = self.people.person_of(face)
            if person is not None and person not in chosen:
                chosen[person] = face
        ordered = sorted(chosen.items(), key=lambda item: float(item[1].bbox[0]))
        return [face for _, face in ordered], tuple(person for person, _ in ordered)

    def smooth_meshes(
        self,
        image: FrameImage,
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
        smoothed = self.meshes.smooth(image, index, timestamp, selected, identities, FrameMeshes(self.analyser, image))
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

    def apply(
        self, frame: Frame, analysis: FrameAnalysis, index: int = 0, timestamp: float = 0.0, keep_alpha: bool = False
    ) -> Frame:
        """Run the processors on the selected faces; safe to call from several threads. After a processor
        that changed the frame's size the faces are scaled for the ones after it. ``keep_alpha``: the output
        keeps an alpha channel (a PNG or WebP image): a processor may return BGRA, whose alpha is kept
        aside for the processors after it and put back on the result (BGRA then)."""
        report = self.report(analysis)
        context = FrameContext(
            index,
            timestamp,
            self.settings,
            analysis.selected,
            self.sources,
            face_sources=self.face_sources(analysis),
            report=report,
            mask_outline=self.mask_outline,
            extras={"target_frame": frame, **({"keep_alpha": True} if keep_alpha else {})},
        )
        alpha: Frame | None = None
        for processor, options in zip(self.processors, self.options, strict=True):
            height, width = frame.shape[:2]
            frame = processor.process_frame(
                frame, dataclasses.replace(context, options=options) if options else context
            )
            frame, alpha = split_alpha(frame, alpha)
            if frame.shape[:2] != (height, width):
                context = scale_context(context, frame.shape[1] / width, frame.shape[0] / height)
        return frame if alpha is None else np.dstack([frame, alpha])

    def frame_region(self, analysis: FrameAnalysis, width: int, height: int) -> Region | None:
        """The rectangle (even sides) of a ``width`` x ``height`` frame that ``apply`` reads and writes with
        ``analysis``: every processor is a ``RegionalProcessor`` and says where for each selected face;
        None: the whole frame (a processor that does not say, or says it may read anywhere)."""
        if not analysis.selected:
            return None
        regions: list[Region] = []
        for processor in self.processors:
            if not isinstance(processor, RegionalProcessor):
                return None
            for face in analysis.selected:
                region = processor.frame_region(face, width, height)
                if region is None:
                    return None
                regions.append(region)
        return even_union(regions, width, height)

    def apply_within(
        self, crop: Frame, analysis: FrameAnalysis, origin: tuple[int, int], index: int, timestamp: float
    ) -> Frame:
        """``apply`` on ``crop``, the ``frame_region`` of a frame whose top left corner is ``origin``: the
        same pixels as that part of the whole frame's result."""
        return self.apply(crop, moved_analysis(analysis, -origin[0], -origin[1]), index, timestamp)

    def face_sources(self, analysis: FrameAnalysis) -> tuple[SourceIdentity, ...]:
        """Each selected face's own source with a face map (empty without one)."""
        if self.people is None:
            return ()
        return tuple(self.people.sources[person] for person in analysis.persons)

    def set_reference_from(self, frame: Frame) -> None:
        """Mode 'reference' with a face of the target: take it from ``frame`` (the reference frame)."""
        if self.settings.face_selector_mode != "reference" or self.settings.reference_face_from != "frame":
            return
        if not self.reads_faces:
            return
        faces = self.analyser.analyse(frame, self.settings, embeddings=True, counted=False)  # counted as it runs
        if filters_in_use(self.settings):
            faces = self.analyser.classify(frame, faces)
        chosen = pick_face(faces, self.settings, self.settings.reference_face_position, self.source_face)
        if chosen is None or chosen.embedding is None:
            filters = filters_in_use(self.settings)
            kept = f" that {', '.join(filters)} keep{'s' if len(filters) == 1 else ''}" if filters and faces else ""
            raise InputError(
                f"no face{kept} in reference frame {self.settings.reference_frame_number}: pick another "
                "--reference-frame-number or use --face-selector-mode many"
            )
        self.reference = chosen.embedding

    def process(self, frame: Frame, index: int = 0, timestamp: float = 0.0, keep_alpha: bool = False) -> Frame:
        return self.apply(frame, self.analyse(frame, index, timestamp), index, timestamp, keep_alpha)

    def settle(self) -> None:
        """Wait until no thread of its own uses the models: the source photos read in the background and
        the source prepared ahead (``prepare_soon``)."""
        self.sources.settle()
        if self.preparing is not None:
            self.preparing.join()

    def release(self) -> None:
        """Free the processors' caches and the models no other running job holds (they reload on next use)."""
        self.settle()
        for processor in self.processors:
            processor.release()
        self.runtime.release_models()

    def models_used(self) -> list[str]:
        settings = self.settings
        names: list[str] = []
        if self.reads_faces:
            names += [settings.face_detector_model, settings.face_landmarker_model]
        if self.reads_faces and self.needs_embeddings:
            names.append(settings.face_recognizer_model)
        if self.reads_faces and filters_in_use(settings):
            names.append(FACE_CLASSIFIER)
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
                done.update(self.by_person(processor.counts()))
            if isinstance(processor, MaskingProcessor):
                done.update(processor.mask_counts())
        done.update({f"{PERSON_COUNT}{person}_frames": count for person, count in self.stats.person_frames.items()})
        return done

    def by_person(self, counts: Mapping[str, int]) -> dict[str, int]:
        """A processor's counts with its counts per source (``faces_swapped@KEY``) named by the mapped person."""
        persons = {source.key: person for person, source in self.people.sources.items()} if self.people else {}
        named: dict[str, int] = {}
        for key, count in counts.items():
            name, at, source_key = key.partition("@")
            if not at:
                named[key] = count
            elif source_key in persons:
                named[f"{PERSON_COUNT}{persons[source_key]}_{name}"] = count
        return named

    def people_summary(self, counts: Mapping[str, int]) -> list[dict[str, Any]] | None:
        """``--json``'s "people": each mapped person's source, faces swapped and frames (None: no map)."""
        if self.people is None:
            return None
        return [
            {
                "id": person,
                "source": self.people.labels[person],
                "faces_swapped": int(counts.get(f"{PERSON_COUNT}{person}_faces_swapped", 0)),
                "frames": int(counts.get(f"{PERSON_COUNT}{person}_frames", 0)),
            }
            for person in sorted(self.people.sources)
        ]

    def summary(self) -> dict[str, Any]:
        done: collections.Counter[str] = collections.Counter()
        for processor in self.processors:
            if isinstance(processor, CountingProcessor):
                done.update(self.by_person(processor.counts()))
        cache = self.identities.cache.stats.to_json() if self.identities is not None else None
        people = self.people_summary(self.counts())
        done = collections.Counter({key: count for key, count in done.items() if not key.startswith(PERSON_COUNT)})
        return {
            **({"people": people} if people is not None else {}),
            "faces_detected": self.analyser.counters.faces_detected,
            "faces_selected": self.stats.faces_selected,
            "faces_swapped": done["faces_swapped"],
            **{key: count for key, count in sorted(done.items()) if key != "faces_swapped"},
            "recognizer_calls": self.analyser.counters.recognizer_calls,
            "identity_cache": cache,
            "face_detection": {"interval": self.settings.face_detector_interval, **self.schedule.stats.to_json()},
            "probes_ahead": self.prefetch_stats.to_json(),
            "models_used": self.models_used(),
            "masks": masks_summary(self.settings, self.processors),
        }


@dataclass(frozen=True)
class FrameMeshes:
    """Where the mesh smoother finds the meshes of one frame's faces (``MeshFinder``)."""

    analyser: FaceAnalyser
    image: FrameImage

    def find(self, face: Face) -> FaceMesh | None:
        return self.analyser.mesh(self.image.bgr(), Detection(face.bbox, face.score, face.kps))

    def follow(self, points: Points) -> FaceMesh | None:
        return self.analyser.mesh_at(self.image, points)


def smooths_meshes(processors: Sequence[Processor]) -> bool:
    """Whether a video's face meshes are smoothed over time: a processor draws with them."""
    return any(
        isinstance(processor, MeshDrawingProcessor) and processor.needs_smoothed_mesh for processor in processors
    )


def meshes_the_source(settings: Settings, processors: Sequence[Processor], photos: int) -> bool:
    """Whether the source photo's face is read with its mesh alone (``load_source``'s ``mesh_only``: no 68
    landmarks, no embedding, which nothing reads; dlib's 68-point and recognizer models stay unloaded,
    half a second of CPU at a job's start): one photo (with several, the most frontal is chosen by the
    poses the 68 landmarks give), put in by a processor that draws with meshes (the embedded swapper
    reads the photo's mesh anyway) and reads no 68 landmarks, no filter classifying it and no reference
    taken from it."""
    reference = settings.face_selector_mode == "reference" and settings.reference_face_from == "source"
    return (
        photos == 1
        and smooths_meshes(processors)
        and not reads_68_landmarks(processors)
        and not classifies_source(settings)
        and not reference
    )


def reads_68_landmarks(processors: Sequence[Processor]) -> bool:
    """Whether a processor may read the faces' 68 landmarks (one that does not say may)."""
    return any(
        not isinstance(processor, LandmarkReadingProcessor) or processor.needs_68_landmarks for processor in processors
    )


def first_mask_outline(processors: Sequence[Processor]) -> Callable[[Face], list[Points]] | None:
    """The ``mask_outline`` of the first processor that has one (None: no processor says)."""
    outlining = [processor for processor in processors if isinstance(processor, OutliningProcessor)]
    return outlining[0].mask_outline if outlining else None


NO_SOURCE = SourceIdentity((), "no source photo")
"""The sources of a job whose processors put no source face in (``source_face_needed``)."""


def source_face_needed(settings: Settings, registry: ProcessorRegistry | None = None) -> bool:
    """Whether a job with ``settings`` needs a source photo: a processor puts its face in (the face
    swapper), or the face selector takes the reference or the filters' class from it."""
    if settings.face_selector_mode == "reference" and settings.reference_face_from == "source":
        return True
    if classifies_source(settings):
        return True
    return (registry or ProcessorRegistry.discover()).reads_source_face(settings.processors)


def reads_faces(processors: Sequence[Processor]) -> bool:
    """Whether a processor reads the frame's faces (one that does not say does)."""
    return any(not isinstance(processor, FaceReadingProcessor) or processor.needs_faces for processor in processors)


def split_alpha(frame: Frame, alpha: Frame | None) -> tuple[Frame, Frame | None]:
    """A processor's result as BGR and the alpha kept so far: a BGRA result's own alpha, else the one
    before (scaled to the frame when a processor changed its size)."""
    if frame.ndim == 3 and frame.shape[2] == 4:
        return np.ascontiguousarray(frame[:, :, :3]), np.ascontiguousarray(frame[:, :, 3])
    if alpha is not None and alpha.shape[:2] != frame.shape[:2]:
        alpha = np.asarray(cv2.resize(alpha, (frame.shape[1], frame.shape[0])), dtype=np.uint8)
    return frame, alpha

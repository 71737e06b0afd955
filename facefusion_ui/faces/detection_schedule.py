"""A video's detection schedule as it runs (its rules: ``schedule.py``): which frames of a group are
skipped, searched only around the faces followed, or detected in full, with what it knows from frame to
frame (the faces of the last frame, the groups' growth, the last faceless frame) and that state saved and
restored as a ``ScheduleState``. The frames it does not skip are analysed by the pipeline (``FaceSearch``)."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from facefusion_ui.faces.analyser import PROPOSER, FaceAnalyser, SearchView, without_overlaps
from facefusion_ui.faces.change_gate import FacelessFrame, changed_beside, thumbnail
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.frame_analysis import NO_FACES, FrameAnalysis
from facefusion_ui.faces.mediapipe_import import import_mediapipe
from facefusion_ui.faces.probe_prefetch import ProbePrefetch
from facefusion_ui.faces.schedule import (
    FULL_PROBE_EVERY,
    STRETCH_GROWTH,
    GroupPlan,
    ScheduleState,
    ScheduleStats,
    group_size_at,
    plan_group,
    roi_box,
)
from facefusion_ui.frames import FrameImage
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Points

if TYPE_CHECKING:
    from facefusion_ui.faces.runtime import ModelRuntime

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NothingSeen:
    """No frame analysed yet (a video's start, or a run resumed from a state saved before its first
    frame): the next frame alone tells what is in view, with a full-frame detection."""


@dataclass(frozen=True)
class FacesSeen:
    """The face boxes of the last frame analysed. None at all: no face was in view, so the next group may
    be skipped, and its probe searches only what changed since the last faceless frame."""

    boxes: tuple[Points, ...] = ()


LastSeen = NothingSeen | FacesSeen
"""What the schedule knows of the frame before the next group."""


def seen_from_saved(followed: Sequence[Sequence[float]] | None) -> LastSeen:
    """``ScheduleState.followed`` as the schedule keeps it (saved as None: nothing seen)."""
    if followed is None:
        return NothingSeen()
    return FacesSeen(tuple(np.array(box, dtype=np.float32) for box in followed))


def seen_to_saved(seen: LastSeen) -> tuple[tuple[float, float, float, float], ...] | None:
    """The inverse of ``seen_from_saved``: the boxes as plain floats, None when nothing was seen."""
    if isinstance(seen, NothingSeen):
        return None
    return tuple((float(box[0]), float(box[1]), float(box[2]), float(box[3])) for box in seen.boxes)


def proposes(settings: Settings) -> bool:
    """Whether a video's probes in a stretch without faces search BlazeFace's candidates (``probe_cheaply``):
    with HOG upsampled (the default detector) and an interval above 1."""
    hog_upsampled = settings.face_detector_model == "dlib_hog" and settings.face_detector_upsample > 0
    return hog_upsampled and settings.face_detector_interval > 1


def warm_proposer(settings: Settings, runtime: ModelRuntime | None = None) -> threading.Thread | None:
    """Import mediapipe's face detection, the proposer's, and with ``runtime`` build its graph, on a
    thread of its own now (None when ``settings`` never use it): a video's probes would otherwise wait for
    them (0.1 s of CPU for the import, 20-30 ms for the graph), while the job's planning leaves a core idle
    waiting for ffmpeg. The graph's build captures the process's stderr; what the planning says meanwhile
    is written out after it (``runtime._load_quietly``). A failure is left to the probe, which raises it."""
    if not proposes(settings):
        return None

    def load() -> None:
        try:
            import_mediapipe()
            importlib.import_module("mediapipe.python.solutions.face_detection")
            if runtime is not None:
                runtime.embedded_model(PROPOSER)
        except Exception as error:  # the probe loads it again and raises
            logger.debug("loading the proposer beforehand failed: %s", error)

    thread = threading.Thread(target=load, name="warm-proposer", daemon=True)
    thread.start()
    return thread


class FaceSearch(Protocol):
    """What the schedule asks of the pipeline for the frames it does not skip. Called in frame order."""

    def analyse_faces(
        self, image: FrameImage, index: int, timestamp: float, detections: list[Detection], known: Sequence[Face]
    ) -> FrameAnalysis:
        """The frame's faces from ``detections`` and ``known`` (faces read from their meshes alone)."""
        ...

    def follow_meshes(self, image: FrameImage, index: int, boxes: list[Points]) -> tuple[list[Face], list[Points]]:
        """The faces of ``boxes`` read from their meshes alone, and the boxes left to search round."""
        ...


class DetectionSchedule:
    """One video's schedule, carried from chunk to chunk (``state``/``restore`` between runs)."""

    def __init__(self, analyser: FaceAnalyser, settings: Settings) -> None:
        self.analyser = analyser
        self.settings = settings
        self.stats = ScheduleStats()
        self.seen: LastSeen = NothingSeen()
        self.stretch = 1
        """Groups span this many intervals: doubled by each group skipped or tracked, back to 1 at a new face."""
        self.faceless = FacelessFrame()
        """The last frame a full-frame detection found no face in: probes search only what changed since."""
        self.first_frame = 0
        """The job's first frame: the detection groups' grid counts from it."""
        self.proposed = 0
        """Whole-frame probes in a row that were not full searches (``probe_whole``)."""
        self.searched: np.ndarray | None = None
        """The cells of the last frame a full-frame detection searched: with faces in view, probes search
        only what changed since (``probe_cheaply``)."""
        self.prefetch: ProbePrefetch | None = None
        """Probes' full searches computed ahead (``search_next_probe``), while a video pipeline provides them."""
        self.cheap_in_view = True
        """Whether probes with faces in view may be other than full searches (``probe_cheaply``); the people
        pass (``people_job.py``) keeps every such probe full: it reads who is in a video once."""
        self.probed_ahead: tuple[int, list[Detection]] | None = None
        """A probe made by ``probe_ahead`` (its frame and what it found), used by the group it ends."""

    def group_size_from(self, index: int) -> int:
        """How many consecutive video frames from frame ``index`` ``analyse_group`` wants next (groups never
        cross the grid counted from the job's first frame)."""
        return group_size_at(index - self.first_frame, self.settings.face_detector_interval, self.stretch)

    def search_next_probe(self, start: int, probe: list[Detection], span: int) -> None:
        """With faces in the probe just made (of the frame before ``start``, ending a span of ``span``
        frames still to analyse), start the full search of the next group's probe frame ahead
        (``prefetch``): the last frame of the group from ``start``, as long as ``plan_group`` says it will
        be; with faces in view that probe searches the whole frame. A guess: the search is used only if
        the schedule then asks for exactly it. A span ``analyse_span`` will split (a face that crossed more
        than its width) is guessed followed in both halves, as a walking face is: the groups grow on."""
        if self.prefetch is None or not probe:
            return
        if not self.next_probe_full(faces_in_view=True):
            return  # a cheap probe (``probe_cheaply``) reads the faces followed then: made when it is asked
        plan = plan_group(self.seen_boxes(), [detection.bbox for detection in probe])
        splits = plan == "full" and span > self.settings.face_detector_interval and bool(self.seen_boxes())
        stretch = 1 if plan == "full" and not splits else min(self.stretch * 2, STRETCH_GROWTH)
        size = group_size_at(start - self.first_frame, self.settings.face_detector_interval, stretch)
        self.prefetch.start(start + size - 1, self.full_search)

    def next_probe_full(self, faces_in_view: bool) -> bool:
        """Whether the next probe of the whole frame searches it in full (``probe_whole``)."""
        if faces_in_view and not self.cheap_in_view:
            return True
        return not proposes(self.settings) or self.proposed >= FULL_PROBE_EVERY - 1

    def faces_in_view(self) -> bool:
        """Whether the next group will be analysed whatever its probe finds: faces were in view in the last
        frame, or nothing is known yet (its first frame is then searched in full)."""
        return isinstance(self.seen, NothingSeen) or bool(self.seen.boxes)

    def full_search(self, image: FrameImage) -> list[Detection]:
        """The full-frame search a probe of ``image`` makes when it searches the whole frame (``detect_whole``
        without the state it keeps): a pure function of the frame and the settings, safe on any thread."""
        return self.analyser.detect_view(self.analyser.search_view(image, self.settings), self.settings)

    def state(self) -> ScheduleState:
        return ScheduleState(seen_to_saved(self.seen), self.stretch, self.faceless.cells, self.proposed, self.searched)

    def restore(self, state: ScheduleState) -> None:
        """Back to ``state`` (a resumed run; a chunk tried again after running out of memory)."""
        self.seen = seen_from_saved(state.followed)
        self.stretch = state.stretch
        self.proposed = state.proposed
        self.searched = state.searched
        self.probed_ahead = None
        if state.faceless is None:
            self.faceless.forget()
        else:
            self.faceless.keep(state.faceless)

    def analyse_group(
        self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float], search: FaceSearch
    ) -> list[FrameAnalysis]:
        """Consecutive video frames (as many as ``group_size_from`` their first), in order: the group's last
        frame is probed, then the group skipped, tracked or detected in full as ``plan_group`` says."""
        if self.prefetch is not None:
            self.prefetch.discard_through(indices[0] - 1)  # a search ahead for a frame gone by: not needed
        results: list[FrameAnalysis] = []
        first = 0
        if isinstance(self.seen, NothingSeen):
            results.append(self.analyse_whole(images[0], indices[0], timestamps[0], search))
            self.stats.frames_full += 1
            first = 1
            if len(images) == 1:
                return results
        probe = self._probe_of(images[-1], indices[-1])
        if self.prefetch is not None:
            self.prefetch.discard_through(indices[-1])  # the probe did not want it (not a full search)
            self.search_next_probe(indices[-1] + 1, probe, len(images) - first)  # searched while they are followed
        plans: list[GroupPlan] = []
        results += self.analyse_span(images[first:], indices[first:], timestamps[first:], search, probe, plans)
        # the same faces went on, or none: the next group may be longer; a face that appeared: back to the interval
        self.stretch = 1 if "full" in plans else min(self.stretch * 2, STRETCH_GROWTH)
        return results

    def skips_unseen(self) -> bool:
        """Whether the next group, if its probe finds no face, is skipped with no other frame of it looked
        at: no face in view, and groups at their longest (they end on the grid, ``schedule.largest_group``)."""
        return isinstance(self.seen, FacesSeen) and not self.seen.boxes and self.stretch == STRETCH_GROWTH

    def probe_ahead(self, image: FrameImage, index: int) -> bool:
        """Probe the next group's last frame (``index``) before its other frames are at hand (sparse
        decoding, ``video/sparse.py``; only when ``skips_unseen``): whether the group is skipped. The probe
        is the one ``analyse_group`` makes for that group (same state changes, made once): it is kept for it."""
        found = self.probe(image, index)
        self.probed_ahead = (index, found)
        return not found

    def _probe_of(self, image: FrameImage, index: int) -> list[Detection]:
        """The probe of the group ending at frame ``index``: made ahead (``probe_ahead``) or now."""
        ahead, self.probed_ahead = self.probed_ahead, None
        if ahead is not None and ahead[0] == index:
            return ahead[1]
        return self.probe(image, index)

    def analyse_span(
        self,
        images: Sequence[FrameImage],
        indices: Sequence[int],
        timestamps: Sequence[float],
        search: FaceSearch,
        probe: list[Detection],
        plans: list[GroupPlan],
    ) -> list[FrameAnalysis]:
        """Consecutive frames after the last one analysed, the last of them probed (``probe``): skipped,
        tracked or detected in full as ``plan_group`` says (each plan noted in ``plans``). A span longer
        than the interval with faces at both ends that ``plan_group`` cannot tie together (a face that
        crossed more than its width: a walk over a long group) is split at its middle frame, detected in
        full, and each half planned on its own: a face that moved is followed in both halves, a face that
        joined others is still detected in full from its first frame, in the half it came in."""
        plan = plan_group(self.seen_boxes(), [detection.bbox for detection in probe])
        if plan == "full" and len(images) > self.settings.face_detector_interval and self.seen_boxes() and probe:
            middle = len(images) // 2
            found = self.detect_whole(self.analyser.search_view(images[middle - 1], self.settings))
            self.stats.frames_full += 1
            head = self.analyse_span(images[:middle], indices[:middle], timestamps[:middle], search, found, plans)
            rest = slice(middle, None)
            return head + self.analyse_span(images[rest], indices[rest], timestamps[rest], search, probe, plans)
        if plan == "full" and not self.seen_boxes():
            return self.follow_back(images, indices, timestamps, search, probe, plans)
        plans.append(plan)
        if plan == "skip":
            self.stats.frames_skipped += len(images) - 1
            self.seen = FacesSeen()
            return [NO_FACES] * len(images)
        results: list[FrameAnalysis] = []
        for position in range(len(images) - 1):
            image, index, timestamp = images[position], indices[position], timestamps[position]
            if plan == "track":
                results.append(self.analyse_around(image, index, timestamp, self.seen_boxes(), search))
                self.stats.frames_tracked += 1
            else:
                results.append(self.analyse_whole(image, index, timestamp, search))
                self.stats.frames_full += 1
        results.append(self.found(search.analyse_faces(images[-1], indices[-1], timestamps[-1], probe, ())))
        return results

    def follow_back(
        self,
        images: Sequence[FrameImage],
        indices: Sequence[int],
        timestamps: Sequence[float],
        search: FaceSearch,
        probe: list[Detection],
        plans: list[GroupPlan],
    ) -> list[FrameAnalysis]:
        """A span with no face before it and faces in its probe: they came in during the span. Each is
        followed back from the probe, frame by frame, in a crop around where it was found in the frame
        after (``detect_near``), so it is found from its first frame, as full-frame detections of every
        frame would find it, for the cost of a few crops. A face missed in a frame (blur, a hand) is
        still searched for in the frames before, around where it was last found."""
        plans.append("full")
        found: list[list[Detection]] = [[] for _ in images]
        found[-1] = probe
        boxes = [detection.bbox for detection in probe]
        for position in range(len(images) - 2, -1, -1):
            found[position] = self.detect_near(images[position], boxes)
            kept = [box for box in boxes if not any(_overlaps(box, other.bbox) for other in found[position])]
            boxes = [*(detection.bbox for detection in found[position]), *kept]
            self.stats.frames_tracked += 1
        results = [
            search.analyse_faces(image, index, timestamp, detections, ())
            for image, index, timestamp, detections in zip(images, indices, timestamps, found, strict=True)
        ]
        self.found(results[-1])
        return results

    def detect_near(self, image: FrameImage, boxes: list[Points]) -> list[Detection]:
        """Faces searched only in a crop around each of ``boxes`` (HOG: in the Y plane as decoded)."""
        if self.settings.face_detector_model == "dlib_hog":
            grey, _ = image.luma(max(image.width, image.height))
            return self.analyser.hog_around(grey, boxes, self.settings)
        return self.analyser.detect_around(image.bgr(), boxes, self.settings)

    def seen_boxes(self) -> tuple[Points, ...]:
        """The faces of the last frame, once a frame was analysed (``analyse_group`` sees to it)."""
        assert isinstance(self.seen, FacesSeen), "no frame analysed yet"
        return self.seen.boxes

    def found(self, result: FrameAnalysis) -> FrameAnalysis:
        """Note the faces of a frame just analysed: the next frames follow them."""
        self.seen = FacesSeen(tuple(face.bbox for face in result.faces))
        return result

    def probe(self, image: FrameImage, index: int | None = None) -> list[Detection]:
        """A detection on the frame's search view, in frame coordinates: full-frame, or when no face was
        in view before, only in the areas that changed since the last faceless frame (``change_gate.py``).
        ``index``: the frame's number, whose full search may have been computed ahead (``prefetch``)."""
        view = self.analyser.search_view(image, self.settings)
        cells = thumbnail(view.image)
        height, width = view.image.shape[:2]
        no_face_before = not self.seen_boxes()
        gated = no_face_before and self.settings.face_detector_interval > 1  # interval 1: every frame in full
        areas = self.faceless.areas_to_search(cells, width, height) if gated else None
        if areas and not self.analyser.area_search_pays(self.settings):
            areas = None
        if areas is None:
            found = self.probe_whole(image, view, cells, index)
        elif areas:
            found = self.analyser.detect_in_areas(view, areas, self.settings)
            self.stats.probes_of_areas += 1
        else:
            found = []
            self.stats.probes_unchanged += 1
        return found

    def probe_whole(
        self, image: FrameImage, view: SearchView, cells: np.ndarray, index: int | None = None
    ) -> list[Detection]:
        """A probe of the whole frame. With HOG, only every ``FULL_PROBE_EVERY``-th is the full search
        (HOG upsampled: its smallest faces); the others, under half the cost (a moving camera that the
        change gate cannot skip, or faces in view), are ``probe_cheaply``: a face only the full search
        finds (under twice HOG's smallest, and missed by BlazeFace) waits for the next full probe, at most
        ``FULL_PROBE_EVERY`` probes later; a larger one is found by the next probe, as by a full one."""
        if self.next_probe_full(faces_in_view=bool(self.seen_boxes())):
            self.proposed = 0
            self.stats.frames_full += 1
            ahead = self.prefetch.take(index) if self.prefetch is not None and index is not None else None
            return self.detect_whole(view, cells, ahead)
        self.proposed += 1
        return self.probe_cheaply(image, view, cells)

    def probe_cheaply(self, image: FrameImage, view: SearchView, cells: np.ndarray) -> list[Detection]:
        """A probe of the whole frame that is not the full search. With faces in view and HOG: the areas
        that changed since the last full search (``changed_beside``), leaving out the crops around the
        faces followed, where HOG searches them again (``found_around``, at any size, as between probes);
        when too much changed (a moving camera), or with no face in view: HOG on the search view without
        upsampling (a quarter of the pixels: faces from twice the smallest size), around the faces
        followed, then around each of BlazeFace's candidates that neither found (``FaceAnalyser.propose``).
        Every face reported is one HOG found."""
        followed = self.seen_boxes()
        height, width = view.image.shape[:2]
        areas = None
        if followed and self.searched is not None and self.analyser.area_search_pays(self.settings):
            beside = [roi_box(box * view.scale, width, height) for box in followed]
            areas = changed_beside(self.searched, cells, width, height, beside)
        if areas is not None:
            self.stats.probes_of_areas += 1
            found = self.analyser.detect_in_areas(view, areas, self.settings) if areas else []
            return self.found_around(image, followed, found)
        self.stats.probes_proposed += 1
        found = self.analyser.detect_view(SearchView(view.image, view.scale, 0), self.settings)
        found = self.found_around(image, followed, found)
        return self.found_around(image, self.analyser.propose(image, self.settings), found)

    def found_around(self, image: FrameImage, boxes: Sequence[Points], found: list[Detection]) -> list[Detection]:
        """``found`` with what HOG finds in a crop around each of ``boxes`` that none of them overlaps
        (``FaceAnalyser.hog_around``, in the Y plane as decoded)."""
        rest = [box for box in boxes if not any(_overlaps(box, other.bbox) for other in found)]
        if not rest:
            return found
        grey, _ = image.luma(max(image.width, image.height))
        return without_overlaps([*found, *self.analyser.hog_around(grey, rest, self.settings)])

    def detect_whole(
        self, view: SearchView, cells: np.ndarray | None = None, ahead: list[Detection] | None = None
    ) -> list[Detection]:
        """A full-frame detection of a video frame (``ahead``: its result, computed ahead by ``full_search``);
        an empty frame becomes the one probes compare with."""
        found = self.analyser.detect_view(view, self.settings) if ahead is None else ahead
        searched = thumbnail(view.image) if cells is None else cells
        self.searched = searched
        if found:
            self.faceless.forget()
        else:
            self.faceless.keep(searched)
        return found

    def analyse_whole(self, image: FrameImage, index: int, timestamp: float, search: FaceSearch) -> FrameAnalysis:
        """A frame searched in full."""
        detections = self.detect_whole(self.analyser.search_view(image, self.settings))
        return self.found(search.analyse_faces(image, index, timestamp, detections, ()))

    def analyse_around(
        self, image: FrameImage, index: int, timestamp: float, around: tuple[Points, ...], search: FaceSearch
    ) -> FrameAnalysis:
        """A frame searched only around the ``around`` boxes (the faces followed); none: no face, unsearched."""
        if not around:
            self.seen = FacesSeen()
            return NO_FACES
        known, rest = search.follow_meshes(image, index, list(around))
        self.stats.faces_followed_by_mesh += len(known)
        detections = self.analyser.detect_around(image.bgr(), rest, self.settings) if rest else []
        result = search.analyse_faces(image, index, timestamp, detections, known)
        # a followed face missed in this frame (blur, a hand) is still searched for in the next ones
        found = [face.bbox for face in result.faces]
        missed = [box for box in around if not any(_overlaps(box, other) for other in found)]
        self.seen = FacesSeen((*found, *missed))
        return result


def _overlaps(a: Points, b: Points) -> bool:
    return bool(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])

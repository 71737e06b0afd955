"""The live engine: one frame in, its swapped frame out, on the job's own ``FramePipeline`` (the same
processors, masks, options, sources and face map as a job).

A frame is analysed around the faces of the frame before (``DetectionSchedule.analyse_around``: a face
whose smoothed mesh goes on is read from its mesh alone, the embedded swapper's way of following it), and
full-frame detections run beside it (``live/detector.py``) to find new or lost faces; their boxes join
the faces searched for in the next frame. The pipeline counts the frames it is given as consecutive (its
mesh tracks go on from one processed frame to the next, whatever frames the input dropped between); the
time of arrival is each frame's timestamp, so the mesh smoothing follows real time."""

from __future__ import annotations

import collections
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.faces.face_map import PeopleSwap
from facefusion_ui.faces.frame_analysis import NO_FACES, FrameAnalysis
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.frames import BgrImage
from facefusion_ui.live.detector import REDETECT_SECONDS, BackgroundDetector
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points


@dataclass(frozen=True)
class Analysed:
    """A frame between the engine's two stages."""

    frame: Frame
    analysis: FrameAnalysis
    index: int
    timestamp: float


def overlaps(a: Points, b: Points) -> bool:
    return bool(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


class LiveEngine:
    """Swaps frames one at a time, in the order they are shown. Call ``process`` from one thread."""

    def __init__(self, pipeline: FramePipeline, redetect_seconds: float = REDETECT_SECONDS) -> None:
        self.pipeline = pipeline
        pipeline.start_video(0)
        self.detector = BackgroundDetector(pipeline.analyser, pipeline.settings, redetect_seconds)
        self.started = time.perf_counter()
        self.frames = 0
        self.frames_with_faces = 0
        self.found: list[Points] = []
        """The faces found in the last frame processed."""
        self.searched: list[Points] = []
        """The boxes searched in the next frame: the faces found, and those missed since the last detection."""
        self.warm_counts: collections.Counter[str] = collections.Counter()

    @classmethod
    def build(
        cls,
        settings: Settings,
        runtime: ModelRuntime,
        source_paths: Sequence[Path],
        people: PeopleSwap | None = None,
    ) -> LiveEngine:
        """An engine on a new pipeline (processors created, models checked, sources read: fails fast)."""
        return cls(FramePipeline.build(settings, runtime, source_paths, people=people))

    def process(self, frame: Frame, arrived: float | None = None) -> Frame:
        """``frame`` (BGR) swapped; ``arrived``: its ``perf_counter`` time of arrival (default: now)."""
        return self.apply(self.analysed(frame, arrived))

    def analysed(self, frame: Frame, arrived: float | None = None) -> Analysed:
        """The first stage: ``frame``'s faces. Call in the order the frames are shown, from one thread."""
        timestamp = (arrived if arrived is not None else time.perf_counter()) - self.started
        index = self.frames
        self.frames += 1
        return Analysed(frame, self.analyse(frame, index, timestamp), index, timestamp)

    def apply(self, analysed: Analysed) -> Frame:
        """The second stage: the processors on an analysed frame (stateless per frame, as in a job)."""
        analysis = analysed.analysis
        if not analysis.selected or not self.pipeline.changes(analysis):
            return analysed.frame
        self.frames_with_faces += 1
        return self.pipeline.apply(analysed.frame, analysis, analysed.index, analysed.timestamp)

    def analyse(self, frame: Frame, index: int, timestamp: float) -> FrameAnalysis:
        hints = self.detector.take_found()
        if hints is None:
            around = list(self.searched)
        else:  # a detection finished: faces missed since are dropped, new faces join
            around = list(self.found) + [box for box in hints if not any(overlaps(box, f) for f in self.found)]
        self.detector.offer(frame, following=bool(self.found))
        self.pipeline.stats.frames += 1
        if not around:
            self.found, self.searched = [], []
            return NO_FACES
        schedule = self.pipeline.schedule
        result = schedule.analyse_around(BgrImage(frame), index, timestamp, tuple(around), self.pipeline)
        self.found = [face.bbox for face in result.faces]
        self.searched = list(schedule.seen_boxes())
        return result

    def warm_up(self, frame: Frame) -> None:
        """Load every model on ``frame`` before the first real frame (the first call loads them: seconds)."""
        view = self.pipeline.analyser.search_view(BgrImage(frame), self.pipeline.settings)
        boxes = [detection.bbox for detection in self.pipeline.analyser.detect_view(view, self.pipeline.settings)]
        if boxes:
            analysis = self.pipeline.analyse(frame.copy(), 0, 0.0)
            if analysis.selected:
                self.pipeline.apply(frame.copy(), analysis, 0, 0.0)
        self.pipeline.start_video(0)  # what the warm-up saw is forgotten, and not counted
        self.warm_counts = self.pipeline.counts()

    def summary(self) -> dict[str, Any]:
        counts = self.pipeline.counts() - self.warm_counts
        people = self.pipeline.people_summary(counts)
        return {
            **({"people": people} if people is not None else {}),
            "frames_with_faces": self.frames_with_faces,
            "faces_swapped": int(counts.get("faces_swapped", 0)),
            "detections": self.detector.detections,
            "faces_followed_by_mesh": self.pipeline.schedule.stats.faces_followed_by_mesh,
        }

    def close(self) -> None:
        self.detector.close()

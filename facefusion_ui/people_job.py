"""The people pass: the distinct people of an image or a video (``run.py people``, a face map's numbers).

A video is read once, in order, through the same ``FramePipeline`` analysis as a job (the detection
schedule, its change gate, tracks and the identity cache, so the recognizer runs on few faces) with no
processor; ``faces/people.py`` merges the identities that are one person and numbers them. The result is
kept in the work folder (``FACEFUSION_UI_HOME/work/people-KEY``, beside the chunk manifests), keyed on
the target's file and the settings that decide what the analysis finds, so a ``process`` right after does
not analyse the people again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import CancelledError, FfmpegError, InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.detection_schedule import FacesSeen, NothingSeen
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.face_map import FaceMapEntry, PeopleSwap, resolve_face_map
from facefusion_ui.faces.people import PeopleCollector, Person, people_of_image
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.schedule import STRETCH_GROWTH, continues, plan_group
from facefusion_ui.faces.selector import reference_threshold
from facefusion_ui.faces.source import SourceIdentity, read_image
from facefusion_ui.faces.tracker import IdentityTracker, Track
from facefusion_ui.frames import FrameImage
from facefusion_ui.job import SwapJob
from facefusion_ui.media_files import media_kind, write_image
from facefusion_ui.paths import home_dir
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Points
from facefusion_ui.version import __version__
from facefusion_ui.video.chunks import frame_range
from facefusion_ui.video.commands import decode_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.reader import StderrTail, read_exactly, start_process, stop_process
from facefusion_ui.video.stream import FrameFormat

PeopleProgress = Callable[[int, int], None]
"""Called with (frames done, frames in all) as a video's pass goes."""
CACHE_VERSION = 1
ANALYSIS_KEYS = (
    "face_detector_model",
    "face_detector_size",
    "face_detector_score",
    "face_detector_upsample",
    "face_detector_interval",
    "face_landmarker_model",
    "face_recognizer_model",
    "face_recognition_score",
    "reference_face_distance",
    "face_cache_limit",
    "face_cache_lifetime",
    "trim_frame_start",
    "trim_frame_end",
)
"""The settings that decide whom the pass finds (its cache key)."""


@dataclass(frozen=True)
class PeopleResult:
    kind: str
    """"image" or "video"."""
    people: list[Person]
    frames: int
    seconds: float = 0.0
    reused: bool = False
    """The pass was read from the cache of an earlier one."""
    recognizer_calls: int = 0

    def to_json(self, thumbnails: dict[int, str] | None = None) -> dict[str, Any]:
        listed = []
        for person in self.people:
            entry: dict[str, Any] = {
                "id": person.id,
                "first_frame": person.first_frame,
                "last_frame": person.last_frame,
                "frames": person.frames,
                "box": list(person.box),
            }
            if thumbnails is not None and person.id in thumbnails:
                entry["thumbnail"] = thumbnails[person.id]
            listed.append(entry)
        return {"people": listed}


def pass_settings(settings: Settings) -> Settings:
    """The job's settings for the pass (run with no processor): identities on (the whole video), embeddings made."""
    return settings.with_items(
        face_selector_mode="reference",
        reference_face_from="frame",
        face_identity_cache=True,
        face_cache_scope="job",
    )


def people_key(target: Path, settings: Settings) -> str:
    stat = target.stat()
    values = settings.to_dict()
    payload = {
        "version": __version__,
        "cache": CACHE_VERSION,
        "target": {"path": str(target.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
        "settings": {key: values[key] for key in ANALYSIS_KEYS},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir(target: Path, settings: Settings) -> Path:
    return home_dir() / "work" / f"people-{people_key(target, settings)}"


def save_cached(folder: Path, result: PeopleResult) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for person in result.people:
        if person.thumbnail is not None:
            write_image(folder / f"person_{person.id}.png", person.thumbnail, 100)
    data = {
        "version": CACHE_VERSION,
        "kind": result.kind,
        "frames": result.frames,
        "people": [person.to_json() for person in result.people],
    }
    temporary = folder / "people.json.tmp"
    temporary.write_text(json.dumps(data), encoding="utf-8")
    os.replace(temporary, folder / "people.json")


def load_cached(folder: Path) -> PeopleResult | None:
    try:
        data = json.loads((folder / "people.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("version") != CACHE_VERSION:
        return None
    people = []
    for entry in data["people"]:
        path = folder / f"person_{entry['id']}.png"
        read = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() else None
        people.append(Person.from_json(entry, None if read is None else np.asarray(read, dtype=np.uint8)))
    return PeopleResult(str(data["kind"]), people, int(data["frames"]), reused=True)


def find_people(
    target: Path,
    settings: Settings,
    runtime: ModelRuntime,
    progress: PeopleProgress | None = None,
    cancel: threading.Event | None = None,
) -> PeopleResult:
    """The people of ``target`` (an image, or a video read once; a video's pass is cached)."""
    if not target.is_file():
        raise InputError(f"target {target} does not exist: check the path")
    if media_kind(target) == "image":
        return image_people(target, settings, runtime)
    folder = cache_dir(target, settings)
    cached = load_cached(folder)
    if cached is not None:
        if progress is not None:
            progress(cached.frames, cached.frames)
        return cached
    result = video_people(target, settings, runtime, progress, cancel)
    save_cached(folder, result)
    return result


def image_people(target: Path, settings: Settings, runtime: ModelRuntime) -> PeopleResult:
    frame = read_image(target, "target")
    analyser = FaceAnalyser(runtime)
    faces = analyser.analyse(frame, settings, embeddings=True)
    return PeopleResult("image", people_of_image(frame, faces), 1, 0.0, False, analyser.counters.recognizer_calls)


class FollowingTracker(IdentityTracker):
    """The tracker of the people pass, whose analysed frames may lie a group (up to ``largest_group``
    frames) apart: a face keeps the identity of the one face of the last analysed frame it can continue
    (``schedule.continues``: near, about the same size), as the detection schedule follows faces; where
    it could continue several (two people crossing) or none, the recognizer decides."""

    def match_track(self, face: Face, frame_index: int, taken: set[int]) -> Track | None:
        candidates = [
            position
            for position, track in enumerate(self.tracks)
            if position not in taken and frame_index - track.frame_index <= 1 and continues(face.bbox, track.face.bbox)
        ]
        if len(candidates) != 1:
            return None
        taken.add(candidates[0])
        return self.tracks[candidates[0]]


@dataclass(frozen=True)
class Seen:
    """What an analysed frame showed: its identities and face boxes."""

    identities: frozenset[int]
    boxes: tuple[Points, ...]


class PeopleScan:
    """A video's frames, group by group, as the detection schedule plans them (``faces/schedule.py``), read
    for who is in view rather than for every face of every frame: a group without faces is skipped (the
    change gate); a group whose last frame shows the same people where the frame before it showed them is
    not searched in between (they count as seen there); any other group (someone came, left, or a cut) is
    split in halves, each searched at its middle frame until both ends of every part agree, so first and
    last frames are exact at the cost of a few frames per change. The tracker sees the analysed frames as
    consecutive, so a face followed from one analysed frame to the next needs no recognizer run."""

    def __init__(self, pipeline: FramePipeline, collector: PeopleCollector, size: tuple[int, int]) -> None:
        self.pipeline = pipeline
        self.schedule = pipeline.schedule
        self.schedule.cheap_in_view = False  # who is in the video, read once: every probe with people in full
        self.collector = collector
        self.width, self.height = size
        self.analysed = 0
        """Frames analysed so far: the tracker's frame numbers."""
        self.last = Seen(frozenset(), ())
        """What the last frame before the next group showed."""

    def group(self, images: Sequence[FrameImage], indices: Sequence[int], timestamps: Sequence[float]) -> None:
        schedule = self.schedule
        first = 0
        if isinstance(schedule.seen, NothingSeen):
            self.last = self.analyse(images[0], indices[0], timestamps[0])
            schedule.seen = FacesSeen(self.last.boxes)
            first = 1
            if len(images) == 1:
                return
        probe = schedule.probe(images[-1])
        if not self.last.boxes and not probe:  # no face at either end: the group is skipped
            schedule.seen, self.last = FacesSeen(), Seen(frozenset(), ())
            schedule.stretch = min(schedule.stretch * 2, STRETCH_GROWTH)
            return
        end = self.analyse(images[-1], indices[-1], timestamps[-1], probe)
        seen = {first - 1: self.last, len(images) - 1: end}
        steady = self.split(images, indices, timestamps, seen, first - 1, len(images) - 1)
        schedule.stretch = min(schedule.stretch * 2, STRETCH_GROWTH) if steady else 1
        schedule.seen, self.last = FacesSeen(end.boxes), end

    def split(
        self,
        images: Sequence[FrameImage],
        indices: Sequence[int],
        timestamps: Sequence[float],
        seen: dict[int, Seen],
        low: int,
        high: int,
    ) -> bool:
        """Frames ``low`` < i < ``high`` of the group, known at both ends: the people of both count as seen
        in between when the ends agree, else the middle frame is analysed and each half split in turn.
        Whether the ends agreed at once."""
        if high - low <= 1:
            return True
        a, b = seen[low], seen[high]
        if a.identities == b.identities and plan_group(a.boxes, b.boxes) == "track" and len(a.boxes) == len(b.boxes):
            self.collector.add_between(set(a.identities), high - low - 1)
            return True
        middle = (low + high) // 2
        seen[middle] = self.analyse(images[middle], indices[middle], timestamps[middle])
        self.split(images, indices, timestamps, seen, low, middle)
        self.split(images, indices, timestamps, seen, middle, high)
        return False

    def analyse(
        self, image: FrameImage, index: int, timestamp: float, detections: list[Detection] | None = None
    ) -> Seen:
        """One frame's faces and identities (``detections``: found already, else a full-frame detection)."""
        schedule, pipeline = self.schedule, self.pipeline
        if detections is None:
            detections = schedule.detect_whole(pipeline.analyser.search_view(image, pipeline.settings))
            schedule.stats.frames_full += 1
        result = pipeline.analyse_faces(image, self.analysed, timestamp, detections, ())
        self.analysed += 1
        pipeline.stats.frames += 1
        if result.faces:
            self.collector.add(index, image.bgr()[: self.height, : self.width], result)
        identities = frozenset(identity for identity in result.track_ids if identity is not None)
        return Seen(identities, tuple(face.bbox for face in result.faces))


def video_people(
    target: Path,
    settings: Settings,
    runtime: ModelRuntime,
    progress: PeopleProgress | None = None,
    cancel: threading.Event | None = None,
) -> PeopleResult:
    """One pass over the video's frames (the trim range), in detection groups as a job analyses them."""
    import time

    from facefusion_ui.video.probe import probe_video

    started = time.perf_counter()
    settings = pass_settings(settings)
    info = probe_video(target)
    first, last = frame_range(info.frame_count, settings.trim_frame_start, settings.trim_frame_end)
    pipeline = FramePipeline(settings, runtime, [], SourceIdentity((), ""), FaceAnalyser(runtime))
    assert pipeline.identities is not None  # pass_settings turns the identity cache on
    pipeline.identities = FollowingTracker(pipeline.identities.cache)
    pipeline.start_video(first)
    threshold = reference_threshold(settings, pipeline.scale)
    collector = PeopleCollector(pipeline.scale.metric, threshold)
    scan = PeopleScan(pipeline, collector, (info.width, info.height))
    frames = FrameFormat.of(info)
    ffmpeg = resolve_ffmpeg().path
    command = decode_args(ffmpeg, target, info.seek_time(first), last - first, frames.decode_filter)
    size = int(np.prod(frames.shape))
    decoder = start_process(command, stdout=True)
    tail = StderrTail(decoder.stderr)
    try:
        assert decoder.stdout is not None
        index = first
        while index < last:
            if cancel is not None and cancel.is_set():
                raise CancelledError("the people pass was cancelled")
            count = min(pipeline.group_size_from(index), last - index)
            images = []
            for _ in range(count):
                data = read_exactly(decoder.stdout, size)
                if data is None:
                    raise FfmpegError(
                        f"ffmpeg decoded {index - first} of {last - first} frames of {target}: "
                        f"{tail.text() or 'the file ends early'}"
                    )
                images.append(frames.image(data.reshape(frames.shape)))
            indices = list(range(index, index + count))
            timestamps = [float(info.frame_times[i]) for i in indices]
            scan.group(images, indices, timestamps)
            index += count
            if progress is not None:
                progress(index - first, last - first)
    finally:
        stop_process(decoder)
    seconds = time.perf_counter() - started
    calls = pipeline.analyser.counters.recognizer_calls
    return PeopleResult("video", collector.people(), last - first, seconds, False, calls)


def people_swap(
    job: SwapJob,
    runtime: ModelRuntime,
    progress: PeopleProgress | None = None,
    cancel: threading.Event | None = None,
) -> PeopleSwap | None:
    """The job's face map resolved against the people of its target (None: the job has no map). A video's
    people come from the cached pass when there is one."""
    if not job.face_map:
        return None
    people = find_people(job.target, job.settings, runtime, progress, cancel).people
    return resolved_map(job.face_map, people, job.settings, runtime)


def resolved_map(
    entries: Sequence[FaceMapEntry], people: Sequence[Person], settings: Settings, runtime: ModelRuntime
) -> PeopleSwap:
    """``entries`` against ``people``, with the recognizer and distance the settings choose."""
    analyser = FaceAnalyser(runtime)
    scale = analyser.recognizer_scale(settings)
    return resolve_face_map(entries, people, analyser, settings, scale.metric, reference_threshold(settings, scale))


def write_thumbnails(result: PeopleResult, folder: Path) -> dict[int, str]:
    """Each person's thumbnail as ``folder/person_N.png``; returns the paths written by person."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[int, str] = {}
    for person in result.people:
        if person.thumbnail is None:
            continue
        path = folder / f"person_{person.id}.png"
        write_image(path, person.thumbnail, 100)
        written[person.id] = str(path)
    return written

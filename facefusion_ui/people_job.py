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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.errors import CancelledError, FfmpegError, InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face_map import PeopleSwap, resolve_face_map
from facefusion_ui.faces.people import PeopleCollector, Person, people_of_image
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.selector import reference_threshold
from facefusion_ui.faces.source import SourceIdentity, read_image
from facefusion_ui.job import SwapJob
from facefusion_ui.media_files import media_kind, write_image
from facefusion_ui.paths import home_dir
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.state_manager import Settings
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
    pipeline.start_video(first)
    threshold = reference_threshold(settings, pipeline.scale)
    collector = PeopleCollector(pipeline.scale.metric, threshold)
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
            for image, frame_index, analysis in zip(
                images, indices, pipeline.analyse_group(images, indices, timestamps), strict=True
            ):
                if analysis.faces:
                    bgr = image.bgr()[: info.height, : info.width]
                    collector.add(frame_index, bgr, analysis)
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
    settings = job.settings
    people = find_people(job.target, settings, runtime, progress, cancel).people
    analyser = FaceAnalyser(runtime)
    scale = analyser.recognizer_scale(settings)
    return resolve_face_map(
        job.face_map, people, analyser, settings, scale.metric, reference_threshold(settings, scale)
    )


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

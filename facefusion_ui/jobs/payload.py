"""What a job is (its JSON payload) and the checks made before it enters the queue."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.classifier import check_classifier
from facefusion_ui.faces.face_map import FaceMapEntry, one_face_photo
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import load_source
from facefusion_ui.job import SwapJob
from facefusion_ui.media_files import check_paths
from facefusion_ui.people_job import people_swap
from facefusion_ui.pipeline import source_face_needed
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.probe import probe_header


def make_payload(
    sources: Sequence[Path],
    target: Path,
    output: Path,
    settings: Settings,
    face_map: Sequence[FaceMapEntry] = (),
) -> dict[str, Any]:
    """The job as stored: absolute paths, the frozen settings snapshot (JSON, round-trip exact) and the face
    map when there is one (then ``sources`` is empty)."""
    payload: dict[str, Any] = {
        "sources": [str(path.resolve()) for path in sources],
        "target": str(target.resolve()),
        "output": str(output.resolve()),
        "settings": settings.to_dict(),
    }
    if face_map:
        payload["face_map"] = [entry.to_json() for entry in face_map]
    return payload


def payload_parts(payload: dict[str, Any]) -> tuple[list[Path], Path, Path, Settings]:
    settings = Settings.from_dict(payload["settings"])
    return [Path(s) for s in payload["sources"]], Path(payload["target"]), Path(payload["output"]), settings


def payload_face_map(payload: dict[str, Any]) -> tuple[FaceMapEntry, ...]:
    return tuple(FaceMapEntry.from_json(entry) for entry in payload.get("face_map") or ())


def job_of(payload: dict[str, Any]) -> SwapJob:
    """The ``SwapJob`` a stored payload is."""
    sources, target, output, settings = payload_parts(payload)
    return SwapJob.of(settings, sources, target, output, payload_face_map(payload))


def output_for(target: Path, output_dir: Path) -> Path:
    return output_dir / f"{target.stem}_swapped{target.suffix}"


def validate_job(payload: dict[str, Any], runtime: ModelRuntime) -> None:
    """Files exist and are usable, the output is writable and not the target, a face selector's filter has
    its classifier, every source has a face (each source photo is analysed once per content: the runtime's
    source cache); a face map on an image is checked whole, on a video its photos (its numbers when it
    runs, after the people pass)."""
    job = job_of(payload)
    kind = check_paths(job.photos(), job.target, job.output, bool(job.face_map) or source_face_needed(job.settings))
    if kind == "video":
        probe_header(job.target)
    if job.face_map and kind == "image":
        people_swap(job, runtime)  # the whole map checked: numbers, WHO photos, sources
        return
    if not job.face_map:
        check_classifier(job.settings, runtime)
    analyser = FaceAnalyser(runtime)
    for entry in job.face_map:  # a video's numbers are checked when it runs (the people pass)
        if entry.number is None:
            one_face_photo(Path(entry.who), analyser, job.settings)
    for source in job.sources or [path for entry in job.face_map for path in entry.sources]:
        load_source(source, analyser, job.settings)

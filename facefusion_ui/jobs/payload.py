"""What a job is (its JSON payload) and the checks made before it enters the queue."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.classifier import check_classifier
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import load_source
from facefusion_ui.media_files import check_paths
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.probe import probe_header


def make_payload(sources: Sequence[Path], target: Path, output: Path, settings: Settings) -> dict[str, Any]:
    """The job as stored: absolute paths and the frozen settings snapshot (JSON, round-trip exact)."""
    return {
        "sources": [str(path.resolve()) for path in sources],
        "target": str(target.resolve()),
        "output": str(output.resolve()),
        "settings": settings.to_dict(),
    }


def payload_parts(payload: dict[str, Any]) -> tuple[list[Path], Path, Path, Settings]:
    settings = Settings.from_dict(payload["settings"])
    return [Path(s) for s in payload["sources"]], Path(payload["target"]), Path(payload["output"]), settings


def output_for(target: Path, output_dir: Path) -> Path:
    return output_dir / f"{target.stem}_swapped{target.suffix}"


def validate_job(payload: dict[str, Any], runtime: ModelRuntime) -> None:
    """Files exist and are usable, the output is writable and not the target, a face selector's filter has
    its classifier, every source has a face (each source photo is analysed once per content: the runtime's
    source cache)."""
    sources, target, output, settings = payload_parts(payload)
    if check_paths(sources, target, output) == "video":
        probe_header(target)
    check_classifier(settings, runtime)
    analyser = FaceAnalyser(runtime)
    for source in sources:
        load_source(source, analyser, settings)

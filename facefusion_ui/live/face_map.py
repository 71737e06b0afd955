"""``--face-map`` in live mode: there is no target to number its people in beforehand, so each WHO is a
photo of the person; the people are those photos' faces, matched in the camera's frames within the
reference distance, each given their own source (``faces/face_map.py`` resolves the map as for a job);
``start_engine`` builds the command line's and the page's engine with or without a map."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from facefusion_ui.errors import UsageError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face_map import FaceMapEntry, PeopleSwap, one_face_photo, resolve_face_map
from facefusion_ui.faces.people import Person
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.selector import reference_threshold
from facefusion_ui.live.engine import LiveEngine
from facefusion_ui.state_manager import Settings


def live_people(entries: Sequence[FaceMapEntry], runtime: ModelRuntime, settings: Settings) -> PeopleSwap:
    """The map with person N the face of the Nth entry's WHO photo (a number is a UsageError)."""
    numbered = [entry.who for entry in entries if entry.number is not None]
    if numbered:
        raise UsageError(
            f"--face-map {numbered[0]}=...: live mode has no target to number people in; give a photo of the "
            "person instead (--face-map them.jpg=source.jpg)"
        )
    analyser = FaceAnalyser(runtime)
    people = []
    for number, entry in enumerate(entries, start=1):
        face = one_face_photo(Path(entry.who), analyser, settings)
        box = (int(face.bbox[0]), int(face.bbox[1]), int(face.bbox[2]), int(face.bbox[3]))
        assert face.embedding is not None  # one_face_photo analyses with embeddings
        people.append(Person(number, 0, 0, 0, box, (face.embedding,)))
    by_number = [FaceMapEntry(str(number), entry.sources) for number, entry in enumerate(entries, start=1)]
    scale = analyser.recognizer_scale(settings)
    return resolve_face_map(by_number, people, analyser, settings, scale.metric, reference_threshold(settings, scale))


def start_engine(
    settings: Settings, runtime: ModelRuntime, source_paths: Sequence[Path], face_map: Sequence[FaceMapEntry] = ()
) -> LiveEngine:
    """The engine of ``run.py live`` and of the Live page, its models loaded: with a face map, each mapped
    person gets their own source (``source_paths`` not read; the people not mapped are left as they are),
    else every face gets ``source_paths`` (one person's photos)."""
    people = live_people(face_map, runtime, settings) if face_map else None
    engine = LiveEngine.build(settings, runtime, [] if people is not None else source_paths, people)
    engine.warm_up(engine.pipeline.sources.best_frontal().image)
    return engine

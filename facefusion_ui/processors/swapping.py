"""What every face swapper kind shares (``mesh_warp_swapper.py``, ``latent_swapper.py``): the source
person prepared once per set of source photos, the faces of a frame swapped one by one, the counts."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import Counter, OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import SourceIdentity
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Points

PREPARED_SOURCES_LIMIT = 8
Prepared = TypeVar("Prepared")
"""What a swapper kind needs of the source person (its ``prepare_source`` makes it)."""


class Swapper(ABC, MaskedProcessor, Generic[Prepared]):
    """A face swapper of one kind, the processor the entry point ``face_swapper`` makes."""

    name = "face_swapper"
    needs_68_landmarks = False

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.model = settings.face_swapper_model
        self._prepared: OrderedDict[str, Prepared] = OrderedDict()
        self._preparing: dict[str, Future[Prepared]] = {}
        """The preparations under way, by source key (one per person a frame is swapped to at once)."""
        self.preparations = 0
        """``prepare_source`` runs (each source person once while kept)."""
        self._lock = threading.Lock()
        self.faces_swapped = 0
        self.swapped_by_source: Counter[str] = Counter()
        """Faces swapped per source person (``SourceIdentity.key``), when a face map gives each face its own."""
        self.masks = MaskStage(settings, runtime)

    @abstractmethod
    def own_models(self) -> tuple[str, ...]:
        """The models of the swap itself (the mask stage's come on top)."""

    @abstractmethod
    def pre_check(self) -> list[str]:
        """Problems that stop it from running (``Processor.pre_check``)."""

    @abstractmethod
    def prepare_source(self, sources: SourceIdentity) -> Prepared:
        """What the swap needs of the source person, from its photos."""

    @abstractmethod
    def swap_face(self, frame: Frame, face: Face, prepared: Prepared, settings: Settings) -> Frame | None:
        """``frame`` with ``face`` swapped (None: the face is left as it is)."""

    @abstractmethod
    def mask_outline(self, face: Face) -> list[Points]:
        """Where it pastes ``face`` back (``OutliningProcessor``)."""

    def released_models(self) -> tuple[str, ...]:
        return self.required_models()  # the mask stage's too

    def release(self) -> None:
        with self._lock:
            self._prepared.clear()
        super().release()

    def counts(self) -> dict[str, int]:
        with self._lock:
            by_source = {f"faces_swapped@{key}": count for key, count in self.swapped_by_source.items()}
            return {"faces_swapped": self.faces_swapped, **by_source}

    def prepare(self, sources: SourceIdentity) -> Prepared:
        """``prepare_source`` once per set of source photos (the last few kept). Threads asking for one
        being prepared wait for it: the frame workers all ask at a video's first face, and each preparing
        its own copy took the cores the first frame waits for."""
        key = sources.key
        with self._lock:
            prepared = self._prepared.get(key)
            if prepared is not None:
                self._prepared.move_to_end(key)
                return prepared
            preparing = self._preparing.get(key)
            first = preparing is None
            if preparing is None:
                preparing = self._preparing[key] = Future()
        if not first:
            return preparing.result()
        try:
            prepared = self.prepare_source(sources)
        except BaseException as error:  # the threads waiting for it get the same error
            with self._lock:
                del self._preparing[key]
            preparing.set_exception(error)
            raise
        with self._lock:
            self.preparations += 1
            self._prepared[key] = prepared
            while len(self._prepared) > PREPARED_SOURCES_LIMIT:
                self._prepared.popitem(last=False)
            del self._preparing[key]
        preparing.set_result(prepared)
        return prepared

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if not context.faces or (context.sources is None and not context.face_sources):
            return frame
        own = bool(context.face_sources)
        for position, face in enumerate(context.faces):
            source = context.face_sources[position] if own else context.sources
            assert source is not None
            swapped = self.swap_face(frame, face, self.prepare(source), context.settings)
            if swapped is not None:
                with self._lock:
                    self.faces_swapped += 1
                    if own:
                        self.swapped_by_source[source.key] += 1
            frame = swapped if swapped is not None else frame
        return frame

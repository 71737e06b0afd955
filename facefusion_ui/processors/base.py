"""The contract every processor (built-in or plugin) follows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from facefusion_ui.processors.options import OptionValue, ProcessorOption
from facefusion_ui.types import DistanceMetric

if TYPE_CHECKING:  # the command line reads the registry without loading the face analysis
    import threading

    from facefusion_ui.faces.face import Face
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.faces.source import SourceIdentity
    from facefusion_ui.masks.stage import MaskStage
    from facefusion_ui.state_manager import Settings
    from facefusion_ui.types import Embedding, Frame, Points


@dataclass(frozen=True)
class FaceReport:
    """Everything the analysis knew of a frame's faces, selected or not, for processors that explain it
    (the face debugger): ``track_ids`` lines up with ``faces`` (None: no identity, or the cache is off)."""

    faces: Sequence[Face]
    selected: Sequence[Face]
    track_ids: Sequence[int | None]
    reference: Embedding | None
    metric: DistanceMetric
    threshold: float
    mode: str


@dataclass(frozen=True)
class FrameContext:
    """What a processor knows about the frame it is given: where it is, the target faces selected for
    it (analysed: box, keypoints, landmarks, embedding) and the source person."""

    frame_index: int
    timestamp: float
    settings: Settings
    faces: Sequence[Face] = ()
    sources: SourceIdentity | None = None
    face_sources: Sequence[SourceIdentity] = ()
    """With a face map: each of ``faces``' own source person, in the same order (empty: ``sources`` for all)."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """What the pipeline adds: ``target_frame``, the frame as it was before the chain's first processor
    (the expression restorer reads the target's own face there); ``keep_alpha`` (see ``process_frame``)."""
    options: Mapping[str, OptionValue] = field(default_factory=dict)
    """The options of the processor being called: every one it declares (``ConfigurableProcessor``), as
    the job's settings give it or else its default."""
    report: FaceReport | None = None
    """Every face of the frame and why it was or was not selected (None: not known, e.g. a bare call)."""
    mask_outline: Callable[[Face], list[Points]] | None = None
    """Where the chain's first ``OutliningProcessor`` pastes a face back, for processors that show it (the
    face debugger); None: no processor of the chain says."""


@runtime_checkable
class Processor(Protocol):
    """A frame processor. Create it with a ``ProcessorFactory``; it may hold loaded models."""

    name: str

    def required_models(self) -> tuple[str, ...]:
        """Manifest names of the models it needs with the current settings."""
        ...

    def pre_check(self) -> list[str]:
        """Problems that stop it from running (e.g. a missing model with its download command)."""
        ...

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        """Whether ``process_frame`` may change a frame whose selected faces are ``faces``. A face processor
        says False when there is no face: the video pipeline then passes the frame through untouched
        (no colour conversion). A whole-frame processor says True."""
        ...

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        """Return the processed frame (a new array or ``frame`` itself), same shape and dtype (another
        size only for a ``ResizingProcessor``, the one its ``output_size`` gives). Where the output keeps
        an alpha channel (``context.extras["keep_alpha"]``: a PNG or WebP image) it may return BGRA: the
        pipeline keeps the alpha aside for the processors after it and writes it with the image."""
        ...

    def release(self) -> None:
        """Free models and caches; the processor may be used again after (it reloads)."""
        ...


@runtime_checkable
class CountingProcessor(Protocol):
    """Optional beside ``Processor``: what it did so far, by name (``{"faces_swapped": 12}``); a job's
    stats sum these over its processors. A processor without ``counts`` adds nothing."""

    def counts(self) -> Mapping[str, int]: ...


@runtime_checkable
class ConfigurableProcessor(Protocol):
    """Optional beside ``Processor``, on its factory (a class attribute of a processor class): the options
    it takes. They become settings under its name (``settings.processor_options["my_filter"]``), command
    line options (``--my-filter-strength``) and controls on the page; ``FrameContext.options`` carries
    their values to ``process_frame``."""

    options: Sequence[ProcessorOption]


@runtime_checkable
class DescribedProcessor(Protocol):
    """Optional beside ``Processor``, on its factory (a class attribute, like ``options``): what it does,
    in a few words. The page shows it beside the processor's name."""

    summary: str


@runtime_checkable
class SettingsReadingProcessor(Protocol):
    """Optional beside ``Processor``, on its factory: the ``Settings`` fields that are its own (its model,
    its strength...; not the face and mask settings every face processor reads). The page shows them
    beside it, and a model among them is checked when settings are saved only while it is in use."""

    reads_settings: Sequence[str]


@runtime_checkable
class ResizingProcessor(Protocol):
    """Optional beside ``Processor``: a processor whose frames come out at another size (an upscaler).
    The pipeline then sends it every frame, scales the faces for the processors after it, and a video
    is encoded at the size the chain gives."""

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        """The size of the frames it returns for frames of ``width`` x ``height``."""
        ...


@runtime_checkable
class ReportingProcessor(Protocol):
    """Optional beside ``Processor``: a processor that acts on every face the analysis found, selected or
    not (the face debugger draws the skipped ones too). The pipeline asks it with the frame's whole
    ``FaceReport`` instead of ``changes_frame``, so a frame without any face still passes through
    untouched (no colour conversion; in a video, its GOP can be copied)."""

    def changes_frame_with(self, report: FaceReport) -> bool:
        """Whether ``process_frame`` may change a frame whose analysis is ``report``."""
        ...


@runtime_checkable
class LandmarkReadingProcessor(Protocol):
    """Optional beside ``Processor``: whether it reads the faces' 68 landmarks (``Face.landmarks_68``). A
    processor that does not say is taken to read them, so a face the video pipeline reads from its mesh
    alone (no detection, see ``MeshDrawingProcessor``) gets them too, at the cost of a landmark pass."""

    needs_68_landmarks: bool


@runtime_checkable
class FaceReadingProcessor(Protocol):
    """Optional beside ``Processor``: whether it reads the frame's faces at all. A whole-frame processor
    (the background remover) says False; when no processor of the chain reads faces, the pipeline runs no
    face analysis (``FrameContext.faces`` is empty). A processor that does not say: True."""

    needs_faces: bool


@runtime_checkable
class SourceReadingProcessor(Protocol):
    """Optional on a processor's factory (a class attribute): whether it puts the source photos' face in.
    When no processor of a job says so (an enhancer, the background remover, a colorizer), the job needs
    no source photo. A processor that does not say: it does."""

    needs_source_face: bool


@runtime_checkable
class MeshDrawingProcessor(Protocol):
    """Optional beside ``Processor``: whether it draws with the faces' 468-point meshes (``Face.mesh``).
    When a processor of the chain says True, a video's selected faces get their meshes smoothed over time
    (``faces/mesh_smoother.py``, saved with each chunk), and between the detection probes a face whose
    track goes on is read from its smoothed mesh alone. A processor that does not say: False."""

    needs_smoothed_mesh: bool


@runtime_checkable
class SourcePreparingProcessor(Protocol):
    """Optional beside ``Processor``: what it makes of the source person, once per person (the swappers'
    ``prepare``, safe on any thread). When the pipeline first finds a face it asks for it on a thread of
    its own, beside the analysis of that face's group, so the frame workers find it made (or being made:
    they wait for it) instead of making it before the first swap."""

    def prepare(self, sources: SourceIdentity) -> object:
        """What it needs of ``sources``, made once (later calls give the same)."""
        ...


@runtime_checkable
class OutliningProcessor(Protocol):
    """Optional beside ``Processor``: a face processor that pastes its result back through a mask says
    where. The pipeline hands the first such processor's ``mask_outline`` to the others
    (``FrameContext.mask_outline``): the face debugger draws it round each selected face."""

    def mask_outline(self, face: Face) -> list[Points]:
        """The outline of its paste-back mask on ``face``, as closed polygons in frame pixels."""
        ...


@runtime_checkable
class RegionalProcessor(Protocol):
    """Optional beside ``Processor``: a face processor that reads and writes the frame only near each face.
    When every processor of the chain says where for every selected face, a video's frame worker converts
    only the rectangle holding them to BGR and back, and runs the chain on that crop, with the faces moved
    into it (``processors/crop.py``): the same pixels come out, for a fraction of a frame's conversions."""

    def frame_region(self, face: Face, width: int, height: int) -> tuple[int, int, int, int] | None:
        """The rectangle (x1, y1, x2, y2, inside the ``width`` x ``height`` frame) holding every pixel
        ``process_frame`` reads or writes for ``face``; None when it may read anywhere."""
        ...


ProcessorFactory = Callable[["Settings", "ModelRuntime"], "Processor"]
"""What an entry point in group ``facefusion_ui.processors`` names: a class or a function taking the
settings and the process's ``ModelRuntime`` (warm ONNX sessions and embedded models)."""


def missing_models(runtime: ModelRuntime, names: Sequence[str]) -> list[str]:
    """One line per model of ``names`` that is not installed, with the command that fixes it."""
    from facefusion_ui.models import download_command, model_state

    problems = []
    for name in names:
        spec = runtime.spec(name)
        if model_state(spec, runtime.folder).installed:
            continue
        if spec.kind == "embedded":
            problems.append(f"embedded model '{name}' is missing: reinstall the package {spec.package}")
        else:
            problems.append(f"model '{name}' is not downloaded: run '{download_command(name)}'")
    return problems


class ModelProcessor:
    """What the built-in processors share (a base class; a plugin need not use it): the models it loads
    (``own_models``), the pre-check that names those missing with their download command, ``release``
    of what it loaded, and ``counts`` read under its lock from the attributes ``counted`` names. The
    processor sets ``runtime`` and ``_lock`` and keeps its counters as attributes."""

    runtime: ModelRuntime
    _lock: threading.Lock
    counted: tuple[str, ...] = ()

    def own_models(self) -> tuple[str, ...]:
        """The catalog names of the models it runs itself."""
        return ()

    def released_models(self) -> tuple[str, ...]:
        """The models ``release`` frees (default: ``own_models``)."""
        return self.own_models()

    def required_models(self) -> tuple[str, ...]:
        return self.own_models()

    def pre_check(self) -> list[str]:
        return missing_models(self.runtime, self.required_models())

    def release(self) -> None:
        self.runtime.release_models(list(self.released_models()))

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {name: int(getattr(self, name)) for name in self.counted}


class MaskedProcessor(ModelProcessor):
    """A ``ModelProcessor`` that pastes faces back through a ``MaskStage`` (``masks``): it needs the
    stage's models too and reports its counts (``MaskingProcessor``)."""

    masks: MaskStage

    def required_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.own_models(), *self.masks.required_models())))

    def mask_counts(self) -> dict[str, int]:
        return self.masks.counts()

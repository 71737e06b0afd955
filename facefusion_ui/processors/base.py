"""The contract every processor (built-in or plugin) follows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame


@dataclass(frozen=True)
class FrameContext:
    """What a processor knows about the frame it is given: where it is, and the job's inputs.

    ``faces`` holds the analysed target faces selected for this frame and ``sources`` the prepared
    source identities; both are filled by the face-analysis stage (typed there, opaque here so that
    this contract does not depend on the analysis back-ends).
    """

    frame_index: int
    timestamp: float
    settings: Settings
    faces: Sequence[Any] = ()
    sources: Any = None
    extras: Mapping[str, Any] = field(default_factory=dict)


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

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        """Return the processed frame (a new array or ``frame`` itself), same shape and dtype."""
        ...

    def release(self) -> None:
        """Free models and caches; the processor may be used again after (it reloads)."""
        ...


ProcessorFactory = Callable[[Settings], Processor]
"""What an entry point in group ``facefusion_ui.processors`` names: a class or a function."""

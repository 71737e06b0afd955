"""mediapipe imported without matplotlib, its tasks API or sounddevice. mediapipe's package imports its
drawing helpers, which import ``matplotlib.pyplot`` for a 3-D plot nobody here draws: two thirds of
mediapipe's import time (0.35 s of CPU at every start of a command that reads a face). It also imports
its tasks API (``mediapipe.tasks``: only the legacy solutions are used here), whose audio recorder
imports sounddevice, which looks for PortAudio with ``ctypes.util.find_library``: on Linux that runs
``ldconfig`` and ``gcc`` three times each, 0.2 s at the start of every video; and every solution's
module (``UNUSED_SOLUTIONS``). While mediapipe is first imported, matplotlib, pyplot, the tasks API and
those solutions are stand-ins that import the real module when an
attribute is first asked of them; afterwards they leave ``sys.modules``, so whoever imports them later
gets the real ones. A process that already imported any of them keeps it as it is."""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any

UNUSED_SOLUTIONS = tuple(
    f"mediapipe.python.solutions.{name}"
    for name in ("drawing_utils", "drawing_styles", "download_utils", "hands", "holistic", "objectron", "pose")
)
"""The solutions' modules mediapipe's package imports and a face's reading never uses (the occlusion mask's
hand model imports ``hands`` for real when it loads): 90 ms of mediapipe's 155 ms import (2-core x86-64
VM), ``download_utils`` pulling in ``urllib.request``, ``http`` and ``ssl``."""
STAND_INS = ("matplotlib", "matplotlib.pyplot", "mediapipe.tasks", "mediapipe.tasks.python", *UNUSED_SOLUTIONS)
IMPORTING = threading.Lock()
"""One import at a time: a video warms the proposer's import on a thread of its own while the source
photos' thread may import mediapipe too; the second must neither see the first's stand-ins nor a
half-imported mediapipe and go on as if it were whole."""


class StandIn(types.ModuleType):
    """A module that is imported for real when first used (``plt.figure`` imports pyplot then)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's and tools' own questions: no import for those
            raise AttributeError(name)
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)


def import_mediapipe() -> None:
    """Import mediapipe (once per process) with matplotlib's stand-ins in place meanwhile."""
    with IMPORTING:
        _import_with_stand_ins()


def _import_with_stand_ins() -> None:
    if "mediapipe" in sys.modules:
        return
    if any(name in sys.modules for name in STAND_INS):
        import mediapipe

        return
    stand_ins = {name: StandIn(name) for name in STAND_INS}
    stand_ins["matplotlib"].pyplot = stand_ins["matplotlib.pyplot"]  # type: ignore[attr-defined]
    stand_ins["mediapipe.tasks"].python = stand_ins["mediapipe.tasks.python"]  # type: ignore[attr-defined]
    sys.modules.update(stand_ins)
    try:
        import mediapipe  # noqa: F401
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
            parent, _, child = name.rpartition(".")
            package = sys.modules.get(parent)
            if package is not None and not hasattr(package, child):  # ``mp.solutions.pose`` still works
                setattr(package, child, stand_in)

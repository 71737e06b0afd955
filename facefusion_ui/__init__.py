"""facefusion_ui: a local face-swapping studio for images and long videos.

The public API, for scripts::

    from facefusion_ui import RunContext, StateManager, SwapJob, apply_preset, process

Importing the package is cheap on purpose and changes nothing in the process: the installer and the
CLI's help must work before (or without) the heavy dependencies being imported, and the entry points
set the process environment themselves (``process_environment.configure_process``). So the API's names
are imported from their modules when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from facefusion_ui.version import __version__

PUBLIC_API = {
    "process": "facefusion_ui.core",
    "SwapJob": "facefusion_ui.job",
    "RunContext": "facefusion_ui.job",
    "StateManager": "facefusion_ui.state_manager",
    "Settings": "facefusion_ui.state_manager",
    "apply_preset": "facefusion_ui.presets",
}
"""Each public name and the module that defines it."""

__all__ = ["RunContext", "Settings", "StateManager", "SwapJob", "__version__", "apply_preset", "process"]

if TYPE_CHECKING:
    from facefusion_ui.core import process
    from facefusion_ui.job import RunContext, SwapJob
    from facefusion_ui.presets import apply_preset
    from facefusion_ui.state_manager import Settings, StateManager


def __getattr__(name: str) -> Any:
    module = PUBLIC_API.get(name)
    if module is None:
        raise AttributeError(f"module 'facefusion_ui' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)

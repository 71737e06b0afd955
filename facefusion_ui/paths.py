"""Where facefusion_ui keeps its data: ``FACEFUSION_UI_HOME`` (default ``~/.facefusion_ui``)."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """jobs.db, settings.json, job folders, UI uploads and outputs live here."""
    return Path(os.environ.get("FACEFUSION_UI_HOME", Path.home() / ".facefusion_ui"))

"""Where facefusion_ui keeps its data (``FACEFUSION_UI_HOME``, default ``~/.facefusion_ui``), and the source
checkout it runs from, if any."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """jobs.db, settings.json, job folders, UI uploads and outputs live here."""
    return Path(os.environ.get("FACEFUSION_UI_HOME", Path.home() / ".facefusion_ui"))


def checkout_root() -> Path | None:
    """The source checkout the package runs from (its pyproject.toml beside it), None for a wheel."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None

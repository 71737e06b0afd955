"""Real face photos that installed packages ship, as BGR arrays (see DEVELOPERS.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from facefusion_ui.types import Frame


def insightface_image(name: str) -> Path:
    import insightface

    return Path(os.path.dirname(insightface.__file__)) / "data" / "images" / name


def t1_path() -> Path:
    """Six people in a row."""
    return insightface_image("t1.jpg")


def tom_hanks_path() -> Path:
    return insightface_image("Tom_Hanks_54745.png")


def grace_hopper_path() -> Path:
    import matplotlib.cbook

    return Path(matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))


def astronaut() -> Frame:
    from skimage import data

    rgb: Any = data.astronaut()  # type: ignore[no-untyped-call]
    return np.ascontiguousarray(rgb[:, :, ::-1], dtype=np.uint8)


def read(path: Path) -> Frame:
    image = cv2.imread(str(path))
    assert image is not None, path
    return np.asarray(image, dtype=np.uint8)


def t1() -> Frame:
    return read(t1_path())


def grace_hopper() -> Frame:
    return read(grace_hopper_path())

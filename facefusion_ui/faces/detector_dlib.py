"""dlib's HOG frontal face detector (embedded, CPU)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from facefusion_ui.faces.detection import Detection, sigmoid
from facefusion_ui.types import Frame

MARGIN_AT_HALF = 0.25


def load_hog_detector(folder: Path) -> Any:
    """dlib's frontal face detector, read from the copy saved in ``folder`` (a few milliseconds), or made
    by dlib (which parses the detector from text compiled into it: 0.4 s of CPU, at every start of a
    command, and again for each thread's instance) and saved there for the next time. The saved copy is
    dlib's own binary form of the same detector (it finds the same faces with the same margins), named
    after dlib's version; a folder that cannot be written leaves it made each time."""
    import dlib

    path = folder / f"dlib_hog_frontal-{dlib.__version__}.svm"
    if path.is_file():
        try:
            return dlib.fhog_object_detector(str(path))
        except RuntimeError:  # a damaged copy: made again below, and replaced
            pass
    detector = dlib.get_frontal_face_detector()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        detector.save(str(temporary))
        os.replace(temporary, path)  # whole or not at all: another process may be reading it
    except (OSError, RuntimeError):
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
    return detector


def detect_dlib_hog(grey: Frame, detector: Any, upsample: int, score_threshold: float) -> list[Detection]:
    """Faces found by HOG in ``grey`` (in its pixels), after ``upsample`` doublings by dlib. The SVM margin
    is mapped through a sigmoid centred on ``MARGIN_AT_HALF``, so the common default score of 0.5 is a
    little stricter than dlib's own (margin 0): with upsampling, margins under ~0.2 were round badges and
    patches on the test photos, real faces scored 0.35 and up.

    HOG runs on grey: on colour dlib computes gradients per channel (1.7x the time), and on the package
    photos grey found the same faces with the same or higher margins."""
    rects, margins, _ = detector.run(grey, upsample, -0.5)
    found = []
    for rect, margin in zip(rects, margins, strict=True):
        score = sigmoid(2.0 * (float(margin) - MARGIN_AT_HALF))
        if score < score_threshold:
            continue
        box = np.array([rect.left(), rect.top(), rect.right(), rect.bottom()], dtype=np.float32)
        found.append(Detection(bbox=box, score=score))
    return found

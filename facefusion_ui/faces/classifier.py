"""The face classifier: FairFace (fairface) tells a face's gender, age bracket and race, as FaceFusion runs it.

Its contract, written out from FaceFusion's ``facefusion/face_classifier.py`` (``create_static_model_set``
and ``classify_face``): the face aligned on the ``arcface_112_v2`` template into a 224 x 224 crop, its
channels turned to RGB, scaled to 0..1, less ImageNet's mean and over its standard deviation per channel,
as 1x3x224x224 on the input; the network gives three class ids, race first, then gender, then age, which
FaceFusion reads onto its categories (``categorize_gender``, ``categorize_age``, ``categorize_race``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from facefusion_ui.errors import ModelError
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.selector import filters_in_use
from facefusion_ui.faces.warp_templates import WarpTemplate, warp_to_template
from facefusion_ui.models import download_remedy, model_state
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, Gender, Race

FACE_CLASSIFIER = "fairface"
"""The catalog's one face classifier (``data/models/manifest.json``)."""
TEMPLATE: WarpTemplate = "arcface_112_v2"
SIZE = 224
MEAN = (0.485, 0.456, 0.406)
"""Per RGB channel, on pixels scaled to 0..1 (ImageNet's, as FaceFusion's model options give them)."""
STD = (0.229, 0.224, 0.225)

AGE_BRACKETS = (
    range(0, 2),
    range(3, 9),
    range(10, 19),
    range(20, 29),
    range(30, 39),
    range(40, 49),
    range(50, 59),
    range(60, 69),
    range(70, 100),
)
"""FairFace's age ids 0..8 as FaceFusion's ``categorize_age`` reads them (its gaps kept: no bracket holds
2, 9, 19...); an id it does not know is the last, as there."""
RACES: tuple[Race, ...] = ("white", "black", "latino", "asian", "asian", "indian", "arabic")
"""FairFace's race ids 0..6 (White, Black, Latino Hispanic, East Asian, Southeast Asian, Indian, Middle
Eastern) as FaceFusion's ``categorize_race`` reads them; an id it does not know is ``white``, as there."""


class FaceClasses(NamedTuple):
    gender: Gender
    age: range
    race: Race


def classifier_input(frame: Frame, kps: Any) -> np.ndarray:
    """The 1x3x224x224 float32 input for the face with 5 points ``kps`` in BGR ``frame``."""
    crop, _ = warp_to_template(frame, np.asarray(kps, dtype=np.float32), TEMPLATE, SIZE)
    rgb = crop.astype(np.float32)[:, :, ::-1] / 255.0
    normalised = (rgb - np.asarray(MEAN, dtype=np.float32)) / np.asarray(STD, dtype=np.float32)
    return np.ascontiguousarray(normalised.transpose(2, 0, 1)[np.newaxis], dtype=np.float32)


def categorize_gender(gender_id: int) -> Gender:
    return "female" if gender_id == 1 else "male"


def categorize_age(age_id: int) -> range:
    return AGE_BRACKETS[age_id] if 0 <= age_id < len(AGE_BRACKETS) else AGE_BRACKETS[-1]


def categorize_race(race_id: int) -> Race:
    return RACES[race_id] if 0 <= race_id < len(RACES) else "white"


def classify(frame: Frame, face: Face, session: Any) -> FaceClasses:
    """What fairface says of ``face`` (its 5 points) in BGR ``frame``."""
    race_id, gender_id, age_id = session.run(None, {session.get_inputs()[0].name: classifier_input(frame, face.kps)})
    return FaceClasses(
        categorize_gender(int(np.ravel(gender_id)[0])),
        categorize_age(int(np.ravel(age_id)[0])),
        categorize_race(int(np.ravel(race_id)[0])),
    )


def classified(frame: Frame, face: Face, session: Any) -> Face:
    """``face`` with what fairface says of it."""
    return face.with_classes(*classify(frame, face, session))


def check_classifier(settings: Settings, runtime: ModelRuntime) -> None:
    """Before any model loads: a filter in use needs fairface downloaded (one line saying how, exit 2)."""
    used = filters_in_use(settings)
    if not used or model_state(runtime.spec(FACE_CLASSIFIER), runtime.folder).installed:
        return
    raise ModelError(
        f"{' and '.join(used)} need{'s' if len(used) == 1 else ''} the face classifier {FACE_CLASSIFIER}, "
        "which is not downloaded",
        remedy=download_remedy(FACE_CLASSIFIER),
        setting=used[0],
    )

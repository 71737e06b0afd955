"""Numpy arrays in JSON (the state saved in a job's manifest): their bytes in base64 with their shape,
so they come back exactly (a list of numbers would round floats and take four times the room)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import numpy.typing as npt


def array_to_json(array: npt.ArrayLike, dtype: npt.DTypeLike) -> dict[str, Any]:
    """``array`` as ``dtype`` (its values must fit it)."""
    values = np.ascontiguousarray(np.asarray(array, dtype=dtype))
    return {"shape": list(values.shape), "data": base64.b64encode(values.tobytes()).decode("ascii")}


def array_from_json(data: dict[str, Any], dtype: npt.DTypeLike) -> np.ndarray:
    """What ``array_to_json`` wrote with the same ``dtype``, as a new (writable) array."""
    raw = np.frombuffer(base64.b64decode(data["data"]), dtype=dtype)
    array: np.ndarray = raw.reshape([int(side) for side in data["shape"]]).copy()
    return array

"""The One Euro filter (Casiez, Roussel and Vogel, CHI 2012): a low-pass filter whose cutoff rises with
the signal's speed, so a still point loses its jitter and a moving one does not lag.

Pure and per point: ``values`` is an array of points (..., d); each point gets its own cutoff from the
speed of its own (filtered) motion, its d coordinates sharing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OneEuroParameters:
    min_cutoff: float = 1.0
    """Cutoff (Hz) of a still point: lower removes more jitter."""
    beta: float = 0.0
    """How fast the cutoff rises with the speed (units of the values per second): higher lags less."""
    d_cutoff: float = 1.0
    """Cutoff (Hz) of the speed estimate the cutoff is taken from."""


@dataclass(frozen=True)
class OneEuroState:
    value: np.ndarray
    """The last filtered values."""
    speed: np.ndarray
    """Their filtered rate of change, per second."""
    timestamp: float


def smoothing_factor(cutoff: np.ndarray | float, elapsed: float) -> np.ndarray:
    """The exponential smoothing weight of a new sample for a low pass at ``cutoff`` Hz."""
    rate = 2 * math.pi * np.asarray(cutoff, dtype=np.float64) * elapsed
    return np.asarray(rate / (rate + 1.0))


def one_euro_start(values: np.ndarray, timestamp: float) -> OneEuroState:
    """A filter that starts from ``values`` (its first output is ``values`` itself)."""
    values = np.asarray(values, dtype=np.float64)
    return OneEuroState(values.copy(), np.zeros_like(values), timestamp)


def one_euro_step(
    state: OneEuroState | None, values: np.ndarray, timestamp: float, parameters: OneEuroParameters
) -> tuple[np.ndarray, OneEuroState]:
    """The filtered ``values`` at ``timestamp`` (seconds) and the state after them. No state, a time
    that does not move forward or values of another shape: the filter starts again from ``values``."""
    values = np.asarray(values, dtype=np.float64)
    if state is None or timestamp <= state.timestamp or state.value.shape != values.shape:
        started = one_euro_start(values, timestamp)
        return started.value.copy(), started
    elapsed = timestamp - state.timestamp
    raw_speed = (values - state.value) / elapsed
    speed = state.speed + smoothing_factor(parameters.d_cutoff, elapsed) * (raw_speed - state.speed)
    cutoff = parameters.min_cutoff + parameters.beta * np.linalg.norm(speed, axis=-1, keepdims=True)
    filtered = state.value + smoothing_factor(cutoff, elapsed) * (values - state.value)
    return filtered.copy(), OneEuroState(filtered, speed, timestamp)

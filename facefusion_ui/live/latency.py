"""Latency percentiles in constant memory (a histogram of 1 ms bins), so an hour of live frames keeps
the same few kilobytes as a minute."""

from __future__ import annotations

import numpy as np

LATENCY_BINS_MS = 10_000
"""Latencies are counted in 1 ms bins up to 10 s; longer ones land in the last bin."""


class LatencyHistogram:
    def __init__(self) -> None:
        self.counts = np.zeros(LATENCY_BINS_MS + 1, dtype=np.int64)
        self.total = 0
        self.largest_ms = 0.0

    def add(self, seconds: float) -> None:
        milliseconds = max(seconds * 1000.0, 0.0)
        self.counts[min(int(milliseconds), LATENCY_BINS_MS)] += 1
        self.total += 1
        self.largest_ms = max(self.largest_ms, milliseconds)

    def percentile(self, fraction: float) -> float | None:
        """The latency (ms, the bin's middle) below which ``fraction`` of the frames fall; None: no frame."""
        if self.total == 0:
            return None
        rank = max(1, int(np.ceil(fraction * self.total)))
        index = int(np.searchsorted(np.cumsum(self.counts), rank))
        return round(min(index + 0.5, self.largest_ms), 1)

    def to_json(self) -> dict[str, float | None]:
        largest = round(self.largest_ms, 1) if self.total else None
        return {"median": self.percentile(0.5), "p95": self.percentile(0.95), "max": largest}

"""The identity cache: a face seen once is remembered, so the recognizer does not run on every frame.

Entries are matched in the recognizer's own metric and threshold. Time is **video time** (seconds of
the video), so what is kept does not depend on how fast the machine is. Bounded by ``limit`` (the
least recently seen identity is evicted) and ``lifetime`` (an identity not seen for that long expires).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from facefusion_ui.faces.face import embedding_distance
from facefusion_ui.json_arrays import array_from_json, array_to_json
from facefusion_ui.types import DistanceMetric, Embedding


@dataclass
class Identity:
    id: int
    embedding: Embedding
    last_seen: float
    """Video time in seconds."""
    yaw: float
    pitch: float
    hits: int = 0


@dataclass
class CacheStats:
    """``lookups`` counts every face that needed an identity; a face whose identity came from its track
    (no recognizer run) is a hit, like one matched by embedding. ``hit_rate`` is then the share of faces
    the recognizer did not have to identify from scratch."""

    lookups: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    def served_by_track(self) -> None:
        self.lookups += 1
        self.hits += 1

    def to_json(self) -> dict[str, Any]:
        rate = self.hits / self.lookups if self.lookups else 0.0
        return {
            "lookups": self.lookups,
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
            "expirations": self.expirations,
            "hit_rate": round(rate, 4),
        }


@dataclass
class IdentityCache:
    metric: DistanceMetric
    threshold: float
    limit: int
    lifetime: float
    stats: CacheStats = field(default_factory=CacheStats)
    _entries: OrderedDict[int, Identity] = field(default_factory=OrderedDict)
    _next_id: int = 1

    def __len__(self) -> int:
        return len(self._entries)

    def identities(self) -> list[Identity]:
        return list(self._entries.values())

    def get(self, identity_id: int) -> Identity | None:
        return self._entries.get(identity_id)

    def expire(self, now: float) -> None:
        """Drop identities not seen for more than ``lifetime`` seconds of video."""
        for identity_id in [i for i, e in self._entries.items() if now - e.last_seen > self.lifetime]:
            del self._entries[identity_id]
            self.stats.expirations += 1

    def nearest(self, embedding: Embedding) -> tuple[Identity | None, float]:
        best, best_distance = None, float("inf")
        for identity in self._entries.values():
            distance = embedding_distance(identity.embedding, embedding, self.metric)
            if distance < best_distance:
                best, best_distance = identity, distance
        return best, best_distance

    def lookup(self, embedding: Embedding, now: float) -> Identity | None:
        """The known identity within the threshold of ``embedding`` (and mark it seen), or None."""
        self.expire(now)
        self.stats.lookups += 1
        identity, distance = self.nearest(embedding)
        if identity is None or distance >= self.threshold:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self.touch(identity, now)
        return identity

    def touch(self, identity: Identity, now: float) -> None:
        identity.last_seen = max(identity.last_seen, now)
        identity.hits += 1
        self._entries.move_to_end(identity.id)

    def add(self, embedding: Embedding, now: float, yaw: float, pitch: float) -> Identity:
        identity = Identity(self._next_id, np.asarray(embedding, dtype=np.float32), now, yaw, pitch)
        self._next_id += 1
        self._entries[identity.id] = identity
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)  # least recently seen first
            self.stats.evictions += 1
        return identity

    def refresh(self, identity: Identity, embedding: Embedding, now: float, yaw: float, pitch: float) -> None:
        """A re-verified, near-frontal view replaces the stored embedding and pose."""
        identity.embedding = np.asarray(embedding, dtype=np.float32)
        identity.yaw, identity.pitch = yaw, pitch
        self.touch(identity, now)

    def clear(self) -> None:
        self._entries.clear()

    def to_json(self) -> dict[str, Any]:
        """The identities, least recently seen first, and the next id (not the stats): for a resume."""
        entries = [
            {
                "id": e.id,
                "embedding": array_to_json(e.embedding, np.float32),
                "last_seen": e.last_seen,
                "yaw": e.yaw,
                "pitch": e.pitch,
                "hits": e.hits,
            }
            for e in self._entries.values()
        ]
        return {"next_id": self._next_id, "entries": entries}

    def load_json(self, data: dict[str, Any]) -> None:
        """Back to what ``to_json`` saved (the limit still applies)."""
        self._entries.clear()
        for entry in data.get("entries", [])[-self.limit :]:
            embedding = array_from_json(entry["embedding"], np.float32)
            identity = Identity(
                int(entry["id"]),
                embedding,
                float(entry["last_seen"]),
                float(entry["yaw"]),
                float(entry["pitch"]),
                int(entry.get("hits", 0)),
            )
            self._entries[identity.id] = identity
        self._next_id = int(data.get("next_id", max(self._entries, default=0) + 1))

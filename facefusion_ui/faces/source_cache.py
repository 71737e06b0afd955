"""A small LRU cache with a time-to-live, and its statistics: the worker's source-face cache.

A batch of jobs with the same source photo analyses it once: the key is the photo's content hash (not
its path) plus the analysis settings, so a renamed copy is a hit and a changed detector is a miss.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


@dataclass
class CacheCounters:
    lookups: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "hit_rate": round(self.hits / self.lookups, 4) if self.lookups else 0.0}


@dataclass
class LruTtlCache(Generic[Key, Value]):
    capacity: int = 32
    ttl_s: float = 3600.0
    clock: Callable[[], float] = time.monotonic
    stats: CacheCounters = field(default_factory=CacheCounters)
    _items: OrderedDict[Key, tuple[float, Value]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pending: dict[Key, threading.Event] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._items)

    def get_or_create(self, key: Key, create: Callable[[], Value]) -> Value:
        """The value for ``key``, created once: concurrent callers of a key being created wait for it."""
        counted = False
        while True:
            with self._lock:
                if not counted:
                    self.stats.lookups += 1
                    counted = True
                now = self.clock()
                stored = self._items.get(key)
                if stored is not None and now - stored[0] <= self.ttl_s:
                    self.stats.hits += 1
                    self._items.move_to_end(key)
                    return stored[1]
                pending = self._pending.get(key)
                if pending is None:
                    if stored is not None:
                        del self._items[key]
                        self.stats.expirations += 1
                    self.stats.misses += 1
                    pending = self._pending[key] = threading.Event()
                    break
            pending.wait()  # another thread is creating it: then look again
        try:
            value = create()  # outside the lock: analysing a photo takes a while
            with self._lock:
                self._items[key] = (self.clock(), value)
                self._items.move_to_end(key)
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                    self.stats.evictions += 1
            return value
        finally:
            with self._lock:
                self._pending.pop(key).set()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

"""Bounded queues that remember their high-water mark, and stop-aware put/get for pipeline threads."""

from __future__ import annotations

import queue
import threading
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
POLL_S = 0.1


class Stopped(Exception):
    """The pipeline was told to stop while a thread waited on a queue."""


class BoundedQueue(Generic[Item]):
    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("a bounded queue needs a size of at least 1")
        self.maxsize = maxsize
        self._queue: queue.Queue[Item] = queue.Queue(maxsize)
        self._lock = threading.Lock()
        self.high_water = 0

    def put(self, item: Item, stop: threading.Event) -> None:
        while True:
            if stop.is_set():
                raise Stopped
            try:
                self._queue.put(item, timeout=POLL_S)
            except queue.Full:
                continue
            with self._lock:
                self.high_water = max(self.high_water, self._queue.qsize())
            return

    def get(self, stop: threading.Event) -> Item:
        while True:
            if stop.is_set():
                raise Stopped
            try:
                return self._queue.get(timeout=POLL_S)
            except queue.Empty:
                continue

    def get_nowait(self) -> Item | None:
        """The next item when one is there now, else None (never waits)."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def qsize(self) -> int:
        return self._queue.qsize()

    def drained(self, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until every item put has been taken: whether it has. Woken by
        the ``get`` that takes the last one (the queue's own condition), so a producer that waits for its
        consumer to catch up loses no time polling."""
        inner = self._queue
        with inner.not_full:
            return inner.not_full.wait_for(lambda: inner._qsize() == 0, timeout)  # the mutex is held: not qsize()

    def stats(self) -> dict[str, Any]:
        return {"maxsize": self.maxsize, "high_water": self.high_water}


class InFlight:
    """Frames decoded but not yet written: counted, with the highest count seen (for tests and stats)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0

    def add(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def remove(self) -> None:
        with self._lock:
            self.now -= 1

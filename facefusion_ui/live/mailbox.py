"""The one-slot hand-over between two live stages: the newest item wins, an item not taken in time is
replaced and counted as dropped. Nothing ever queues behind a slow stage (at most one item in flight)."""

from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

Item = TypeVar("Item")


class LatestSlot(Generic[Item]):
    """Holds at most one item. ``put`` never blocks (it replaces what was not taken yet); ``take`` waits."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._item: Item | None = None
        self._closed = False
        self.replaced = 0
        """Items put and replaced before anyone took them (dropped frames)."""

    def put(self, item: Item) -> bool:
        """Hand ``item`` over; True when it replaced one that was never taken. Ignored once closed."""
        with self._condition:
            if self._closed:
                return False
            dropped = self._item is not None
            if dropped:
                self.replaced += 1
            self._item = item
            self._condition.notify_all()
            return dropped

    def take(self, timeout: float) -> Item | None:
        """The item waiting (and the slot emptied), or None after ``timeout`` seconds or once closed and empty."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._item is None and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._condition.wait(min(left, 0.1))  # short waits: Ctrl-C reaches the main thread
            item, self._item = self._item, None
            return item

    def close(self, keep_last: bool = False) -> int:
        """No more items: a waiting ``take`` returns (with the item left when ``keep_last``: the end of a
        file, whose last frame is still shown). Returns 1 when an item was thrown away untaken (dropped)."""
        with self._condition:
            self._closed = True
            thrown = int(self._item is not None and not keep_last)
            if thrown:
                self._item = None
            self._condition.notify_all()
            return thrown

    @property
    def closed(self) -> bool:
        with self._condition:
            return self._closed

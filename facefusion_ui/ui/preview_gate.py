"""The live preview's debounce: each change of a page session takes a ticket; it runs once the session has
been quiet for ``quiet_s`` (no newer ticket), one preview at a time, and a result that a newer change made
stale is dropped, so dragging a slider through many values shows the preview of the last one. A preview
asked before another handler wrote the tab's message (Start's "queued") leaves that message as it is:
"asked before" by the browser's clock when the page sends it (the time each event was sent, stamped in the
browser), since a preview sent before Start may still reach the server after it."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

QUIET_S = 0.3
SESSIONS = 256
"""Page sessions remembered (the oldest forgotten first): a forgotten session's change simply runs."""


class PreviewGate:
    def __init__(self, quiet_s: float = QUIET_S, sessions: int = SESSIONS) -> None:
        self.quiet_s = quiet_s
        self.sessions = sessions
        self.working = threading.Lock()
        """Held while a preview is made: one at a time, whatever the number of sessions."""
        self._changed = threading.Condition()
        self._latest: OrderedDict[str, int] = OrderedDict()
        self._held: OrderedDict[str, tuple[int, float | None]] = OrderedDict()
        """Per session: the last change before a message the previews of those changes must not clear, and
        the browser's time that message was asked at (None: not known)."""

    def ticket(self, session: str) -> int:
        """A new change of ``session``: its number (the ones before it are now stale)."""
        with self._changed:
            number = self._latest.pop(session, 0) + 1
            self._latest[session] = number
            while len(self._latest) > self.sessions:
                self._latest.popitem(last=False)
            self._changed.notify_all()
        return number

    def hold_message(self, session: str, asked_at: float | None = None) -> None:
        """Another handler wrote the message, asked at ``asked_at`` by the browser's clock: previews asked
        before it (or, their time unknown, of the changes that reached the server before it) leave it."""
        with self._changed:
            self._held.pop(session, None)
            self._held[session] = (self._latest.get(session, 0), asked_at)
            while len(self._held) > self.sessions:
                self._held.popitem(last=False)

    def may_clear_message(self, session: str, number: int, asked_at: float | None = None) -> bool:
        """Whether the preview of change ``number``, asked at ``asked_at``, may write the message."""
        with self._changed:
            held_number, held_at = self._held.get(session, (0, None))
        if asked_at is not None and held_at is not None:
            return asked_at > held_at
        return number > held_number

    def last(self, session: str) -> int:
        """The number of the session's last change (0: none remembered)."""
        with self._changed:
            return self._latest.get(session, 0)

    def latest(self, session: str, number: int) -> bool:
        with self._changed:
            return self._latest.get(session, number) == number

    def quiet(self, session: str, number: int) -> bool:
        """Wait until ``quiet_s`` passed without a newer change (True), or a newer one came (False, at once)."""
        deadline = time.monotonic() + self.quiet_s
        with self._changed:
            while self._latest.get(session, number) == number:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                self._changed.wait(left)
        return False

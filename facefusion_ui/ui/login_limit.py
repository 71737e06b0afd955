"""Slows password guessing on ``ui --auth``. Per client address, each failed login doubles the time before
that client's next attempt is checked (0.25 s, 0.5 s, 1 s ... up to 4 s): the failure is answered only
after that time, and an attempt made meanwhile (e.g. in parallel) is refused with 429 without being
checked. A successful login forgets the client; a first attempt, or one after the wait, is never slowed.
At most ``max_clients`` addresses are remembered (the least recently seen go first)."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOGIN_PATHS = ("/login", "/login/")


@dataclass
class Failures:
    count: int
    blocked_until: float


class LoginLimiter:
    """The failed-login record of the recent clients (pure: the clock is injected)."""

    def __init__(
        self,
        first_delay_s: float = 0.25,
        max_delay_s: float = 4.0,
        max_clients: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s
        self.max_clients = max_clients
        self.clock = clock
        self._clients: OrderedDict[str, Failures] = OrderedDict()
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """Seconds before ``client`` may try again (0: now)."""
        with self._lock:
            record = self._clients.get(client)
            return max(record.blocked_until - self.clock(), 0.0) if record else 0.0

    def failed(self, client: str) -> float:
        """Record a failed login; the delay before the client's next attempt (also how long the failure
        takes to be answered)."""
        with self._lock:
            record = self._clients.pop(client, None) or Failures(0, 0.0)
            record.count += 1
            delay = min(self.first_delay_s * 2.0 ** (record.count - 1), self.max_delay_s)
            record.blocked_until = self.clock() + delay
            self._clients[client] = record
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
            return delay

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)

    def remembered(self) -> int:
        """How many clients have failures on record."""
        with self._lock:
            return len(self._clients)


class LoginThrottle:
    """ASGI middleware over Gradio's ``POST /login``: applies a ``LoginLimiter`` by client address."""

    def __init__(self, app: ASGIApp, limiter: LoginLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in LOGIN_PATHS:
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else "unknown"
        wait = self.limiter.wait_s(client)
        if wait > 0:
            seconds = math.ceil(wait)
            refused = JSONResponse(
                {"detail": f"Too many failed logins: try again in {seconds} s."},
                status_code=429,
                headers={"Retry-After": str(seconds)},
            )
            await refused(scope, receive, send)
            return

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    self.limiter.succeeded(client)
                elif message["status"] in (400, 401):
                    await asyncio.sleep(self.limiter.failed(client))
            await send(message)

        await self.app(scope, receive, answer)

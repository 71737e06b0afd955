"""Failed logins on ``ui --auth`` are slowed per client: the limiter with a hand-moved clock, then a real
page on loopback answering real HTTP logins."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from facefusion_ui.ui.app import start_ui
from facefusion_ui.ui.login_limit import LoginLimiter
from tests.test_ui import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_failure_doubles_the_wait_up_to_the_cap() -> None:
    clock = Clock()
    limiter = LoginLimiter(first_delay_s=0.25, max_delay_s=4.0, clock=clock)
    assert limiter.wait_s("10.0.0.1") == 0.0
    delays = [limiter.failed("10.0.0.1") for _ in range(8)]
    assert delays == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert limiter.wait_s("10.0.0.1") == 4.0
    clock.now += 3.0
    assert limiter.wait_s("10.0.0.1") == 1.0
    assert limiter.wait_s("10.0.0.2") == 0.0  # by client
    clock.now += 1.0
    assert limiter.wait_s("10.0.0.1") == 0.0
    assert limiter.failed("10.0.0.1") == 4.0  # the count is kept until a success


def test_success_forgets_the_client() -> None:
    clock = Clock()
    limiter = LoginLimiter(clock=clock)
    limiter.failed("a")
    limiter.failed("a")
    limiter.succeeded("a")
    assert limiter.wait_s("a") == 0.0 and limiter.remembered() == 0
    assert limiter.failed("a") == 0.25


def test_memory_is_bounded_least_recently_failed_first() -> None:
    limiter = LoginLimiter(max_clients=3, clock=Clock())
    for client in ("a", "b", "c"):
        limiter.failed(client)
    limiter.failed("a")  # a is recent again
    limiter.failed("d")
    assert limiter.remembered() == 3
    assert limiter.wait_s("b") == 0.0  # forgotten
    assert min(limiter.wait_s(client) for client in ("a", "c", "d")) > 0


def login(url: str, password: str) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = httpx.post(f"{url}/login", data={"username": "alice", "password": password}, timeout=30)
    return response, time.perf_counter() - started


def wait_until(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_real_page_slows_wrong_passwords_only(tmp_path: Path) -> None:
    limiter = LoginLimiter(first_delay_s=1.0, max_delay_s=2.0)
    running = start_ui(port=free_port(), auth="alice:s3cret", home=tmp_path / "home", login_limiter=limiter)
    try:
        right, seconds = login(running.url, "s3cret")
        assert right.status_code == 200 and seconds < 1.0

        wrong, seconds = login(running.url, "guess1")
        assert wrong.status_code == 400 and seconds >= 1.0
        wrong, seconds = login(running.url, "guess2")
        assert wrong.status_code == 400 and seconds >= 2.0

        # while a failure is held, any other attempt from that client is refused unchecked
        held: list[httpx.Response] = []
        guesser = threading.Thread(target=lambda: held.append(login(running.url, "guess3")[0]))
        guesser.start()
        wait_until(lambda: limiter.wait_s("127.0.0.1") > 1.0)
        refused, seconds = login(running.url, "s3cret")
        assert refused.status_code == 429 and seconds < 1.0
        assert refused.json()["detail"].startswith("Too many failed logins: try again in ")
        assert int(refused.headers["Retry-After"]) in (1, 2)
        guesser.join(timeout=30)
        assert held[0].status_code == 400

        wait_until(lambda: limiter.wait_s("127.0.0.1") == 0)
        right, seconds = login(running.url, "s3cret")
        assert right.status_code == 200 and seconds < 1.0
        assert limiter.remembered() == 0
    finally:
        running.close()

"""The pipeline's bounded queues: never more than their size, a stop ends a waiting put or get, the
high-water mark and the in-flight count."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from facefusion_ui.video.queues import BoundedQueue, InFlight, Stopped

DEADLINE_S = 30.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_a_queue_needs_a_size() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BoundedQueue[int](0)


def test_a_producer_never_gets_past_the_bound() -> None:
    queue: BoundedQueue[int] = BoundedQueue(3)
    stop = threading.Event()
    put: list[int] = []

    def produce() -> None:
        for item in range(10):
            queue.put(item, stop)
            put.append(item)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    wait_for(lambda: queue.qsize() == 3, "a full queue")
    # nobody takes: the fourth put waits however long the producer runs
    assert len(put) <= 3
    assert producer.is_alive()
    taken: list[int] = []
    while len(taken) < 10:
        assert queue.qsize() <= 3
        taken.append(queue.get(stop))
    producer.join(timeout=DEADLINE_S)
    assert taken == list(range(10))
    assert queue.stats() == {"maxsize": 3, "high_water": 3}


def test_a_stop_ends_a_put_waiting_on_a_full_queue() -> None:
    queue: BoundedQueue[int] = BoundedQueue(1)
    stop = threading.Event()
    queue.put(0, stop)
    outcome: list[BaseException] = []

    def put_one_more() -> None:
        try:
            queue.put(1, stop)
        except Stopped as stopped:
            outcome.append(stopped)

    waiting = threading.Thread(target=put_one_more, daemon=True)
    waiting.start()
    stop.set()
    waiting.join(timeout=DEADLINE_S)
    assert not waiting.is_alive()
    assert len(outcome) == 1
    assert queue.qsize() == 1


def test_a_stop_ends_a_get_waiting_on_an_empty_queue() -> None:
    queue: BoundedQueue[int] = BoundedQueue(2)
    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped):
        queue.get(stop)
    with pytest.raises(Stopped):
        queue.put(1, stop)
    assert queue.qsize() == 0


def test_in_flight_counts_and_remembers_its_most() -> None:
    in_flight = InFlight()
    for _ in range(4):
        in_flight.add()
    for _ in range(3):
        in_flight.remove()
    in_flight.add()
    assert (in_flight.now, in_flight.most) == (2, 4)


def test_drained_waits_until_the_last_item_is_taken() -> None:
    queue: BoundedQueue[int] = BoundedQueue(4)
    stop = threading.Event()
    assert queue.drained(0.01)
    queue.put(1, stop)
    queue.put(2, stop)
    assert not queue.drained(0.05)
    taker = threading.Timer(0.05, lambda: [queue.get(stop), queue.get(stop)])
    started = time.perf_counter()
    taker.start()
    assert queue.drained(5.0)
    assert time.perf_counter() - started < 1.0  # woken by the get that took the last one, not at the timeout
    taker.join()

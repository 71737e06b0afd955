"""Warm RQ worker processes on this machine (``run.py worker --backend redis://...``).

Each process loads its models on first use and keeps them for every job it takes (no fork per job).
"""

from __future__ import annotations

import multiprocessing
import os

from facefusion_ui.faces.warm_runtimes import WarmRuntimes
from facefusion_ui.faults import injected_hold
from facefusion_ui.process_environment import configure_process
from facefusion_ui.state_manager import Settings


def run_rq_workers(url: str, settings: Settings, concurrency: int, gpu_id: int | None, burst: bool) -> bool:
    """``concurrency`` warm worker processes on this machine; returns when they all stop, whether Ctrl-C
    (or SIGTERM) stopped them."""
    from facefusion_ui.jobs.rq_backend import RqBackend

    RqBackend.connect(url)  # a clear error now rather than in every worker
    if gpu_id is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_id)
    count = max(1, concurrency)
    if count == 1:
        return rq_worker_process(url, settings.to_json(), burst)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=rq_worker_process, args=(url, settings.to_json(), burst)) for _ in range(count)]
    for child in processes:
        child.start()
    try:
        for child in processes:
            child.join()
    except KeyboardInterrupt:
        for child in processes:
            child.terminate()
        raise
    return False


def rq_worker_process(url: str, settings_json: str, burst: bool) -> bool:
    """One worker process's entry point (also the target of a spawned child); whether a signal stopped it."""
    configure_process()
    from facefusion_ui.jobs.rq_backend import run_worker

    settings = Settings.from_json(settings_json)
    hold = injected_hold(os.environ.get("FACEFUSION_UI_INJECT_FAULT"))  # tests and drills: a known point
    print(f"worker on {url}: models load on first use and stay warm", flush=True)
    runtimes = WarmRuntimes()
    runtimes.runtime(settings)  # the worker's own execution settings are the first warm pool
    return run_worker(url, runtimes, burst=burst, hold=hold)

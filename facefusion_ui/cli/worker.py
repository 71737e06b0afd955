"""``run.py worker``: a queue worker on this machine (SQLite) or warm RQ worker processes (Redis)."""

from __future__ import annotations

import argparse
from typing import Any

from facefusion_ui.cli.batch import run_worker
from facefusion_ui.cli.options import add_settings_arguments, settings_from_args
from facefusion_ui.errors import UsageError
from facefusion_ui.state_manager import worker_setting_keys


def run_worker_command(args: argparse.Namespace) -> int:
    from facefusion_ui.jobs.backend import is_redis_url

    settings = settings_from_args(args)
    if is_redis_url(args.backend):
        from facefusion_ui.jobs.rq_workers import run_rq_workers

        stopped = run_rq_workers(
            args.backend, settings, concurrency=args.concurrency, gpu_id=args.gpu_id, burst=args.burst
        )
        return 130 if stopped else 0
    if args.backend != "sqlite":
        raise UsageError(f"unknown backend '{args.backend}': use sqlite or redis://HOST:PORT/DB")
    args.until_empty, args.notify, args.on_complete, args.lease_seconds = args.burst, False, None, 30.0
    return run_worker(args, settings)


def add_worker_parser(commands: Any, backend: argparse.ArgumentParser) -> None:
    worker = commands.add_parser("worker", help="run a queue worker (SQLite or Redis + RQ)", parents=[backend])
    worker.add_argument("--concurrency", type=int, default=1, help="jobs at once (Redis: worker processes)")
    worker.add_argument("--gpu-id", type=int, help="GPU index for this worker (sets CUDA_VISIBLE_DEVICES)")
    worker.add_argument("--burst", action="store_true", help="stop when the queues are empty")
    add_settings_arguments(worker, keys=worker_setting_keys())  # each job carries the others
    worker.set_defaults(handler=run_worker_command)

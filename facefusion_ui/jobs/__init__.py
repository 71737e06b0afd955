"""Batch jobs: the persistent SQLite queue, the worker (scheduler), and the Redis + RQ backend."""

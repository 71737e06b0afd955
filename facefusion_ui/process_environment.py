"""What an entry point sets in its own process before the heavy libraries load.

Importing the package changes nothing; ``run.py``, the console script and the worker processes call
``configure_process()`` first thing.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameters (malloc.h)."""
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 64 * 2**20
"""Allocations from 32 MiB up get their own mapping; a heap keeps up to 64 MiB free at its top."""
ARENA_MAX = 1
"""One heap for every thread (glibc's default is eight per core). Each heap keeps up to ``TRIM_THRESHOLD``
free at its top, and which heap a pipeline thread lands on changes with each chunk's new threads: with
one heap per core a 720p talking head's peak RSS rose from chunk to chunk (5 minutes: 569 MiB in the
first chunk, 608 MiB in the second). With one heap, the free memory kept is bounded once for the whole
process."""


@functools.cache
def libc() -> Any:
    """glibc through ctypes, or None where there is none (macOS, Windows, musl without ``malloc_trim``).
    Looked up once per process: ``find_library`` runs ``ldconfig`` each time, and the heap is trimmed
    after every chunk."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        found = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return found if hasattr(found, "malloc_trim") and hasattr(found, "mallopt") else None
    except OSError:
        return None


def configure_process() -> None:
    """Pin the BLAS thread pools and OpenCV's own to one thread unless the user set them, and keep the C
    heap from handing frame-sized buffers back to the system between frames.

    numpy, scipy and OpenCV each bundle an OpenBLAS whose worker threads spin while waiting. We run our
    own parallelism (frame workers, concurrent jobs), so on top of it they only steal cores: measured on a
    2-core x86-64 VM, one short video job took 10.5 s of CPU with them and 7.0 s without. OpenCV splits
    each call (remap, blur, colour conversion, resize) over a pool of its own whose threads wait actively
    for the next call; beside two frame workers and the analysis thread that is waiting spent on busy
    cores: a 720p talking head swapped with the default settings took 31.2 ms of CPU a frame in our process
    with OpenCV's pool and 27.0 ms without, with the same output, bit for bit. It must run before numpy and
    OpenCV load; an explicit setting of the user wins.

    Each swapped face allocates and frees a few dozen arrays of 0.5-2 MiB. By default glibc maps large
    ones afresh and trims each thread's heap once 128 KiB or so lies free at its top, so the next frame's
    arrays fault their pages in again (zeroed by the kernel): on a 2-core x86-64 VM that was a third of
    the embedded swapper's time on a face about 400 px wide. With the thresholds above the pages are reused; with one
    heap for all threads (``ARENA_MAX``) and the video workflow giving the free heap back between chunks
    and every few hundred frames (``memory.return_free_memory``), peak memory stays flat on long videos.
    ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_ARENA_MAX`` in the environment
    (glibc's own tunables) win.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OPENCV_FOR_THREADS_NUM", "1")
    glibc = libc()
    if glibc is None:
        return
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        glibc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        glibc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    if "MALLOC_ARENA_MAX" not in os.environ:
        glibc.mallopt(M_ARENA_MAX, ARENA_MAX)

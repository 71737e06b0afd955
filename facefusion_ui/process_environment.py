"""What an entry point sets in its own process before the heavy libraries load.

Importing the package changes nothing; ``run.py``, the console script and the worker processes call
``configure_process()`` first thing.
"""

from __future__ import annotations

import os


def configure_process() -> None:
    """Pin the BLAS thread pools to one thread unless the user set them.

    numpy, scipy and OpenCV each bundle an OpenBLAS whose worker threads spin while waiting. We run our
    own parallelism (frame workers, concurrent jobs), so on top of it they only steal cores: measured on a
    2-core x86-64 VM, one short video job took 10.5 s of CPU with them and 7.0 s without. It must run
    before numpy loads; an explicit setting of the user wins.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

"""facefusion_ui: a local face-swapping studio for images and long videos.

Importing the package is cheap on purpose: the installer and the CLI's help must work before (or
without) the heavy dependencies being imported.
"""

import os

__version__ = "0.1.0"

# numpy, scipy and OpenCV each bundle an OpenBLAS whose worker threads spin while waiting. We run our own
# parallelism (frame workers, concurrent jobs), so on top of it they only steal cores: measured on a
# 2-core machine, one short video job took 10.5 s of CPU with them and 7.0 s without. Set before numpy
# loads (the package is imported first by every entry point); an explicit setting of the user wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

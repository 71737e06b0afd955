"""facefusion_ui: a local face-swapping studio for images and long videos.

Importing the package is cheap on purpose: the installer and the CLI's help must work before (or
without) the heavy dependencies being imported.
"""

__version__ = "0.1.0"

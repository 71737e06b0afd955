"""facefusion_ui: a local face-swapping studio for images and long videos.

Importing the package is cheap on purpose and changes nothing in the process: the installer and the
CLI's help must work before (or without) the heavy dependencies being imported, and the entry points
set the process environment themselves (``process_environment.configure_process``).
"""

__version__ = "0.1.0"

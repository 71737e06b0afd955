"""Face analysis: detection, landmarks, dense mesh, recognition, alignment, identity cache, selection.

``analyse(frame, settings, runtime)`` (in ``faces.analyser``) is the one entry point processors use.
"""

#!/usr/bin/env python3
"""Entry point: ``python run.py`` opens the UI; ``python run.py --help`` lists the commands."""

from facefusion_ui.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

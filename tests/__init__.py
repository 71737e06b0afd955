"""The test suite; like every entry point it sets the process environment before numpy loads."""

from facefusion_ui.process_environment import configure_process

configure_process()

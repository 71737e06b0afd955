"""The layering rules of docs/ARCHITECTURE.md that matter most, checked on every import (function-level
ones included): the page imports nothing from the command line (whose ``ui`` command only launches it),
and the library imports neither front end."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.test_import_cycles import import_graph

FRONT_ENDS = ("facefusion_ui.cli", "facefusion_ui.ui")


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_page_imports_nothing_from_the_command_line() -> None:
    graph = import_graph(ROOT)
    crossing = [
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if within(module, "facefusion_ui.ui") and within(target, "facefusion_ui.cli")
    ]
    assert not crossing, crossing
    launches = {
        target for module, targets in graph.items() if within(module, "facefusion_ui.cli") for target in targets
    }
    assert {t for t in launches if within(t, "facefusion_ui.ui")} == {"facefusion_ui.ui.app"}, "cli only launches it"


def test_the_library_imports_no_front_end() -> None:
    graph = import_graph(ROOT)
    library = [module for module in graph if not any(within(module, end) for end in FRONT_ENDS)]
    upward = [
        (module, target)
        for module in library
        for target in graph[module]
        if any(within(target, end) for end in FRONT_ENDS)
    ]
    assert not upward, upward

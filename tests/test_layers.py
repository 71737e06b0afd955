"""The layering rules of docs/ARCHITECTURE.md that matter most, checked on every import (function-level
ones included): the page imports nothing from the command line (whose ``ui`` command only launches it),
and the library imports neither front end."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tests.conftest import ROOT
from tests.test_import_cycles import import_graph as parse_import_graph

FRONT_ENDS = ("facefusion_ui.cli", "facefusion_ui.ui")


@functools.lru_cache(maxsize=1)
def import_graph(root: Path) -> dict[str, set[str]]:
    """The checkout's import graph, parsed once for the three tests here."""
    return parse_import_graph(root)


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


def layer_table() -> list[tuple[str, list[str]]]:
    """docs/ARCHITECTURE.md's layers in order, each with its modules as dotted prefixes
    (``faces/`` -> ``facefusion_ui.faces``, ``video/ffmpeg.py`` -> ``facefusion_ui.video.ffmpeg``)."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index("| layer | modules |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, modules = (cell.strip() for cell in line.strip("|").split("|")[:2])
        paths = re.findall(r"`([\w/]+(?:\.py|/))`", modules)
        rows.append((name, [dotted(path) for path in paths]))
    return rows


def dotted(path: str) -> str:
    if path == "__init__.py":
        return "facefusion_ui"
    return "facefusion_ui." + path.removesuffix("/").removesuffix(".py").replace("/", ".")


def layer_of(module: str, table: list[tuple[str, list[str]]]) -> int | None:
    """The layer of the most specific entry naming ``module`` (a file in a listed folder belongs to it)."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(table):
        for prefix in prefixes:
            matches = module == prefix or (prefix != "facefusion_ui" and module.startswith(prefix + "."))
            if matches and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return best[0] if best is not None else None


def test_every_import_follows_the_layer_order_of_the_architecture() -> None:
    table = layer_table()
    assert [name for name, _ in table][:2] == ["foundation", "settings"] and len(table) >= 10
    graph = import_graph(ROOT)
    unplaced = sorted(module for module in graph if layer_of(module, table) is None)
    assert not unplaced, f"modules docs/ARCHITECTURE.md's layer table does not place: {unplaced}"
    upward = [
        f"{module} ({table[source][0]}) imports {target} ({table[layer][0]})"
        for module, targets in graph.items()
        for target in targets
        if (source := layer_of(module, table)) is not None
        and (layer := layer_of(target, table)) is not None
        and layer > source
    ]
    assert not upward, upward

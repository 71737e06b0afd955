"""No import cycles inside the package, counting imports inside functions too.

Every module of ``facefusion_ui`` is parsed with ``ast``; every ``import`` and ``from ... import`` (at
module level or in a function, absolute or relative, ``from package import submodule`` included) that
names a module of the package is an edge. A cycle fails the test with its modules in order.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = "facefusion_ui"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module and package of the package under ``root``."""
    names = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def base_of(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def imported(module: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``module`` imports, wherever in the file the import is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = base_of(module, path, node)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name in modules and name != module}


def import_graph(root: Path) -> dict[str, set[str]]:
    names = module_names(root)
    return {module: imported(module, path, set(names)) for module, path in names.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 50 and graph[f"{PACKAGE}.jobs.worker"], "the parser finds the package's imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_sees_function_level_relative_and_submodule_imports(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def later():\n    from .sub import b\n")
    (package / "sub" / "b.py").write_text("from facefusion_ui import c\n")
    (package / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.a"] == {f"{PACKAGE}.sub", f"{PACKAGE}.sub.b"}
    assert find_cycle(graph) == [f"{PACKAGE}.a", f"{PACKAGE}.sub.b", f"{PACKAGE}.c", f"{PACKAGE}.a"]
    (package / "c.py").write_text("import os\n")
    assert find_cycle(import_graph(tmp_path)) is None

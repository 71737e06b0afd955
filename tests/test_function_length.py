"""No function over 60 lines (nested ones counted on their own too), in the package and in the tests:
measured with ``ast`` as ``end_lineno - lineno + 1`` of every ``def``, its docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

LIMIT = 60
FOLDERS = ("facefusion_ui", "tests")


def long_functions(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LIMIT:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_over_sixty_lines() -> None:
    found = [line for folder in FOLDERS for line in long_functions(ROOT / folder)]
    assert not found, "\n".join(found)

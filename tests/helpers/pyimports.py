"""Absolute module names a Python file imports, read with ast (nothing is executed)."""

from __future__ import annotations

import ast
from pathlib import Path


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def imported_names(path: Path) -> set[str]:
    """imported_modules plus `module.name` for every `from module import name`, so that
    `from pkg import mod` is seen as importing `pkg.mod` (a checker cannot tell a module from a name)."""
    names = imported_modules(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names

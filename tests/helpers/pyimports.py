"""Absolute module names a Python file imports, read with ast (nothing is executed); and loading a
plugin or module file that is not on the import path (a role's library/, filter_plugins/, ...)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names



def module_name(package: Path, path: Path) -> str:
    """The dotted name of `path` inside the top-level package directory `package`."""
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolved_imports(path: Path, name: str) -> tuple[set[str], set[str]]:
    """What module `name` (file `path`) imports, relative imports made absolute, and for each
    `from X import y` the name X.y, which is a submodule or just an attribute of X."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules: set[str] = set()
    members: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            modules.add(base)
            members.update(f"{base}.{a.name}" for a in node.names)
    return modules, members


def source_of(package: Path, name: str) -> Path | None:
    """The file of module `name` in the top-level package directory `package`, or None."""
    path = package.joinpath(*name.split(".")[1:])
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    module = path.with_name(path.name + ".py")
    return module if "." in name and module.is_file() else None


def import_closure(package: Path, start: list[Path]) -> dict[str, set[str]]:
    """Module -> what it imports, for the files `start` and every module of `package` they import,
    directly or not. A module's imports include its packages (importing a.b.c runs a and a.b
    first); names outside `package` appear only as imports, never as keys."""
    found: dict[str, set[str]] = {}
    queue = [(module_name(package, path), path) for path in start]
    while queue:
        name, path = queue.pop()
        if name in found:
            continue
        modules, members = resolved_imports(path, name)
        submodules = {m for m in members if m.split(".")[0] == package.name and source_of(package, m)}
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        found[name] = modules | submodules | parents
        for other in sorted(found[name]):
            source = source_of(package, other) if other.split(".")[0] == package.name else None
            if source is not None:
                queue.append((other, source))
    return found


def imported_names(path: Path) -> set[str]:
    """imported_modules plus `module.name` for every `from module import name`, so that
    `from pkg import mod` is seen as importing `pkg.mod` (a checker cannot tell a module from a name)."""
    names = imported_modules(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


ROLES = Path(__file__).resolve().parents[2] / "roles"


def add_role_module_utils() -> None:
    """Make `ansible.module_utils.<name>` import the roles' module_utils/<name>.py, as Ansible does
    for the modules of a loaded role (it ships them with the module)."""
    import ansible.module_utils

    for folder in sorted(ROLES.glob("*/module_utils")):
        if str(folder) not in ansible.module_utils.__path__:
            ansible.module_utils.__path__.append(str(folder))


def load_file(path: Path, name: str | None = None) -> ModuleType:
    """Execute the Python file at `path` as a module named `name` (default: its stem) and return it.
    A role's module imports the roles' module_utils as ansible.module_utils.<name>."""
    add_role_module_utils()
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Pack ufcctl's node-side programs into one zip the etcd nodes import from.

Run on the controller by roles/etcd (tasks/agent.yml), with the Python that runs the play:

    build_agent.py [--source PACKAGE_DIR] DEST

The zip holds the package ufcctl.nodeside and every ufcctl module it imports, directly or not (with
the packages on the way), found by reading the sources with ast: this script never imports ufcctl,
so the controller's package may be any version and this Python need not be able to run it.
PACKAGE_DIR is the ufcctl package directory (the one holding __init__.py); without it, the ufcctl
the controller's Python would import (a checkout's editable install or an installed wheel).

A module of the set importing anything outside ufcctl but the standard library stops the build
(exit 2, the nodes have nothing else); the rule is in ufcctl/nodeside/__init__.py.

The zip is byte-for-byte reproducible (sorted entries, fixed timestamps), and rewritten only when
its content changes, so the copy to the nodes stays idempotent. Prints {"changed": bool, ...}.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import sys
import zipfile
from pathlib import Path

STAMP = (1980, 1, 1, 0, 0, 0)
TOP = "ufcctl"
ENTRY = "nodeside"


class BuildError(Exception):
    pass


def package_dir(source: str | None) -> Path:
    """The ufcctl package directory: `source`, else where this Python finds ufcctl (not imported)."""
    if source:
        root = Path(source)
        where = f"etcd_defrag_agent_source={source}"  # what the role passes as --source
    else:
        spec = importlib.util.find_spec(TOP)  # a top-level name: finds the package, runs none of it
        if spec is None or not spec.origin or Path(spec.origin).name != "__init__.py":
            raise BuildError(
                f"{sys.executable} finds no ufcctl package; set etcd_defrag_agent_source to the "
                "ufcctl package directory (the one holding nodeside/)"
            )
        root = Path(spec.origin).parent
        where = f"the ufcctl of {sys.executable}"
    if not (root / ENTRY / "__init__.py").is_file():
        raise BuildError(
            f"{where}: {root / ENTRY / '__init__.py'} does not exist; the source must be the ufcctl "
            "package directory of a ufcctl that has node-side programs (empty: the one this Python finds)"
        )
    return root.resolve()


def _module_file(root: Path, name: str) -> Path | None:
    """The source of ufcctl module `name` (dotted) under `root`, or None."""
    path = root.joinpath(*name.split(".")[1:])
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    module = path.with_name(path.name + ".py")
    return module if name != TOP and module.is_file() else None


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((TOP, *parts))


def _imports(path: Path, name: str) -> list[tuple[str, bool]]:
    """(absolute module name, required) for each import in `path` (module `name`). required is
    False for `from X import y` candidates X.y, which may be attributes of X rather than modules."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, bool]] = []
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, True) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level - 1 >= len(base):
                    raise BuildError(f"{path}: relative import beyond the top-level package")
                stem = ".".join(base[: len(base) - node.level + 1])
                module = f"{stem}.{node.module}" if node.module else stem
            else:
                module = node.module or ""
            found.append((module, True))
            found += [(f"{module}.{alias.name}", False) for alias in node.names if alias.name != "*"]
    return found


def closure(root: Path) -> dict[str, Path]:
    """Zip entry -> source file: ufcctl.nodeside, the ufcctl modules it imports (transitively), and
    the packages on the way. Raises BuildError on an import the nodes cannot satisfy."""
    files = {path for path in (root / ENTRY).rglob("*.py") if "__pycache__" not in path.parts}
    queue = sorted(files)
    problems: list[str] = []

    def add(name: str) -> None:
        path = _module_file(root, name)
        if path is None:  # a package on the way without __init__.py: the zip import would not find it
            raise BuildError(f"{name}: no {name.replace('.', '/')}/__init__.py under {root.parent}")
        if path not in files:
            files.add(path)
            queue.append(path)

    while queue:
        path = queue.pop()
        name = _module_name(root, path)
        for parent in range(1, name.count(".") + 1):  # importing a module runs its packages first
            add(".".join(name.split(".")[:parent]))
        for imported, required in _imports(path, name):
            where = f"{path.relative_to(root.parent)} imports {imported}"
            if imported.split(".")[0] != TOP:
                top = imported.split(".")[0]
                if required and top != "__future__" and top not in sys.stdlib_module_names:
                    problems.append(f"{where}: not the standard library, the nodes do not have it")
            elif _module_file(root, imported) is not None:
                add(imported)
            elif required:
                problems.append(f"{where}: no such module under {root}")
    if problems:
        raise BuildError("; ".join(sorted(set(problems))))
    return {path.relative_to(root.parent).as_posix(): path for path in files}


def build(root: Path) -> tuple[bytes, list[str]]:
    entries = closure(root)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, entries[name].read_bytes())
    return buffer.getvalue(), sorted(entries)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="the ufcctl package directory (default: the one this Python finds)")
    parser.add_argument("dest", type=Path, help="the zip to write")
    args = parser.parse_args(argv)
    try:
        root = package_dir(args.source)
        data, names = build(root)
    except (BuildError, OSError, SyntaxError) as err:
        print(f"Error: {err}", file=sys.stderr)
        return 2
    dest: Path = args.dest
    changed = not dest.is_file() or dest.read_bytes() != data
    if changed:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(dest)
    report = {"changed": changed, "path": str(dest), "bytes": len(data), "source": str(root)}
    print(json.dumps({**report, "modules": names}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

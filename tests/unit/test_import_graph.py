"""The package's import graph has no cycle, the fleet engine never reaches up into the use cases
(issue 27: rollout/ was one cycle of eight modules and imported app/), and the domain's packages import
each other one way only (issue 43: inventory/validate.py imported the etcd and image rules, which import
inventory/model).

Edges are every import the source names, at module level or inside a function (a lazy import is
still a dependency; hiding a cycle in a function is what this test exists to refuse). An import of
one's own parent package is not an edge: Python runs the parents first anyway, and
`from ufcctl.domain.placement import keys` depends on `keys`, not on the package's `__init__`.
The layer rules themselves (cli -> app -> engine + domain) are tests/unit/test_layers.py's.
"""

from __future__ import annotations

import graphlib
from pathlib import Path

import pytest

from tests.helpers.pyimports import module_name, resolved_imports, source_of

PACKAGE = Path(__file__).resolve().parents[2] / "ufcctl"

# package -> packages of the same layer it must not import (the direction inside a layer)
UPWARD = {
    "ufcctl.rollout": ("ufcctl.app", "ufcctl.cli"),
    "ufcctl.lab": ("ufcctl.cli",),  # the lab's commands are cli/lab.py, above the lab
}


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports (own parent packages left out)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        name = module_name(package, path)
        modules, members = resolved_imports(path, name)
        graph[name] = {
            other for other in modules | members
            if other.split(".")[0] == package.name and other != name
            and not name.startswith(other + ".") and source_of(package, other) is not None
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` as a list of modules (first == last), or [] when there is none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as cycle:
        return list(cycle.args[1])
    return []


def package_graph(graph: dict[str, set[str]], parent: str) -> dict[str, set[str]]:
    """The packages (and modules) directly under `parent` -> those of them they import, through any of
    their modules."""
    depth = parent.count(".") + 2

    def member(name: str) -> str | None:
        return ".".join(name.split(".")[:depth]) if name.startswith(parent + ".") else None

    packages: dict[str, set[str]] = {}
    for name, imports in graph.items():
        own = member(name)
        if own is not None:
            packages.setdefault(own, set()).update(
                other for other in map(member, imports) if other is not None and other != own)
    return packages


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} imports {other}"
        for name, imports in graph.items()
        for low, high in UPWARD.items() if name == low or name.startswith(low + ".")
        for other in imports if any(other == h or other.startswith(h + ".") for h in high)
    )


def test_the_package_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(PACKAGE))
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_fleet_engine_never_imports_the_use_cases_or_the_cli() -> None:
    graph = import_graph(PACKAGE)
    assert "ufcctl.rollout.runs" in graph
    assert upward_imports(graph) == []


def test_the_domain_packages_import_each_other_one_way() -> None:
    """No two-way tie (nor a longer loop) between the packages of domain/: the inventory's validator does
    not reach into the etcd and images rules while they use its model; the rules that span packages are
    composed above them (domain/inventory_check.py)."""
    packages = package_graph(import_graph(PACKAGE), "ufcctl.domain")
    assert {"ufcctl.domain.inventory", "ufcctl.domain.etcd", "ufcctl.domain.images"} <= set(packages)
    assert "ufcctl.domain.inventory" in packages["ufcctl.domain.etcd"]
    cycle = find_cycle(packages)
    assert not cycle, "two-way tie between domain packages: " + " -> ".join(cycle)


def test_the_list_of_kinds_sits_on_top_of_the_fleet_engine() -> None:
    """rollout/catalog.py names every kind; the callers (cli) import it, nothing in rollout/ does."""
    graph = import_graph(PACKAGE)
    importers = sorted(name for name, imports in graph.items() if "ufcctl.rollout.catalog" in imports)
    assert importers and all(not name.startswith("ufcctl.rollout") for name in importers), importers


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "ufcctl"
    for rel, text in {"__init__.py": "", **files}.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    return package


@pytest.mark.parametrize(("files", "cycle"), [
    ({"a.py": "from ufcctl import b\n", "b.py": "import ufcctl.a\n"}, True),
    # a cycle hidden in a function is still a cycle
    ({"a.py": "from ufcctl import b\n", "b.py": "def f():\n    from ufcctl.a import x\n"}, True),
    ({"p/__init__.py": "from ufcctl.p.m import x\n", "p/m.py": "from ufcctl.p import keys\n",
      "p/keys.py": ""}, False),
    ({"p/__init__.py": "from ufcctl.p.m import x\n", "p/m.py": "from ufcctl.p import keys\n",
      "p/keys.py": "from ufcctl.p.m import y\n"}, True),
])
def test_the_cycle_check_catches_cycles(tmp_path: Path, files: dict[str, str], cycle: bool) -> None:
    assert bool(find_cycle(import_graph(_package(tmp_path, files)))) is cycle


def test_the_package_check_catches_a_two_way_tie(tmp_path: Path) -> None:
    files = {"domain/__init__.py": "", "domain/a/__init__.py": "", "domain/b/__init__.py": "",
             "domain/a/rules.py": "from ufcctl.domain.b.model import X\n", "domain/b/model.py": "",
             "domain/b/check.py": "from ufcctl.domain.a import rules\n"}
    graph = import_graph(_package(tmp_path, files))
    assert not find_cycle(graph)  # no module cycle: only the packages tie
    assert find_cycle(package_graph(graph, "ufcctl.domain"))
    (tmp_path / "ufcctl" / "domain" / "b" / "check.py").write_text("")
    assert not find_cycle(package_graph(import_graph(tmp_path / "ufcctl"), "ufcctl.domain"))


def test_the_direction_check_catches_an_upward_import(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "rollout/__init__.py": "", "rollout/runs.py": "def f():\n    from ufcctl.app.inventory import x\n",
        "app/__init__.py": "", "app/inventory.py": "from ufcctl.rollout import runs\n",
    })
    assert upward_imports(import_graph(package)) == ["ufcctl.rollout.runs imports ufcctl.app.inventory"]

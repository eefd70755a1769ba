"""The rollout package is untied (issue 27): no import cycle among its modules (function-level imports
count), it never imports the app or cli layers (the callers hand it an inventory or a loader), and
the list of kinds (catalog.py) sits on top: no module of the package imports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pyimports import module_name, resolved_imports, source_of

PACKAGE = Path(__file__).resolve().parents[3] / "ufcctl"
ROLLOUT = "ufcctl.rollout"


def rollout_graph() -> dict[str, set[str]]:
    """Module -> the modules of ufcctl.rollout it imports (anywhere in the file), from the source."""
    graph: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / "rollout").rglob("*.py")):
        name = module_name(PACKAGE, path)
        modules, members = resolved_imports(path, name)
        found = {m for m in modules if source_of(PACKAGE, m)} | {m for m in members if source_of(PACKAGE, m)}
        graph[name] = found
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done or node not in graph:
            return None
        for other in sorted(graph[node]):
            cycle = visit(other, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


@pytest.mark.parametrize(("graph", "cycle"), [
    pytest.param({"a": {"b"}, "b": {"c"}, "c": set()}, None, id="chain"),
    pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"], id="three"),
    pytest.param({"a": {"a"}}, ["a", "a"], id="self"),
    pytest.param({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, None, id="diamond"),
])
def test_find_cycle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_the_graph_sees_function_level_imports(tmp_path: Path) -> None:
    package = tmp_path / "ufcctl"
    (package / "rollout").mkdir(parents=True)
    (package / "rollout" / "kind.py").write_text("def f():\n    import ufcctl.rollout.kinds\n")
    (package / "rollout" / "kinds.py").write_text("")
    modules, _ = resolved_imports(package / "rollout" / "kind.py", "ufcctl.rollout.kind")
    assert "ufcctl.rollout.kinds" in modules


def test_the_rollout_package_has_no_import_cycle() -> None:
    graph = rollout_graph()
    assert {"ufcctl.rollout.runs", "ufcctl.rollout.kind", "ufcctl.rollout.catalog"} <= set(graph)
    rollout = {n: {m for m in imports if m.startswith(ROLLOUT)} for n, imports in graph.items()}
    assert find_cycle(rollout) is None


def test_the_rollout_package_never_imports_the_app_or_cli_layers() -> None:
    found = {n: sorted(m for m in imports if m.startswith(("ufcctl.app", "ufcctl.cli")))
             for n, imports in rollout_graph().items()}
    assert {n: m for n, m in found.items() if m} == {}


def test_only_the_callers_import_the_list_of_kinds() -> None:
    importers = [n for n, imports in rollout_graph().items() if "ufcctl.rollout.catalog" in imports]
    assert importers == []

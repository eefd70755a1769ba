"""The import direction of docs/architecture.md holds: cli -> app -> engine/domain; domain does no I/O."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers.pyimports import import_closure, module_name, resolved_imports
from tests.helpers.pyimports import imported_modules as _imports

PACKAGE = Path(__file__).resolve().parents[2] / "ufcctl"

# layer -> layers it must never import
FORBIDDEN = {
    "domain": {"engine", "app", "cli", "report"},
    "engine": {"app", "cli", "report"},
    "app": {"cli"},
    "report": {"app", "cli"},
}
# third-party adapters only the engine may import
ENGINE_ONLY = {"ansible_runner", "subprocess", "sqlite3"}
DOMAIN_NO_IO = {"logging", "subprocess", "sqlite3", "socket", "shutil"}


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_downwards(layer: str) -> None:
    bad = []
    for path in _modules(layer):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "ufcctl" and len(parts) > 1 and parts[1] in FORBIDDEN[layer]:
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("layer", ["domain", "app", "cli", "report"])
def test_adapters_only_in_engine(layer: str) -> None:
    bad = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in _modules(layer)
        for name in _imports(path)
        if name.split(".")[0] in ENGINE_ONLY
    ]
    assert not bad, "\n".join(bad)


def test_domain_does_no_io() -> None:
    bad = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in _modules("domain")
        for name in _imports(path)
        if name.split(".")[0] in DOMAIN_NO_IO
    ]
    assert not bad, "\n".join(bad)


def test_rule_catches_a_violation(tmp_path: Path) -> None:
    """The scanner itself works: a domain module importing the engine is reported."""
    sample = tmp_path / "x.py"
    sample.write_text("from ufcctl.engine.runner import run_playbook\nimport subprocess\n")
    assert {"ufcctl.engine.runner", "subprocess"} <= _imports(sample)


# The ufcctl modules that programs under ufcctl/nodeside/ may import, directly or not: the nodes run
# them with their own python3 and only the standard library (ufcctl/nodeside/__init__.py). Each one
# here imports only the standard library and others from this list (test_nodeside_imports checks).
NODESIDE_ALLOWED = {
    "ufcctl": "package docstring and __version__",
    "ufcctl.domain": "package docstring",
    "ufcctl.domain.etcd": "package docstring",
    "ufcctl.domain.etcd.rule": "the defrag rule grammar: pure (re, math)",
    "ufcctl.domain.etcd.defrag": "defrag policy (health gate, due, order, disarm): pure (json)",
    "ufcctl.domain.etcd.membership": "the join decision: pure",
    "ufcctl.engine": "package docstring",
    "ufcctl.engine.etcd_client": "client of etcd's JSON gateway: http.client, ssl, json",
}


def _nodeside_violations(package: Path, allowed: Mapping[str, str]) -> list[str]:
    """Imports reachable from package/nodeside/ that the nodes cannot satisfy: a ufcctl module
    neither in nodeside nor in `allowed`, or anything outside the standard library."""
    start = sorted((package / "nodeside").rglob("*.py"))
    top = package.name
    bad = []
    for module, names in sorted(import_closure(package, start).items()):
        for name in sorted(names):
            first = name.split(".")[0]
            if first == top:
                if name not in allowed and not name.startswith(f"{top}.nodeside"):
                    bad.append(f"{module} imports {name}: not in NODESIDE_ALLOWED")
            elif first != "__future__" and first not in sys.stdlib_module_names:
                bad.append(f"{module} imports {name}: not the standard library")
    return bad


def test_nodeside_imports_only_the_stdlib_and_the_allowed_modules() -> None:
    assert _nodeside_violations(PACKAGE, NODESIDE_ALLOWED) == []
    reached = set(import_closure(PACKAGE, sorted((PACKAGE / "nodeside").rglob("*.py"))))
    assert set(NODESIDE_ALLOWED) - reached == set(), "no longer shipped: drop from NODESIDE_ALLOWED"


def test_only_app_imports_nodeside() -> None:
    """The node-side programs are below app: the layers under it never reach up into them."""
    bad = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in {"app", "nodeside"}
        for name in set().union(*resolved_imports(path, module_name(PACKAGE, path)))
        if name == "ufcctl.nodeside" or name.startswith("ufcctl.nodeside.")
    ]
    assert not bad, "\n".join(bad)


def test_nodeside_rule_catches_violations(tmp_path: Path) -> None:
    """The closure check itself: a disallowed ufcctl module and a third-party import are reported
    when reached only indirectly (through a relative import and a package's __init__.py)."""
    package = tmp_path / "ufcctl"
    files = {
        "__init__.py": "",
        "nodeside/__init__.py": "",
        "nodeside/agent.py": "import json\nfrom ..engine import client\nfrom ufcctl.domain import pure\n",
        "engine/__init__.py": "from ufcctl.engine import runner\n",
        "engine/client.py": "from __future__ import annotations\nimport ssl\n",
        "engine/runner.py": "import yaml\n",
        "domain/__init__.py": "",
        "domain/pure.py": "from dataclasses import dataclass\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    allowed = dict.fromkeys(["ufcctl", "ufcctl.engine", "ufcctl.engine.client", "ufcctl.domain"], "x")
    assert _nodeside_violations(package, {**allowed, "ufcctl.domain.pure": "x"}) == [
        "ufcctl.engine imports ufcctl.engine.runner: not in NODESIDE_ALLOWED",
        "ufcctl.engine.runner imports yaml: not the standard library",
    ]
    (package / "engine/__init__.py").write_text("")
    assert _nodeside_violations(package, {**allowed, "ufcctl.domain.pure": "x"}) == []
    assert _nodeside_violations(package, allowed) == [
        "ufcctl.nodeside.agent imports ufcctl.domain.pure: not in NODESIDE_ALLOWED"
    ]

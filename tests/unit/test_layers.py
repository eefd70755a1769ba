"""The import direction of docs/architecture.md holds: cli -> app -> engine/domain; domain does no I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

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

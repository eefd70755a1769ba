"""What a molecule scenario copies of tests/lab_standins into its instance runs there with the
instance's own python3: it may import the standard library and what was copied with it, nothing else.

CI failed on this (molecule image_preheat: `No module named 'tests.lab_build'`, from
upstream_registry/image.py). The copies are read from the scenarios' playbooks, so a new copy task is
checked without being listed here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import import_closure

ROOT = Path(__file__).resolve().parents[3]
STANDINS = "tests/lab_standins/"
COPY = ("ansible.builtin.copy", "copy")


def _tasks(play: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for key in ("pre_tasks", "tasks", "post_tasks") for t in play.get(key) or []
            if isinstance(t, dict)]


def copied_standins(molecule: Path) -> dict[str, set[str]]:
    """Scenario -> the paths under tests/lab_standins/ its playbooks copy into the instance."""
    copied: dict[str, set[str]] = {}
    for playbook in sorted(molecule.glob("*/*.yml")):
        for play in yaml.safe_load(playbook.read_text()) or []:
            for task in _tasks(play) if isinstance(play, dict) else []:
                args = next((task[k] for k in COPY if isinstance(task.get(k), dict)), None)
                src = str((args or {}).get("src") or "")
                if STANDINS not in src:
                    continue
                rel = src.split(STANDINS, 1)[1]
                items = task.get("loop") or task.get("with_items") or [None]
                names = {rel.replace("{{ item }}", str(item)) if item is not None else rel for item in items}
                copied.setdefault(playbook.parent.name, set()).update(n.rstrip("/") for n in names)
    return copied


def foreign_imports(tests_dir: Path, copied: set[str]) -> list[str]:
    """Imports reachable from the copied files that the instance lacks: not the standard library and
    not a copied module of tests/lab_standins/."""
    standins = tests_dir / "lab_standins"
    start = sorted(p for rel in copied for p in ([standins / rel] if rel.endswith(".py")
                                                 else (standins / rel).rglob("*.py")))
    packages = {"tests", "tests.lab_standins"}  # the namespace and the copied __init__.py: not below them
    there = {"tests.lab_standins." + rel.removesuffix(".py").replace("/", ".") for rel in copied
             if rel != "__init__.py"}
    def copied_module(name: str) -> bool:
        return name in packages or any(name == t or name.startswith(f"{t}.") for t in there)

    bad = []
    for module, names in sorted(import_closure(tests_dir, start).items()):
        if not copied_module(module):
            continue  # reached only through an import reported below
        for name in sorted(names):
            first = name.split(".")[0]
            if first == "tests":
                if not copied_module(name):
                    bad.append(f"{module} imports {name}: not copied into the instance")
            elif first != "__future__" and first not in sys.stdlib_module_names:
                bad.append(f"{module} imports {name}: not the standard library")
    return bad


def test_the_scenarios_copies_are_found() -> None:
    assert copied_standins(ROOT / "molecule").get("image_preheat") == {"__init__.py", "upstream_registry"}


@pytest.mark.parametrize("scenario", sorted(copied_standins(ROOT / "molecule")))
def test_what_a_scenario_copies_imports_only_the_stdlib_and_itself(scenario: str) -> None:
    assert foreign_imports(ROOT / "tests", copied_standins(ROOT / "molecule")[scenario]) == []


def test_the_rule_catches_an_import_of_what_was_not_copied(tmp_path: Path) -> None:
    """The image.py of f35608f: its OCI constants from tests/lab_build (not copied), reached through
    a relative import; a third-party import is caught the same way."""
    tests_dir = tmp_path / "tests"
    files = {
        "lab_standins/__init__.py": "",
        "lab_standins/upstream_registry/__init__.py": "",
        "lab_standins/upstream_registry/push.py": "import json\nfrom . import image\n",
        "lab_standins/upstream_registry/image.py":
            "from __future__ import annotations\nfrom tests.lab_build.images import MANIFEST_TYPE\n",
        "lab_standins/upstream_registry/registry.py": "import yaml\n",
        "lab_build/__init__.py": "",
        "lab_build/images.py": "MANIFEST_TYPE = 'x'\n",
    }
    for name, text in files.items():
        (tests_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (tests_dir / name).write_text(text)
    copied = {"__init__.py", "upstream_registry"}
    assert foreign_imports(tests_dir, copied) == [
        "tests.lab_standins.upstream_registry.image imports tests.lab_build.images: "
        "not copied into the instance",
        "tests.lab_standins.upstream_registry.registry imports yaml: not the standard library",
    ]
    (tests_dir / "lab_standins/upstream_registry/image.py").write_text("MANIFEST_TYPE = 'x'\n")
    (tests_dir / "lab_standins/upstream_registry/registry.py").write_text("import json\n")
    assert foreign_imports(tests_dir, copied) == []

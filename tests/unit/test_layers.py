"""The import direction of docs/architecture.md holds: cli -> app -> engine/domain; domain does no I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pyimports import imported_modules as _imports
from tests.helpers.pyimports import imported_names as _names

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


# The lab package (ufcctl/lab/) keeps the same layers inside one package; its modules are told apart
# by name. Nothing else in ufcctl imports it except the command registration, and it never imports
# the emulators of the checkout's lab/ directory (it runs them as processes: ufcctl/lab/emulators.py).
LAB_CLI = frozenset({"cli"})
LAB_ENGINE = frozenset({"podman", "debootstrap", "sshkey", "hostlimits", "emulators"})
LAB_REGISTRATION = Path("cli/main.py")


def _lab_layer(module: str) -> str:
    return "cli" if module in LAB_CLI else "engine" if module in LAB_ENGINE else "app"


def _lab_import_problem(layer: str, name: str) -> str | None:
    parts = name.split(".")
    if parts[0] in ("lab", "tests"):
        return "the emulators and tests are run as processes, never imported"
    if parts[0] in ENGINE_ONLY and layer != "engine":
        return f"only the lab's engine modules ({', '.join(sorted(LAB_ENGINE))}) run processes"
    if parts[:2] == ["ufcctl", "lab"] and len(parts) > 2 and _lab_layer(parts[2]) in FORBIDDEN.get(layer, ()):
        return f"a lab {layer} module imports the lab's {_lab_layer(parts[2])} layer"
    if parts[0] == "ufcctl" and len(parts) > 1 and parts[1] in FORBIDDEN.get(layer, ()):
        return f"a lab {layer} module imports ufcctl's {parts[1]} layer"
    return None


def lab_layer_violations(package: Path) -> list[str]:
    """Every import in and around `package`/lab that breaks the lab package's rules."""
    lab = package / "lab"
    bad = []
    for path in sorted(lab.rglob("*.py")):
        layer = _lab_layer(path.stem)
        for name in sorted(_names(path)):
            problem = _lab_import_problem(layer, name)
            if problem:
                bad.append(f"{path.relative_to(package)} imports {name}: {problem}")
    for path in sorted(package.rglob("*.py")):
        if lab in path.parents or path.relative_to(package) == LAB_REGISTRATION:
            continue
        bad += [f"{path.relative_to(package)} imports {name}: only {LAB_REGISTRATION} may import the lab"
                for name in sorted(_names(path)) if name == "ufcctl.lab" or name.startswith("ufcctl.lab.")]
    return bad


def test_lab_package_layers() -> None:
    assert (PACKAGE / "lab" / "cli.py").is_file()  # the rule below would pass on a missing package
    assert not lab_layer_violations(PACKAGE), "\n".join(lab_layer_violations(PACKAGE))


def test_lab_rule_catches_violations(tmp_path: Path) -> None:
    files = {
        "lab/layout.py": "import subprocess\n",  # app-level runs a process
        "lab/podman.py": "from ufcctl.lab import lab\n",  # engine imports the lab's app layer
        "lab/npu.py": "from ufcctl.lab.cli import lab\n",  # app imports the lab's cli
        "lab/image.py": "import lab.npu_emulator\n",  # the emulator directory
        "lab/emulators.py": "import subprocess\nfrom ufcctl.errors import RunFailed\n",  # allowed
        "lab/cli.py": "from ufcctl.lab.lab import lab_up\nfrom ufcctl.cli import numbers\n",  # allowed
        "app/deploy.py": "from ufcctl.lab.podman import Podman\n",  # outside the lab
        "cli/main.py": "from ufcctl.lab import cli\n",  # the registration: allowed
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = {line.split(" imports ")[0] for line in lab_layer_violations(tmp_path)}
    assert found == {"lab/layout.py", "lab/podman.py", "lab/npu.py", "lab/image.py", "app/deploy.py"}

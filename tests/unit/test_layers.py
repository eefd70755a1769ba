"""The import rules of docs/architecture.md hold for every module of the package.

Each module has a layer: cli -> app -> engine + domain, report beside app (reads result types).
Most packages are one layer (`cli/`, `app/`, `domain/`, `engine/`, `report/`); the subsystem
packages keep the same layers inside themselves and name them per module:
- `rollout/`: `store.py`, `storefile.py`, `storerecords.py`, `storedurations.py` are adapters (engine:
  sqlite3); the rest is app;
- `lab/`: `podman`, `debootstrap`, `sshkey`, `hostlimits`, `emulators` are engine (they run
  processes); the rest is app. Its commands are `cli/lab.py`, the only module outside the package
  that imports it, and the lab never imports the checkout's emulators (`tests/lab_standins/`) or the
  tests;
- `nodeside/`: programs that run on nodes with their own python3: the standard library and the
  modules listed in NODESIDE_ALLOWED only (checked on the whole import closure). `files` (the one
  atomic writer) is engine too: the controller's writes go through it (engine/files.py).
The top-level `errors.py`, `paths.py` and `__init__.py` are shared by every layer.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers.pyimports import import_closure, imported_names

PACKAGE = Path(__file__).resolve().parents[2] / "ufcctl"

# layer -> layers it must never import
FORBIDDEN = {
    "domain": {"engine", "app", "cli", "report", "nodeside"},
    "engine": {"app", "cli", "report", "nodeside"},
    "report": {"app", "cli", "nodeside"},
    "app": {"cli"},
    "cli": {"nodeside"},
}
# modules that act on the outside world: only engine-level modules import them
ENGINE_ONLY = {"ansible_runner", "subprocess", "sqlite3"}
DOMAIN_NO_IO = {"logging", "subprocess", "sqlite3", "socket", "shutil"}
SHARED = {"errors", "paths", "__init__"}
SUBSYSTEM_LAYERS = {
    "rollout": {"store": "engine", "storefile": "engine", "storerecords": "engine",
                "storedurations": "engine"},
    "lab": {"podman": "engine", "debootstrap": "engine", "sshkey": "engine",
            "hostlimits": "engine", "emulators": "engine"},
    "nodeside": {"nfs_copy": "engine", "systemctl": "engine", "files": "engine"},
}
SUBSYSTEM_DEFAULT = {"rollout": "app", "lab": "app", "nodeside": "nodeside"}
LAB_REGISTRATION = "cli/lab.py"


def layer_of(parts: tuple[str, ...]) -> str | None:
    """The layer of module ufcctl.<parts...> (None: a shared top-level module)."""
    if not parts or (len(parts) == 1 and parts[0] in SHARED):
        return None
    top = parts[0]
    if top in SUBSYSTEM_DEFAULT:
        return SUBSYSTEM_LAYERS.get(top, {}).get(parts[1] if len(parts) > 1 else "", SUBSYSTEM_DEFAULT[top])
    return top


def _own_parts(package: Path, path: Path) -> tuple[str, ...]:
    parts = path.relative_to(package).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts


def layer_violations(package: Path) -> list[str]:
    """Every import in `package` that breaks the rules in the module docstring (nodeside aside)."""
    bad = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        layer = layer_of(_own_parts(package, path))
        top = rel.split("/")[0]
        for name in sorted(imported_names(path)):
            parts = name.split(".")
            problem = None
            if parts[0] in ENGINE_ONLY and layer not in ("engine", None):
                problem = f"only engine-level modules import {parts[0]}"
            elif parts[0] in DOMAIN_NO_IO and layer == "domain":
                problem = "the domain does no I/O"
            elif parts[0] in ("lab", "tests"):
                problem = "the checkout's emulators and tests are never imported by the package"
            elif parts[0] == "ufcctl" and len(parts) > 1:
                target = layer_of(tuple(parts[1:]))
                if target in FORBIDDEN.get(layer or "", ()):
                    problem = f"a {layer} module imports the {target} layer"
                elif parts[1] == "lab" and top != "lab" and rel != LAB_REGISTRATION:
                    problem = f"only {LAB_REGISTRATION} imports the lab package"
            if problem:
                bad.append(f"{rel} imports {name}: {problem}")
    return bad


def test_every_module_imports_by_the_rules() -> None:
    assert (PACKAGE / "cli" / "lab.py").is_file() and (PACKAGE / "rollout" / "store.py").is_file()
    bad = layer_violations(PACKAGE)
    assert not bad, "\n".join(bad)


def test_every_module_has_a_known_layer() -> None:
    unknown = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if layer_of(_own_parts(PACKAGE, p)) not in {*FORBIDDEN, "nodeside", None}]
    assert not unknown, f"add these to the layer map here and in docs/architecture.md: {unknown}"


@pytest.mark.parametrize(("rel", "text", "broken"), [
    ("domain/x.py", "from ufcctl.engine.runner import run_playbook\n", True),
    ("domain/x.py", "import logging\n", True),
    ("domain/x.py", "from ufcctl.domain.inventory import model\n", False),
    ("app/x.py", "import subprocess\n", True),
    ("app/x.py", "from ufcctl.cli import numbers\n", True),
    ("app/x.py", "from ufcctl.rollout.store import StateStore\n", False),
    ("engine/x.py", "from ufcctl.rollout import executor\n", True),  # engine imports an app module
    ("engine/x.py", "import subprocess\n", False),
    ("rollout/store.py", "import sqlite3\n", False),
    ("rollout/executor.py", "import sqlite3\n", True),
    ("report/x.py", "from ufcctl.app import deploy\n", True),
    ("lab/layout.py", "import subprocess\n", True),
    ("lab/podman.py", "from ufcctl.lab import lab\n", True),
    ("lab/npu.py", "from ufcctl.cli.lab import up\n", True),
    ("lab/image.py", "import tests.lab_standins.npu_emulator\n", True),
    ("lab/emulators.py", "import subprocess\nfrom ufcctl.errors import RunFailed\n", False),
    ("cli/lab.py", "from ufcctl.lab.lab import lab_up\nfrom ufcctl.cli import numbers\n", False),
    ("cli/main.py", "from ufcctl.lab.lab import lab_up\n", True),  # only cli/lab.py imports the lab
    ("app/deploy.py", "from ufcctl.lab.podman import Podman\n", True),
    ("cli/main.py", "from ufcctl.cli import lab\n", False),
    ("cli/x.py", "from ufcctl.nodeside import etcd_agent\n", True),
])
def test_the_rules_catch_violations(tmp_path: Path, rel: str, text: str, broken: bool) -> None:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    assert bool(layer_violations(tmp_path)) is broken, layer_violations(tmp_path)


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
    "ufcctl.domain.etcd.defrag_metrics": "the agent's textfile metrics: pure text",
    "ufcctl.domain.etcd.defrag_result": "what a defrag run did, per member: pure dataclasses (dataclasses)",
    "ufcctl.domain.etcd.backup": "snapshot file names, .sha256 lines, retention: pure (re, time)",
    "ufcctl.engine": "package docstring",
    "ufcctl.engine.etcd_client": "client of etcd's JSON gateway: http.client, ssl, json",
    "ufcctl.engine.etcd_wire": "the gateway's encoding and answers read into domain types: base64, json",
    "ufcctl.engine.http_get": "one HTTP(S) request under a deadline and a size cap: http.client, ssl",
    "ufcctl.domain.urls": "credentials in URLs, found and masked: re",
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


# Role Python (issue 27), in two sides:
# - node-side: roles/*/library/ and roles/*/module_utils/ run on the nodes with their own python3
#   (AnsiballZ ships ansible.module_utils with them): the standard library and ansible.module_utils
#   only; an optional third-party import guarded by `except ImportError` is named in NODE_OPTIONAL;
# - controller-side: roles/*/{filter,lookup,action}_plugins/ and playbooks/action_plugins/ run in
#   ansible-playbook's Python, which imports the installed ufcctl package: they adapt ufcctl.domain
#   (and the shared ufcctl.errors); an engine module they need is named in PLUGIN_ENGINE_ALLOWED.
REPO = PACKAGE.parent
NODE_DIRS = ("library", "module_utils")
CONTROLLER_DIRS = ("filter_plugins", "lookup_plugins", "action_plugins")
NODE_OPTIONAL = {
    "cryptography": "etcd_probe reads the CA key's curve when python3-cryptography is there (guarded)",
}
PLUGIN_ENGINE_ALLOWED = {
    "ufcctl.engine.pki_files": "the etcd and kube_control_plane PKI lookups read the controller's CA "
    "files; the reading is shared, the judging is domain/*/pki.py",
    "ufcctl.engine.k8s_schemas": "k8s_manifests validates against the installed kubernetes-validate "
    "schemas (package data, read-only), as `ufcctl manifests` does",
}


def role_python(repo: Path) -> dict[str, list[Path]]:
    """Every Python file of the roles and playbooks by side ("node" or "controller")."""
    out: dict[str, list[Path]] = {"node": [], "controller": []}
    for side, dirs in (("node", NODE_DIRS), ("controller", CONTROLLER_DIRS)):
        for folder in dirs:
            out[side] += sorted((repo / "roles").glob(f"*/{folder}/*.py"))
    out["controller"] += sorted((repo / "playbooks").glob("action_plugins/*.py"))
    return out


def role_plugin_violations(repo: Path) -> list[str]:
    bad = []
    files = role_python(repo)
    for path in files["node"]:
        for name in sorted(imported_names(path)):
            first = name.split(".")[0]
            if first in sys.stdlib_module_names or first in NODE_OPTIONAL or first == "__future__":
                continue
            if not name.startswith("ansible.module_utils."):
                bad.append(f"{path.relative_to(repo)} imports {name}: node-side code imports the "
                           "standard library and ansible.module_utils only")
    for path in files["controller"]:
        for name in sorted(imported_names(path)):
            parts = name.split(".")
            if parts[0] != "ufcctl" or len(parts) < 2 or parts[1] in ("domain", "errors"):
                continue
            if ".".join(parts[:3]) not in PLUGIN_ENGINE_ALLOWED:
                bad.append(f"{path.relative_to(repo)} imports {name}: role plugins adapt ufcctl.domain "
                           "only (an exception goes in PLUGIN_ENGINE_ALLOWED with its reason)")
    return bad


def test_role_plugins_import_by_the_rules() -> None:
    files = role_python(REPO)
    assert len(files["node"]) >= 10 and len(files["controller"]) >= 12, files
    bad = role_plugin_violations(REPO)
    assert not bad, "\n".join(bad)


def test_plugin_engine_exceptions_are_used() -> None:
    used = {".".join(n.split(".")[:3]) for p in role_python(REPO)["controller"] for n in imported_names(p)}
    assert set(PLUGIN_ENGINE_ALLOWED) <= used, "no longer imported: drop from PLUGIN_ENGINE_ALLOWED"


@pytest.mark.parametrize(("rel", "text", "broken"), [
    ("roles/r/library/m.py", "import json\nfrom ansible.module_utils.basic import AnsibleModule\n", False),
    ("roles/r/library/m.py", "from ansible.module_utils.ufcctl_systemd import unit_state\n", False),
    ("roles/r/library/m.py", "from ufcctl.domain.etcd import rule\n", True),
    ("roles/r/library/m.py", "import yaml\n", True),
    ("roles/r/library/m.py", "from ansible.plugins.action import ActionBase\n", True),
    ("roles/r/module_utils/ufcctl_x.py", "import requests\n", True),
    ("roles/r/filter_plugins/f.py", "import yaml\nfrom ufcctl.domain.images import mirrors\n", False),
    ("roles/r/filter_plugins/f.py", "from ufcctl.engine.runner import run_playbook\n", True),
    ("roles/r/lookup_plugins/l.py", "from ufcctl.engine.pki_files import bytes_of\n", False),
    ("roles/r/action_plugins/a.py", "from ufcctl.app import deploy\n", True),
    ("roles/r/action_plugins/a.py", "from ufcctl.errors import UfcError\n", False),
    ("playbooks/action_plugins/g.py", "from ufcctl.rollout import gate\n", True),
    ("playbooks/action_plugins/g.py", "import socket\nfrom ansible.plugins.action import ActionBase\n",
     False),
])
def test_the_role_plugin_rules_catch_violations(tmp_path: Path, rel: str, text: str, broken: bool) -> None:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    assert bool(role_plugin_violations(tmp_path)) is broken, role_plugin_violations(tmp_path)


# Where a module_utils file shared with the package may live: a pure domain module (the controller
# needs it too), or a node-side program's helper (the node-side programs need it too).
SHARED_MODULE_UTILS_HOMES = (PACKAGE / "domain", PACKAGE / "nodeside")


def test_module_utils_shared_with_the_package_are_domain_or_nodeside_files() -> None:
    """A module_utils file the package needs too is a symlink to a stdlib-only module of ufcctl/domain
    (pure) or ufcctl/nodeside (the node-side programs' own helpers): one implementation; the node-side
    rule above then holds for that module, and it imports nothing of ufcctl (the nodes have none)."""
    links = [p for p in (REPO / "roles").glob("*/module_utils/*.py") if p.is_symlink()]
    names = {link.name for link in links}
    assert {"ufcctl_manifest.py", "ufcctl_files.py", "ufcctl_cordon.py"} <= names, names
    for link in links:
        target = link.resolve()
        assert any(target.is_relative_to(home) for home in SHARED_MODULE_UTILS_HOMES), (link, target)
        assert target.is_file(), (link, target)
        assert not [n for n in imported_names(target) if n.split(".")[0] == "ufcctl"], (link, target)
        assert not Path(link.readlink()).is_absolute(), f"{link}: a relative link survives a copy of the tree"

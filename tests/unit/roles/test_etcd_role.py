"""roles/etcd agrees with ufcctl's Python side: defaults, the shipped node-side zip, filters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.helpers.pyimports import import_closure, load_file, source_of
from ufcctl.domain.etcd.rule import DEFAULT_RULE
from ufcctl.domain.etcd.settings import ROLE_DEFAULTS
from ufcctl.domain.etcd.topology import CLUSTER_KINDS, apiserver_etcd_flags, clusters_from_groups

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "etcd"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


@pytest.mark.parametrize("kind", CLUSTER_KINDS, ids=[k.name for k in CLUSTER_KINDS])
def test_role_ports_match_the_python_topology(kind) -> None:
    assert (
        DEFAULTS[f"etcd_{kind.name}_client_port"],
        DEFAULTS[f"etcd_{kind.name}_peer_port"],
        DEFAULTS[f"etcd_{kind.name}_metrics_port"],
    ) == (kind.client_port, kind.peer_port, kind.metrics_port)


@pytest.mark.parametrize("key", sorted(ROLE_DEFAULTS))
def test_role_defaults_match_what_the_controller_assumes(key: str) -> None:
    assert DEFAULTS[f"etcd_{key}"] == ROLE_DEFAULTS[key]


def test_default_rule_is_the_parsers_default() -> None:
    assert DEFAULTS["etcd_defrag_rule"] == DEFAULT_RULE


def test_every_overridable_setting_has_a_role_default() -> None:
    assert {f"etcd_{k}" for k in ROLE_VARS["__etcd_common_settings"]} <= set(DEFAULTS)


BUILD = ROLE / "files" / "build_agent.py"


def _build(dest: Path, *args: str, env: dict[str, str] | None = None, python: tuple[str, ...] = ()):
    """files/build_agent.py run as the role runs it (the controller's Python), or as `python` says."""
    return subprocess.run(
        [*(python or (sys.executable,)), str(BUILD), *args, str(dest)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _copy_package(target: Path) -> Path:
    shutil.copytree(ROOT / "ufcctl", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent zip exactly as the role builds it (files/build_agent.py) for the nodes."""
    target = tmp_path_factory.mktemp("agent") / "ufcctl-etcd-agent.zip"
    first = _build(target, "--source", str(ROOT / "ufcctl"))
    again = _build(target, "--source", str(ROOT / "ufcctl"))
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["changed"] is True
    assert json.loads(again.stdout)["changed"] is False  # rewritten only when the content changes
    return target


def test_shipped_zip_holds_the_nodeside_import_closure(shipped_copy: Path) -> None:
    """build_agent.py's own walk agrees with the one tests/unit/test_layers.py checks the rule with."""
    package = ROOT / "ufcctl"
    closure = import_closure(package, sorted((package / "nodeside").rglob("*.py")))
    sources = {name: source_of(package, name) for name in closure}
    assert None not in sources.values(), sources
    expected = {str(path.relative_to(ROOT)) for path in sources.values() if path is not None}
    with zipfile.ZipFile(shipped_copy) as archive:
        assert sorted(archive.namelist()) == sorted(expected)
        assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert "ufcctl/nodeside/etcd_agent.py" in expected and "ufcctl/engine/etcd_client.py" in expected


def test_shipped_zip_imports_alone_on_a_bare_interpreter(shipped_copy: Path, tmp_path: Path) -> None:
    """Extracted into an empty directory, the zip is all the programs import: -I -S leaves only the
    standard library and that directory on sys.path (no site-packages, no PYTHONPATH, no cwd)."""
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(shipped_copy) as archive:
        archive.extractall(unpacked)
    code = (
        f"import sys; sys.path.insert(0, {str(unpacked)!r}); "
        "import ufcctl.nodeside.etcd_agent, ufcctl.nodeside.etcd_join; "
        "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'ufcctl')))"
    )
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable  # the nodes' kind, else ours
    proc = subprocess.run(
        [python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    assert loaded and all(Path(f).is_relative_to(unpacked) for f in loaded), loaded


def test_shipped_zip_is_reproducible(shipped_copy: Path, tmp_path: Path) -> None:
    """Byte-identical when built again elsewhere, from a copy of the package with other paths and
    file times, and from the ufcctl that the Python finds (no --source, as the role default does)."""
    fresh = tmp_path / "fresh.zip"
    copied = tmp_path / "copied.zip"
    found = tmp_path / "found.zip"
    assert _build(fresh, "--source", str(ROOT / "ufcctl")).returncode == 0
    copy = _copy_package(tmp_path / "pkg" / "ufcctl")
    for path in copy.rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))  # copytree keeps the times: change them
    assert _build(copied, "--source", str(copy)).returncode == 0
    proc = _build(found, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == str(ROOT / "ufcctl")
    assert shipped_copy.read_bytes() == fresh.read_bytes() == copied.read_bytes() == found.read_bytes()


def test_build_finds_the_package_of_an_installed_wheel(tmp_path: Path) -> None:
    """Installed from a wheel, the role sits inside the package (ufcctl/share/roles/etcd): the
    package is the ufcctl this Python imports, not a path relative to the role."""
    site = tmp_path / "site"
    package = _copy_package(site / "ufcctl")
    script = package / "share" / "roles" / "etcd" / "files" / "build_agent.py"
    script.parent.mkdir(parents=True)
    shutil.copy(BUILD, script)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "agent.zip")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == str(package)


def test_build_without_a_ufcctl_package_names_the_variable(tmp_path: Path) -> None:
    proc = _build(tmp_path / "agent.zip", python=(sys.executable, "-I", "-S"))
    assert proc.returncode == 2
    assert "finds no ufcctl package" in proc.stderr and "etcd_defrag_agent_source" in proc.stderr
    bad = _build(tmp_path / "agent.zip", "--source", str(tmp_path))
    assert bad.returncode == 2
    assert f"etcd_defrag_agent_source={tmp_path}: {tmp_path}/nodeside/__init__.py does not" in bad.stderr
    assert not (tmp_path / "agent.zip").exists()


@pytest.mark.parametrize(
    ("path", "line", "message"),
    [
        pytest.param(
            "engine/etcd_client.py",
            "import yaml",
            "ufcctl/engine/etcd_client.py imports yaml: not the standard library",
            id="third-party-indirect",
        ),
        pytest.param(
            "nodeside/etcd_join.py",
            "from ufcctl.engine.nowhere import thing",
            "ufcctl/nodeside/etcd_join.py imports ufcctl.engine.nowhere: no such module",
            id="missing-module",
        ),
        pytest.param(
            "domain/etcd/__init__.py",
            "from . import topology",
            "ufcctl/domain/etcd/topology.py imports yaml",  # not a node's module: pulled in, refused
            id="relative-import-in-a-package",
        ),
    ],
)
def test_build_refuses_what_the_nodes_cannot_import(
    tmp_path: Path, path: str, line: str, message: str
) -> None:
    package = _copy_package(tmp_path / "ufcctl")
    (package / "domain" / "etcd" / "topology.py").write_text("import yaml\n")
    source = package / path
    source.write_text(source.read_text() + f"\n{line}\n")
    proc = _build(tmp_path / "agent.zip", "--source", str(package))
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("Error: ") and message in proc.stderr
    assert not (tmp_path / "agent.zip").exists()


def _system_python() -> str:
    found = shutil.which("python3", path="/usr/bin:/bin")
    if found is None:
        pytest.skip("no system python3 (the nodes' interpreter)")
    return found


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        pytest.param(
            ["-m", "ufcctl.nodeside.etcd_agent", "--check-rule", "dbQuotaUsage > 0.8"],
            0,
            "valid rule",
            id="agent-check-rule",
        ),
        pytest.param(
            ["-m", "ufcctl.nodeside.etcd_agent", "--check-rule", "dbQuotaUsage >"],
            2,
            "ends too early",
            id="agent-bad-rule",
        ),
        pytest.param(["-m", "ufcctl.nodeside.etcd_join", "--help"], 0, "--probe", id="member-help"),
    ],
)
def test_shipped_agent_runs_on_a_bare_interpreter(
    shipped_copy: Path, args: list[str], code: int, text: str
) -> None:
    """-I: no site-packages, no PYTHONPATH, as on a node with nothing but python3 and the zip."""
    proc = subprocess.run(
        [
            _system_python(),
            "-I",
            "-c",
            f"import sys, runpy; sys.path.insert(0, {str(shipped_copy)!r}); "
            f"sys.argv = {['x', *args[2:]]!r}; runpy.run_module({args[1]!r}, run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert text in proc.stdout + proc.stderr


def _filters() -> ModuleType:
    return load_file(ROLE / "filter_plugins" / "ufcctl_etcd.py", "ufcctl_etcd_filters")


GROUPS = {
    "etcd_core": ["a", "b", "c"],
    "etcd_events": ["a", "b", "c"],
    "etcd_pods": ["d"],
    "kube_node": ["w"],
}
HOSTVARS = {h: {"ansible_host": f"10.0.0.{i}", "unrelated": "x"} for i, h in enumerate("abcdw", 1)}


def test_filter_gives_the_domain_flags() -> None:
    filters = _filters().FilterModule().filters()
    flags = filters["ufcctl_etcd_apiserver_flags"](GROUPS, HOSTVARS)
    expected = apiserver_etcd_flags(clusters_from_groups(GROUPS, HOSTVARS))
    assert (flags["servers"], flags["overrides"]) == (expected.servers, expected.overrides)
    assert flags["overrides"].endswith(",/pods#https://10.0.0.4:2385")


def test_filter_cluster_facts_and_problems() -> None:
    filters = _filters().FilterModule().filters()
    clusters = filters["ufcctl_etcd_clusters"](GROUPS, HOSTVARS)
    assert [c["name"] for c in clusters] == ["core", "events", "pods"]
    assert clusters[0]["initial_cluster"] == (
        "a=https://10.0.0.1:2380,b=https://10.0.0.2:2380,c=https://10.0.0.3:2380"
    )
    assert filters["ufcctl_etcd_problems"](GROUPS, HOSTVARS, False) == [
        "group etcd_pods has a single member: use 3 or 5, or set ufc_allow_single_etcd: true (labs only)"
    ]
    assert filters["ufcctl_etcd_problems"](GROUPS, HOSTVARS, True) == []
    even = {**GROUPS, "etcd_pods": ["a", "d"]}
    assert "group etcd_pods has 2 members" in filters["ufcctl_etcd_problems"](even, HOSTVARS, True)[0]


@pytest.mark.parametrize(("rule", "error"), [("dbSize > 1", ""), ("dbSize >", "ends too early")])
def test_rule_filter(rule: str, error: str) -> None:
    message = _filters().FilterModule().filters()["ufcctl_etcd_rule_error"](rule)
    assert (message == "") if not error else (error in message)

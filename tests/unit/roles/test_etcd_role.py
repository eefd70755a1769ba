"""roles/etcd agrees with ufcctl's Python side: defaults, shipped agent modules (stdlib only), filters."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.helpers.pyimports import imported_modules as _imports
from ufcctl.domain.etcd.rule import DEFAULT_RULE
from ufcctl.domain.etcd.settings import ROLE_DEFAULTS
from ufcctl.domain.etcd.topology import CLUSTER_KINDS, apiserver_etcd_flags, clusters_from_groups

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "etcd"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
SHIPPED = ROLE_VARS["__etcd_agent_modules"]


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


@pytest.mark.parametrize("module", SHIPPED)
def test_shipped_modules_import_only_the_stdlib_and_each_other(module: str) -> None:
    shipped = {"ufcctl." + m.removesuffix(".py").replace("/", ".") for m in SHIPPED}
    bad = [
        name
        for name in _imports(ROOT / "ufcctl" / module)
        if name not in shipped and name != "__future__" and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert bad == [], f"{module} imports what the nodes do not get: {bad}"


@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent zip exactly as the role builds it (files/build_agent.py) for the nodes."""
    target = tmp_path_factory.mktemp("agent") / "ufcctl-etcd-agent.zip"
    build = [
        sys.executable,
        str(ROLE / "files" / "build_agent.py"),
        str(ROOT / "ufcctl"),
        str(target),
        *SHIPPED,
    ]
    first = subprocess.run(build, capture_output=True, text=True, check=True)
    again = subprocess.run(build, capture_output=True, text=True, check=True)
    assert '"changed": true' in first.stdout and '"changed": false' in again.stdout  # reproducible
    return target


def _system_python() -> str:
    found = shutil.which("python3", path="/usr/bin:/bin")
    if found is None:
        pytest.skip("no system python3 (the nodes' interpreter)")
    return found


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        pytest.param(
            ["-m", "ufcctl.app.etcd_agent", "--check-rule", "dbQuotaUsage > 0.8"],
            0,
            "valid rule",
            id="agent-check-rule",
        ),
        pytest.param(
            ["-m", "ufcctl.app.etcd_agent", "--check-rule", "dbQuotaUsage >"],
            2,
            "ends too early",
            id="agent-bad-rule",
        ),
        pytest.param(["-m", "ufcctl.app.etcd_join", "--help"], 0, "--probe", id="member-help"),
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
    spec = importlib.util.spec_from_file_location(
        "ufcctl_etcd_filters", ROLE / "filter_plugins" / "ufcctl_etcd.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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

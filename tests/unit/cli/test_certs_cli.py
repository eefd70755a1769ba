"""`ufcctl certs check` with the Ansible run replaced by node files kept in a dict: outputs, exit
codes 0/1/2, messages, and that bad input contacts no host."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.helpers.certs import make_pem
from ufcctl.app import certs as app
from ufcctl.cli.main import cli
from ufcctl.domain.certs.catalog import expected_on_host
from ufcctl.engine.run_result import HostResult, RunResult

YEAR = dt.datetime.now(dt.UTC) + dt.timedelta(days=365)


def _in(days: int) -> str:
    return make_pem("x", dt.datetime.now(dt.UTC) + dt.timedelta(days=days))


def _inventory(tmp_path: Path) -> Path:
    """3 control planes running the etcd clusters and 2 workers."""
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    children: dict[str, Any] = {
        "kube_control_plane": {"hosts": {f"cp{i}": {"ansible_host": f"10.0.0.{i}"} for i in (1, 2, 3)}},
        **{g: {"children": {"kube_control_plane": {}}} for g in ("etcd_core", "etcd_events", "etcd_pods")},
        "kube_node": {"hosts": {f"w{i}": {"ansible_host": f"10.0.1.{i}"} for i in (1, 2)}},
    }
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))
    (inv / "group_vars" / "all" / "vars.yml").write_text(
        yaml.safe_dump({"ufc_vip": "10.0.0.10", "ufc_vip_interface": "eth0"}))
    return inv


class Nodes:
    """The files on each node; the fake run answers from them as ufc_cert_read would."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], str] = {}
        self.down: set[str] = set()
        self.runs = 0

    def fill(self, inventory: Path) -> None:
        hosts = {**{f"cp{i}": {"kube_control_plane", "etcd_core"} for i in (1, 2, 3)},
                 **{f"w{i}": {"kube_node"} for i in (1, 2)}}
        for host, groups in hosts.items():
            for e in expected_on_host(host, groups, {}):
                if e.required:
                    self.files[(host, e.path)] = make_pem(f"{host}{e.path}", YEAR)

    def run(self, playbook: Path, hosts: list[Any], options: Any, *, on_result: Any, **_: Any) -> RunResult:
        self.runs += 1
        assert playbook.name == "certs-check.yml"
        results = {}
        for h in hosts:
            if h.name in self.down:
                results[h.name] = HostResult(h.name, unreachable=True, message="ssh: connect timed out")
                continue
            files = [{"path": p, "pem": self.files.get((h.name, p)), "error": ""}
                     for p in h.vars[app.PATHS_VAR]]
            on_result(h.name, {"changed": False, "ufc_certs": files})
            results[h.name] = HostResult(h.name, ok=1)
        return RunResult("run", playbook.name, "successful", 0, results, Path("/nonexistent"), 0.1)


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Nodes:
    state = tmp_path / "state"
    monkeypatch.setenv("UFC_STATE_DIR", str(state))
    for sub, names in (("etcd", ("ca.crt", "ufcctl.crt")), ("kubernetes", ("ca.crt",))):
        (state / "pki" / "default" / sub).mkdir(parents=True)
        for name in names:
            (state / "pki" / "default" / sub / name).write_text(make_pem(name, YEAR))
    fake = Nodes()
    fake.fill(tmp_path)
    monkeypatch.setattr(app, "run_playbook", fake.run)
    return fake


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["certs", "check", *args])


def test_all_good_lists_every_certificate_and_exits_0(tmp_path: Path, nodes: Nodes) -> None:
    result = _run("-i", str(_inventory(tmp_path)), "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    listed = {(c["host"], c["path"]) for c in doc["certificates"]}
    assert set(nodes.files) <= listed
    controller = {p for h, p in listed if h == "controller"}
    assert {Path(p).relative_to(tmp_path / "state" / "pki" / "default").as_posix() for p in controller} == {
        "etcd/ca.crt", "etcd/ufcctl.crt", "kubernetes/ca.crt"}
    assert len(listed) == len(nodes.files) + 3
    assert all(c["status"] == "ok" and 363 <= c["days_left"] <= 365 for c in doc["certificates"])
    assert doc["passed"] is True and doc["warn_days"] == 30


def test_text_output_has_the_columns(tmp_path: Path, nodes: Nodes) -> None:
    result = _run("-i", str(_inventory(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "threshold 30 days: ok" in result.stdout
    for column in ("host", "path", "subject", "issuer", "not after", "days", "status"):
        assert column in result.stdout


@pytest.mark.parametrize(
    ("change", "args", "named"),
    [
        pytest.param(lambda n: n.files.__setitem__(("cp2", "/etc/etcd/pki/member.crt"),
                                                   _in(3)),
                     (), "cp2:/etc/etcd/pki/member.crt (expires soon)", id="expires-soon"),
        pytest.param(lambda n: n.files.__setitem__(("w1", "/etc/kubernetes/pki/ca.crt"),
                                                   _in(-3)),
                     (), "w1:/etc/kubernetes/pki/ca.crt (expired)", id="expired"),
        pytest.param(lambda n: n.files.pop(("cp3", "/etc/etcd/pki/agent.crt")), (),
                     "cp3:/etc/etcd/pki/agent.crt (missing", id="missing"),
        pytest.param(lambda n: n.down.add("w2"), (), "w2:- (unreachable: ssh: connect timed out)",
                     id="unreachable"),
        pytest.param(lambda n: None, ("--warn-days", "100000"), "certificate(s) need attention",
                     id="threshold-above-every-lifetime"),
    ],
)
def test_problems_exit_1_naming_the_first(tmp_path: Path, nodes: Nodes, change: Any, args: tuple[str, ...],
                                          named: str) -> None:
    change(nodes)
    result = _run("-i", str(_inventory(tmp_path)), *args)
    assert result.exit_code == 1, result.output
    assert named in result.stderr and result.stderr.startswith("Error:")


def test_limit_reads_only_those_hosts_and_not_the_controller(tmp_path: Path, nodes: Nodes) -> None:
    result = _run("-i", str(_inventory(tmp_path)), "--limit", "w1", "-o", "json")
    assert result.exit_code == 0, result.output
    assert {c["host"] for c in json.loads(result.stdout)["certificates"]} == {"w1"}


def test_a_missing_controller_copy_fails(tmp_path: Path, nodes: Nodes) -> None:
    (tmp_path / "state" / "pki" / "default" / "etcd" / "ufcctl.crt").unlink()
    result = _run("-i", str(_inventory(tmp_path)))
    assert result.exit_code == 1 and "controller:" in result.stderr and "ufcctl.crt (missing" in result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        pytest.param(("--limit", "nosuchhost"), "--limit", id="limit-matches-nothing"),
        pytest.param(("--limit", ""), "--limit", id="empty-limit"),
        pytest.param(("--warn-days", "-1"), "--warn-days", id="negative-threshold"),
        pytest.param(("--warn-days", "ten"), "--warn-days", id="not-a-number"),
        pytest.param(("--warn-days", "10000000"), "--warn-days", id="absurd-threshold"),
        pytest.param(("-o", "yaml"), "--output", id="unknown-output"),
    ],
)
def test_bad_input_exits_2_and_contacts_no_host(tmp_path: Path, nodes: Nodes, args: tuple[str, ...],
                                                named: str) -> None:
    result = _run("-i", str(_inventory(tmp_path)), *args)
    assert result.exit_code == 2, result.output
    assert named in result.stderr and nodes.runs == 0


def test_a_bad_inventory_exits_2(tmp_path: Path, nodes: Nodes) -> None:
    inv = _inventory(tmp_path)
    (inv / "hosts.yml").write_text("all: [unclosed\n")
    result = _run("-i", str(inv))
    assert result.exit_code == 2 and "hosts.yml" in result.stderr and nodes.runs == 0
    missing = _run("-i", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "nope" in missing.stderr

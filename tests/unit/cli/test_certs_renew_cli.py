"""`ufcctl certs renew` with the Ansible runs and the etcd clusters replaced by fakes: the plan, the
order of the hosts, what each host's run is given, and the refusals (exit 2, no host touched)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.unit.cli.test_certs_cli import Nodes, _in, _inventory, nodes  # noqa: F401 (fixture)
from ufcctl.app import certs_renew as app
from ufcctl.cli.main import cli
from ufcctl.domain.etcd.status import ClusterStatus
from ufcctl.engine.run_result import HostResult, RunResult

CLUSTERS = ("core", "events", "pods")


class Cluster:
    """The clusters' health as `etcd status` reports it, and what the renewal did to them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
        (state / "pki" / "default" / "etcd" / "ufcctl.key").write_text("key")
        self.leaders = {c: "cp1" for c in CLUSTERS}
        self.sick: set[str] = set()
        self.runs: list[tuple[str, dict[str, Any], list[str]]] = []  # etcd's
        self.others: list[tuple[str, str, dict[str, Any], list[str]]] = []  # playbook, host, ...
        self.events: list[str] = []
        monkeypatch.setattr(app, "etcd_status", self.status)
        monkeypatch.setattr(app, "run_playbook", self.run)
        monkeypatch.setattr(app, "_hand_over", lambda t, host, done, log: self.events.append(
            f"hand over {t.cluster.name} from {host}") if self.leaders[t.cluster.name] == host else None)
        monkeypatch.setattr(app, "_settle",
                            lambda t, host: self.events.append(f"settle {t.cluster.name} {host}"))

    def status(self, inventory_dir: Path, cluster: str | None = None, **_: Any) -> list[ClusterStatus]:
        return [ClusterStatus(c, c not in self.sick, ("member cp2: unreachable",) if c in self.sick else (),
                              self.leaders[c], (), ()) for c in CLUSTERS]

    def run(self, playbook: Path, hosts: list[Any], options: Any, **_: Any) -> RunResult:
        assert playbook.name in ("certs-renew.yml", "certs-renew-kubeadm.yml", "certs-renew-registry.yml")
        assert len(hosts) == 1
        host, context = hosts[0].name, [h.name for h in options.context]
        if playbook.name == "certs-renew.yml":
            self.runs.append((host, dict(options.extravars), context))
            self.events.append(f"run {host}")
        else:
            self.others.append((playbook.name, host, dict(options.extravars), context))
            self.events.append(f"run {host} {playbook.name}")
        return RunResult("r", playbook.name, "successful", 0, {host: HostResult(host, ok=1)}, Path("/x"), 0.1)


@pytest.fixture
def etcd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: Nodes) -> Cluster:  # noqa: F811
    return Cluster(monkeypatch, tmp_path / "state")


def _renew(tmp_path: Path, *args: str) -> Result:
    inventory = tmp_path / "inv" if (tmp_path / "inv").exists() else _inventory(tmp_path)
    return CliRunner().invoke(cli, ["certs", "renew", "-i", str(inventory), *args])


def test_force_renews_host_by_host_leader_last_with_the_runs_settings(tmp_path: Path, etcd: Cluster) -> None:
    etcd.leaders["pods"] = "cp2"
    result = _renew(tmp_path, "--only", "etcd", "--force")
    assert result.exit_code == 0, result.output
    assert [host for host, _, _ in etcd.runs] == ["cp3", "cp2", "cp1"]  # cp2 leads one, cp1 two
    for host, extravars, context in etcd.runs:
        assert extravars["etcd_renew_restart"] == list(CLUSTERS)
        assert extravars["etcd_cert_renew_issued_before"].endswith("Z")
        assert sorted(context) == sorted({"cp1", "cp2", "cp3"} - {host})  # every member in view
    # handovers before the run of the host that leads, every cluster settled after each run
    assert etcd.events[:4] == ["run cp3", "settle core cp3", "settle events cp3", "settle pods cp3"]
    assert etcd.events[4:6] == ["hand over pods from cp2", "run cp2"]
    assert etcd.events[9:12] == ["hand over core from cp1", "hand over events from cp1", "run cp1"]
    # then each kube-apiserver restarted (out of haproxy) to load its renewed etcd client certificate
    assert etcd.events[15:] == [f"run cp{i} certs-renew-kubeadm.yml" for i in (1, 2, 3)]
    assert {v["kube_control_plane_certs_renew"] for _, _, v, _ in etcd.others} == {False}
    assert "renewed 10 certificate(s) in 6 step(s)" in result.stdout  # 3 x 3 + ufcctl's


def test_kubeadm_forced_renews_one_control_plane_at_a_time_with_haproxy_in_view(
        tmp_path: Path, etcd: Cluster, nodes: Nodes) -> None:  # noqa: F811
    inventory = _inventory(tmp_path)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    hosts["all"]["children"]["apiserver_lb"] = {"children": {"kube_control_plane": {}}}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    result = _renew(tmp_path, "--only", "kubeadm", "--force")
    assert result.exit_code == 0, result.output
    assert not etcd.runs
    assert [(p, h) for p, h, _, _ in etcd.others] == [
        ("certs-renew-kubeadm.yml", f"cp{i}") for i in (1, 2, 3)]
    for _, host, extravars, context in etcd.others:
        # only the cluster's first control plane refreshes the controller's copy of admin.conf (D19)
        assert extravars == {"kube_control_plane_certs_renew": True,
                             "kube_control_plane_renewed_first": host == "cp1"}
        assert sorted(context) == sorted({"cp1", "cp2", "cp3"} - {host})  # the haproxy hosts it delegates to
    # the lab's two: apiserver.crt and admin.conf on each control plane
    assert "renewed 6 certificate(s) in 3 step(s)" in result.stdout
    assert "step 1: kubeadm cp1: 2 certificate(s), kube-apiserver restarted out of haproxy's backends" \
        in result.stdout


def test_nothing_due_exits_0_and_touches_nothing(tmp_path: Path, etcd: Cluster) -> None:
    result = _renew(tmp_path)
    assert result.exit_code == 0, result.output
    assert "nothing to renew (fewer than 30 days left)" in result.stdout and not etcd.runs


def test_what_is_due_is_renewed_and_check_mode_only_prints_it(tmp_path: Path, etcd: Cluster, nodes: Nodes,  # noqa: F811
                                                              ) -> None:
    nodes.files[("cp2", "/etc/etcd/pki/member.crt")] = _in(10)
    checked = _renew(tmp_path, "--check", "-o", "json")
    assert checked.exit_code == 0, checked.output
    plan = json.loads(checked.stdout)["plan"]
    assert [(s["host"], [c["path"] for c in s["certificates"]]) for s in plan["steps"]] == [
        ("cp2", ["/etc/etcd/pki/member.crt"])]
    assert not etcd.runs
    assert _renew(tmp_path, "--within-days", "5").exit_code == 0 and not etcd.runs  # 10 days: not due at 5
    result = _renew(tmp_path)
    assert result.exit_code == 0, result.output
    ran = [(h, v["etcd_cert_renew_days"], "etcd_cert_renew_issued_before" in v) for h, v, _ in etcd.runs]
    assert ran == [("cp2", 30, False)]


@pytest.mark.parametrize(
    ("args", "change", "message"),
    [
        pytest.param(("--only", "haproxy"), None, "--only 'haproxy': unknown", id="unknown-only"),
        pytest.param(("--only", "etcd:nodes"), None, "no etcd cluster 'nodes'", id="unknown-cluster"),
        pytest.param(("--force", "--within-days", "9"), None, "--within-days and --force", id="both"),
        pytest.param((), "sick", "etcd cluster events is not healthy: member cp2: unreachable",
                     id="member-down"),
        pytest.param(("--force",), "missing", "cp3:/etc/etcd/pki/agent.crt: missing",
                     id="certificate-missing"),
        pytest.param(("--force",), "down", "cp2:-: unreachable", id="host-down"),
    ],
)
def test_refusals_exit_2_and_touch_nothing(tmp_path: Path, etcd: Cluster, nodes: Nodes,  # noqa: F811
                                           args: tuple[str, ...], change: str | None, message: str) -> None:
    if change == "sick":
        etcd.sick.add("events")
    elif change == "missing":
        nodes.files.pop(("cp3", "/etc/etcd/pki/agent.crt"))
    elif change == "down":
        nodes.down.add("cp2")
    result = _renew(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error:") and message in result.stderr, result.stderr
    assert not etcd.runs

"""`ufcctl health` against the loopback VictoriaMetrics stand-in: outputs, exit codes 0/1/2, messages."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.helpers.victoria_standin import victoria_standin
from ufcctl.cli.main import cli
from ufcctl.domain.monitoring.health import QUERIES

Vectors = dict[str, list[tuple[dict[str, str], float]]]


@pytest.fixture(autouse=True)
def _no_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig of this machine's reaches these tests (the API part is faked where it is tested)."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


DEAD = "127.0.0.2"  # loopback too; nothing listens there (the inventory wants one address per host)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind((DEAD, 0))
        return int(s.getsockname()[1])


def _inventory(tmp_path: Path, monitoring: dict[str, Any] | None) -> Path:
    """A valid inventory (3 control planes that run the etcd clusters) plus the given monitoring hosts."""
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    children: dict[str, Any] = {
        "kube_control_plane": {"hosts": {f"cp{i}": {"ansible_host": f"10.0.0.{i}"} for i in (1, 2, 3)}},
        **{g: {"children": {"kube_control_plane": {}}} for g in ("etcd_core", "etcd_events", "etcd_pods")},
    }
    if monitoring is not None:
        children["monitoring"] = {"hosts": monitoring}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))
    (inv / "group_vars" / "all" / "vars.yml").write_text(
        yaml.safe_dump({"ufc_vip": "10.0.0.10", "ufc_vip_interface": "eth0"})
    )
    return inv


def _healthy() -> Vectors:
    vectors: Vectors = {expr: [] for expr in QUERIES.values()}
    for cluster in ("core", "events", "pods"):
        for i in (1, 2, 3):
            labels = {"etcd_cluster": cluster, "member": f"cp{i}", "instance": f"10.0.0.{i}:2379"}
            vectors[QUERIES["etcd_up"]].append(({**labels, "job": "etcd"}, 1))
            vectors[QUERIES["etcd_leader"]].append((labels, 1 if i == 1 else 0))
            vectors[QUERIES["etcd_db_size"]].append((labels, 300 << 20))
            vectors[QUERIES["etcd_quota"]].append((labels, 8 << 30))
            vectors[QUERIES["defrag_success"]].append((labels, 1_700_000_000 + i))
            vectors[QUERIES["defrag_run"]].append((labels, 1_700_000_000 + i))
            vectors[QUERIES["defrag_result"]].append((labels, 1))
    vectors[QUERIES["vip_held"]] = [({"vip": "10.0.0.10", "instance": "lb1:9100"}, 1),
                                    ({"vip": "10.0.0.10", "instance": "lb2:9100"}, 0)]
    vectors[QUERIES["node_up"]] = [({"job": "node", "instance": "cp1:9100"}, 1)]
    vectors[QUERIES["npu_health"]] = [({"instance": "w1:9100", "id": "0"}, 1)]
    return vectors


def _unhealthy() -> Vectors:
    vectors = _healthy()
    vectors[QUERIES["alerts"]] = [
        ({"alertname": "NodeExporterDown", "alertstate": "firing", "severity": "warning",
          "instance": "w7:9100"}, 1)
    ]
    vectors[QUERIES["node_up"]].append(({"job": "node", "instance": "w7:9100"}, 0))
    vectors[QUERIES["npu_health"]].append(({"instance": "w1:9100", "id": "5"}, 0))
    return vectors


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["health", *args], env={"COLUMNS": "200"})  # rich: no wrapped cells


def test_healthy_cluster_in_text_exits_0(tmp_path: Path) -> None:
    with victoria_standin(_healthy()) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        result = _run("-i", str(inv))
    assert result.exit_code == 0, result.output
    out = result.stdout
    for section in ("Alerts firing: none", "etcd clusters: 3", "VIP: 1", "Nodes down: none",
                    "NPU chips unhealthy: none"):
        assert section in out
    assert f"asked http://127.0.0.1:{vm.port}/api/v1/query: healthy" in out
    assert "300.0 MiB" in out and "3.7%" in out and "2023-11-14 22:13:23Z" in out
    assert "lb1:9100" in out
    assert sorted(vm.asked) == sorted(QUERIES.values())
    assert result.stderr == ""


def test_alerts_and_problems_in_json_exit_1_after_the_report(tmp_path: Path) -> None:
    with victoria_standin(_unhealthy()) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        result = _run("-i", str(inv), "-o", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["healthy"] is False
    assert data["alerts"] == [
        {"alertname": "NodeExporterDown", "severity": "warning", "labels": {"instance": "w7:9100"}}
    ]
    assert data["nodes_down"] == ["w7:9100"]
    assert data["npu_unhealthy"] == [{"instance": "w1:9100", "id": "5"}]
    assert [e["leader"] for e in data["etcd"]] == ["cp1", "cp1", "cp1"]
    assert data["vip"] == [{"vip": "10.0.0.10", "holders": ["lb1:9100"]}]
    assert "Error: cluster not healthy: 1 alert(s) firing, 2 problem(s)" in result.stderr
    assert "Traceback" not in result.output


def test_problems_in_text_exit_1(tmp_path: Path) -> None:
    with victoria_standin(_unhealthy()) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        result = _run("-i", str(inv))
    assert result.exit_code == 1
    out = result.stdout
    assert "NOT HEALTHY" in out and "NodeExporterDown" in out and "Nodes down: 1" in out
    assert "problem: 1 node(s) down: w7:9100" in out
    assert "problem: 1 NPU chip(s) unhealthy: w1:9100 chip 5" in out
    assert "Error: cluster not healthy" in result.stderr


def test_the_first_host_that_answers_is_used(tmp_path: Path) -> None:
    dead = _closed_port()
    with victoria_standin(_healthy()) as vm:
        inv = _inventory(tmp_path, {
            "mon1": {"ansible_host": DEAD, "monitoring_vm_port": dead},
            "mon2": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port},
        })
        result = _run("-i", str(inv), "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source"] == f"http://127.0.0.1:{vm.port}/api/v1/query"


def test_no_host_answers_exits_1_naming_each_url_and_why(tmp_path: Path) -> None:
    dead = _closed_port()
    with victoria_standin(mode="http500") as vm:
        inv = _inventory(tmp_path, {
            "mon1": {"ansible_host": DEAD, "monitoring_vm_port": dead},
            "mon2": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port},
        })
        result = _run("-i", str(inv), "--timeout", "2")
    assert result.exit_code == 1
    error = result.stderr.splitlines()[0]
    assert error.startswith("Error: no monitoring host answered: ")
    assert f"http://{DEAD}:{dead}/api/v1/query: connection refused" in error
    assert f"http://127.0.0.1:{vm.port}/api/v1/query: HTTP 500" in error
    assert "Traceback" not in result.output


def test_a_slow_host_times_out(tmp_path: Path) -> None:
    with victoria_standin(mode="sleep", sleep=3) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        result = _run("-i", str(inv), "--timeout", "0.3")
    assert result.exit_code == 1
    assert f"http://127.0.0.1:{vm.port}/api/v1/query: no answer within 0.3 s" in result.stderr


NO_MONITORING = "has no `monitoring` hosts: add the group and run `ufcctl deploy`"


@pytest.mark.parametrize(
    ("monitoring", "message"),
    [
        pytest.param(None, NO_MONITORING, id="no-group"),
        pytest.param({}, NO_MONITORING, id="empty-group"),
        pytest.param(
            {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": "http"}},
            "host mon1: monitoring_vm_port 'http' is not a TCP port", id="bad-port",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, monitoring: dict[str, Any] | None, message: str
) -> None:
    inv = _inventory(tmp_path, monitoring)
    result = _run("-i", str(inv))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ")
    assert message in result.stderr.splitlines()[0]
    assert "Traceback" not in result.output


def test_the_default_port_is_8428(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1"}})
    from ufcctl.app.health import monitoring_urls

    assert monitoring_urls(inv) == ["http://127.0.0.1:8428"]


# -- what the Kubernetes API says (D19) -------------------------------------------------------------


def _with_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *states: Any,
              args: tuple[str, ...] = ()) -> Result:
    from tests.helpers.fake_api import FakeApi

    monkeypatch.setattr("ufcctl.app.health.api_client", FakeApi(*states).client)
    with victoria_standin(_healthy()) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        return _run("-i", str(inv), *args)


def test_notready_nodes_and_unavailable_workloads_from_the_api_make_it_unhealthy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.fake_api import cluster

    result = _with_api(tmp_path, monkeypatch, cluster(nodes=4, not_ready=1, unavailable=2))
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "Kubernetes API (read through /kc/admin.conf): 4 Node(s), 3 add-on workload(s)" in out
    assert "Nodes NotReady: 1" in out and "Workloads unavailable: 2" in out
    assert "problem: API: 1 of 4 Node(s) NotReady: node3" in out
    assert ("problem: API: 2 of 3 workload(s) unavailable: kube-system/DaemonSet/calico-node ready 3/4, "
            "volcano-system/Deployment/volcano-scheduler ready 0/1") in out
    assert "team-a" not in out  # a user's workload is not judged


def test_json_carries_the_api_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.fake_api import cluster

    result = _with_api(tmp_path, monkeypatch, cluster(nodes=4, not_ready=1, unavailable=1),
                       args=("-o", "json"))
    data = json.loads(result.stdout)
    assert data["healthy"] is False and data["nodes_not_ready"] == ["node3"]
    assert [(w["namespace"], w["kind"], w["name"], w["ready"], w["desired"])
            for w in data["workloads_unavailable"]] == [("kube-system", "DaemonSet", "calico-node", 3, 4)]
    assert data["api"]["kubeconfig"] == "/kc/admin.conf" and data["api_skipped"] is None


def test_a_healthy_api_keeps_the_cluster_healthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers.fake_api import cluster

    result = _with_api(tmp_path, monkeypatch, cluster())
    assert result.exit_code == 0, result.output
    assert "Nodes NotReady: none" in result.stdout and "Workloads unavailable: none" in result.stdout


def test_an_api_that_does_not_answer_is_a_problem_not_a_traceback(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    result = _with_api(tmp_path, monkeypatch, "The connection to the server 10.0.0.10:6443 was refused")
    assert result.exit_code == 1
    assert "Kubernetes API (read through /kc/admin.conf): no answer" in result.stdout
    assert ("problem: API: the API did not answer through /kc/admin.conf: kubectl get nodes -o failed "
            "(rc 1): The connection to the server 10.0.0.10:6443 was refused") in result.stdout
    assert "Traceback" not in result.output


def test_without_a_kubeconfig_the_api_is_noted_as_not_read(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with victoria_standin(_healthy()) as vm:
        inv = _inventory(tmp_path, {"mon1": {"ansible_host": "127.0.0.1", "monitoring_vm_port": vm.port}})
        result = _run("-i", str(inv), "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["api"] is None and data["api_skipped"].startswith("no kubeconfig (KUBECONFIG unset")

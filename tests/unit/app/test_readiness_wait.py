"""The readiness wait and read (ufcctl/app/readiness.py) against a fake kubectl: one list per kind and
read, retries until the deadline, the API's failures as findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.fake_api import WORKLOADS, FakeApi, cluster
from ufcctl.app.readiness import DEFAULT_READY_TIMEOUT, namespaces_of, read_once, wait_ready
from ufcctl.domain.inventory.model import Host, Inventory
from ufcctl.domain.readiness import addon_namespaces
from ufcctl.engine import kubectl as kubectl_module

NAMESPACES = addon_namespaces(None)


class Clock:
    """A fake monotonic clock that `sleep` moves; each kubectl read costs `read_cost` seconds."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_wait_ends_at_the_first_read_that_finds_everything_ready() -> None:
    api = FakeApi(cluster(not_ready=2, unavailable=2), cluster(unavailable=1), cluster())
    clock = Clock()
    seen = []
    view = wait_ready(api.kubectl(), "/kc/admin.conf", NAMESPACES, 600, poll=10, clock=clock,
                      sleep=clock.sleep, on_read=seen.append)
    assert view.ok and view.readiness is not None
    assert (view.readiness.nodes, view.readiness.workloads) == (3, 3)  # team-a's Deployment not judged
    assert api.reads == 3 and clock.sleeps == [10, 10]
    assert [v.ok for v in seen] == [False, False, True]
    # one Node list and one workload list per read, -o json, never a call per node
    assert [c[:2] for c in api.calls] == [["get", "nodes"], ["get", WORKLOADS]] * 3
    assert all("-o" in c and c[c.index("-o") + 1] == "json" for c in api.calls)
    assert all("--all-namespaces" in c for c in api.calls if c[1] == WORKLOADS)


def test_the_wait_stops_at_its_deadline_with_the_last_read() -> None:
    api = FakeApi(cluster(nodes=9, not_ready=7, unavailable=3))
    clock = Clock()
    view = wait_ready(api.kubectl(), "/kc/admin.conf", NAMESPACES, 95, poll=10, clock=clock,
                      sleep=clock.sleep)
    assert not view.ok
    assert api.reads == 10 and clock.now == 90  # a read at 0, 10, ..., 90; the next would be past 95
    assert view.problems(3) == [
        "7 of 9 Node(s) NotReady: node2, node3, node4 and 4 more",
        "3 of 3 workload(s) unavailable: kube-system/DaemonSet/calico-node ready 8/9, "
        "nfs-system/Deployment/nfs-provisioner ready 0/1, "
        "volcano-system/Deployment/volcano-scheduler ready 0/1",
    ]


def test_a_read_that_fails_is_retried_and_a_last_failure_is_named() -> None:
    api = FakeApi("The connection to the server 10.0.0.10:6443 was refused", cluster())
    clock = Clock()
    view = wait_ready(api.kubectl(), "/kc/admin.conf", NAMESPACES, 600, poll=10, clock=clock,
                      sleep=clock.sleep)
    assert view.ok and api.reads == 2

    down = FakeApi("The connection to the server 10.0.0.10:6443 was refused")
    clock = Clock()
    view = wait_ready(down.kubectl(), "/kc/admin.conf", NAMESPACES, 30, poll=10, clock=clock,
                      sleep=clock.sleep)
    assert not view.ok and view.readiness is None
    assert view.problems() == ["the API did not answer through /kc/admin.conf: kubectl get nodes -o failed "
                               "(rc 1): The connection to the server 10.0.0.10:6443 was refused"]


def test_one_read_reports_an_api_that_does_not_answer_instead_of_raising() -> None:
    api = FakeApi("Unable to connect to the server: dial tcp: i/o timeout")
    view = read_once(api.kubectl(), "/kc", NAMESPACES)
    assert not view.ok and view.error is not None and "i/o timeout" in view.error


def test_a_kubectl_that_does_not_answer_in_time_is_a_failure_not_a_traceback(tmp_path: Path) -> None:
    slow = tmp_path / "kubectl"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    assert kubectl_module._run([str(slow)], 1) == (124, "", "no answer within 1 s")
    assert kubectl_module._run([str(tmp_path / "missing")], 1)[0] == 127


def test_the_default_deadline_is_sized_for_16000_nodes() -> None:
    # ten 10%-waves of a DaemonSet rollout at 1-2 min each fit, with room (the constant's comment)
    assert 10 * 120 < DEFAULT_READY_TIMEOUT <= 3600


@pytest.mark.parametrize(("value", "wanted"), [
    pytest.param("storage", "storage", id="inventory-namespace"),
    pytest.param(None, "nfs-system", id="role-default"),
    pytest.param("{{ other }}", "nfs-system", id="template-not-resolved-here"),
])
def test_the_nfs_namespace_is_the_inventorys(value: str | None, wanted: str) -> None:
    hostvars = {} if value is None else {"nfs_provisioner_namespace": value}
    cp1 = Host("cp1", hostvars, frozenset({"all", "kube_control_plane"}))
    found = namespaces_of(Inventory("inv", {"cp1": cp1}, {}))
    assert wanted in found and {"kube-system", "volcano-system"} <= found
    assert len(found) == len(NAMESPACES)


def test_the_admin_conf_deploy_kept_comes_before_the_operators_kubeconfig(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The readiness wait and `ufcctl health` read this cluster, whatever KUBECONFIG points at."""
    from ufcctl.app.readiness import api_client, kept_kubeconfig

    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    operators = tmp_path / "other-cluster.conf"
    operators.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(operators))
    monkeypatch.setattr(kubectl_module, "find_kubectl", lambda: "/usr/bin/kubectl")
    cp1 = Host("cp1", {"ufc_cluster_name": "blue"}, frozenset({"all", "kube_control_plane"}))
    inventory = Inventory("inv", {"cp1": cp1}, {})
    kept = kept_kubeconfig(inventory)
    assert kept == tmp_path / "ufc" / "pki" / "blue" / "kubernetes" / "admin.conf"
    assert api_client(inventory)[1] == str(operators)  # none kept yet: the operator's
    kept.parent.mkdir(parents=True)
    kept.write_text("apiVersion: v1\nkind: Config\n")
    assert api_client(inventory)[1] == str(kept)
    assert api_client()[1] == str(operators)  # no inventory: the operator's


def test_kubectl_beside_ufcctls_python_is_found_without_path(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    monkeypatch.setattr(kubectl_module.sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert kubectl_module.find_kubectl() is None
    binary = python.parent / "kubectl"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert kubectl_module.find_kubectl() == str(binary)

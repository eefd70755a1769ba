"""`ufcctl remove-nodes --control-plane` (kind remove-control-plane): what may leave and when (plan_leave,
check_removal), the node's `ufcctl-etcd-member --leave` (only its own member, leader first handed over,
never a second remove on a rerun), and the kind's run (one host at a time, the stamp kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.fake_ansible import FakeAnsible
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli
from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus
from ufcctl.domain.etcd.membership import plan_leave
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.errors import InputError
from ufcctl.nodeside import etcd_join
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import remove_control_plane as rcp
from ufcctl.rollout.store import StateStore

CLUSTERS = ("core", "events")


def view(cluster: str = "core", names: tuple[str, ...] = ("cp1", "cp2", "cp3"), leader: str = "cp1",
         down: tuple[str, ...] = ()) -> ClusterView:
    ids = {n: str(i + 1) for i, n in enumerate(("cp1", "cp2", "cp3"))}
    members = tuple(Member(ids[n], n, (f"https://{n}:2379",)) for n in names)
    statuses = {n: MemberStatus(ids[n], ids[leader], 0, 0, 9, 2, 100 + int(ids[n])) for n in names
                if n not in down}
    return ClusterView(cluster, members, statuses, {n: "connection refused" for n in down})


# ---- plan_leave (ufcctl/domain/etcd/membership.py) ----------------------------------------------------

def test_a_follower_leaves_a_healthy_cluster_without_a_handover() -> None:
    plan = plan_leave(view(), "cp3")
    assert (plan.action, plan.member_id, plan.heir) == ("remove", "3", None)


def test_a_leader_hands_over_to_the_most_up_to_date_other_member_first() -> None:
    plan = plan_leave(view(leader="cp3"), "cp3")
    assert (plan.action, plan.heir) == ("remove", "cp2")  # cp2's raft index 102 > cp1's 101


def test_a_member_gone_already_is_nothing_to_do() -> None:
    assert plan_leave(view(names=("cp1", "cp2")), "cp3").action == "absent"


@pytest.mark.parametrize("cluster, reason", [
    (view(down=("cp2",)), "member cp2 unreachable"),
    (view(names=("cp3",), leader="cp3"), "last member"),
], ids=["unhealthy", "last-member"])
def test_an_unhealthy_cluster_or_its_last_member_is_refused(cluster: ClusterView, reason: str) -> None:
    plan = plan_leave(cluster, "cp3")
    assert plan.action == "refuse" and reason in plan.reason


# ---- ufcctl-etcd-member --leave (ufcctl/nodeside/etcd_join.py) ---------------------------------------

class FakeCluster:
    """A cluster that changes as the gateway calls say: leadership moves, members are removed."""

    def __init__(self, current: ClusterView):
        self.current = current
        self.cluster = current.cluster
        self.endpoints = [m.endpoint for m in current.members]
        self.calls: list[tuple[str, ...]] = []

    def view(self, with_last: bool = True) -> ClusterView:
        return self.current

    def gateway(self, endpoint: str) -> FakeCluster:
        self.calls.append(("gateway", endpoint))
        return self

    def move_leader(self, target_id: str) -> None:
        self.calls.append(("move_leader", target_id))
        heir = next(m.name for m in self.current.members if m.member_id == target_id)
        self.current = view(names=tuple(m.name for m in self.current.members), leader=heir)

    def first(self, call: str, member_id: str, avoid: str | None = None) -> None:
        assert call == "member_remove"
        self.calls.append(("member_remove", member_id, avoid or ""))
        names = tuple(m.name for m in self.current.members if m.member_id != member_id)
        self.current = view(names=names, leader=self.current.leader or "cp1")


def test_leave_hands_over_removes_only_its_own_member_through_another_then_a_rerun_changes_nothing() -> None:
    cluster = FakeCluster(view(leader="cp3"))
    code, result = etcd_join.leave(cluster, "cp3", timeout=5)  # type: ignore[arg-type]
    assert (code, result["changed"], result["leadership_to"]) == (0, True, "cp2")
    assert cluster.calls == [("gateway", "https://cp3:2379"), ("move_leader", "2"),
                             ("member_remove", "3", "https://cp3:2379")]
    # killed after the remove, the rerun (or resume) finds the member gone: no second member removed
    again = etcd_join.leave(cluster, "cp3", timeout=5)  # type: ignore[arg-type]
    assert again[0] == 0 and again[1]["changed"] is False and len(cluster.calls) == 3


def test_leave_refuses_an_unhealthy_cluster_and_touches_nothing() -> None:
    cluster = FakeCluster(view(down=("cp1",)))
    code, result = etcd_join.leave(cluster, "cp3", timeout=5)  # type: ignore[arg-type]
    assert code == etcd_join.EXIT_REFUSED and "not healthy" in result["error"] and cluster.calls == []


# ---- check_removal and the kind ---------------------------------------------------------------------

def cluster_inventory() -> Inventory:
    """cp1..cp3: control planes and members of core and events; w01: a worker."""
    cps = ("cp1", "cp2", "cp3")
    groups_of = frozenset({"all", "kube_control_plane", "apiserver_lb", "etcd_core", "etcd_events"})
    hosts = {n: Host(n, {}, groups_of) for n in cps}
    hosts["w01"] = Host("w01", {}, frozenset({"all", "kube_node"}))
    groups = {g: Group(g, hosts=cps) for g in groups_of - {"all"}}
    groups["kube_node"] = Group("kube_node", hosts=("w01",))
    return Inventory("inv", hosts, groups)


class Target:
    def __init__(self, name: str, current: ClusterView | None):
        self.cluster = type("C", (), {"name": name, "members": [type("M", (), {"host": h})() for h in
                                                                ("cp1", "cp2", "cp3")]})()
        self.client = self
        self.current = current

    def view(self, with_last: bool = True) -> ClusterView:
        if self.current is None:
            raise EtcdError(self.cluster.name, "connection refused")
        return self.current


@pytest.fixture()
def clusters(monkeypatch: pytest.MonkeyPatch) -> dict[str, ClusterView | None]:
    views: dict[str, ClusterView | None] = {c: view(c) for c in CLUSTERS}
    monkeypatch.setattr(rcp, "cluster_targets",
                        lambda path, only, inventory: [Target(c, views[c]) for c in views])
    return views


def request(limit: str = "cp3", **kw: Any) -> RolloutRequest:
    return rcp.one_at_a_time(RolloutRequest(Path("/inv"), batch=10, window=4, max_fail=50.0, limit=limit,
                                            options=rcp.remove_options(drain_timeout=60), **kw))


@pytest.mark.parametrize("limit, message", [
    ("cp3,w01", "selects w01: neither a control plane nor an etcd member"),
    ("cp1", "selects cp1, the first control plane"),
    ("kube_control_plane", "selects cp1, the first control plane"),
], ids=["worker", "first-control-plane", "every-control-plane"])
def test_workers_the_first_and_every_control_plane_are_refused(
        clusters: dict[str, ClusterView | None], limit: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        rcp.check_removal(request(limit), cluster_inventory())


@pytest.mark.parametrize("current, message", [
    (None, "etcd cluster events does not answer"),
    (view("events", down=("cp2",)), "etcd cluster events is not healthy: member cp2 unreachable"),
], ids=["no-answer", "member-down"])
def test_a_removal_from_an_unhealthy_cluster_is_refused(
        clusters: dict[str, ClusterView | None], current: ClusterView | None, message: str) -> None:
    clusters["events"] = current
    with pytest.raises(InputError, match=message) as refused:
        rcp.check_removal(request(), cluster_inventory())
    assert "nothing was touched" in refused.value.message


def test_a_cluster_the_host_left_already_is_not_asked_again(clusters: dict[str, ClusterView | None]) -> None:
    # killed after core's member remove: core lists cp1, cp2 and is healthy; events still has cp3 leading
    clusters["core"] = view("core", names=("cp1", "cp2"))
    clusters["events"] = view("events", leader="cp3")
    lines = rcp.check_removal(request(), cluster_inventory())
    assert lines == ["etcd core: cp3 left already",
                     "etcd events: cp3 leaves (it leads: leadership moves to cp2 first), 2 member(s) stay"]


def test_the_kind_runs_one_host_at_a_time_with_one_stamp(clusters: dict[str, ClusterView | None],
                                                         store: StateStore) -> None:
    assert KINDS.get("remove-control-plane") is rcp.KIND
    fake = FakeAnsible()
    req = request("cp2,cp3")
    assert (req.batch, req.window, req.max_fail, req.canary) == (1, 1, 0.0, 0)
    summary = runs.start(rcp.KIND, req, store, cluster_inventory(), run_fn=fake)
    assert summary.status == "done" and sorted(fake.starts) == ["cp2", "cp3"]
    options = fake.calls[0][2]
    # kubectl on the inventory's first control plane, named: the chunk's inventory lists targets first
    assert options.extravars == {"kube_node_remove_drain_timeout": 60,
                                 "kube_control_plane_remove_stamp": req.options["stamp"],
                                 "k8s_manifests_apply_host": "cp1"}
    assert [h.name for h in options.context] == ["cp1", "cp2", "cp3"]
    assert summary.steps["prepare"].endswith("kubectl (drain, delete node) on cp1")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=4, nodes_per_tor=4), "explicit")


def test_the_cli_refuses_a_worker_with_control_plane_in_one_line_and_touches_nothing(
        env: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["remove-nodes", "-i", str(env), "--limit", "npu00001",
                                      "--control-plane"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "selects npu00001: neither a control plane" in errors[0]
    assert not (tmp_path / "state").exists()


def test_without_the_flag_a_control_plane_is_refused_naming_the_flag(env: Path) -> None:
    result = CliRunner().invoke(cli, ["remove-nodes", "-i", str(env), "--limit", "cp2"])
    assert result.exit_code == 2 and "--control-plane" in result.output, result.output

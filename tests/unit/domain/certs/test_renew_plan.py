"""ufcctl/domain/certs/renew.py: what `ufcctl certs renew` renews, in which order, and what it refuses."""

from __future__ import annotations

import datetime as dt

import pytest

from ufcctl.domain.certs.catalog import expected_on_host
from ufcctl.domain.certs.check import EXPIRED, MISSING, OK, SOON, UNREACHABLE, CertRow
from ufcctl.domain.certs.renew import (
    ETCD_SIGNED,
    KUBEADM_RENEWED,
    PlanError,
    Selection,
    SiteCert,
    parse_only,
    plan_all,
    plan_renewal,
    successor,
)

NOW = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
CLUSTERS = ("core", "events", "pods")
# three control planes run all three clusters; cp4 is a control plane only; w1 a worker
MEMBERS = {c: ["cp1", "cp2", "cp3"] for c in CLUSTERS}
GROUPS = {**{f"cp{i}": {"kube_control_plane", "etcd_core", "etcd_events", "etcd_pods"} for i in (1, 2, 3)},
          "cp4": {"kube_control_plane"}, "w1": {"kube_node"}}
CONTROLLER_ROWS = [("controller", "/s/pki/default/etcd/ca.crt", "etcd CA (controller copy)"),
                   ("controller", "/s/pki/default/etcd/ufcctl.crt", "ufcctl's etcd client")]


def _rows(days: int = 700, status: str = OK, **overrides: tuple[int, str]) -> list[CertRow]:
    """Every catalog row of the hosts above at `days` left; overrides: 'host:path' -> (days, status)."""
    out = []
    listed = [(e.host, e.path, e.what) for h, g in GROUPS.items() for e in expected_on_host(h, g, {})]
    for host, path, what in listed + CONTROLLER_ROWS:
        left, state = overrides.get(f"{host}:{path}", (days, status))
        out.append(CertRow(host, path, what, state, "CN=x", "CN=ca", NOW + dt.timedelta(days=left), left))
    return out


def _plan(rows: list[CertRow], only: tuple[str, ...] = (), leaders: dict[str, str] | None = None,
          force: bool = False):  # noqa: ANN202
    return plan_renewal(rows, MEMBERS, leaders or {c: "cp1" for c in CLUSTERS}, parse_only(only, CLUSTERS),
                        within_days=30, force=force)


def test_nothing_due_is_an_empty_plan() -> None:
    plan = _plan(_rows())
    assert plan.empty and plan.count == 0 and not plan.problems


def test_force_renews_every_etcd_signed_certificate_and_no_ca() -> None:
    plan = _plan(_rows(), force=True)
    items = [*plan.controller, *(i for s in plan.steps for i in s.items)]
    renewed = {(i.host, i.path) for i in items}
    assert renewed == {(r.host, r.path) for r in _rows() if r.what in ETCD_SIGNED}
    assert not any(p.endswith("ca.crt") for _, p in renewed)
    # member, agent and kube-apiserver's etcd client on each member; the client cert alone on cp4
    assert {h: len(s.items) for h in ("cp1", "cp2", "cp3", "cp4") for s in plan.steps if s.host == h} == {
        "cp1": 3, "cp2": 3, "cp3": 3, "cp4": 1}
    assert [i.path for i in plan.controller] == ["/s/pki/default/etcd/ufcctl.crt"]
    assert not any(s.host == "w1" for s in plan.steps)


def test_leaders_go_last_and_a_member_certificate_restarts_every_member_of_its_host() -> None:
    plan = _plan(_rows(), force=True, leaders={"core": "cp1", "events": "cp1", "pods": "cp2"})
    assert [s.host for s in plan.steps] == ["cp3", "cp4", "cp2", "cp1"]
    by_host = {s.host: s for s in plan.steps}
    assert by_host["cp1"].leads == ("core", "events") and by_host["cp2"].leads == ("pods",)
    assert by_host["cp3"].restart == CLUSTERS and by_host["cp4"].restart == ()


def test_only_what_is_due_is_renewed_and_an_agent_certificate_alone_restarts_nothing() -> None:
    rows = _rows(**{"cp2:/etc/etcd/pki/agent.crt": (12, SOON), "cp3:/etc/etcd/pki/member.crt": (-1, EXPIRED),
                    # a CA about to expire is not renew's (a trust-bundle rotation)
                    "cp1:/etc/etcd/pki/ca.crt": (5, SOON)})
    plan = _plan(rows)
    assert [(s.host, [i.path for i in s.items], s.restart) for s in plan.steps] == [
        ("cp2", ["/etc/etcd/pki/agent.crt"], ()), ("cp3", ["/etc/etcd/pki/member.crt"], CLUSTERS)]
    assert [i.why for s in plan.steps for i in s.items] == ["12 days left, fewer than 30", "expired"]
    assert not plan.controller


def test_the_controller_certificate_alone_is_signed_in_the_first_members_run() -> None:
    plan = _plan(_rows(**{"controller:/s/pki/default/etcd/ufcctl.crt": (3, SOON)}))
    assert [(s.host, s.items, s.restart) for s in plan.steps] == [("cp1", (), ())]
    assert plan.count == 1


def test_etcd_cluster_narrows_to_its_members_and_leaves_the_controller() -> None:
    members = {**MEMBERS, "pods": ["cp3"]}
    rows = _rows()
    plan = plan_renewal(rows, members, {}, parse_only(("etcd:pods",), CLUSTERS), within_days=30, force=True)
    assert [s.host for s in plan.steps] == ["cp3"] and not plan.controller
    assert plan_renewal(rows, members, {}, parse_only(("etcd:pods", "etcd"), CLUSTERS), within_days=30,
                        force=True).count == _plan(rows, force=True).count


@pytest.mark.parametrize("status", [MISSING, UNREACHABLE])
def test_a_broken_chosen_certificate_is_a_problem(status: str) -> None:
    plan = _plan(_rows(**{"cp2:/etc/etcd/pki/member.crt": (0, status)}), force=True)
    assert plan.problems == (f"cp2:/etc/etcd/pki/member.crt: {status}",)


def test_a_broken_certificate_renew_does_not_handle_is_no_problem() -> None:
    assert not _plan(_rows(**{"w1:/etc/kubernetes/pki/ca.crt": (0, MISSING)})).problems


@pytest.mark.parametrize(("values", "message"), [
    (("kube",), "--only 'kube': unknown"),
    (("etcd:nodes",), "no etcd cluster 'nodes'"),
    (("haproxy",), "use one of: etcd, etcd:core, etcd:events, etcd:pods"),
])
def test_bad_only_is_refused(values: tuple[str, ...], message: str) -> None:
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_only(values, CLUSTERS)


def test_only_parses() -> None:
    assert parse_only((), CLUSTERS) == Selection(frozenset({"etcd", "kubeadm", "registry"}))
    assert parse_only(("kubeadm", "registry"), CLUSTERS) == Selection(frozenset({"kubeadm", "registry"}))
    assert parse_only(("etcd:core", "etcd:pods"), CLUSTERS).etcd_clusters == {"core", "pods"}
    assert parse_only(("etcd",), CLUSTERS).everything


def test_successor_prefers_a_renewed_member_then_the_most_up_to_date() -> None:
    indexes = {"cp1": 100, "cp2": 90, "cp3": 120}
    assert successor(indexes, "cp1", done={"cp2"}) == "cp2"
    assert successor(indexes, "cp1", done=set()) == "cp3"
    assert successor({"cp1": 5}, "cp1", done=set()) is None


# ---- every kind: etcd, then kubeadm's on the control planes, then the registry caches -------------------

CACHE_TLS = "/etc/ufcctl/registry-cache/tls.crt"


def _all(rows: list[CertRow], only: tuple[str, ...] = (), force: bool = False,
         sources: dict[str, SiteCert] | None = None):  # noqa: ANN202
    return plan_all(rows, MEMBERS, {c: "cp1" for c in CLUSTERS}, parse_only(only, CLUSTERS),
                    control_planes=["cp1", "cp2", "cp3", "cp4"], sources=sources or {},
                    within_days=30, force=force)


def _cache_row(host: str, sha: str, days: int = 300, status: str = OK) -> CertRow:
    return CertRow(host, CACHE_TLS, "registry cache TLS", status, "CN=cache", "CN=site",
                   NOW + dt.timedelta(days=days), days, sha256=sha)


def test_everything_forced_runs_etcd_then_each_control_plane_then_the_caches() -> None:
    rows = [*_rows(), _cache_row("c1", "aa"), _cache_row("c2", "bb")]
    plan = _all(rows, force=True, sources={h: SiteCert("/site/tls.crt", "bb") for h in ("c1", "c2")})
    assert [(s.kind, s.host) for s in plan.steps] == [
        ("etcd", "cp2"), ("etcd", "cp3"), ("etcd", "cp4"), ("etcd", "cp1"),
        ("kubeadm", "cp1"), ("kubeadm", "cp2"), ("kubeadm", "cp3"), ("kubeadm", "cp4"),
        ("registry", "c1"), ("registry", "c2")]
    kubeadm = [s for s in plan.steps if s.kind == "kubeadm"]
    assert all(s.restart == ("kube-apiserver",) for s in kubeadm)
    # every certificate kubeadm manages on a control plane (not the front proxy CA), each once
    assert [sorted(i.what for i in s.items) for s in kubeadm] == [sorted(KUBEADM_RENEWED)] * 4
    assert "front proxy CA" not in KUBEADM_RENEWED and len(KUBEADM_RENEWED) == 7
    assert [i.why for s in plan.steps if s.kind == "registry" for i in s.items] == [
        "the controller's certificate differs", "forced (the same certificate: copied, instances restarted)"]


def test_kubeadm_due_on_one_control_plane_renews_all_of_its_and_nothing_elsewhere() -> None:
    rows = _rows(**{"cp2:/etc/kubernetes/admin.conf": (20, SOON)})
    plan = _all(rows)
    assert [(s.kind, s.host) for s in plan.steps] == [("kubeadm", "cp2")]
    whys = {i.path: i.why for i in plan.steps[0].items}
    assert whys.pop("/etc/kubernetes/admin.conf") == "20 days left, fewer than 30"
    assert len(whys) == 6 and set(whys.values()) == {"renewed with the rest (kubeadm certs renew all)"}
    assert _all(rows, only=("etcd",)).empty and _all(rows, only=("registry",)).empty


def test_a_renewed_etcd_client_certificate_restarts_that_apiserver_whatever_only_says() -> None:
    rows = _rows(**{"cp4:/etc/kubernetes/pki/apiserver-etcd-client.crt": (3, SOON)})
    plan = _all(rows, only=("etcd",))
    assert [(s.kind, s.host, len(s.items)) for s in plan.steps] == [("etcd", "cp4", 1), ("kubeadm", "cp4", 0)]
    assert plan.steps[1].restart == ("kube-apiserver",) and "etcd client certificate" in plan.steps[1].note


def test_a_missing_kubeadm_certificate_or_a_silent_control_plane_refuses_the_plan() -> None:
    rows = _rows(**{"cp3:/etc/kubernetes/pki/apiserver.crt": (0, MISSING)})
    assert _all(rows, only=("kubeadm",)).problems == ("cp3:/etc/kubernetes/pki/apiserver.crt: missing",)
    assert not _all(rows, only=("etcd",)).problems  # not chosen: not a problem of this run


def test_registry_renews_only_where_the_controller_has_another_certificate() -> None:
    same = SiteCert("/site/tls.crt", "aa")
    rows = [*_rows(), _cache_row("c1", "aa"), _cache_row("c2", "aa", 10, SOON)]
    plan = _all(rows, only=("registry",), sources={"c1": same, "c2": same})
    assert plan.empty and not plan.problems
    assert len(plan.notes) == 1 and "c2:" in plan.notes[0]
    assert "cannot sign the site's certificate" in plan.notes[0]
    newer = {"c1": SiteCert("/site/tls.crt", "bb"), "c2": SiteCert("/site/tls.crt", "bb")}
    plan = _all(rows, only=("registry",), sources=newer)
    assert [(s.host, s.items[0].why) for s in plan.steps] == [
        ("c1", "the controller's certificate differs"),
        ("c2", "the controller's certificate differs (10 days left, fewer than 30)")]
    unreadable = {"c1": SiteCert("/site/tls.crt", error="no such file"), "c2": same}
    assert _all(rows, only=("registry",), sources=unreadable).problems == (
        "c1: registry_cache_tls_cert_src /site/tls.crt on the controller: no such file",)

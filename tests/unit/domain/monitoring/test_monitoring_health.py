"""The health report built from canned query results: alerts, etcd, VIP, nodes, NPU chips, problems."""

from __future__ import annotations

import json

import pytest

from ufcctl.domain.monitoring.health import (
    QUERIES,
    Sample,
    build_report,
    etcd_health,
    firing_alerts,
    unhealthy_chips,
    vip_holders,
    vip_problems,
)


def s(value: float, **labels: str) -> Sample:
    return Sample(labels, value)


def _etcd(cluster: str, leader: str = "cp1", down: tuple[str, ...] = ()) -> dict[str, list[Sample]]:
    members = ("cp1", "cp2", "cp3")
    sizes = dict(zip(members, (100, 400, 200), strict=True))
    defragged = dict(zip(members, (10, 30, 20), strict=True))
    return {
        "etcd_up": [s(0 if m in down else 1, etcd_cluster=cluster, member=m, instance=f"{m}:2379")
                    for m in members],
        "etcd_leader": [s(1 if m == leader else 0, etcd_cluster=cluster, member=m) for m in members],
        "etcd_db_size": [s(v, etcd_cluster=cluster, member=m) for m, v in sizes.items()],
        "etcd_quota": [s(1000, etcd_cluster=cluster, member=m) for m in members],
        "defrag_success": [s(t, etcd_cluster=cluster, member=m) for m, t in defragged.items()],
        "defrag_run": [s(t, etcd_cluster=cluster, member=m) for m, t in defragged.items()],
        "defrag_result": [s(1, etcd_cluster=cluster, member=m) for m in members],
    }


def _healthy() -> dict[str, list[Sample]]:
    results: dict[str, list[Sample]] = {name: [] for name in QUERIES}
    for cluster in ("core", "events", "pods"):
        for name, samples in _etcd(cluster).items():
            results[name] += samples
    results["vip_held"] = [
        s(1, vip="10.0.0.10", instance="lb1:9100"), s(0, vip="10.0.0.10", instance="lb2:9100")
    ]
    results["node_up"] = [s(1, job="node", instance=f"n{i}:9100") for i in range(3)]
    results["npu_health"] = [s(1, instance="n1:9100", id=str(i)) for i in range(8)]
    return results


def test_a_healthy_cluster_has_no_problem_and_every_section() -> None:
    report = build_report("http://vm:8428/api/v1/query", _healthy())
    assert report.healthy and report.problems == ()
    assert [e.cluster for e in report.etcd] == ["core", "events", "pods"]
    core = report.etcd[0]
    assert (core.members_up, core.members_total, core.leader) == (3, 3, "cp1")
    assert (core.db_size_max, core.quota, core.quota_percent) == (400, 1000, 40.0)
    assert (core.last_defrag, core.last_defrag_result) == (30, "ok")
    assert [(v.vip, v.holders) for v in report.vips] == [("10.0.0.10", ("lb1:9100",))]
    assert report.nodes_down == () and report.npu_unhealthy == ()


def test_json_keys_are_stable() -> None:
    data = build_report("u", _healthy()).to_json()
    assert list(data) == [
        "source", "healthy", "problems", "alerts", "etcd", "vip", "nodes_down", "npu_unhealthy",
        "nodes_not_ready", "workloads_unavailable", "api", "api_skipped",
    ]
    assert list(data["etcd"][0]) == [
        "cluster", "members_up", "members_total", "leader", "db_size_max", "quota", "quota_percent",
        "last_defrag", "last_defrag_result", "problems",
    ]
    json.dumps(data)  # serialisable as is


def test_alerts_are_listed_most_severe_first_with_their_other_labels() -> None:
    alerts = firing_alerts([
        s(1, __name__="ALERTS", alertname="NodeExporterDown", alertstate="firing", severity="warning",
          instance="n7:9100"),
        s(1, __name__="ALERTS", alertname="EtcdNoLeader", alertstate="firing", severity="critical",
          etcd_cluster="pods"),
        s(1, __name__="ALERTS", alertname="VipNotHeld", alertstate="pending", severity="critical"),
    ])
    assert [(a.name, a.severity) for a in alerts] == [
        ("EtcdNoLeader", "critical"), ("NodeExporterDown", "warning")
    ]
    assert alerts[1].to_json() == {"alertname": "NodeExporterDown", "severity": "warning",
                                   "labels": {"instance": "n7:9100"}}


def test_a_firing_alert_alone_makes_the_report_unhealthy() -> None:
    results = _healthy()
    results["alerts"] = [s(1, alertname="EtcdDefragOverdue", alertstate="firing", severity="warning")]
    report = build_report("u", results)
    assert not report.healthy and report.problems == ()


def test_a_certificate_alert_is_shown_with_the_host_and_path() -> None:
    results = _healthy()
    results["alerts"] = [s(1, __name__="ALERTS", alertname="CertificateExpiresSoon", alertstate="firing",
                           severity="warning", component="certs", instance="10.0.0.1:9100",
                           path="/etc/etcd/pki/member.crt", subject="CN=cp1")]
    report = build_report("u", results)
    assert not report.healthy
    assert report.alerts[0].to_json() == {
        "alertname": "CertificateExpiresSoon", "severity": "warning",
        "labels": {"component": "certs", "instance": "10.0.0.1:9100", "path": "/etc/etcd/pki/member.crt",
                   "subject": "CN=cp1"}}


@pytest.mark.parametrize(
    ("leader", "down", "problem"),
    [
        pytest.param("cp1", ("cp2",), "1 of 3 member(s) down: cp2", id="member-down"),
        pytest.param("none", (), "no leader", id="no-leader"),
        pytest.param("cp1", ("cp1", "cp2", "cp3"), "3 of 3 member(s) down: cp1, cp2, cp3", id="all-down"),
    ],
)
def test_etcd_problems(leader: str, down: tuple[str, ...], problem: str) -> None:
    c = _etcd("events", leader=leader, down=down)
    e = etcd_health("events", c["etcd_up"], c["etcd_leader"], c["etcd_db_size"], c["etcd_quota"])
    assert problem in e.problems


def test_two_leaders_and_a_failed_last_defrag_are_problems() -> None:
    c = _etcd("core")
    leaders = [s(1, etcd_cluster="core", member=m) for m in ("cp1", "cp2")]
    # cp2 ran last (30) and failed; cp1's older success does not hide it
    results = [s(1, etcd_cluster="core", member="cp1"), s(0, etcd_cluster="core", member="cp2")]
    e = etcd_health("core", c["etcd_up"], leaders, c["etcd_db_size"], c["etcd_quota"],
                    c["defrag_success"], c["defrag_run"], results)
    assert e.leader is None
    assert e.problems == ("2 leaders: cp1, cp2", "the last defrag failed")
    assert e.last_defrag_result == "failed"


def test_a_cluster_nobody_scrapes_is_a_problem_with_no_numbers() -> None:
    report = build_report("u", {k: v for k, v in _healthy().items() if not k.startswith(("etcd", "defrag"))})
    expected = tuple(f"etcd {c}: no member scraped (job etcd)" for c in ("core", "events", "pods"))
    assert report.problems[:3] == expected
    assert report.etcd[0].quota_percent is None and report.etcd[0].last_defrag_result is None


@pytest.mark.parametrize(
    ("held", "problem"),
    [
        pytest.param({"lb1": 1, "lb2": 0}, None, id="one-holder"),
        pytest.param({"lb1": 0, "lb2": 0}, "VIP 10.0.0.10: no host holds it", id="no-holder"),
        pytest.param(
            {"lb1": 1, "lb2": 1}, "VIP 10.0.0.10: held by 2 hosts at once: lb1, lb2", id="two-holders"
        ),
        pytest.param(
            {}, "no host reports ufcctl_vip_held: is the apiserver_lb group monitored?", id="no-samples"
        ),
    ],
)
def test_vip_holders(held: dict[str, int], problem: str | None) -> None:
    vips = vip_holders([s(v, vip="10.0.0.10", instance=h) for h, v in held.items()])
    assert vip_problems(vips) == ([] if problem is None else [problem])


def test_nodes_down_and_npu_chips_are_listed_and_summarised() -> None:
    results = _healthy()
    results["node_up"] = [s(0, instance=f"n{i:02d}:9100") for i in range(7)] + [s(1, instance="ok:9100")]
    results["npu_health"] = [s(0, instance="n1:9100", id="10"), s(0, instance="n1:9100", id="2"),
                             s(1, instance="n1:9100", id="3")]
    report = build_report("u", results)
    assert report.nodes_down == tuple(f"n{i:02d}:9100" for i in range(7))
    assert [(c.instance, c.chip) for c in report.npu_unhealthy] == [("n1:9100", "2"), ("n1:9100", "10")]
    assert report.problems == (
        "7 node(s) down: n00:9100, n01:9100, n02:9100, n03:9100, n04:9100 and 2 more",
        "2 NPU chip(s) unhealthy: n1:9100 chip 2, n1:9100 chip 10",
    )


def test_unhealthy_chips_without_an_id_label() -> None:
    assert [c.to_json() for c in unhealthy_chips([s(0, instance="x")])] == [{"instance": "x", "id": "?"}]

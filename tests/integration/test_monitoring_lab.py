"""Monitoring on a real container lab: Debian's VictoriaMetrics, vmagent, vmalert, Alertmanager and
node exporter deployed by `ufcctl deploy` on the two monitoring hosts and every node; every target up,
the three etcd clusters' metrics per member, and three faults (haproxy stopped on the VIP holder, one
etcd member stopped, one node exporter stopped) each firing its alert, shown by `ufcctl health`, and
resolved once the component runs again.

The alerts' `for` durations are the lab's (10 s, group_vars/all/monitoring.yml written by `lab up`),
scrapes and rule evaluations every 10 s. The time from a fault to its alert firing and from the repair
to the alert resolving is printed (and written to <work>/alert-latency.json); nothing asserts on it
(the deadlines below are hang guards). kube-apiserver does not run in the lab (the LAB KUBE EMULATOR
stands in for joins), so the apiserver alerts are not exercised here. This module shares the deployed
stack (tests/integration/conftest.py) and leaves every component running as it found it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.helpers.lab import STACK_LAB, STACK_WORKERS, Stack, ufcctl
from tests.helpers.victoria_query import query, wait_for
from ufcctl.app.inventory import load_inventory

pytestmark = pytest.mark.integration

LAB = STACK_LAB
CONTROL_PLANES = [f"{LAB}-cp{i}" for i in (1, 2, 3)]
WORKERS = [f"{LAB}-w{i:02d}" for i in range(1, STACK_WORKERS + 1)]
HANG_GUARD = 240  # seconds: far above the ~30 s an alert needs here; only stops a hung test


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Iterator[Stack]:
    stack.require_deployed()
    yield stack


@pytest.fixture(scope="module")
def vm(lab: Stack) -> str:
    inventory = load_inventory(lab.inventory)
    monitoring = inventory.group_hosts("monitoring")
    assert len(monitoring) == 2, monitoring
    return f"http://{inventory.hosts[monitoring[0]].vars['ansible_host']}:8428"


@pytest.fixture(scope="module")
def latencies(lab: Stack) -> Iterator[dict[str, dict[str, float]]]:
    found: dict[str, dict[str, float]] = {}
    yield found
    (lab.work / "alert-latency.json").write_text(json.dumps(found, indent=2) + "\n")
    print("alert latency (s):", json.dumps(found))


def _query(vm: str, expr: str) -> list[dict]:
    return query(vm, expr)


def _wait(what: str, check, deadline: float = HANG_GUARD):  # noqa: ANN001, ANN202
    return wait_for(what, check, deadline)


def _exec(env: dict[str, str], node: str, command: str) -> str:
    proc = subprocess.run(["podman", "exec", node, "sh", "-c", command], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{node}: {command}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def _firing(vm: str, alert: str, **labels: str) -> bool:
    matchers = "".join(f',{k}="{v}"' for k, v in labels.items())
    return bool(_query(vm, f'ALERTS{{alertname="{alert}",alertstate="firing"{matchers}}}'))


def _health(lab: Stack) -> tuple[int, dict]:
    proc = ufcctl(["health", "--inventory", str(lab.inventory), "--output", "json"], lab.env, timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_every_exporter_target_is_up(vm: str) -> None:
    def all_up() -> list[dict] | None:
        up = _query(vm, "up")
        jobs: dict[str, int] = {}
        for sample in up:
            jobs[sample["metric"]["job"]] = jobs.get(sample["metric"]["job"], 0) + 1
        expected = {"node": len(CONTROL_PLANES) + STACK_WORKERS, "etcd": 9, "haproxy": 3,
                    "victoria-metrics": 2, "vmagent": 2, "vmalert": 2,
                    "alertmanager": 2, "registry-cache": 2}
        healthy = all(s["value"][1] == "1" for s in up)
        return up if jobs == expected and healthy else None

    up, _ = _wait("every target up (node per host, etcd 9, haproxy 3, monitoring 4x2, registry caches 2)",
                  all_up)
    instances = {s["metric"]["instance"] for s in up if s["metric"]["job"] == "node"}
    assert instances == set(CONTROL_PLANES + WORKERS)
    # every exporter runs with roles/monitoring_agent's settings (arp is one of the collectors it
    # turns off; Debian's default has it on): the workers' came from the node phase, whose chunk
    # inventories must carry the monitoring hosts for the role to be enabled there
    collectors = _query(vm, 'node_scrape_collector_success{collector="textfile"}')
    assert {s["metric"]["instance"] for s in collectors} == instances
    assert _query(vm, 'node_scrape_collector_success{collector="arp"}') == []


# What each monitoring host runs as deployed, read in one exec per host: checked here since the roles'
# molecule scenario, a second deploy of monitoring and monitoring_agent, was retired for the shared lab's.
MONITORING_UNITS = ("prometheus-node-exporter", "ufcctl-host-metrics", "victoria-metrics", "ufcctl-vmagent",
                    "ufcctl-vmalert", "prometheus-alertmanager", "ufcctl-cert-metrics.timer")
MONITORING_FACTS = (
    "for u in " + " ".join(MONITORING_UNITS) + "; do echo \"unit-$u $(systemctl is-active $u) "
    "$(systemctl is-enabled $u)\"; done; a=$(hostname -I | cut -d' ' -f1); "
    "echo \"dashboards $(ls /etc/ufcctl/monitoring/dashboards | tr '\\n' ' ')\"; "
    "echo \"members $(grep -o 'membersCount=[0-9]*' /etc/default/ufcctl-vmagent)\"; "
    "echo \"health $(curl -sf --max-time 5 http://$a:8428/health)\"; "
    "echo \"ready $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://$a:9093/-/ready)\"; "
    "echo \"rules $(curl -sf --max-time 5 http://$a:8880/api/v1/rules | python3 -c "
    "'import json,sys; print(*sorted(g[\"name\"] for g in json.load(sys.stdin)[\"data\"][\"groups\"]))')\"; "
    "echo \"enddate $(date -d \"$(openssl x509 -in /etc/etcd/pki/member.crt -noout -enddate | cut -d= -f2)\" "
    "+%s)\"; "
    "curl -sf --max-time 5 http://$a:9100/metrics | grep '^ufcctl_certificate_not_after_timestamp_seconds{"
    "path=\"/etc/etcd/pki/member.crt\"' | sed 's/^/cert /'"
)


def test_each_monitoring_host_runs_every_component_and_reports_its_certificates(lab: Stack) -> None:
    monitoring = load_inventory(lab.inventory).group_hosts("monitoring")
    for host in monitoring:
        rows = {line.split()[0]: line.split()[1:]
                for line in _exec(lab.env, host, MONITORING_FACTS).splitlines() if line.split()}
        for unit in MONITORING_UNITS:
            assert rows[f"unit-{unit}"] == ["active", "enabled"], (host, unit)
        assert rows["dashboards"] == ["apiserver-lb.json", "etcd.json", "nodes.json", "npu.json"], host
        assert rows["members"] == [f"membersCount={len(monitoring)}"], host  # vmagent's scrape sharding
        assert rows["health"] == ["OK"] and rows["ready"] == ["200"], host
        assert rows["rules"] == [f"ufcctl-{c}" for c in ("apiserver", "certs", "etcd", "lb", "nfs", "nodes",
                                                         "npu")], host
        # ufcctl-cert-metrics reports the member certificate's notAfter as the node exporter's gauge
        assert float(rows["cert"][-1]) == float(rows["enddate"][0]), (host, rows["cert"], rows["enddate"])


def test_each_etcd_cluster_reports_per_member(vm: str) -> None:
    samples = _query(vm, "etcd_server_has_leader")
    seen = {(s["metric"]["etcd_cluster"], s["metric"]["member"]) for s in samples}
    assert seen == {(c, m) for c in ("core", "events", "pods") for m in CONTROL_PLANES}
    assert all(s["value"][1] == "1" for s in samples)
    quota = _query(vm, 'etcd_server_quota_backend_bytes{etcd_cluster="core"}')
    assert len(quota) == 3 and all(float(s["value"][1]) > 0 for s in quota)


def test_host_metrics_name_the_vip_holder_and_the_nfs_server(vm: str) -> None:
    held = _query(vm, "ufcctl_vip_held == 1")
    assert len(held) == 1 and held[0]["metric"]["instance"] in CONTROL_PLANES
    nfs = _query(vm, 'ufcctl_service_active{unit="nfs-ganesha"}')
    assert [s["value"][1] for s in nfs] == ["1"]


def test_health_answers_with_the_three_etcd_clusters_and_the_vip(lab: Stack) -> None:
    _, report = _health(lab)
    assert {e["cluster"] for e in report["etcd"]} == {"core", "events", "pods"}
    assert all(e["members_up"] == 3 for e in report["etcd"]), report["etcd"]
    assert len(report["vip"][0]["holders"]) == 1, report["vip"]
    assert report["nodes_down"] == []


def _fault(lab: Stack, vm: str, latencies: dict, name: str, alert: str, labels: dict[str, str],
           node: str, stop: str, start: str) -> None:
    started = time.monotonic()
    _exec(lab.env, node, stop)
    try:
        _, fired = _wait(f"{alert} firing", lambda: _firing(vm, alert, **labels))
        rc, report = _health(lab)
        assert rc == 1 and alert in {a["alertname"] for a in report["alerts"]}, report["alerts"]
    finally:
        repaired = time.monotonic()
        _exec(lab.env, node, start)
    _, resolved = _wait(f"{alert} resolved", lambda: not _firing(vm, alert, **labels))
    latencies[name] = {"fire": round(fired, 1), "resolve": round(resolved, 1),
                       "stopped_for": round(repaired - started, 1)}


def test_haproxy_stopped_on_the_vip_holder_fires_and_resolves(lab: Stack, vm: str, latencies: dict) -> None:
    holder = _query(vm, "ufcctl_vip_held == 1")[0]["metric"]["instance"]
    _fault(lab, vm, latencies, "haproxy stopped on the VIP holder", "HaproxyDown", {"instance": holder},
           holder, "systemctl stop haproxy", "systemctl start haproxy")
    _wait("the VIP held by exactly one host again",
          lambda: [s["value"][1] for s in _query(vm, "sum(ufcctl_vip_held)")] == ["1"])


def test_one_etcd_member_stopped_fires_and_resolves(lab: Stack, vm: str, latencies: dict) -> None:
    member = CONTROL_PLANES[2]
    _fault(lab, vm, latencies, "etcd events member stopped", "EtcdMemberDown",
           {"instance": member, "etcd_cluster": "events"}, member,
           "systemctl stop etcd-events", "systemctl start etcd-events")


def test_one_node_exporter_stopped_fires_and_resolves(lab: Stack, vm: str, latencies: dict) -> None:
    worker = WORKERS[0]
    _fault(lab, vm, latencies, "node exporter stopped", "NodeExporterDown", {"instance": worker}, worker,
           "systemctl stop prometheus-node-exporter", "systemctl start prometheus-node-exporter")

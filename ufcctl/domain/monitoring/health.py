"""The health report of `ufcctl health`: firing alerts, etcd, VIP, nodes and NPU chips from metric samples,
and NotReady Nodes and unavailable workloads from the Kubernetes API (ufcctl/domain/readiness.py)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.readiness import ApiView, Workload

# The three etcd clusters, in the order every report lists them (docs/architecture.md).
ETCD_CLUSTERS = ("core", "events", "pods")

# What the report needs, one PromQL expression each, by the name `build_report` reads them under.
# Metric and label names: the registry, ufcctl/domain/monitoring/metrics.py.
QUERIES: Mapping[str, str] = {
    "alerts": 'ALERTS{alertstate="firing"}',
    "etcd_up": 'up{job="etcd"}',
    "etcd_leader": "etcd_server_is_leader",
    "etcd_db_size": "etcd_mvcc_db_total_size_in_bytes",
    "etcd_quota": "etcd_server_quota_backend_bytes",
    "defrag_success": "ufcctl_etcd_defrag_last_success_timestamp_seconds",
    "defrag_run": "ufcctl_etcd_defrag_last_run_timestamp_seconds",
    "defrag_result": "ufcctl_etcd_defrag_last_result",
    "vip_held": "ufcctl_vip_held",
    "node_up": 'up{job="node"}',
    "npu_health": "npu_chip_info_health_status",
}

# Labels every alert carries that the report shows in columns of their own, or not at all.
_ALERT_OWN_LABELS = frozenset({"__name__", "alertname", "alertstate", "severity"})


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels and its value."""

    labels: Mapping[str, str]
    value: float

    def label(self, name: str, default: str = "") -> str:
        return self.labels.get(name, default)


@dataclass(frozen=True)
class Alert:
    name: str
    severity: str
    labels: tuple[tuple[str, str], ...]  # the other labels (instance, etcd_cluster, ...), sorted

    def to_json(self) -> dict[str, Any]:
        return {"alertname": self.name, "severity": self.severity, "labels": dict(self.labels)}


@dataclass(frozen=True)
class EtcdHealth:
    cluster: str
    members_up: int
    members_total: int
    leader: str | None
    db_size_max: float | None  # bytes, the largest member's
    quota: float | None  # bytes
    quota_percent: float | None  # db_size_max of quota
    last_defrag: float | None  # unix seconds of the latest successful defrag of any member
    last_defrag_result: str | None  # "ok" or "failed": the result of the latest run
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "problems": list(self.problems)}


@dataclass(frozen=True)
class VipHealth:
    vip: str
    holders: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"vip": self.vip, "holders": list(self.holders)}


@dataclass(frozen=True)
class NpuChip:
    instance: str
    chip: str

    def to_json(self) -> dict[str, Any]:
        return {"instance": self.instance, "id": self.chip}


@dataclass(frozen=True)
class HealthReport:
    source: str  # the query URL that answered
    alerts: tuple[Alert, ...]
    etcd: tuple[EtcdHealth, ...]
    vips: tuple[VipHealth, ...]
    nodes_down: tuple[str, ...]
    npu_unhealthy: tuple[NpuChip, ...]
    problems: tuple[str, ...]  # every problem of every section, one line each
    api: ApiView | None = None  # what the Kubernetes API said; None: not read (api_skipped says why)
    api_skipped: str | None = None

    @property
    def healthy(self) -> bool:
        return not self.alerts and not self.problems

    @property
    def nodes_not_ready(self) -> tuple[str, ...]:
        return self.api.readiness.not_ready if self.api and self.api.readiness else ()

    @property
    def workloads_unavailable(self) -> tuple[Workload, ...]:
        return self.api.readiness.unavailable if self.api and self.api.readiness else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "healthy": self.healthy,
            "problems": list(self.problems),
            "alerts": [a.to_json() for a in self.alerts],
            "etcd": [e.to_json() for e in self.etcd],
            "vip": [v.to_json() for v in self.vips],
            "nodes_down": list(self.nodes_down),
            "npu_unhealthy": [c.to_json() for c in self.npu_unhealthy],
            "nodes_not_ready": list(self.nodes_not_ready),
            "workloads_unavailable": [w.to_json() for w in self.workloads_unavailable],
            "api": self.api.to_json() if self.api else None,
            "api_skipped": self.api_skipped,
        }


def with_api(report: HealthReport, api: ApiView | None, skipped: str | None = None) -> HealthReport:
    """The report with what the API said: each NotReady Node, unavailable workload or failed read is a
    problem (so `healthy` is false); an API not read (no kubeconfig) is only noted."""
    problems = [f"API: {p}" for p in api.problems()] if api is not None else []
    return dataclasses.replace(report, api=api, api_skipped=None if api is not None else skipped,
                               problems=(*report.problems, *problems))


def build_report(source: str, results: Mapping[str, Sequence[Sample]]) -> HealthReport:
    """The report from the answers to QUERIES (a query missing from `results` counts as no samples)."""

    def of(name: str) -> Sequence[Sample]:
        return results.get(name, ())

    alerts = firing_alerts(of("alerts"))
    etcd = tuple(
        etcd_health(
            cluster,
            *(
                _of_cluster(of(name), cluster)
                for name in (
                    "etcd_up", "etcd_leader", "etcd_db_size", "etcd_quota",
                    "defrag_success", "defrag_run", "defrag_result",
                )
            ),
        )
        for cluster in ETCD_CLUSTERS
    )
    vips = vip_holders(of("vip_held"))
    nodes_down = down_instances(of("node_up"))
    chips = unhealthy_chips(of("npu_health"))
    problems = [f"etcd {e.cluster}: {p}" for e in etcd for p in e.problems]
    problems += vip_problems(vips)
    if nodes_down:
        problems.append(f"{len(nodes_down)} node(s) down: {_first(nodes_down)}")
    if chips:
        problems.append(
            f"{len(chips)} NPU chip(s) unhealthy: {_first(f'{c.instance} chip {c.chip}' for c in chips)}"
        )
    return HealthReport(source, alerts, etcd, vips, nodes_down, chips, tuple(problems))


def firing_alerts(samples: Iterable[Sample]) -> tuple[Alert, ...]:
    """Alerts most severe first (critical, warning, others), then by name and labels."""
    order = {"critical": 0, "warning": 1}
    alerts = {
        Alert(
            s.label("alertname", "?"),
            s.label("severity", "-"),
            tuple(sorted((k, v) for k, v in s.labels.items() if k not in _ALERT_OWN_LABELS)),
        )
        for s in samples
        if s.label("alertstate", "firing") == "firing"
    }
    return tuple(sorted(alerts, key=lambda a: (order.get(a.severity, 2), a.name, a.labels)))


def etcd_health(
    cluster: str,
    up: Sequence[Sample],
    leader: Sequence[Sample],
    db_size: Sequence[Sample],
    quota: Sequence[Sample],
    defrag_success: Sequence[Sample] = (),
    defrag_run: Sequence[Sample] = (),
    defrag_result: Sequence[Sample] = (),
) -> EtcdHealth:
    """One cluster's line; every sample passed belongs to `cluster`."""
    members_up = sum(1 for s in up if s.value == 1)
    leaders = sorted({_member(s) for s in leader if s.value == 1})
    db_max = _max(db_size)
    quota_max = _max(quota)
    percent = None if db_max is None or not quota_max else round(100 * db_max / quota_max, 1)
    result = _last_result(defrag_run, defrag_result)
    problems = []
    if not up:
        problems.append("no member scraped (job etcd)")
    elif members_up < len(up):
        down = sorted(_member(s) for s in up if s.value != 1)
        problems.append(f"{len(down)} of {len(up)} member(s) down: {', '.join(down)}")
    if up and members_up and not leaders:
        problems.append("no leader")
    if len(leaders) > 1:
        problems.append(f"{len(leaders)} leaders: {', '.join(leaders)}")
    if result == "failed":
        problems.append("the last defrag failed")
    return EtcdHealth(
        cluster,
        members_up,
        len(up),
        leaders[0] if len(leaders) == 1 else None,
        db_max,
        quota_max,
        percent,
        _max(defrag_success),
        result,
        tuple(problems),
    )


def vip_holders(samples: Iterable[Sample]) -> tuple[VipHealth, ...]:
    """Per VIP (label vip), the instances that report holding it; VIPs nobody holds included."""
    held: dict[str, set[str]] = {}
    for s in samples:
        hosts = held.setdefault(s.label("vip", "-"), set())
        if s.value == 1:
            hosts.add(_instance(s))
    return tuple(VipHealth(vip, tuple(sorted(hosts))) for vip, hosts in sorted(held.items()))


def vip_problems(vips: Sequence[VipHealth]) -> list[str]:
    if not vips:
        return ["no host reports ufcctl_vip_held: is the apiserver_lb group monitored?"]
    problems = []
    for v in vips:
        if not v.holders:
            problems.append(f"VIP {v.vip}: no host holds it")
        elif len(v.holders) > 1:
            problems.append(f"VIP {v.vip}: held by {len(v.holders)} hosts at once: {', '.join(v.holders)}")
    return problems


def down_instances(samples: Iterable[Sample]) -> tuple[str, ...]:
    return tuple(sorted({_instance(s) for s in samples if s.value == 0}))


def unhealthy_chips(samples: Iterable[Sample]) -> tuple[NpuChip, ...]:
    chips = {NpuChip(_instance(s), s.label("id", "?")) for s in samples if s.value == 0}
    return tuple(sorted(chips, key=lambda c: (c.instance, _chip_key(c.chip))))


def _of_cluster(samples: Sequence[Sample], cluster: str) -> list[Sample]:
    return [s for s in samples if s.label("etcd_cluster") == cluster]


def _member(s: Sample) -> str:
    return s.label("member") or _instance(s)


def _instance(s: Sample) -> str:
    return s.label("instance", "?")


def _max(samples: Iterable[Sample]) -> float | None:
    values = [s.value for s in samples if not math.isnan(s.value)]
    return max(values) if values else None


def _last_result(runs: Sequence[Sample], results: Sequence[Sample]) -> str | None:
    """The result of the member whose defrag ran last (any member when no run time is known)."""
    if not results:
        return None
    ran = {_member(s): s.value for s in runs}
    latest = max(results, key=lambda s: ran.get(_member(s), -math.inf))
    return "ok" if latest.value == 1 else "failed"


def _chip_key(chip: str) -> tuple[int, str]:
    return (int(chip), "") if chip.isdigit() else (1 << 30, chip)


def _first(items: Iterable[str], shown: int = 5) -> str:
    """At most `shown` items and how many more: a report line stays short on 16,000 nodes."""
    listed = list(items)
    more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
    return ", ".join(listed[:shown]) + more

"""The vmalert alert rules (roles/monitoring/README.md) as data, rendered to a rule file.

Thresholds and `for:` defaults come from docs/reference/nodes-observability-images.md §7 (etcd FAQ,
etcd-mixin, kubernetes-mixin, kube-prometheus); each rule says where its numbers come from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from ufcctl.domain.certs.check import DEFAULT_WARN_DAYS
from ufcctl.errors import InputError

# A Prometheus/vmalert duration with one unit, as the lab's group_vars write them ("30s", "2m").
DURATION = re.compile(r"^\d+(ms|s|m|h|d|w)$")
# Components, in the order their groups appear in the rule file.
COMPONENTS = ("apiserver", "etcd", "lb", "nodes", "nfs", "npu", "certs")
# The etcd defrag agent's timer fires every 10 min (roles/etcd/defaults: etcd_defrag_on_calendar
# "*:0/10") and skips a member defragmented within etcd_defrag_min_interval (3600 s): 2 days is 48
# such intervals, long enough that a busy week-end of skipped runs does not page anyone.
DEFRAG_OVERDUE_SECONDS = 2 * 24 * 3600
# CertificateExpiresSoon's threshold: `ufcctl certs check`'s default, for the same reason
# (ufcctl/domain/certs/check.py DEFAULT_WARN_DAYS)
CERT_WARN_DAYS = DEFAULT_WARN_DAYS
_CERT_DAYS_LEFT = "(ufcctl_certificate_not_after_timestamp_seconds - time()) / 86400"


class RuleSettingError(InputError, ValueError):
    """A bad `monitoring_alert_for` entry or group interval (an InputError, and a ValueError for callers
    that only know the standard library)."""


@dataclass(frozen=True)
class AlertRule:
    name: str
    expr: str
    for_: str
    severity: str  # critical | warning
    component: str
    summary: str
    source: str  # where the threshold and `for:` come from

    @property
    def runbook(self) -> str:
        """The README anchor GitHub derives from a `### <AlertName>` heading."""
        return f"roles/monitoring/README.md#{self.name.lower()}"


_APISERVER_RATE = 'sum by (instance) (rate(apiserver_request_total{{job="kube-apiserver"{sel}}}[5m]))'


def _apiserver_ratio(code_matcher: str) -> str:
    return (f"{_APISERVER_RATE.format(sel=', ' + code_matcher)} / "
            f"{_APISERVER_RATE.format(sel='')} > 0.01")


def _p99(bucket: str) -> str:
    return (f"histogram_quantile(0.99, sum by (instance, etcd_cluster, member, le) "
            f'(rate({bucket}{{job="etcd"}}[5m])))')


# Three hourly snapshot runs missed (roles/etcd etcd_backup_on_calendar): an hour of writes is what a
# restore loses by design; three is something broken.
BACKUP_OVERDUE_SECONDS = 3 * 3600


def _rules(defrag_overdue_seconds: int, cert_warn_days: int = CERT_WARN_DAYS) -> tuple[AlertRule, ...]:
    return (
        AlertRule(
            "ApiserverTooManyRequests", _apiserver_ratio('code="429"'), "15m", "warning", "apiserver",
            "{{ $labels.instance }}: more than 1% of requests get 429 (flow control or max-inflight)",
            "kubernetes-mixin KubeClientErrors ratio (1% for 15m) applied to 429s; seed 003: the apiserver's "
            "self-defence shows as 429 long before it falls over"),
        AlertRule(
            "ApiserverErrors", _apiserver_ratio('code=~"5.."'), "15m", "warning", "apiserver",
            "{{ $labels.instance }}: more than 1% of requests fail with 5xx",
            "kubernetes-mixin KubeClientErrors: 5xx ratio > 1% for 15m"),
        AlertRule(
            "EtcdDatabaseQuotaLowSpace",
            'etcd_mvcc_db_total_size_in_bytes{job="etcd"}'
            ' / etcd_server_quota_backend_bytes{job="etcd"} > 0.95',
            "10m", "critical", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }}: database above 95% of its quota",
            "etcd-mixin etcdDatabaseQuotaLowSpace: > 95% for 10m, critical (the defrag agent already "
            "acts at 80%: roles/etcd defaults etcd_defrag_rule)"),
        AlertRule(
            "EtcdHighFsyncDurations", _p99("etcd_disk_wal_fsync_duration_seconds_bucket") + " > 0.5",
            "10m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }}: WAL fsync p99 above 0.5 s",
            "etcd-mixin etcdHighFsyncDurations: p99 > 0.5 s for 10m (etcd FAQ wants < 10 ms)"),
        AlertRule(
            "EtcdHighCommitDurations", _p99("etcd_disk_backend_commit_duration_seconds_bucket") + " > 0.25",
            "10m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }}: backend commit p99 above 0.25 s",
            "etcd-mixin etcdHighCommitDurations: p99 > 0.25 s for 10m (etcd FAQ wants < 25 ms)"),
        AlertRule(
            "EtcdHighNumberOfLeaderChanges",
            'increase(etcd_server_leader_changes_seen_total{job="etcd"}[15m]) >= 4',
            "5m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}: {{ $value }} leader changes in 15 minutes",
            "etcd-mixin etcdHighNumberOfLeaderChanges: >= 4 in 15m, for 5m"),
        AlertRule(
            "EtcdNoLeader", 'etcd_server_has_leader{job="etcd"} == 0', "1m", "critical", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }} has no leader",
            "etcd-mixin etcdNoLeader: has_leader == 0 for 1m, critical"),
        AlertRule(
            # Per member: the mixin's etcdMembersDown counts members, this names the one that is down.
            "EtcdMemberDown", 'up{job="etcd"} == 0', "10m", "critical", "etcd",
            "etcd member {{ $labels.instance }} ({{ $labels.etcd_cluster }}) cannot be scraped",
            "etcd-mixin etcdMembersDown: 10m, critical"),
        AlertRule(
            "EtcdDefragFailing", "ufcctl_etcd_defrag_last_result == 0", "20m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }}: the last defrag failed",
            "ufcctl: 20m is two periods of the defrag timer (etcd_defrag_on_calendar *:0/10), so a failure "
            "that the next run repairs does not fire"),
        AlertRule(
            "EtcdDefragOverdue",
            f"time() - ufcctl_etcd_defrag_last_success_timestamp_seconds > {defrag_overdue_seconds}",
            "1h", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}/{{ $labels.member }}: no successful defrag run for "
            f"{defrag_overdue_seconds} s",
            "ufcctl: DEFRAG_OVERDUE_SECONDS, a multiple of the agent's schedule (roles/etcd defaults)"),
        AlertRule(
            "EtcdBackupFailing", "ufcctl_etcd_backup_last_result == 0", "90m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}: the last snapshot {{ $labels.member }} took failed",
            "ufcctl: 90m spans the next hourly run (etcd_backup_on_calendar), so a failure it repairs does "
            "not fire"),
        AlertRule(
            "EtcdBackupCopyFailing", "ufcctl_etcd_backup_offsite_last_result == 0", "90m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}: the last snapshot {{ $labels.member }} took was not copied off "
            "the member",
            "ufcctl: 90m spans the next hourly run (etcd_backup_on_calendar), as EtcdBackupFailing"),
        AlertRule(
            "EtcdBackupOverdue",
            "time() - max by (etcd_cluster) (ufcctl_etcd_backup_last_success_timestamp_seconds) > "
            f"{BACKUP_OVERDUE_SECONDS}",
            "15m", "warning", "etcd",
            "etcd {{ $labels.etcd_cluster }}: no good snapshot for over "
            f"{BACKUP_OVERDUE_SECONDS // 3600} h",
            "ufcctl: BACKUP_OVERDUE_SECONDS, three runs of the hourly timer; max over members because the "
            "member that takes the snapshot changes with the leader"),
        AlertRule(
            "HaproxyBackendDown", 'haproxy_backend_active_servers{job="haproxy"} == 0', "1m", "critical",
            "lb",
            "HAProxy {{ $labels.instance }}: backend {{ $labels.proxy }} has no active server",
            "ufcctl: no apiserver behind the load balancer is an outage; 1m as etcdNoLeader"),
        AlertRule(
            # Either signal: systemd says the unit is down, or its exporter (built into HAProxy) is gone.
            "HaproxyDown", 'ufcctl_service_active{unit="haproxy"} == 0 or up{job="haproxy"} == 0',
            "2m", "warning", "lb",
            "HAProxy on {{ $labels.instance }} is down",
            "ufcctl: warning, the other apiserver_lb hosts can carry the VIP; VipNotHeld is the outage"),
        AlertRule(
            # `< 1`, not `== 0`: both say "nobody holds it" while the series exist; when every LB's
            # node exporter is gone the sum is empty and NodeExporterDown fires instead.
            "VipNotHeld", "sum by (vip) (ufcctl_vip_held) < 1", "1m", "critical", "lb",
            "No apiserver_lb host holds the VIP {{ $labels.vip }}",
            "ufcctl: the apiserver is unreachable through its VIP; 1m covers a keepalived failover"),
        AlertRule(
            "VipHeldTwice", "sum by (vip) (ufcctl_vip_held) > 1", "1m", "critical", "lb",
            "{{ $value }} hosts hold the VIP {{ $labels.vip }} (VRRP split brain)",
            "ufcctl: two holders answer ARP alternately, clients see resets; 1m covers a failover"),
        AlertRule(
            # Per instance: kube-prometheus TargetDown (10% of a job) never fires for one node of 16k.
            "NodeExporterDown", 'up{job="node"} == 0', "5m", "warning", "nodes",
            "node exporter on {{ $labels.instance }} cannot be scraped",
            "reference §7 'Targets down': per-instance up == 0 instead of TargetDown's percentage"),
        AlertRule(
            "NfsServerDown", 'ufcctl_service_active{unit=~"nfs-server|nfs-ganesha"} == 0', "2m", "critical",
            "nfs", "{{ $labels.unit }} is not active on {{ $labels.instance }}",
            "ufcctl: every pod volume on the NFS server hangs while it is down"),
        AlertRule(
            # No job filter: the lab's NPU emulator publishes the same name through the textfile collector.
            "NpuChipUnhealthy", "npu_chip_info_health_status == 0", "5m", "warning", "npu",
            "NPU chip {{ $labels.id }} on {{ $labels.instance }} is unhealthy",
            "MindCluster NPU Exporter: 1 healthy, 0 not; 5m rides out a probe glitch"),
        AlertRule(
            # Written by roles/ascend_driver's fabric check (admission, `ufcctl npu check`) per chip.
            "NpuLinkDown", "ufcctl_npu_fabric_link_up == 0", "1m", "critical", "npu",
            "NPU chip {{ $labels.chip }} on {{ $labels.instance }}: fabric link DOWN (hccn_tool -link)",
            "ufcctl: a chip without its RoCE link fails every collective it is in; the value only moves "
            "when a check runs, so 1m is one evaluation after it"),
        AlertRule(
            "NpuFabricMismatch", "ufcctl_npu_fabric_as_planned == 0", "1m", "warning", "npu",
            "NPU chip {{ $labels.chip }} on {{ $labels.instance }}: net health, device IP or LLDP "
            "neighbour not as planned",
            "ufcctl: tier 1 of the fabric check failed on the chip (`ufcctl npu check` names the fault); "
            "1m as NpuLinkDown"),
        AlertRule(
            # $value is the days left; the node writes the series daily (roles/monitoring_agent)
            "CertificateExpiresSoon", f"{_CERT_DAYS_LEFT} < {cert_warn_days} > 0", "1h", "warning", "certs",
            "{{ $labels.instance }}: {{ $labels.path }} ({{ $labels.subject }}) expires in "
            "{{ $value | humanize }} days",
            "ufcctl: `ufcctl certs check`'s default threshold (CERT_WARN_DAYS); 1h because the value "
            "only moves once a day"),
        AlertRule(
            "CertificateExpired", f"{_CERT_DAYS_LEFT} <= 0", "5m", "critical", "certs",
            "{{ $labels.instance }}: {{ $labels.path }} ({{ $labels.subject }}) has expired",
            "ufcctl: a peer or client using it is refused (etcd peers, kube-apiserver to etcd)"),
    )


RULES: tuple[AlertRule, ...] = _rules(DEFRAG_OVERDUE_SECONDS)
ALERT_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
DEFAULT_FOR: dict[str, str] = {rule.name: rule.for_ for rule in RULES}


def _check_duration(what: str, value: object) -> str:
    if not isinstance(value, str) or not DURATION.match(value):
        raise RuleSettingError(f"{what}: {value!r} is not a duration",
                               "write a number and one unit: ms, s, m, h, d or w (e.g. 30s, 5m)")
    return value


def alert_for(for_overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """DEFAULT_FOR with the overrides applied; unknown names and bad durations raise RuleSettingError."""
    merged = dict(DEFAULT_FOR)
    for name, value in (for_overrides or {}).items():
        if name not in merged:
            raise RuleSettingError(f"monitoring_alert_for: unknown alert {name!r}",
                                   f"known alerts: {', '.join(ALERT_NAMES)}")
        merged[name] = _check_duration(f"monitoring_alert_for[{name}]", value)
    return merged


def rule_groups(for_overrides: Mapping[str, str] | None = None, group_interval: str | None = None,
                defrag_overdue_seconds: int = DEFRAG_OVERDUE_SECONDS,
                cert_warn_days: int = CERT_WARN_DAYS) -> dict[str, object]:
    """The rule file as a mapping: one group per component, in COMPONENTS order."""
    durations = alert_for(for_overrides)
    if group_interval is not None:
        _check_duration("monitoring group interval", group_interval)
    if isinstance(defrag_overdue_seconds, bool) or not isinstance(defrag_overdue_seconds, int) \
            or defrag_overdue_seconds <= 0:
        raise RuleSettingError(f"defrag overdue seconds: {defrag_overdue_seconds!r} is not a positive number",
                               "give the number of seconds without a successful defrag, e.g. 172800")
    if isinstance(cert_warn_days, bool) or not isinstance(cert_warn_days, int) or cert_warn_days <= 0:
        raise RuleSettingError(f"certificate warning days: {cert_warn_days!r} is not a positive number",
                               "give the days left below which CertificateExpiresSoon fires, e.g. 30")
    groups: list[dict[str, object]] = []
    for component in COMPONENTS:
        group: dict[str, object] = {"name": f"ufcctl-{component}"}
        if group_interval is not None:
            group["interval"] = group_interval
        group["rules"] = [
            {"alert": rule.name, "expr": rule.expr, "for": durations[rule.name],
             "labels": {"severity": rule.severity, "component": rule.component},
             "annotations": {"summary": rule.summary, "runbook": rule.runbook}}
            for rule in _rules(defrag_overdue_seconds, cert_warn_days) if rule.component == component
        ]
        groups.append(group)
    return {"groups": groups}


def render_rules(for_overrides: Mapping[str, str] | None = None, group_interval: str | None = None,
                 defrag_overdue_seconds: int = DEFRAG_OVERDUE_SECONDS,
                 cert_warn_days: int = CERT_WARN_DAYS) -> str:
    """The vmalert rule file (YAML). The role writes it with `copy: content=`, so the `{{ $labels.x }}`
    templates in annotations reach vmalert untouched by Jinja."""
    header = "# Generated by ufcctl (ufcctl/domain/monitoring/rules.py); edit the Python, not this file.\n"
    body = yaml.safe_dump(rule_groups(for_overrides, group_interval, defrag_overdue_seconds, cert_warn_days),
                          sort_keys=False, width=1000, default_flow_style=False)
    return header + body

"""vmagent's scrape configuration, built from the inventory (never from the Kubernetes API).

Seed 003 / OpenAI's 2024-12-11 outage: agents that list and watch the apiserver grow its load with
the cluster. Every target here comes from inventory groups and host vars, so 16,000 node exporters
cost the apiserver nothing. One static_config per target with an explicit `instance` (the inventory
name), so alerts and `ufcctl health` name hosts the way the inventory does; etcd targets also carry
`etcd_cluster` and `member`, the labels the rules and dashboards group by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.etcd.topology import CLUSTER_KINDS, member_address
from ufcctl.domain.images.mirrors import parse_upstreams
from ufcctl.domain.inventory.model import REGISTRY_CACHE
from ufcctl.domain.inventory.values import literal

NODE_EXPORTER_PORT = 9100
HAPROXY_METRICS_PORT = 8405  # roles/apiserver_lb: apiserver_lb_metrics_port
NPU_EXPORTER_PORT = 8082  # MindCluster NPU Exporter's default listen port


@dataclass(frozen=True)
class Target:
    job: str
    address: str  # host:port
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ScrapeSettings:
    interval: str = "30s"
    timeout: str = "10s"
    self_ports: Mapping[str, int] = field(default_factory=dict)  # job -> port on each monitoring host
    npu_exporter: bool = False
    npu_exporter_port: int = NPU_EXPORTER_PORT
    # kube-apiserver's /metrics needs a client allowed to read it; no files, no job (README).
    apiserver_cert: str = ""
    apiserver_key: str = ""
    apiserver_ca: str = ""
    apiserver_port: int = 6443


def url_host(address: str) -> str:
    """An address as the host part of a URL or host:port (an IPv6 literal in brackets)."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def address(hostvars: Mapping[str, Any], host: str) -> str:
    """The address a host is reached at: ansible_host, else its inventory name."""
    return str(literal(hostvars.get("ansible_host")) or host)


def monitoring_address(hostvars: Mapping[str, Any], host: str) -> str:
    """Where a monitoring host's components listen: monitoring_address when the inventory sets it."""
    return str(literal(hostvars.get("monitoring_address")) or address(hostvars, host))


def _port(hostvars: Mapping[str, Any], var: str, default: int) -> int:
    value = literal(hostvars.get(var))
    return int(value) if value not in (None, "") else default


def targets(groups: Mapping[str, Iterable[str]], hostvars: Mapping[str, Mapping[str, Any]],
            settings: ScrapeSettings) -> list[Target]:
    """Every scrape target of the inventory, in a stable order (job, then inventory order)."""
    found: list[Target] = []

    def add(job: str, host: str, port: int, via: str | None = None, **labels: str) -> None:
        addr = via or address(hostvars[host], host)
        found.append(Target(job, f"{url_host(addr)}:{port}", {"instance": host, **labels}))

    for host in groups.get("all", ()):
        add("node", host, _port(hostvars[host], "monitoring_agent_port", NODE_EXPORTER_PORT),
            literal(hostvars[host].get("monitoring_agent_address")))
    for kind in CLUSTER_KINDS:
        for host in groups.get(kind.group, ()):
            port = _port(hostvars[host], f"etcd_{kind.name}_metrics_port", kind.metrics_port)
            add("etcd", host, port, member_address(hostvars[host], host), etcd_cluster=kind.name, member=host)
    for host in groups.get("apiserver_lb", ()):
        port = _port(hostvars[host], "apiserver_lb_metrics_port", HAPROXY_METRICS_PORT)
        if port > 0:
            add("haproxy", host, port)
    for host in groups.get(REGISTRY_CACHE, ()):
        # one docker-registry instance per upstream, each with its own debug (metrics) port
        upstreams, _ = parse_upstreams(literal(hostvars[host].get("registry_cache_upstreams")))
        via = literal(hostvars[host].get("registry_cache_address"))
        for upstream in upstreams:
            add("registry-cache", host, upstream.metrics_port, via, upstream=upstream.name)
    for job, port in settings.self_ports.items():
        for host in groups.get("monitoring", ()):
            add(job, host, port, monitoring_address(hostvars[host], host))
    if settings.npu_exporter:
        for host in groups.get("npu_node", ()):
            add("npu-exporter", host, settings.npu_exporter_port)
    if settings.apiserver_cert:
        for host in groups.get("kube_control_plane", ()):
            add("kube-apiserver", host, settings.apiserver_port)
    return found


def scrape_config(found: Iterable[Target], settings: ScrapeSettings) -> dict[str, Any]:
    """The -promscrape.config document: one scrape job per job label, targets as static_configs."""
    jobs: dict[str, list[Target]] = {}
    for target in found:
        jobs.setdefault(target.job, []).append(target)
    scrape_configs: list[dict[str, Any]] = []
    for job, members in jobs.items():
        entry: dict[str, Any] = {"job_name": job}
        if job == "kube-apiserver":
            entry["scheme"] = "https"
            entry["tls_config"] = {"cert_file": settings.apiserver_cert, "key_file": settings.apiserver_key,
                                   **({"ca_file": settings.apiserver_ca} if settings.apiserver_ca else {})}
        entry["static_configs"] = [{"targets": [t.address], "labels": dict(t.labels)} for t in members]
        scrape_configs.append(entry)
    return {"global": {"scrape_interval": settings.interval, "scrape_timeout": settings.timeout},
            "scrape_configs": scrape_configs}


# Which service each written file belongs to, and how a change reaches it: vmagent and vmalert
# re-read their scrape configuration and rules on SIGHUP (no lost scrape, no alert state reset);
# service arguments, units and Alertmanager's configuration need a restart.
SERVICE_FILES: dict[str, tuple[str, str]] = {
    "rules/ufcctl.yml": ("ufcctl-vmalert.service", "reloaded"),
    "scrape.yml": ("ufcctl-vmagent.service", "reloaded"),
    "/etc/default/victoria-metrics": ("victoria-metrics.service", "restarted"),
    "/etc/default/ufcctl-vmagent": ("ufcctl-vmagent.service", "restarted"),
    "/etc/systemd/system/ufcctl-vmagent.service": ("ufcctl-vmagent.service", "restarted"),
    "/etc/default/ufcctl-vmalert": ("ufcctl-vmalert.service", "restarted"),
    "/etc/systemd/system/ufcctl-vmalert.service": ("ufcctl-vmalert.service", "restarted"),
    "/etc/default/prometheus-alertmanager": ("prometheus-alertmanager.service", "restarted"),
    "/etc/prometheus/alertmanager.yml": ("prometheus-alertmanager.service", "restarted"),
}


def service_actions(changed_paths: Iterable[str], config_dir: str) -> list[dict[str, str]]:
    """One action per service whose files changed: a restart wins over a reload."""
    actions: dict[str, str] = {}
    for path in changed_paths:
        key = path[len(config_dir) + 1:] if path.startswith(config_dir + "/") else path
        if key in SERVICE_FILES:
            unit, state = SERVICE_FILES[key]
            if actions.get(unit) != "restarted":
                actions[unit] = state
    return [{"unit": unit, "state": state} for unit, state in actions.items()]

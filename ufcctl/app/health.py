"""Use case `ufcctl health`: ask the first monitoring host that answers and build the health report, then
add what the Kubernetes API says of Nodes and workloads (ufcctl/app/readiness.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufcctl.app.inventory import load_inventory
from ufcctl.app.readiness import api_client, namespaces_of, read_once
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.monitoring.health import QUERIES, HealthReport, Sample, build_report, with_api
from ufcctl.domain.monitoring.scrape import url_host
from ufcctl.engine.kubectl import Kubectl
from ufcctl.engine.victoria import VictoriaError, query, query_url
from ufcctl.errors import InputError, RunFailed

# VictoriaMetrics' HTTP port on each `monitoring` host (roles/monitoring: monitoring_vm_port);
# host var `monitoring_vm_port` overrides it.
VM_PORT = 8428
# Seconds each query has to answer. VictoriaMetrics answers these instant queries in milliseconds;
# a host that is down costs at most this much before the next one is tried.
HEALTH_TIMEOUT = 5.0
# Seconds each API list (Nodes, then workloads) has: 16,000 Nodes are a few hundred MB of JSON that the
# apiservers page out in well under a minute; an API behind a VIP nobody holds fails at kubectl's 30 s
# connect timeout, long before this.
API_TIMEOUT = 120

Query = Callable[[str, str, float], list[Sample]]


def monitoring_urls(inventory_dir: Path, inventory: Inventory | None = None) -> list[str]:
    """The base URL of VictoriaMetrics on every `monitoring` host, in inventory order."""
    inventory = inventory or load_inventory(inventory_dir)
    names = inventory.group_hosts("monitoring")
    if not names:
        raise InputError(
            f"inventory {inventory_dir} has no `monitoring` hosts: add the group and run `ufcctl deploy`"
        )
    hosts = [inventory.hosts[n] for n in names]
    return [f"http://{url_host(h.address)}:{_port(h.name, h.vars)}" for h in hosts]


def health_report(inventory_dir: Path, timeout: float = HEALTH_TIMEOUT, ask: Query = query,
                  client: Callable[[], tuple[Kubectl | None, str]] | None = None) -> HealthReport:
    """The report from the first monitoring host whose VictoriaMetrics answers every query, with the
    API's Nodes and workloads read through `client`'s kubectl (without one, the report says why)."""
    inventory = load_inventory(inventory_dir)
    failures = []
    for base in monitoring_urls(inventory_dir, inventory):
        try:
            results = {name: ask(base, expr, timeout) for name, expr in QUERIES.items()}
        except VictoriaError as err:
            failures.append(f"{err.url}: {err.reason}")
            continue
        report = build_report(query_url(base), results)
        kubectl, source = client() if client is not None else api_client(inventory)
        if kubectl is None:
            return with_api(report, None, source)
        return with_api(report, read_once(kubectl, source, namespaces_of(inventory), API_TIMEOUT))
    raise RunFailed(
        "no monitoring host answered: " + "; ".join(failures),
        "check that VictoriaMetrics runs on the `monitoring` hosts (`ufcctl deploy`) and that this "
        "machine reaches their port",
    )


def _port(host: str, hostvars: Any) -> int:
    value = hostvars.get("monitoring_vm_port", VM_PORT)
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        port = -1
    else:
        port = int(value)
    if not 1 <= port <= 65535:
        raise InputError(
            f"host {host}: monitoring_vm_port {value!r} is not a TCP port",
            "set it to a number from 1 to 65535, or remove it to use 8428",
        )
    return port

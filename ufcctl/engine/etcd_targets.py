"""The etcd clusters of an inventory as the controller reaches them: each cluster's topology, a client with
ufcctl's certificate (from the controller PKI roles/etcd made) and the vars of its first member. Shared by
the etcd use cases (ufcctl/app/etcd_maint.py and the commands over it) and the remove-control-plane kind,
which asks every cluster before a host may leave."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ufcctl.domain.etcd.settings import controller_pki_dir
from ufcctl.domain.etcd.topology import KINDS_BY_NAME, EtcdCluster, etcd_clusters
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.etcd_client import ClusterClient, TlsFiles
from ufcctl.errors import InputError
from ufcctl.paths import state_dir


@dataclass(frozen=True)
class Target:
    cluster: EtcdCluster
    client: ClusterClient
    hostvars: dict[str, Any]


def cluster_targets(inventory_dir: Path, only: str | None, inventory: Inventory) -> list[Target]:
    """Each etcd cluster of `inventory` (read from `inventory_dir`), or only `only`: its topology, a client
    with ufcctl's certificate, and the vars of its first member."""
    clusters = etcd_clusters(inventory)
    if not clusters:
        raise InputError(f"inventory {inventory_dir}: no hosts in etcd_core, etcd_events or etcd_pods")
    if only is not None:
        if only not in KINDS_BY_NAME:
            raise InputError(
                f"--cluster {only!r}: unknown cluster", f"use one of: {', '.join(KINDS_BY_NAME)}"
            )
        clusters = tuple(c for c in clusters if c.name == only)
        if not clusters:
            raise InputError(
                f"--cluster {only}: group {KINDS_BY_NAME[only].group} has no hosts in {inventory_dir}"
            )
    tls = client_tls(inventory, clusters[0])
    return [
        Target(c, ClusterClient(c.name, c.client_urls, tls), dict(inventory.hosts[c.members[0].host].vars))
        for c in clusters
    ]


def client_tls(inventory: Inventory, cluster: EtcdCluster) -> TlsFiles:
    pki = controller_pki_dir(inventory.hosts[cluster.members[0].host].vars, state_dir())
    files = TlsFiles(str(pki / "ca.crt"), str(pki / "ufcctl.crt"), str(pki / "ufcctl.key"))
    missing = [f for f in (files.ca, files.cert, files.key) if not Path(f).is_file()]
    if missing:
        raise InputError(
            f"no etcd client certificate for ufcctl: missing {', '.join(missing)}",
            f"deploy etcd first (`ufcctl deploy --inventory {inventory.path}`): roles/etcd creates them",
        )
    return files

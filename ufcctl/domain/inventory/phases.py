"""Which hosts `ufcctl deploy` runs in its cluster phase and which in its node phase (decision 10).

The cluster phase (playbooks/deploy.yml) runs once on the few hosts that carry the cluster: etcd,
the apiserver VIP and load balancer, the control planes, the NFS server, the monitoring hosts,
the registry caches, and any host in no
kube_node group. The node phase (playbooks/deploy-nodes.yml) runs on the workers through the fleet
engine: kube_node hosts that are not control planes. A worker that also carries a cluster
component (an NFS server on a worker, say) is in both: the cluster plays for its component, the
node plays for its kubelet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ufcctl.domain.inventory.model import (
    APISERVER_LB,
    CONTROL_PLANE,
    ETCD_GROUPS,
    KUBE_NODE,
    MONITORING,
    NFS_SERVER,
    REGISTRY_CACHE,
    Inventory,
)

# Groups whose plays belong to the cluster phase (playbooks/deploy.yml).
CLUSTER_GROUPS = (*ETCD_GROUPS, APISERVER_LB, CONTROL_PLANE, NFS_SERVER, MONITORING, REGISTRY_CACHE)
# A worker that is also a control plane gets its kubelet from the cluster phase (kubeadm init/join
# of the control plane), never a second, worker join.
NODE_PHASE_EXCLUDES = (CONTROL_PLANE,)


@dataclass(frozen=True)
class DeployPhases:
    cluster: tuple[str, ...]  # hosts the cluster phase contacts, inventory order
    nodes: tuple[str, ...]  # workers the node phase joins, inventory order


def workers(inventory: Inventory) -> list[str]:
    """kube_node hosts that are not control planes: the node phase's targets."""
    excluded = {h for g in NODE_PHASE_EXCLUDES for h in inventory.group_hosts(g)}
    return [h for h in inventory.group_hosts(KUBE_NODE) if h not in excluded]


def split_phases(inventory: Inventory, selected: Iterable[str]) -> DeployPhases:
    """The selected hosts (a --limit, or every host) cut into the two phases."""
    chosen = list(selected)
    node_hosts = set(workers(inventory))
    cluster_hosts = {h for g in CLUSTER_GROUPS for h in inventory.group_hosts(g)}
    cluster = tuple(h for h in chosen if h not in node_hosts or h in cluster_hosts)
    nodes = tuple(h for h in chosen if h in node_hosts)
    return DeployPhases(cluster, nodes)

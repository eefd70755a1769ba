"""Use case: whether the cluster works, read from its API through the VIP with the admin.conf deploy keeps
beside the cluster's CA, else the operator's kubeconfig (KUBECONFIG or ~/.kube/config, as `plan
upgrade-cluster` and the drains read it): once for `ufcctl
health`, or until it works or time runs out at the end of `ufcctl deploy` (decision D19)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufcctl.app.certs import controller_dirs
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.readiness import ApiView, Readiness, addon_namespaces, readiness
from ufcctl.engine.kubectl import Kubectl, operator_kubectl
from ufcctl.errors import RunFailed
from ufcctl.paths import state_dir

# Seconds between two reads: each read is two whole lists (Nodes; Deployments, DaemonSets and
# StatefulSets of every namespace), a few MB per thousand nodes, so a 10 s pace keeps the apiservers'
# load from polling small next to the kubelets' own status updates (16,000 nodes, every 10 s).
POLL_SECONDS = 10.0
# The most one list may take: 16,000 Nodes are a few hundred MB of JSON, paged by kubectl.
LIST_TIMEOUT = 300
# `deploy --ready-timeout`'s default, sized for 16,000 nodes: when the node phase ends, its last batches
# have just joined and their CNI and device-plugin pods start (kube-controller-manager creates them at
# its --kube-api-qps, 100 here: 16,000 pods in under 3 min; images come through the registry caches). A
# deploy that changed a DaemonSet's template rolls it at maxUnavailable 10% (cni_calico_max_unavailable,
# nodelocaldns_max_unavailable, the device plugin's): ten waves of pod stop, pull and start, about
# 1-2 min each at that size. 30 min covers both with room; a smaller cluster is done in its first polls.
DEFAULT_READY_TIMEOUT = 1800
# The first control plane's var naming the NFS provisioner's namespace (roles/nfs_provisioner)
NFS_NAMESPACE_VAR = "nfs_provisioner_namespace"

Clock = Callable[[], float]


def kept_kubeconfig(inventory: Inventory) -> Path | None:
    """The admin.conf deploy keeps beside the cluster's CA (roles/kube_control_plane,
    kube_control_plane_admin_conf_to_controller): this cluster's own, whatever the operator's points at."""
    where = controller_dirs(inventory, state_dir()).get("kubernetes")
    return Path(where) / "admin.conf" if where else None


def api_client(inventory: Inventory | None = None) -> tuple[Kubectl | None, str]:
    """kubectl with the inventory's kept admin.conf, else the operator's kubeconfig, and that kubeconfig's
    path; or None and why not."""
    kept = kept_kubeconfig(inventory) if inventory is not None else None
    return operator_kubectl(": the cluster's Nodes and workloads were not read", kept)


def namespaces_of(inventory: Inventory) -> frozenset[str]:
    """The namespaces ufcctl's add-ons use, with this inventory's NFS provisioner namespace."""
    planes = inventory.group_hosts("kube_control_plane")
    value = inventory.hosts[planes[0]].vars.get(NFS_NAMESPACE_VAR) if planes else None
    return addon_namespaces(str(value) if value and "{{" not in str(value) else None)


def read_readiness(kubectl: Kubectl, namespaces: frozenset[str], timeout: int = LIST_TIMEOUT) -> Readiness:
    """One read: the Node list and the workload list, each one call."""
    nodes = kubectl.list_json("nodes", timeout=timeout)
    workloads = kubectl.list_json("deployments.apps,daemonsets.apps,statefulsets.apps", all_namespaces=True,
                                  timeout=timeout)
    return readiness(nodes, workloads, namespaces)


def read_once(kubectl: Kubectl, source: str, namespaces: frozenset[str],
              timeout: int = LIST_TIMEOUT) -> ApiView:
    """`ufcctl health`'s read: an API that does not answer is a finding, not an exception."""
    try:
        return ApiView(source, read_readiness(kubectl, namespaces, timeout))
    except RunFailed as err:
        return ApiView(source, None, err.message)


def wait_ready(kubectl: Kubectl, source: str, namespaces: frozenset[str], timeout: float, *,
               poll: float = POLL_SECONDS, clock: Clock = time.monotonic,
               sleep: Callable[[float], Any] = time.sleep,
               on_read: Callable[[ApiView], None] | None = None) -> ApiView:
    """Read until every Node is Ready and every workload available, or `timeout` seconds have passed
    (a read that fails, e.g. an apiserver restarting behind the VIP, is retried until then). Returns
    the last view; its `ok` says which it was."""
    start = clock()
    last: Readiness | None = None
    while True:
        left = timeout - (clock() - start)
        error = None
        try:
            last = read_readiness(kubectl, namespaces, timeout=int(max(10.0, min(LIST_TIMEOUT, left))))
        except RunFailed as err:
            error = err.message
        view = ApiView(source, last, error, clock() - start)
        if on_read is not None:
            on_read(view)
        if view.ok or clock() - start + poll > timeout:
            return view
        sleep(poll)

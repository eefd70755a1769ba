"""The deploy-nodes kind: the node phase of `ufcctl deploy` and all of `ufcctl add-nodes`.

Each worker (kube_node, not a control plane) gets preflight, kernel tuning, the container runtime,
kubelet and kubeadm, and joins the cluster through the apiserver VIP (playbooks/deploy-nodes.yml).
What is particular to this kind: its playbook, the join token made once per run before any node
starts (playbooks/join-token.yml on the first control plane), the cluster's hosts beside each
chunk of workers in its inventory (never run on: read and delegated to, e.g. the NPU taint's
removal through the first control plane), no drain by the engine around a node (a joining node runs
no pods; a joined worker whose containerd or Ascend Docker Runtime changes version is drained inside its
own play by roles/container_runtime, kubectl on the first control plane),
and admission pacing (the request's rate).
Window, budget, canary, alignment, state, resume and `--retry-failed` are the engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.images import mirrors
from ufcctl.domain.inventory.model import CONTROL_PLANE, KUBE_NODE, REGISTRY_CACHE, Inventory
from ufcctl.domain.inventory.phases import CLUSTER_GROUPS, NODE_PHASE_EXCLUDES
from ufcctl.engine.runner import RunOptions, run_playbook
from ufcctl.errors import RunFailed
from ufcctl.paths import playbook
from ufcctl.rollout.kind import NodeGuard, RolloutKind, RolloutRequest

# The last task of roles/kube_node: its ok/changed event means the node is done.
MARKER_TASK = "Report the node done to the rollout engine"
# A node's whole work: packages present, two binaries fetched, containerd restarted, and a join whose
# own timeouts add up to ~14 min (kubeadm v1beta4: discovery 5m + TLS bootstrap 5m + kubelet health
# 4m, docs/reference/nodes-observability-images.md §2). 30 min fails a node hung past all of them.
DEFAULT_NODE_TIMEOUT = 1800
# Joins admitted per second at most. Each join is a burst of apiserver writes (CSR, Node, Lease,
# status) and one pod per DaemonSet (CNI, NodeLocal DNSCache, kube-proxy, Device Plugin, NodeD: ~5)
# for the scheduler. 10/s is ~50 pods/s, half the ~100 pods/s measured on a 5,000-node cluster
# (docs/reference/scale.md, PR #74041), leaving the rest for workloads; 16,000 joins take >= 27 min.
DEFAULT_JOIN_RATE = 10.0
TOKEN_PLAYBOOK = "join-token.yml"


# playbooks/deploy-nodes.yml: true runs every role on every node, with no fast path for nodes at target
FULL_VAR = "ufc_node_state_full"


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {FULL_VAR: True} if options.get("full") else {}


def cache_index(inventory: Inventory) -> dict[str, Any]:
    """`registry_cache_index` for roles/container_runtime's mirrors (and roles/registry_cache's ToR
    caches, which fill from their super pod's: the cluster phase passes it too), built once for the fleet
    (ufcctl/domain/images/mirrors.py); nothing when the inventory has no cache hosts or their specs
    are wrong (the role then reports the problem on each node)."""
    names = inventory.group_hosts(REGISTRY_CACHE)
    if not names:
        return {}
    hostvars = {n: inventory.hosts[n].vars for n in names}
    caches, problems = mirrors.parse_caches({REGISTRY_CACHE: names}, hostvars)
    return {} if problems else {mirrors.INDEX_VAR: mirrors.index_table(mirrors.index_caches(caches))}


def _deadline(options: Mapping[str, Any]) -> float:
    return float(options.get("node_timeout", DEFAULT_NODE_TIMEOUT))


def _no_drain(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    return None, ("in each node's play, only where a joined worker's containerd or Ascend Docker Runtime "
                  "changes version (kubectl drain on the first control plane)")


def prepare_join_token(request: RolloutRequest, inventory: Inventory) -> str:
    """Create or refresh the join token on the first control plane (playbooks/join-token.yml): once
    per run and on every resume, so a long node phase never outlives its token."""
    control_planes = inventory.group_hosts(CONTROL_PLANE)
    if not control_planes:
        return f"no join token: group {CONTROL_PLANE} has no hosts (joins are reported SKIPPED)"
    first = control_planes[0]
    result = run_playbook(playbook(TOKEN_PLAYBOOK), inventory.subset([first]),
                          RunOptions(forks=1, check=request.dry_run))
    if not result.succeeded:
        raise RunFailed(f"join token on {first}: {result.outcome}: {result.why(first)}",
                        f"details in {result.run_dir}/failures.jsonl; no worker was touched")
    return f"join token from {first}: {result.hosts[first].status if first in result.hosts else 'ok'}"


KIND = RolloutKind(
    name="deploy-nodes",
    playbook="deploy-nodes.yml",
    marker_task=MARKER_TASK,
    group=KUBE_NODE,
    options=("node_timeout", "full"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=_no_drain,
    exclude_groups=NODE_PHASE_EXCLUDES,
    # the cluster's hosts beside each chunk: the NFS client where an NFS server exists, the node
    # exporter where monitoring hosts exist, the NPU taint removed through the first control plane
    context_groups=CLUSTER_GROUPS,
    inventory_extravars=cache_index,
    prepare=prepare_join_token,
    version_guard=True,  # a new node's kubelet must not be newer than the apiservers
)



def nodes_options(*, node_timeout: int = DEFAULT_NODE_TIMEOUT, full: bool = False) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options). full: no fast path (playbooks/deploy-nodes.yml)."""
    return {"node_timeout": node_timeout, "full": full}

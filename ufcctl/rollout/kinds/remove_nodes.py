"""The remove-nodes kind: `ufcctl remove-nodes` takes workers out of the cluster.

Each worker (kube_node, neither a control plane nor an etcd member) is drained through kubectl on the
first control plane, reset (kubeadm reset -f, kubelet and containerd stopped and disabled, the join
state wiped) and its Node object deleted (playbooks/remove-nodes.yml, roles/kube_node tasks/remove.yml);
its NPU driver stays. What is particular to this kind: the refusal of control planes and etcd members
before anything is written (`refuse_cluster_hosts`: their removal needs the etcd member removed one at a
time with quorum kept, the remove-control-plane kind's work, `--control-plane`), the control planes
beside each chunk (kubectl runs on the first), and the drain inside the node's play rather than in a
controller-side guard, so a node killed between cordon and reset is `running` in the store and redone
by `ufcctl resume` (a drain of a cordoned node and a reset of a reset node change nothing).
Window, budget, canary, alignment, state, resume and `--retry-failed` are the engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.model import CONTROL_PLANE, ETCD_GROUPS, KUBE_NODE, Inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.errors import InputError, shown
from ufcctl.rollout.kind import RolloutKind, RolloutRequest
from ufcctl.rollout.kinds.in_play_drain import drain_hooks, drain_timeout, kubectl_host

# The last task of roles/kube_node tasks/remove.yml: its ok/changed event means the node is done.
MARKER_TASK = "Report the node done to the rollout engine"
# Seconds kubectl drain may wait for one node's pods (roles/kube_node kube_node_remove_drain_timeout).
DEFAULT_DRAIN_TIMEOUT = 900
# Groups whose hosts this kind never removes: a control plane's apiserver and an etcd member's data
# need the control-plane procedure (etcd member remove, one at a time, quorum kept), not a worker's.
PROTECTED_GROUPS = (CONTROL_PLANE, *ETCD_GROUPS)


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"kube_node_remove_drain_timeout": drain_timeout(options, DEFAULT_DRAIN_TIMEOUT)}


def _deadline(options: Mapping[str, Any]) -> float:
    """The drain's own timeout, plus reset and deletion (a few minutes at most)."""
    return float(drain_timeout(options, DEFAULT_DRAIN_TIMEOUT) + 600)


def chosen_hosts(inventory: Inventory, limit: str) -> list[str]:
    """The hosts --limit selects, inventory order; InputError for a pattern that does not parse."""
    try:
        return select_hosts(inventory, limit)
    except PatternError as err:
        raise InputError(f"--limit {shown(limit)}: {err}",
                         "use host names, group names, globs, ! and &") from err


def refuse_cluster_hosts(inventory: Inventory, limit: str) -> None:
    """InputError naming the control planes and etcd members --limit selects: nothing is touched."""
    chosen = set(chosen_hosts(inventory, limit))
    protected = [h for g in PROTECTED_GROUPS for h in inventory.group_hosts(g) if h in chosen]
    if protected:
        names = list(dict.fromkeys(protected))
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        groups = sorted({g for g in PROTECTED_GROUPS for h in names if h in inventory.group_hosts(g)})
        raise InputError(
            f"--limit {shown(limit)} selects {listed} ({', '.join(groups)}): without --control-plane "
            "remove-nodes removes workers only",
            "narrow --limit to workers (e.g. '<pattern>:!kube_control_plane'), or remove control planes and "
            "etcd members with --control-plane (one at a time, each etcd member removed with quorum kept)")


def _prepare(request: RolloutRequest, inventory: Inventory) -> str:
    """Before any node, on a new run and on every resume: the refusal again (the inventory may have
    changed since), and a first control plane to run kubectl on."""
    if request.limit is not None:
        refuse_cluster_hosts(inventory, request.limit)
    return kubectl_host(request, inventory, "drain, delete node",
                        "nothing to drain the nodes and delete their Node objects from")


KIND = RolloutKind(
    name="remove-nodes",
    playbook="remove-nodes.yml",
    marker_task=MARKER_TASK,
    group=KUBE_NODE,
    options=("drain_timeout",),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=drain_hooks("cordon + evict"),
    exclude_groups=PROTECTED_GROUPS,
    # the control planes beside each chunk (never run on): kubectl drain and delete run on the first
    context_groups=(CONTROL_PLANE,),
    prepare=_prepare,
)


def remove_options(*, drain_timeout: int = DEFAULT_DRAIN_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options)."""
    return {"drain_timeout": drain_timeout}

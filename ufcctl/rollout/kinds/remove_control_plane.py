"""The remove-control-plane kind: `ufcctl remove-nodes --control-plane` takes control planes and etcd
members out of the cluster, strictly one at a time.

Each host (playbooks/remove-control-plane.yml, roles/kube_control_plane tasks/remove.yml): drained if it
is a Node, the VIP off it and out of every haproxy's backends, kubeadm reset (its kube-apiserver stops),
each etcd member it runs removed from its cluster by the member's own agent (leadership handed over
first; roles/etcd tasks/leave.yml), stopped with its timers and its data directory moved aside, its Node
deleted. What is particular to this kind: batch 1, window 1 and --max-fail 0, forced (`one_at_a_time`);
and `check_removal` before anything is written, on a new run and on every resume: only control planes
and etcd members, never the first control plane (it runs kubectl for the cluster, and `deploy` would
`kubeadm init` it again) nor every control plane, and every etcd cluster the chosen hosts are members of
answering, healthy (every member up under one leader) and keeping at least one member. A cluster the
host already left is not asked about it again, so a rerun or `ufcctl resume` after a kill finishes a
half-done host (its member gone, its unit still running) and never removes a second member.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.etcd.defrag import health_problems
from ufcctl.domain.etcd.membership import plan_leave
from ufcctl.domain.inventory.model import APISERVER_LB, CONTROL_PLANE, ETCD_GROUPS, Inventory
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.engine.etcd_targets import cluster_targets
from ufcctl.errors import InputError, shown
from ufcctl.rollout.kind import RolloutKind, RolloutRequest
from ufcctl.rollout.kinds.in_play_drain import drain_hooks, drain_timeout, kubectl_host
from ufcctl.rollout.kinds.remove_nodes import DEFAULT_DRAIN_TIMEOUT, PROTECTED_GROUPS, chosen_hosts

# The last task of roles/kube_control_plane tasks/remove.yml: its ok/changed event means the host is done.
MARKER_TASK = "Report the node done to the rollout engine"
# Seconds each etcd cluster has to hand leadership over and settle after the member remove (the agent's
# --timeout default, 120 s, per cluster): three clusters, plus the reset and the deletes.
ETCD_SECONDS = 3 * 120 + 600


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"kube_node_remove_drain_timeout": drain_timeout(options, DEFAULT_DRAIN_TIMEOUT),
            # one suffix for every data directory this run moves aside (resume keeps it)
            "kube_control_plane_remove_stamp": str(options["stamp"])}


def _kubectl_host(inventory: Inventory) -> dict[str, Any]:
    """kubectl (drain, delete node) runs on the inventory's first control plane, which check_removal never
    lets go: named here because the chunk's inventory lists its targets first, so `groups[...][0]` there
    would be the host being removed."""
    planes = inventory.group_hosts(CONTROL_PLANE)
    return {"k8s_manifests_apply_host": planes[0]} if planes else {}


def _deadline(options: Mapping[str, Any]) -> float:
    return float(drain_timeout(options, DEFAULT_DRAIN_TIMEOUT) + ETCD_SECONDS)


def one_at_a_time(request: RolloutRequest) -> RolloutRequest:
    """The request with batch 1, window 1, no canary and --max-fail 0: one host at a time, and a failure
    stops the run (the next host must not leave a cluster the last one may have left short)."""
    return dataclasses.replace(request, batch=1, window=1, canary=0, max_fail=0.0)


def check_removal(request: RolloutRequest, inventory: Inventory) -> list[str]:
    """InputError (nothing touched) unless the hosts --limit selects may leave, one at a time, now; else
    one line per etcd cluster saying who leaves it (and whether leadership moves first)."""
    limit = request.limit or ""
    chosen = chosen_hosts(inventory, limit)
    protected = {h for g in PROTECTED_GROUPS for h in inventory.group_hosts(g)}
    workers = [h for h in chosen if h not in protected]
    if workers:
        raise InputError(f"--limit {shown(limit)} selects {', '.join(workers[:5])}: neither a control plane "
                         "nor an etcd member", "remove workers without --control-plane")
    planes = inventory.group_hosts(CONTROL_PLANE)
    if planes and planes[0] in chosen:
        raise InputError(f"--limit {shown(limit)} selects {planes[0]}, the first control plane of the "
                         "inventory: it runs kubectl for the cluster and `ufcctl deploy` would kubeadm init "
                         "it again",
                         f"move {planes[0]} down in group {CONTROL_PLANE} (another control plane first), "
                         "then remove it")
    if planes and all(p in chosen for p in planes):
        raise InputError(f"--limit {shown(limit)} selects every control plane", "keep at least one")
    return _check_etcd(request, inventory, chosen)


def _check_etcd(request: RolloutRequest, inventory: Inventory, chosen: list[str]) -> list[str]:
    lines: list[str] = []
    groups = [g for g in ETCD_GROUPS if any(h in chosen for h in inventory.group_hosts(g))]
    if not groups:
        return lines
    for target in cluster_targets(request.inventory_dir, None, inventory):
        name = target.cluster.name
        hosts = [m.host for m in target.cluster.members if m.host in chosen]
        if not hosts:
            continue
        try:
            view = target.client.view(with_last=False)
        except EtcdError as err:
            raise InputError(f"etcd cluster {name} does not answer: {err}; nothing was touched",
                             f"no member of {name} can leave without quorum: `ufcctl etcd status`") from err
        leaving = [h for h in hosts if view.member(h) is not None]
        if not leaving:
            lines.append(f"etcd {name}: {', '.join(hosts)} left already")
            continue
        problems = health_problems(view)
        if problems:
            raise InputError(f"etcd cluster {name} is not healthy: {'; '.join(problems)}; {leaving[0]} "
                             "cannot leave it, nothing was touched",
                             f"bring every member of {name} back first (`ufcctl etcd status --cluster "
                             f"{name}`, `ufcctl etcd member replace`)")
        if len(view.members) - len(leaving) < 1:
            raise InputError(f"etcd cluster {name}: removing {', '.join(leaving)} would leave it no member",
                             "keep at least one member of every cluster")
        plan = plan_leave(view, leaving[0])
        lead = f" (it leads: leadership moves to {plan.heir} first)" if plan.heir else ""
        lines.append(f"etcd {name}: {', '.join(leaving)} leave{'s' if len(leaving) == 1 else ''}{lead}, "
                     f"{len(view.members) - len(leaving)} member(s) stay")
    return lines


def _prepare(request: RolloutRequest, inventory: Inventory) -> str:
    """Before any host, on a new run and on every resume: the checks again (a half-done host's
    clusters are asked what is left), and a first control plane to run kubectl on."""
    lines = check_removal(request, inventory)
    kubectl = kubectl_host(request, inventory, "drain, delete node",
                           "nothing to drain the hosts and delete their Node objects from")
    return "; ".join([*lines, kubectl])


KIND = RolloutKind(
    name="remove-control-plane",
    playbook="remove-control-plane.yml",
    marker_task=MARKER_TASK,
    group="all",  # control planes and etcd members: check_removal refuses anything else
    options=("drain_timeout", "stamp"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=drain_hooks("cordon + evict", "host"),
    # the control planes (kubectl on the first) and every haproxy (its backends) beside each chunk
    context_groups=(CONTROL_PLANE, APISERVER_LB),
    inventory_extravars=_kubectl_host,
    prepare=_prepare,
)


def remove_options(*, drain_timeout: int = DEFAULT_DRAIN_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options): the drain timeout and the run's UTC stamp."""
    return {"drain_timeout": drain_timeout, "stamp": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())}

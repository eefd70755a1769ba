"""The upgrade-cluster kind: the worker phase of `ufcctl upgrade-cluster` (a Kubernetes minor or patch
upgrade), run once every control plane runs the new version (playbooks/upgrade-cluster.yml, in
ufcctl/app/upgrade_cluster.py, before this kind starts).

Each worker (kube_node, not a control plane) is drained with a mark (kubectl on the first control plane),
gets the new kubeadm and `kubeadm upgrade node`, the new kubelet and a restart, and is uncordoned only
once its Node is Ready with the kubelet reporting the new version (playbooks/upgrade-nodes.yml, roles/
kube_node tasks/upgrade.yml). What is particular to this kind: the drain inside the node's play (a node
killed between cordon and uncordon is `running` in the store and redone by `ufcctl resume`; its flag
file on the node and the drain's mark make the redo release it), the control planes beside each chunk
(kubectl runs on the first) and a node at the target ending its play after one probe.
Window, budget, canary, alignment, state, resume and `--retry-failed` are the engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.model import CONTROL_PLANE, KUBE_NODE, Inventory
from ufcctl.rollout.kind import RolloutKind, RolloutRequest
from ufcctl.rollout.kinds.in_play_drain import drain_hooks, drain_timeout, kubectl_host

# The last task of roles/kube_node tasks/upgrade.yml: its ok/changed event means the node is done.
MARKER_TASK = "Report the node done to the rollout engine"
# Seconds kubectl drain may wait for one node's pods (roles/kube_node kube_node_upgrade_drain_timeout).
DEFAULT_DRAIN_TIMEOUT = 900


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"kube_node_upgrade_drain_timeout": drain_timeout(options, DEFAULT_DRAIN_TIMEOUT)}


def _deadline(options: Mapping[str, Any]) -> float:
    """The drain's own timeout, plus two binaries, the kubelet's restart and its 5-minute health gate."""
    return float(drain_timeout(options, DEFAULT_DRAIN_TIMEOUT) + 900)


def _prepare(request: RolloutRequest, inventory: Inventory) -> str:
    return kubectl_host(request, inventory, "drain, release", "nothing to drain the nodes from")


KIND = RolloutKind(
    name="upgrade-cluster",
    playbook="upgrade-nodes.yml",
    marker_task=MARKER_TASK,
    group=KUBE_NODE,
    options=("drain_timeout", "version"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=drain_hooks("cordon (marked) + evict, uncordon once Ready"),
    exclude_groups=(CONTROL_PLANE,),
    # the control planes beside each chunk (never run on): kubectl drain and release run on the first
    context_groups=(CONTROL_PLANE,),
    prepare=_prepare,
)


def upgrade_options(*, version: str, drain_timeout: int = DEFAULT_DRAIN_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options); the version is recorded, the role reads the
    inventory's ufc_kube_version (which the command checked equals it)."""
    return {"version": version, "drain_timeout": drain_timeout}

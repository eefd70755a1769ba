"""Cordon and drain around a node's upgrade when a kubeconfig is available; otherwise say it was skipped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.npu.driver_labels import selector
from ufcctl.domain.rollout.cordon import NPU_DRIVER
from ufcctl.engine.kubectl import Kubectl, find_kubeconfig, find_kubectl
from ufcctl.errors import EnvironmentMissing
from ufcctl.rollout.kind import NodeGuard

DRAIN_TIMEOUT = 900  # seconds kubectl drain may wait for pods to leave one node
# the value of ufcctl's cordon mark for a driver rollout (domain/rollout/cordon.py): roles/ascend_driver's
# in-play drain has it too (vars/main/generated.yml), so its admission uncordons a node either one drained
DRAIN_MARK = NPU_DRIVER
NODE_NAME_VAR = "ufc_kube_node_name"  # when the Kubernetes node name differs from the inventory name


# host -> the labels its Node carries once at the rollout's target ({}: unknown, the node is drained)
Targets = Callable[[Host], Mapping[str, str]]


class DrainGuard:
    """Skips nodes with NPU pods unless forced; cordons + drains before, uncordons after success.

    A node that fails its upgrade stays cordoned, so no job lands on a node with a broken driver; a node
    already cordoned before the rollout (not by ufcctl) is drained and upgraded but stays cordoned.
    With `targets`, nodes whose labels already say the target are found first (`at_target`, one
    kubectl call per distinct target) and are not drained at all (the play refuses to install on them).
    """

    def __init__(self, kubectl: Kubectl, force: bool, drain_timeout: int = DRAIN_TIMEOUT,
                 targets: Targets | None = None, mark: str = DRAIN_MARK):
        self.kubectl = kubectl
        self.force = force
        self.drain_timeout = drain_timeout
        self.targets = targets
        self.mark = mark
        # nodes this guard cordoned (or an earlier run of it, killed before the release: its mark is on the
        # node); only those are uncordoned. A node cordoned before the rollout by someone else stays so.
        self.ours: set[str] = set()

    def at_target(self, hosts: Sequence[Host]) -> set[str]:
        """The hosts whose Node's labels say the target: one label-selector read per distinct target
        (one for a fleet on one release), answered with the names of the matching nodes only."""
        if self.targets is None:
            return set()
        wanted: dict[str, list[Host]] = {}
        for host in hosts:
            labels = self.targets(host)
            if labels:
                wanted.setdefault(selector(labels), []).append(host)
        found: set[str] = set()
        for query, group in wanted.items():
            names = self.kubectl.nodes_labelled(query)
            found.update(host.name for host in group if self.node_name(host) in names)
        return found

    @staticmethod
    def node_name(host: Host) -> str:
        return str(host.vars.get(NODE_NAME_VAR, host.name))

    def prepare(self, host: Host) -> str | None:
        name = self.node_name(host)
        pods = self.kubectl.npu_pods(name)
        if pods and not self.force:
            shown = ", ".join(pods[:3]) + (" ..." if len(pods) > 3 else "")
            return f"NPU pods running ({shown}); not drained, use --force to drain them"
        cordoned, mark = self.kubectl.cordon_state(name)
        if not cordoned:
            self.kubectl.mark(name, self.mark)  # before the cordon: a run killed in between leaves the record
        if not cordoned or mark == self.mark:
            self.ours.add(name)
        self.kubectl.drain(name, self.drain_timeout)  # kubectl drain cordons first
        return None

    def release(self, host: Host, ok: bool) -> None:
        """Uncordon a node that succeeded, only if this guard cordoned it (its mark)."""
        name = self.node_name(host)
        if ok and name in self.ours:
            self.kubectl.uncordon(name)
            self.kubectl.unmark(name)
            self.ours.discard(name)


def drain_guard(*, force: bool, dry_run: bool,
                targets: Targets | None = None) -> tuple[NodeGuard | None, str]:
    """The guard to use and what the report says about the cordon/drain step."""
    if dry_run:
        return None, "skipped: --dry-run (nodes are not cordoned or drained in check mode)"
    kubeconfig = find_kubeconfig()
    if kubeconfig is None:
        return None, ("skipped: no kubeconfig (KUBECONFIG unset or missing, no ~/.kube/config); "
                      "nodes were NOT cordoned or drained")
    binary = find_kubectl()
    if binary is None:
        raise EnvironmentMissing(
            f"a kubeconfig exists ({kubeconfig}) but kubectl is not installed, so nodes cannot be drained",
            "install kubectl, or unset KUBECONFIG if this kubeconfig is not the cluster being upgraded",
        )
    guard = DrainGuard(Kubectl(binary, kubeconfig), force, targets=targets)
    skipped = "; nodes whose labels say the target are not drained" if targets is not None else ""
    return guard, f"cordon + drain with {kubeconfig} (force={force}){skipped}; failed nodes stay cordoned"


"""Cordon and drain around a node's upgrade when a kubeconfig is available; otherwise say it was skipped."""

from __future__ import annotations

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.kubectl import Kubectl, find_kubeconfig, find_kubectl
from ufcctl.errors import EnvironmentMissing
from ufcctl.rollout.kind import NodeGuard, RolloutRequest

DRAIN_TIMEOUT = 900  # seconds kubectl drain may wait for pods to leave one node
NODE_NAME_VAR = "ufc_kube_node_name"  # when the Kubernetes node name differs from the inventory name


class DrainGuard:
    """Skips nodes with NPU pods unless forced; cordons + drains before, uncordons after success.

    A node that fails its upgrade stays cordoned, so no job lands on a node with a broken driver.
    """

    def __init__(self, kubectl: Kubectl, force: bool, drain_timeout: int = DRAIN_TIMEOUT):
        self.kubectl = kubectl
        self.force = force
        self.drain_timeout = drain_timeout

    @staticmethod
    def node_name(host: Host) -> str:
        return str(host.vars.get(NODE_NAME_VAR, host.name))

    def prepare(self, host: Host) -> str | None:
        name = self.node_name(host)
        pods = self.kubectl.npu_pods(name)
        if pods and not self.force:
            shown = ", ".join(pods[:3]) + (" ..." if len(pods) > 3 else "")
            return f"NPU pods running ({shown}); not drained, use --force to drain them"
        self.kubectl.cordon(name)
        self.kubectl.drain(name, self.drain_timeout)
        return None

    def release(self, host: Host, ok: bool) -> None:
        if ok:
            self.kubectl.uncordon(self.node_name(host))


def drain_guard(*, force: bool, dry_run: bool) -> tuple[NodeGuard | None, str]:
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
    guard = DrainGuard(Kubectl(binary, kubeconfig), force)
    return guard, f"cordon + drain with {kubeconfig} (force={force}); failed nodes stay cordoned"


def drain_hooks(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    """The gate hooks of a kind that drains: cordon + drain before a node starts, uncordon after it
    succeeded (upgrade-drivers names it; kind.py does not import this module)."""
    return drain_guard(force=request.force, dry_run=request.dry_run)

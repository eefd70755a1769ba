"""Use case `ufcctl plan upgrade-cluster`: what an upgrade to a Kubernetes version would do, and whether
Kubernetes' version-skew policy allows it (ufcctl/domain/controlplane/skew.py). Touches nothing.

The versions it reads, each from the component itself:
- every control plane's kube-apiserver: GET /version on its secure port, verified against the
  cluster CA on the controller (anonymous access to /version is kube-apiserver's default);
- every kubelet: the Nodes' kubeletVersion, through the operator's kubeconfig (KUBECONFIG or
  ~/.kube/config), as `upgrade-drivers` drains with it; without one the kubelets' skew is not checked
  and the plan says so;
- every etcd member: its status (`ufcctl etcd status`).
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass, replace
from pathlib import Path

from ufcctl.app.certs import controller_dirs
from ufcctl.app.etcd_maint import etcd_status
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.addons import compat
from ufcctl.domain.controlplane import skew
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.http_get import HttpError
from ufcctl.engine.http_get import request as http_request
from ufcctl.engine.kubectl import operator_kubectl
from ufcctl.errors import InputError, RunFailed
from ufcctl.paths import state_dir

CONTROL_PLANE = "kube_control_plane"
WORKERS = "kube_node"
VERSION_TIMEOUT = 5.0
# roles/ascend_components' default for ufc_mindcluster_version
DEFAULT_MINDCLUSTER_VERSION = "26.0.0"
# the roles' default for ufc_kube_version (docs/reference/real-kubernetes.md §2)
DEFAULT_KUBE_VERSION = "1.34.4"


@dataclass(frozen=True)
class UpgradePlan:
    verdict: skew.Verdict
    control_planes: tuple[str, ...]
    workers: int
    kubelets_from: str  # the kubeconfig read, or why none was
    kubelets_read: bool

    def to_json(self) -> dict[str, object]:
        v = self.verdict
        return {"target": v.target, "current": v.current, "allowed": v.allowed,
                "nothing_to_do": v.nothing_to_do,
                "refusals": list(v.refusals), "warnings": list(v.warnings),
                "control_planes": list(self.control_planes), "workers": self.workers,
                "kubelets_from": self.kubelets_from}


def cluster_ca(inventory: Inventory) -> Path:
    """The cluster CA on the controller: the directory roles/kube_control_plane keeps it in, as `certs
    check` finds it (it may not exist yet)."""
    return Path(controller_dirs(inventory, state_dir())["kubernetes"]) / "ca.crt"


def apiserver_versions(inventory: Inventory, hosts: list[str]) -> dict[str, str | None]:
    ca = cluster_ca(inventory)
    if not ca.is_file():
        raise InputError(f"no Kubernetes CA on this machine: {ca} is missing",
                         "deploy the control plane first (roles/kube_control_plane makes it)")
    context = ssl.create_default_context(cafile=str(ca))
    versions: dict[str, str | None] = {}
    for host in hosts:
        hostvars = inventory.hosts[host].vars
        address = str(hostvars.get("ansible_host") or host)
        port = hostvars.get("kube_control_plane_apiserver_port", 6443)
        try:
            answer = http_request(f"https://{address}:{port}/version", deadline=VERSION_TIMEOUT,
                                  max_bytes=1 << 16, context=context)
            versions[host] = str(json.loads(answer.body).get("gitVersion")) if answer.status == 200 else None
        except (HttpError, ValueError, AttributeError):
            versions[host] = None
    return versions


def _kubelet_versions() -> tuple[dict[str, str], str]:
    kubectl, source = operator_kubectl()
    if kubectl is None:
        return {}, source
    try:
        return kubectl.kubelet_versions(), source
    except (RunFailed, ValueError) as err:
        return {}, f"the Node list could not be read with {source}: {err}"


def plan_upgrade_cluster(inventory_dir: Path, version: str,
                         inventory: Inventory | None = None) -> UpgradePlan:
    """`inventory`: the one at `inventory_dir` when the caller loaded it already (read once, not twice)."""
    if skew.parse(version) is None:
        raise InputError(f"--version {version!r}: not a Kubernetes version",
                         "use vMAJOR.MINOR.PATCH, e.g. v1.35.4")
    inventory = inventory or load_inventory(inventory_dir)
    planes = inventory.group_hosts(CONTROL_PLANE)
    if not planes:
        raise InputError(f"inventory {inventory_dir}: no hosts in {CONTROL_PLANE}")
    apiservers = apiserver_versions(inventory, planes)
    kubelets, source = _kubelet_versions()
    etcd = {f"{c.cluster}/{m.member}": m.version for c in etcd_status(inventory_dir, inventory=inventory)
            for m in c.members if m.version}
    ignored = inventory.hosts[planes[0]].vars.get("kube_control_plane_ignore_preflight_errors") or []
    verdict = skew.check(version, skew.Versions(
        apiservers, kubelets, etcd, frozenset(str(i) for i in ignored if isinstance(ignored, list))))
    # the add-ons' compatibility too: a target newer than MindCluster states is allowed, and said
    mindcluster = (inventory.hosts[planes[0]].vars.get("ufc_mindcluster_version")
                   or DEFAULT_MINDCLUSTER_VERSION)
    verdict = replace(verdict, warnings=verdict.warnings + tuple(
        compat.kube_warnings(str(mindcluster), verdict.target)))
    return UpgradePlan(verdict, tuple(planes), len(inventory.group_hosts(WORKERS)), source, bool(kubelets))


def inventory_version(inventory: Inventory) -> str:
    """ufc_kube_version as the roles see it on the first control plane (their default without one)."""
    planes = inventory.group_hosts(CONTROL_PLANE)
    value = inventory.hosts[planes[0]].vars.get("ufc_kube_version") if planes else None
    return str(value or DEFAULT_KUBE_VERSION)


def refuse_version_change(inventory_dir: Path, inventory: Inventory) -> None:
    """InputError (exit 2, nothing touched) when a running kube-apiserver's version is not the inventory's
    ufc_kube_version: `deploy` and `add-nodes` would install that version's kubeadm and kubelet under
    running nodes (no drain, no restart; a kubelet newer than its apiserver when the version went up),
    which is `ufcctl upgrade-cluster`'s work. A cluster not deployed yet (no CA on this machine) and
    apiservers that do not answer are let through: a first deploy, or a deploy that repairs."""
    planes = inventory.group_hosts(CONTROL_PLANE)
    if not planes or not cluster_ca(inventory).is_file():
        return
    wanted = skew.parse(inventory_version(inventory))
    running = {h: v for h, v in apiserver_versions(inventory, planes).items() if v is not None}
    other = sorted(h for h, v in running.items() if skew.parse(v) != wanted)
    if wanted is None or not other:
        return
    target = skew.text(wanted)
    raise InputError(
        f"inventory {inventory_dir} says ufc_kube_version {target[1:]!r} but kube-apiserver on "
        f"{', '.join(other)} runs {running[other[0]]}: a deploy would swap kubeadm and kubelet under "
        "running nodes", f"run `ufcctl upgrade-cluster --inventory {inventory_dir} --version {target}` "
        f"(or set ufc_kube_version back to {running[other[0]].lstrip('v')!r})")

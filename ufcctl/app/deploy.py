"""Use case: deploy the stack onto an inventory or a part of it, in two phases (decision 10).

1. The cluster phase: playbooks/deploy.yml, once, on the hosts that carry the cluster (etcd, VIP and
   load balancer, control planes, NFS server; `ufcctl/domain/inventory/phases.py`).
2. The node phase: playbooks/deploy-nodes.yml on the workers through the fleet engine (the
   deploy-nodes rollout kind): batches, window, failure budget, pacing, state and resume.
3. The readiness wait (D19), after the last phase run: every Node Ready and every workload of the
   add-ons' namespaces available, read through the API (ufcctl/app/readiness.py), for a bounded time.

`ufcctl add-nodes` is the node phase alone.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufcctl.app import fleet
from ufcctl.app.inventory import load_inventory, select_limit
from ufcctl.app.readiness import DEFAULT_READY_TIMEOUT, api_client, namespaces_of, wait_ready
from ufcctl.app.upgrade_plan import refuse_version_change
from ufcctl.domain.inventory.model import KUBE_NODE, Inventory
from ufcctl.domain.inventory.names import name_problem
from ufcctl.domain.inventory.phases import split_phases
from ufcctl.domain.readiness import ApiView
from ufcctl.domain.rollout.summary import RolloutSummary
from ufcctl.engine.kubectl import Kubectl
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.playbook_tags import SPECIAL_TAGS, playbook_tags, unknown_tags
from ufcctl.engine.run_events import RunObserver
from ufcctl.engine.run_result import RunResult
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import ROLES_DIR, playbook
from ufcctl.rollout.job import SKIPPED_STEP
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import deploy_nodes
from ufcctl.rollout.store import StateStore

PHASES = ("all", "cluster", "nodes")


# The file `ufcctl lab up` writes into the inventories it generates (ufcctl/lab/inventory.py MARKER).
LAB_MARKER = ".ufcctl-lab"


@dataclass
class DeployResult:
    cluster: RunResult | None = None
    nodes: RolloutSummary | None = None
    skipped: list[str] = field(default_factory=list)  # phases not run, each with its reason
    ready: ApiView | None = None  # the readiness wait's last read, when it ran

    @property
    def skipped_steps(self) -> list[str]:
        """Every step a role reported SKIPPED, one line each: the cluster phase's per host, the node
        phase's per task (with its node count)."""
        lines = [f"{s['host']}: {s['task']}: {s['message']}" for s in
                 (self.cluster.skipped_steps if self.cluster else [])]
        steps = self.nodes.steps if self.nodes else {}
        lines += [f"node phase: {k.removeprefix(SKIPPED_STEP)}: {v}" for k, v in sorted(steps.items())
                  if k.startswith(SKIPPED_STEP)]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster.to_json() if self.cluster else None,
                "nodes": self.nodes.to_json() if self.nodes else None, "skipped": self.skipped,
                "skipped_steps": self.skipped_steps, "ready": self.ready.to_json() if self.ready else None}


def is_lab_inventory(inventory_dir: Path) -> bool:
    """An inventory `ufcctl lab up` generated (its marker file): its SKIPPED steps do not fail a deploy."""
    return (inventory_dir / LAB_MARKER).is_file()


def deploy(
    inventory_dir: Path,
    options: RunOptions,
    *,
    limit: str | None = None,
    phase: str = "all",
    nodes: RolloutRequest | None = None,
    store: StateStore | None = None,
    progress: Callable[[], AbstractContextManager[RunObserver | None]] = nullcontext,
    rollout_progress: fleet.Progress = nullcontext,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    on_ready_read: Callable[[ApiView], None] | None = None,
    client: Callable[[], tuple[Kubectl | None, str]] | None = None,
) -> DeployResult:
    """Validate the inventory (nothing is touched when it is bad), then run the phases in turn; the node
    phase starts only when the cluster phase succeeded. `nodes` is the node phase's rollout request
    (the command's fleet flags, --limit, --check; ufcctl/cli/fleet.py builds it); the state store is
    opened before anything runs when a node phase may follow (`store`: one the caller opened).
    `progress` and `rollout_progress` make each phase's live display, one at a time. After the last
    phase run, the readiness wait (`wait_ready`) for at most `ready_timeout` seconds (0: none);
    `on_ready_read` sees each of its reads, `client` gives it kubectl with the operator's kubeconfig."""
    if phase not in PHASES:
        raise InputError(f"--phase {phase!r}: unknown phase", f"use one of: {', '.join(PHASES)}")
    opened: AbstractContextManager[StateStore | None] = nullcontext(store)
    if store is None and nodes is not None and phase != "cluster":
        opened = StateStore()
    with opened as node_store:
        result, inventory = _deploy(inventory_dir, options, limit, phase, nodes, node_store, progress,
                                    rollout_progress)
    if phase != "cluster":  # --phase cluster alone: _deploy noted why it does not wait
        _wait_ready(result, inventory, options, ready_timeout, on_ready_read,
                    client or (lambda: api_client(inventory)))
    return result


def _deploy(inventory_dir: Path, options: RunOptions, limit: str | None, phase: str,
            nodes: RolloutRequest | None, store: StateStore | None,
            progress: Callable[[], AbstractContextManager[RunObserver | None]],
            rollout_progress: fleet.Progress) -> tuple[DeployResult, Inventory]:
    path = playbook("deploy.yml")
    check_tags(path, options)
    inventory_name(inventory_dir, options)
    inventory = load_inventory(inventory_dir, deploy=True)
    # the node phase's run records the files read here, not as they are after the cluster phase
    read = fleet.loaded(inventory_dir, inventory, guarded=True) if phase != "cluster" else None
    phases = split_phases(inventory, select_limit(inventory, inventory_dir, limit))
    refuse_version_change(inventory_dir, inventory)  # a Kubernetes version change is upgrade-cluster's
    result = DeployResult()
    if phase in ("all", "cluster"):
        if phases.cluster:
            with progress() as observer:
                result.cluster = deploy_cluster(inventory_dir, inventory, list(phases.cluster), options,
                                                observer)
        else:
            result.skipped.append("cluster phase: the selection holds no cluster host")
    if phase == "cluster":
        if result.cluster is not None:
            result.skipped.append(
                "readiness wait: not after --phase cluster alone (the workers join in the node phase, and a "
                "Deployment that needs one cannot be available before; `--phase nodes` waits)")
        return result, inventory
    if not phases.nodes:
        result.skipped.append("node phase: the selection holds no worker (kube_node, not a control plane)")
    elif options.tags or options.skip_tags:
        result.skipped.append("node phase: --tags/--skip-tags select tasks of the cluster phase only")
    elif result.cluster is not None and not result.cluster.succeeded:
        result.skipped.append("node phase: not started, the cluster phase failed")
    elif store is None or nodes is None:
        raise ValueError("the node phase needs a state store and a rollout request")
    else:
        result.nodes = fleet.start(deploy_nodes.KIND, nodes, progress=rollout_progress, inventory=read,
                                   store=store)
    return result, inventory


def _wait_ready(result: DeployResult, inventory: Inventory, options: RunOptions, timeout: float,
                on_read: Callable[[ApiView], None] | None,
                client: Callable[[], tuple[Kubectl | None, str]]) -> None:
    """The readiness wait after the last phase run, when that phase succeeded (a failed phase is the
    deploy's error already)."""
    if result.nodes is None and result.cluster is None:
        return
    if options.check:  # check mode changed nothing, so there is nothing new to wait for; it never waits
        result.skipped.append("readiness wait: not in check mode")
        return
    if timeout <= 0:
        result.skipped.append("readiness wait: --ready-timeout 0")
        return
    last_ok = result.nodes.status == "done" if result.nodes is not None else bool(
        result.cluster and result.cluster.succeeded and not result.cluster.nothing_ran)
    if not last_ok:
        return
    kubectl, source = client()
    if kubectl is None:
        # Noted, not failed: the role kept no admin.conf here (kube_control_plane_admin_conf_to_controller:
        # false, or no kubeadm cluster); the operator points KUBECONFIG at one and runs `ufcctl health`.
        result.skipped.append(f"readiness wait: {source}; set KUBECONFIG to the cluster's admin.conf and "
                              "run `ufcctl health` (or deploy again) to check")
        return
    result.ready = wait_ready(kubectl, source, namespaces_of(inventory), timeout, on_read=on_read)


def inventory_name(inventory_dir: Path, options: RunOptions) -> str:
    """The name add-on manifests are kept under (.ufc/manifests/<name>/): the inventory directory's
    own name (`--inventory .` is the working directory's), or an explicit -e ufc_inventory_name."""
    given = options.extravars.get("ufc_inventory_name")
    name = given if given is not None else Path(os.path.abspath(inventory_dir)).name
    problem = name_problem(name)
    if problem:
        where = "-e ufc_inventory_name" if given is not None else f"--inventory {inventory_dir}: its name"
        raise InputError(f"{where} {problem}",
                         "name inventory directories with letters, digits, '.', '_' and '-' (at most 63)")
    return str(name)


def deploy_cluster(inventory_dir: Path, inventory: Inventory, hosts: list[str], options: RunOptions,
                   observer: RunObserver | None = None) -> RunResult:
    """playbooks/deploy.yml on `hosts`. Every worker's vars go along, uncontacted (Ansible's --limit
    holds the play to `hosts`): the add-ons build the ToR map and node labels from every kube_node
    host's vars, so a cluster phase never sees a partial fleet."""
    path = playbook("deploy.yml")
    # Ansible only sees the generated per-run inventory, so the roles learn the inventory's name here
    # (k8s_manifests writes to .ufc/manifests/<name>/); an explicit -e value wins.
    # registry_cache_index: each ToR cache finds its super pod's cache without reading every cache host
    extravars = {**deploy_nodes.cache_index(inventory), **options.extravars,
                 "ufc_inventory_name": inventory_name(inventory_dir, options)}
    chosen = set(hosts)
    vars_only = [h for h in inventory.group_hosts(KUBE_NODE) if h not in chosen]
    options = dataclasses.replace(options, extravars=extravars,
                                  limit=",".join(hosts) if vars_only else options.limit)
    run_id = new_run_id(path.stem)
    # the hosts this run contacts, held until it ends: a rollout or deploy on any of them is refused
    with hold_nodes(run_id, hosts):
        result = run_playbook(path, inventory.subset([*hosts, *vars_only]), options, run_id=run_id,
                              observer=observer)
    # only the contacted hosts belong in the recap (Ansible's --limit keeps the rest out of it already)
    result.hosts = {h: r for h, r in result.hosts.items() if h in chosen}
    result.not_run = [h for h in result.not_run if h in chosen]
    return result


def check_tags(path: Path, options: RunOptions) -> None:
    """--tags/--skip-tags must name tags the playbook or Ansible defines (a typo would select nothing)."""
    if not options.tags and not options.skip_tags:
        return
    known = playbook_tags(path, ROLES_DIR)
    for flag, requested in (("--tags", options.tags), ("--skip-tags", options.skip_tags)):
        unknown = unknown_tags(requested, known)
        if unknown:
            raise InputError(
                f"{flag} {', '.join(unknown)}: no play, role or task of {path.name} has "
                f"{'this tag' if len(unknown) == 1 else 'these tags'}",
                f"known tags: {', '.join(sorted(known))}; Ansible's own: {', '.join(sorted(SPECIAL_TAGS))}",
            )

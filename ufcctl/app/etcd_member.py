"""Use case `ufcctl etcd member replace`: one dead or broken member of a cluster with quorum, replaced.

etcd's runtime reconfiguration guide, one member at a time: the member is stopped and its data kept
aside (playbooks/etcd-member-replace.yml), removed from the cluster through a healthy member, and
the etcd play of deploy.yml runs on every etcd host and control plane: the host has no data and the
cluster answers, so roles/etcd joins it (member add, start with state `existing`), with a new
member id, and syncs it from the leader.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ufcctl.app.deploy import deploy_cluster
from ufcctl.app.etcd_maint import cluster_targets, etcd_status
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.etcd.defrag import Member, status_errors
from ufcctl.domain.etcd.membership import plan_replace
from ufcctl.domain.etcd.status import ClusterStatus
from ufcctl.domain.etcd.topology import KINDS_BY_NAME
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.engine.etcd_targets import Target
from ufcctl.engine.locks import holding
from ufcctl.engine.run_result import RunResult
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError, RunFailed
from ufcctl.paths import playbook

# the hosts the etcd play of deploy.yml runs on (every member must be in the run: roles/etcd README)
ETCD_PLAY_GROUPS = (*(kind.group for kind in KINDS_BY_NAME.values()), "kube_control_plane")


def require_success(result: RunResult, what: str) -> None:
    """RunFailed naming the first failed host (or the run) and why, unless every host succeeded."""
    bad = sorted(h for h, r in result.hosts.items() if not r.succeeded) or result.not_run
    if result.status != "successful" or bad:
        why = result.why(bad[0] if bad else None)
        raise RunFailed(f"{what} failed on {', '.join(bad) or 'the run'}: {why}",
                        f"details in {result.run_dir}")


def etcd_member_replace(inventory_dir: Path, cluster: str, host: str,
                        log: Callable[[str], None] = print) -> ClusterStatus:
    """Replace member `host` of `cluster`; refuses (InputError, nothing touched) a host that is not a
    member in the inventory, a member that is healthy, and a cluster that would lose quorum."""
    inventory = load_inventory(inventory_dir)
    (target,) = cluster_targets(inventory_dir, cluster, inventory)
    names = [m.host for m in target.cluster.members]
    if host not in names:
        raise InputError(f"--member {host}: not a member of etcd cluster {cluster} in {inventory_dir}",
                         f"members of group {target.cluster.kind.group}: {', '.join(names)}")
    hosts = list(dict.fromkeys(h for group in ETCD_PLAY_GROUPS for h in inventory.group_hosts(group)))
    # locked before the cluster is asked: no deploy, reset or certs renewal changes what is judged here
    with holding(new_run_id(f"etcd-member-replace-{cluster}"), hosts):
        listed = _choose(target, cluster, host)
        return _replace(inventory_dir, inventory, cluster, host, target, listed, hosts, log)


def _choose(target: Target, cluster: str, host: str) -> Member | None:
    """The listed member to remove (None: the cluster does not list it), or InputError: a cluster that
    does not answer, a member found under another name or healthy, a cluster that would lose quorum."""
    try:
        view = target.client.view(with_last=False)
    except EtcdError as err:
        raise InputError(f"etcd cluster {cluster} does not answer: {err}",
                         "without quorum no member can be replaced: `ufcctl etcd restore` rebuilds the "
                         "cluster from a snapshot") from err
    inventoried = next(m for m in target.cluster.members if m.host == host)
    found = plan_replace(view, host, inventoried.client_url, inventoried.peer_url)
    if found.refusal:
        raise InputError(found.refusal + ": nothing was touched",
                         f"`ufcctl etcd status --cluster {cluster}` shows each member's name, URLs and "
                         "health; a host renamed in the inventory keeps its member's old name")
    listed = found.listed
    remaining = len(view.members) - (1 if listed else 0)
    gone = {listed.name} if listed else {host}
    healthy = [n for n, s in view.statuses.items() if n not in gone and n != host and not status_errors(s)]
    if len(healthy) < remaining // 2 + 1:
        raise InputError(f"etcd cluster {cluster}: {len(healthy)} healthy member(s) of {remaining} without "
                         f"{host}, no quorum to remove and add a member",
                         "bring the other members back first, or rebuild the cluster with "
                         "`ufcctl etcd restore`")
    return listed


def _replace(inventory_dir: Path, inventory: Inventory, cluster: str, host: str, target: Target,
             listed: Member | None, hosts: list[str], log: Callable[[str], None]) -> ClusterStatus:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    log(f"stopping member {host} of cluster {cluster}; its data goes aside")
    extravars = {"etcd_replace_cluster": cluster, "etcd_replace_stamp": stamp}
    require_success(run_playbook(playbook("etcd-member-replace.yml"), inventory.subset([host]),
                         RunOptions(extravars=extravars)), f"stopping member {host}")
    if listed is not None:
        log(f"removing member {host} (id {int(listed.member_id):x}) from cluster {cluster}")
        try:
            target.client.first("member_remove", listed.member_id, avoid=listed.endpoint)
        except EtcdError as err:
            raise RunFailed(f"etcd cluster {cluster}: member remove of {host}: {err}",
                            f"its data is aside on {host}; run the command again") from err
    log(f"joining {host} again: the etcd play of deploy.yml on {len(hosts)} host(s)")
    require_success(deploy_cluster(inventory_dir, inventory, hosts,
                                   RunOptions(tags=("etcd",), forks=len(hosts))),
            "the etcd play")
    (after,) = etcd_status(inventory_dir, cluster, inventory=inventory)
    if not after.healthy or host not in [m.member for m in after.members]:
        problems = "; ".join(after.problems) or "not listed"
        raise RunFailed(f"etcd cluster {cluster} after replacing {host}: {problems}",
                        f"check `ufcctl etcd status --cluster {cluster}`")
    return after

"""Use cases `ufcctl etcd backup` and `ufcctl etcd restore`.

backup: the controller streams a snapshot of each cluster from the member the timers would pick (the
first healthy follower) through etcd's gateway with ufcctl's client certificate, into the state
directory (`.ufc/backups/etcd/<cluster>/`), checked and with its `.sha256` (ufcctl/nodeside/etcd_backup.py,
the same code as the members' timers).

restore: checks on the controller first (a regular file, bbolt's magic, the snapshot's trailer and
`.sha256`, the cluster its path names, that nothing answers at any member's client or peer URL), with
the members and control planes locked, then playbooks/etcd-restore.yml has every member read the copy
with the restore tool and rebuilds every member from the one snapshot with every kube-apiserver stopped
meanwhile, and the cluster's status is read back.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ufcctl.app.etcd_maint import cluster_targets, etcd_status
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.etcd.backup import claimed_clusters
from ufcctl.domain.etcd.status import ClusterStatus
from ufcctl.domain.etcd.topology import KINDS_BY_NAME
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine import statedir
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.engine.etcd_probe import answering
from ufcctl.engine.etcd_targets import Target
from ufcctl.engine.locks import holding
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError, RunFailed, cut
from ufcctl.nodeside.etcd_backup import Checked, Snapshot, SnapshotError, check, take, taker
from ufcctl.paths import playbook, state_dir

# etcd's recovery guide: 1,000,000,000 covers about a week of revisions at 1,500 writes/s, more than
# any snapshot ufcctl keeps is old (hourly, a day kept)
DEFAULT_BUMP = 1_000_000_000
# seconds each member has to answer the "is it still running" probe before a restore
RUNNING_PROBE_TIMEOUT = 3.0


def backup_dir() -> Path:
    return state_dir() / "backups" / "etcd"


def etcd_backup(inventory_dir: Path, cluster: str | None = None, dest: Path | None = None,
                log: Callable[[str], None] = print, inventory: Inventory | None = None) -> list[Snapshot]:
    """One snapshot of each cluster (or of `cluster`) into `dest`/<cluster>/ (default: the state dir).
    `inventory`: the one at `inventory_dir` when the caller loaded it already."""
    root = dest or backup_dir()
    if root.exists() and not root.is_dir():
        raise InputError(f"--dest {root}: not a directory", "give a directory (it is made if missing)")
    if dest is None:
        statedir.prepare(state_dir())
    statedir.ensure_private_dir(root)  # before any member is asked: a --dest under a file is bad input
    taken = []
    for target in cluster_targets(inventory_dir, cluster, inventory):
        name = target.cluster.name
        try:
            view = target.client.view(with_last=False)
        except EtcdError as err:
            raise RunFailed(f"etcd cluster {name}: {err}",
                            f"check `ufcctl etcd status --cluster {name}`") from err
        member = taker(view)
        found = view.member(member) if member else None
        if found is None or not found.endpoint:
            raise RunFailed(f"etcd cluster {name}: no healthy member under a leader to take a snapshot from",
                            f"check `ufcctl etcd status --cluster {name}`")
        statedir.ensure_private_dir(root / name)  # every missing parent 0700 too, whatever the umask
        log(f"cluster {name}: streaming a snapshot from {member} ({found.endpoint})")
        try:
            snapshot = take(target.client, found.endpoint, member or "", str(root / name), name)
        except SnapshotError as err:
            raise RunFailed(str(err), "run it again; `ufcctl etcd status` shows the members' health") from err
        log(f"cluster {name}: {snapshot.path} ({snapshot.size} bytes, {snapshot.seconds:.1f} s)")
        taken.append(snapshot)
    return taken


@dataclass(frozen=True)
class RestoreResult:
    cluster: str
    snapshot: str
    size: int
    sha256: str
    token: str
    bump_revision: int
    seconds: float
    run_dir: str
    status: ClusterStatus

    def to_json(self) -> dict[str, object]:
        return {"cluster": self.cluster, "snapshot": self.snapshot, "size": self.size, "sha256": self.sha256,
                "token": self.token, "bump_revision": self.bump_revision, "seconds": round(self.seconds, 1),
                "run_dir": self.run_dir, "status": self.status.to_json()}


def etcd_restore(inventory_dir: Path, cluster: str, source: Path, bump_revision: int = DEFAULT_BUMP,
                 log: Callable[[str], None] = print, other_cluster: bool = False) -> RestoreResult:
    """Rebuild `cluster` from the snapshot `source`; refuses (InputError, nothing touched) a snapshot
    that is no regular file, no bbolt database, fails its checksums or says it holds another cluster
    (unless `other_cluster`), and a cluster any member of which still answers (TCP, TLS or etcd)."""
    if bump_revision < 0:
        raise InputError(f"--bump-revision {bump_revision}: must be 0 or more")
    path = str(source.absolute())
    claims = _other_claims(path, str(source.resolve()), cluster)
    if claims and not other_cluster:
        shown_path, where, named = claims[0]
        raise InputError(f"--from {cut(shown_path)}: its {where} says it is a snapshot of cluster {named}, "
                         f"not {cluster}: nothing was touched",
                         f"restore {named} from it (--cluster {named}), or, if the file was misfiled, "
                         "add --i-know-it-is-another-cluster")
    try:
        checked = check(str(source.resolve()))
    except SnapshotError as err:
        raise InputError(str(err), "restore from another snapshot (`ls .ufc/backups/etcd/*/`)") from err
    inventory = load_inventory(inventory_dir)
    (target,) = cluster_targets(inventory_dir, cluster, inventory)
    members = [m.host for m in target.cluster.members]
    planes = inventory.group_hosts("kube_control_plane")
    run_id = new_run_id(f"etcd-restore-{cluster}")
    with holding(run_id, [*members, *planes]):  # no deploy, reset or rollout acts on them meanwhile
        _refuse_running(cluster, target)
        return _restore(inventory_dir, inventory, cluster, target, checked, bump_revision, log, planes)


def _other_claims(given: str, resolved: str, cluster: str) -> list[tuple[str, str, str]]:
    """(path, where, cluster) for each place the snapshot's path names another cluster than `cluster`: the
    path as given and, when it is a link, the file it leads to (`core/latest.db` -> `events/...`)."""
    claims = [(given, where, named) for where, named in claimed_clusters(given, KINDS_BY_NAME)]
    if resolved != given:
        claims += [(resolved, f"{where} behind the link", named)
                   for where, named in claimed_clusters(resolved, KINDS_BY_NAME)]
    return [claim for claim in claims if claim[2] != cluster]


def _refuse_running(cluster: str, target: Target) -> None:
    """InputError when anything answers at a member's client or peer URL: a TCP accept or a TLS failure
    counts (an expired certificate or another CA is no proof that the member is down, and a member whose
    client port this machine cannot reach still serves its peers)."""
    by_url = {url: m.host for m in target.cluster.members for url in (m.client_url, m.peer_url)}
    asked = [(cluster, url) for url in by_url]
    answers = answering(asked, target.client.tls, RUNNING_PROBE_TIMEOUT)
    if answers:
        said = "; ".join(f"{by_url[url]} at {url}: {answers[(c, url)]}"
                         for c, url in asked if (c, url) in answers)
        raise InputError(
            f"etcd cluster {cluster} is running: {said}; a restore replaces all of its data",
            f"restore only a lost cluster; to replace a live one on purpose, stop etcd-{cluster}.service on "
            f"every member first ({', '.join(m.host for m in target.cluster.members)})")


def _restore(inventory_dir: Path, inventory: Inventory, cluster: str, target: Target, checked: Checked,
             bump_revision: int, log: Callable[[str], None], planes: list[str]) -> RestoreResult:
    members = [m.host for m in target.cluster.members]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    token = f"{cluster}-restored-{stamp.lower()}-{secrets.token_hex(3)}"
    log(f"restoring etcd cluster {cluster} on {', '.join(members)} from {checked.path} ({checked.size} "
        f"bytes, sha256 {checked.sha256[:12]}...); every kube-apiserver ({', '.join(planes) or 'none'}) "
        "stops meanwhile")
    run_hosts = inventory.subset(list(dict.fromkeys([*members, *planes])))
    began = time.monotonic()
    result = run_playbook(playbook("etcd-restore.yml"), run_hosts, RunOptions(
        forks=max(len(run_hosts), 1),
        extravars={"etcd_restore_cluster": cluster, "etcd_restore_snapshot": checked.path,
                   "etcd_restore_snapshot_sha256": checked.sha256, "etcd_restore_token": token,
                   "etcd_restore_bump_revision": bump_revision, "etcd_restore_stamp": stamp}))
    seconds = time.monotonic() - began
    bad = sorted(result.failed_of(h.name for h in run_hosts))
    if bad:
        raise RunFailed(f"etcd restore of cluster {cluster} failed on {', '.join(bad)}: {result.why(bad[0])}",
                        f"details in {result.run_dir}; old data directories are kept beside each member's "
                        f"(<data_dir>.before-restore-{stamp})")
    (status,) = etcd_status(inventory_dir, cluster, inventory=inventory)
    if not status.healthy:
        raise RunFailed(f"etcd cluster {cluster} restored but not healthy: {'; '.join(status.problems)}",
                        f"check `ufcctl etcd status --cluster {cluster}`")
    return RestoreResult(cluster, checked.path, checked.size, checked.sha256, token, bump_revision, seconds,
                         str(result.run_dir), status)


"""etcd snapshots: taken through one member's gateway, checked, stored with their sha256, pruned.

Two callers run this same code:
- the `ufcctl-etcd-backup@<cluster>` timer on every member (`python3 -m ufcctl.nodeside.etcd_backup
  --config FILE`, the agent's config roles/etcd wrote): every member's timer fires, and only the
  member `taker()` picks takes the snapshot, so one is taken per cluster and run, from a healthy
  member other than the leader when there is one (the leader carries every write);
- `ufcctl etcd backup` on the controller (ufcctl/app/etcd_backup.py), into the state directory.

A snapshot is written beside its final name as `.<name>.<random>.part` (files.atomic_file: created
exclusively, never through a link; 0600: core's snapshot holds every Kubernetes Secret), its etcd trailer
checked while it streams, flushed, linked into place (never over another snapshot), and only
then is its `.sha256` written and older snapshots pruned: a crash leaves a `.part` file (removed by
the next run) but never a file under a snapshot's name that is not whole.

Off the member: with `offsite` in the config (roles/etcd etcd_backup_offsite_url: the NFS server's
snapshot store, roles/nfs_server), the timer copies each good snapshot there with libnfs's `nfs-cp`,
the snapshot first and its `.sha256` last, so a `.sha256` on the server marks a whole copy (the server
prunes its store and removes copies left without one). No NFS mount on the member: nothing to hang a
member's boot or its etcd when the NFS server is away, and it runs the same in the container lab.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from ufcctl.domain.etcd import backup, defrag_metrics
from ufcctl.domain.etcd.defrag import ClusterView, status_errors
from ufcctl.engine.etcd_client import ClusterClient, EtcdError, TlsFiles
from ufcctl.nodeside import nfs_copy
from ufcctl.nodeside.files import atomic_file, private_dirs, read_text_if_readable, write_atomic

# a .part file this old is a crashed run's (a snapshot of the 8 GiB quota streams in minutes)
STALE_PART_SECONDS = 6 * 3600


class SnapshotError(Exception):
    """A snapshot that must not be used (or could not be taken): the file and what is wrong, one line."""


class _LocalWrite(Exception):
    """Writing the snapshot on this machine failed (its OSError is the cause): no network error."""


class _Digests:
    """sha256 of the whole file, and of all but its last 32 bytes (what etcd's trailer holds)."""

    def __init__(self) -> None:
        self.whole = hashlib.sha256()
        self.body = hashlib.sha256()
        self.size = 0
        self._held = b""

    def feed(self, data: bytes) -> None:
        self.whole.update(data)
        self.size += len(data)
        pending = self._held + data
        self.body.update(pending[: -backup.TRAILER])
        self._held = pending[-backup.TRAILER :]

    def trailer_ok(self) -> bool:
        return len(self._held) == backup.TRAILER and self.body.digest() == self._held


@dataclass(frozen=True)
class Snapshot:
    path: str
    cluster: str
    member: str  # the member it was streamed from
    size: int
    sha256: str  # of the whole file, as in the .sha256 beside it
    taken_at: float
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "cluster": self.cluster, "member": self.member, "size": self.size,
                "sha256": self.sha256, "taken_at": round(self.taken_at, 3), "seconds": round(self.seconds, 3)}


def take(client: ClusterClient, endpoint: str, member: str, directory: str, cluster: str,
         clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> Snapshot:
    """Stream `endpoint`'s snapshot into `directory` (made 0700 if missing); SnapshotError if it fails."""
    private_dirs(directory)
    taken_at, began = clock(), monotonic()
    name = backup.file_name(cluster, taken_at)
    final = os.path.join(directory, name)
    digests = _Digests()
    try:
        # a per-process temporary name, never a link followed; linked under its final name only when
        # whole, and never over another snapshot (two runs in the same second: the second one fails)
        with atomic_file(final, 0o600, replace=False) as out:

            def write(data: bytes) -> None:
                try:
                    out.write(data)
                except OSError as err:  # this machine's disk (ENOSPC), not the member: kept apart from
                    raise _LocalWrite(err) from err  # the stream's errors, which become EtcdError
                digests.feed(data)

            client.gateway(endpoint).snapshot(write)
            if not backup.has_trailer_size(digests.size) or not digests.trailer_ok():
                raise SnapshotError(f"{endpoint}: the snapshot streamed ({digests.size} bytes) fails etcd's "
                                    "sha256 trailer: not kept")
        whole = digests.whole.hexdigest()
        write_atomic(final + backup.SUM_SUFFIX, backup.sum_line(whole, name), 0o600)  # the directory flushed
    except _LocalWrite as err:
        raise SnapshotError(f"snapshot of cluster {cluster}: writing {directory} on this machine failed: "
                            f"{err.__cause__} (member {member} is not at fault)") from err
    except EtcdError as err:
        raise SnapshotError(f"snapshot of cluster {cluster} from {member}: {err}") from err
    except FileExistsError as err:
        raise SnapshotError(f"snapshot of cluster {cluster}: {final} exists already (another backup in the "
                            "same second): this one is not kept") from err
    except OSError as err:
        raise SnapshotError(f"snapshot of cluster {cluster} into {directory}: {err}") from err
    return Snapshot(final, cluster, member, digests.size, whole, taken_at, monotonic() - began)


@dataclass(frozen=True)
class Checked:
    path: str
    size: int
    sha256: str
    sum_file: bool  # a .sha256 beside it was found and matched


def check(path: str) -> Checked:
    """A snapshot file fit to restore: etcd's trailer matches, and so does the .sha256 beside it if
    there is one. SnapshotError (file and reason, one line) otherwise."""
    digests = _Digests()
    head = b""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or /dev/zero would never end a read
            raise SnapshotError(f"{path}: not a regular file (a snapshot is a file)")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced since the stat
                raise SnapshotError(f"{path}: not a regular file (a snapshot is a file)")
            while chunk := fh.read(1 << 20):
                if len(head) < backup.BBOLT_HEAD:
                    head += chunk[: backup.BBOLT_HEAD]
                digests.feed(chunk)
    except OSError as err:
        raise SnapshotError(f"{path}: cannot read: {err.strerror}") from err
    if not backup.is_bbolt(head):
        raise SnapshotError(f"{path}: not a bbolt database (no bbolt magic in its first page): not an etcd "
                            "snapshot")
    if not backup.has_trailer_size(digests.size):
        raise SnapshotError(f"{path}: not an etcd snapshot with a sha256 trailer ({digests.size} bytes; a "
                            "copied member/snap/db or a truncated file)")
    if not digests.trailer_ok():
        raise SnapshotError(f"{path}: fails etcd's sha256 trailer (the file is corrupt)")
    whole = digests.whole.hexdigest()
    sums = path + backup.SUM_SUFFIX
    found = False
    if os.path.exists(sums):
        with open(sums, encoding="utf-8", errors="replace") as fh:
            want = backup.parse_sum(fh.read(), os.path.basename(path))
        if want is None:
            raise SnapshotError(f"{sums}: no sha256 for {os.path.basename(path)} in it")
        if want != whole:
            raise SnapshotError(f"{path}: sha256 {whole} differs from {want} in {sums}")
        found = True
    return Checked(path, digests.size, whole, found)


def prune(directory: str, cluster: str, keep: int, clock: Callable[[], float] = time.time) -> list[str]:
    """Delete the snapshots of `cluster` retention drops (and stale .part files); the names deleted."""
    names = os.listdir(directory)
    gone = []
    for name in backup.retention(names, cluster, keep).delete:
        for path in (os.path.join(directory, name), os.path.join(directory, name + backup.SUM_SUFFIX)):
            _remove(path)
        gone.append(name)
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(f".{cluster}-") and name.endswith(".part"):
            try:
                if clock() - os.stat(path).st_mtime > STALE_PART_SECONDS:
                    _remove(path)
                    gone.append(name)
            except OSError:
                pass
    return gone


def taker(view: ClusterView) -> str | None:
    """The member that takes this run's snapshot: the first healthy follower by name, else the leader
    (a one-member cluster); None when no member is healthy and under a leader (a member without quorum
    may hold stale data). Every member's timer computes the same answer from the same member list, so
    one snapshot is taken per run."""
    healthy = sorted(name for name, status in view.statuses.items()
                     if not status_errors(status) and status.leader_id not in ("", "0"))
    followers = [name for name in healthy if not view.statuses[name].is_leader]
    chosen = followers or healthy
    return chosen[0] if chosen else None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# --- the timer's command line -----------------------------------------------------------------


# an hour is the timer unit's own bound for the whole run
OFFSITE_TIMEOUT_SECONDS = 3600
Copier = Callable[[str, str, float], str]  # nfs_copy.copy: (local, url, timeout) -> "" or why not


def copy_offsite(snapshot: Snapshot, base: str, copier: Copier = nfs_copy.copy,
                 timeout: float = OFFSITE_TIMEOUT_SECONDS) -> str:
    """Copy the snapshot, then its .sha256 (the marker of a whole copy), to <base>/<cluster>/; the
    snapshot's URL, or SnapshotError naming what failed (the local snapshot stays either way)."""
    name = os.path.basename(snapshot.path)
    for local in (snapshot.path, snapshot.path + backup.SUM_SUFFIX):
        url = nfs_copy.nfs_url(base, snapshot.cluster, os.path.basename(local))
        why = copier(local, url, timeout)
        if why:
            raise SnapshotError(f"copy of {name} to {url}: {why}")
    return nfs_copy.nfs_url(base, snapshot.cluster, name)


METRIC = "ufcctl_etcd_backup_"
HELP = {
    "last_result": "Result of the last snapshot this member took: 1 ok, 0 failed.",
    "offsite_last_result": "Result of copying the last snapshot off this member: 1 ok, 0 failed.",
    "last_run_timestamp_seconds": "Start of the last snapshot run that acted on this member.",
    "last_success_timestamp_seconds": "When this member last took a good snapshot (absent until one).",
    "last_size_bytes": "Size of the last good snapshot this member took.",
}


def metrics_text(cluster: str, member: str, at: float, ok: bool, snapshot: Snapshot | None,
                 previous_success: float | None, offsite_ok: bool | None = None) -> str:
    """The member's last snapshot run as Prometheus text (node exporter textfile collector); the success
    time carries over a failed run, so the Overdue alert keeps counting from the last good one."""
    success = snapshot.taken_at if snapshot else previous_success
    labels = (f'{{etcd_cluster="{defrag_metrics.escape_label_value(cluster)}",'
              f'member="{defrag_metrics.escape_label_value(member)}"}}')
    values: dict[str, float | None] = {
        "last_result": 1 if ok else 0,
        "last_run_timestamp_seconds": at,
        "last_success_timestamp_seconds": success,
        "last_size_bytes": snapshot.size if snapshot else None,
        # absent where no store is configured or no snapshot was taken to copy
        "offsite_last_result": None if offsite_ok is None else (1 if offsite_ok else 0),
    }
    lines = []
    for name, value in values.items():
        if value is None:
            continue
        text = str(int(value)) if float(value).is_integer() else f"{value:.3f}"
        lines += [f"# HELP {METRIC}{name} {HELP[name]}", f"# TYPE {METRIC}{name} gauge",
                  f"{METRIC}{name}{labels} {text}"]
    return "\n".join(lines) + "\n"


def run_timer(raw: dict, client: ClusterClient, log: Callable[[str], None],
              clock: Callable[[], float] = time.time, copier: Copier = nfs_copy.copy) -> int:
    """One timer run on a member: 0 when this member took a good snapshot (and copied it off, where a
    store is configured) or another member takes it, 1 when the snapshot or its copy failed or no member
    is healthy."""
    cluster, member = str(raw["cluster"]), str(raw["member"])
    directory = os.path.join(str(raw["backup_dir"]), cluster)
    started = clock()
    try:
        view = client.view(with_last=False)
    except EtcdError as err:
        log(f"cluster={cluster} action=failed error={err}")
        return 1
    chosen = taker(view)
    if chosen is None:
        log(f"cluster={cluster} action=failed error=no healthy member to take a snapshot from")
        return 1
    if chosen != member:
        log(f"cluster={cluster} action=skipped reason=member {chosen} takes this run's snapshot")
        return 0
    own = view.member(member)
    endpoint = own.endpoint if own and own.endpoint else client.endpoints[0]
    snapshot, ok, offsite_ok = None, False, None
    try:
        snapshot = take(client, endpoint, member, directory, cluster, clock=clock)
        gone = prune(directory, cluster, int(raw.get("backup_keep", 0)), clock)
        log("result " + json.dumps({**snapshot.to_json(), "pruned": gone}, sort_keys=True))
        ok = True
    except SnapshotError as err:
        log(f"cluster={cluster} action=failed error={err}")
    base = str(raw.get("offsite") or "")
    if snapshot is not None and ok and base:
        try:
            log(f"cluster={cluster} action=copied url={copy_offsite(snapshot, base, copier)}")
            offsite_ok = True
        except SnapshotError as err:  # the snapshot is good and kept here: the run fails, the alert says so
            log(f"cluster={cluster} action=copy-failed error={err}")
            offsite_ok = False
    textfile_dir = str(raw.get("textfile_dir") or "")
    if textfile_dir:
        path = os.path.join(textfile_dir, f"ufcctl-etcd-backup-{cluster}.prom")
        previous = defrag_metrics.previous_success(read_text_if_readable(path),
                                                   METRIC + "last_success_timestamp_seconds")
        try:
            write_atomic(path, metrics_text(cluster, member, started, ok, snapshot, previous, offsite_ok))
        except OSError as err:
            log(f"cluster={cluster} action=metrics-not-written path={path} error={err}")
    return 0 if ok and offsite_ok is not False else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ufcctl-etcd-backup", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="agent config (JSON) written by roles/etcd")
    args = parser.parse_args(argv)
    try:
        with open(args.config, encoding="utf-8") as fh:
            raw = json.load(fh)
        tls = TlsFiles(raw["ca"], raw["cert"], raw["key"]) if raw.get("ca") else None
        client = ClusterClient(str(raw["cluster"]), tuple(raw["endpoints"]), tls)
        raw["backup_dir"], raw["member"]  # noqa: B018 - both required
    except OSError as err:
        print(f"{args.config}: cannot read: {err.strerror}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, EtcdError) as err:
        print(f"{args.config}: bad config: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    return run_timer(raw, client, lambda line: print(line, flush=True))


if __name__ == "__main__":
    sys.exit(main())

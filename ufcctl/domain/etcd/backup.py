"""etcd snapshot files: their names, the checksum file beside each, and which ones retention keeps.

A snapshot is what etcd's Snapshot RPC streams (and `etcdctl snapshot save` stores): the member's
bbolt file followed by the 32-byte sha256 of it. `etcdctl/etcdutl snapshot restore` refuses a file
whose trailer does not match ("expected sha256 [...], got [...]") or that has none ("snapshot missing
hash but --skip-hash-check=false"), so ufcctl checks the same before it copies a file anywhere.
Beside each snapshot ufcctl writes `<file>.sha256` in sha256sum's format, the sum of the whole file,
which `sha256sum -c` checks after any copy.
"""

from __future__ import annotations

import posixpath
import re
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass

TRAILER = 32  # sha256 digest length
# bbolt files are whole pages (4096 bytes on x86-64; at least 512 anywhere), so with the trailer the
# size is 32 past a multiple of 512: how etcd's restore tells a file with a trailer from one without
PAGE_MULTIPLE = 512
SUFFIX = ".db"
SUM_SUFFIX = ".sha256"
# bbolt's meta page 0: a 16-byte page header, then the meta's magic and format version (go.etcd.io/bbolt
# db.go: `magic uint32 = 0xED0CDAED`, `version uint32 = 2`, little-endian on every platform etcd runs on)
BBOLT_MAGIC = 0xED0CDAED
BBOLT_VERSION = 2
BBOLT_HEAD = 24
_NAME = re.compile(r"^(?P<cluster>[a-z0-9-]+)-(?P<stamp>\d{8}T\d{6}Z)\.db$")


def file_name(cluster: str, at: float) -> str:
    """`<cluster>-<UTC YYYYmmddTHHMMSSZ>.db`: sorts by time, says which cluster it holds."""
    return f"{cluster}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(at))}{SUFFIX}"


def cluster_of(name: str) -> str | None:
    """The cluster a snapshot file name (as file_name makes it) belongs to; None for other names."""
    match = _NAME.match(name)
    return match.group("cluster") if match else None


def is_bbolt(head: bytes) -> bool:
    """True when `head` (the file's first BBOLT_HEAD bytes or more) starts a bbolt database."""
    if len(head) < BBOLT_HEAD:
        return False
    return struct.unpack_from("<II", head, 16) == (BBOLT_MAGIC, BBOLT_VERSION)


def claimed_clusters(path: str, known: Iterable[str]) -> list[tuple[str, str]]:
    """Which cluster a snapshot's path says it holds, and where it says so: its file name (as file_name
    makes it) and its directory when that is named after a known cluster (`backups/etcd/<cluster>/`, the
    members' `<backup_dir>/<cluster>/`). Empty when the path says nothing."""
    claims = []
    named = cluster_of(posixpath.basename(path))
    if named is not None:
        claims.append(("file name", named))
    parent = posixpath.basename(posixpath.dirname(path))
    if parent in set(known):
        claims.append(("directory", parent))
    return claims


def has_trailer_size(size: int) -> bool:
    return size > TRAILER and size % PAGE_MULTIPLE == TRAILER


def sum_line(digest_hex: str, name: str) -> str:
    """One line of `sha256sum` output for `name` (the file's base name)."""
    return f"{digest_hex}  {name}\n"


def parse_sum(text: str, name: str) -> str | None:
    """The digest a `.sha256` file gives for `name` (sha256sum's format; a bare digest is accepted too)."""
    for line in text.splitlines():
        parts = line.split()
        if not parts or not re.fullmatch(r"[0-9a-fA-F]{64}", parts[0]):
            continue
        if len(parts) == 1 or parts[-1].lstrip("*") == name:
            return parts[0].lower()
    return None


@dataclass(frozen=True)
class Pruned:
    keep: tuple[str, ...]
    delete: tuple[str, ...]


def retention(names: Iterable[str], cluster: str, keep: int) -> Pruned:
    """The newest `keep` snapshots of `cluster` stay, older ones go; other files are not considered.
    `keep` < 1 keeps everything (retention off)."""
    mine = sorted(n for n in names if cluster_of(n) == cluster)
    if keep < 1 or len(mine) <= keep:
        return Pruned(tuple(mine), ())
    return Pruned(tuple(mine[-keep:]), tuple(mine[:-keep]))

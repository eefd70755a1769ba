"""The etcd snapshot store on the NFS server: a second export beside the dataset one, open only to the
etcd members, where each member's backup timer copies its scheduled snapshots (ufcctl/nodeside/
etcd_backup.py, with libnfs's nfs-cp: no mount on the members).

Why a separate export: core's snapshots hold every Kubernetes Secret, and the dataset export is open to
every node's network with no_root_squash (training containers run as root). This one lists the members'
addresses only and squashes every client user to one id (`all_squash`): each member's etcd user has its
own uid, and none of them needs to exist on the server. `insecure`: libnfs run by the unprivileged etcd
user connects from a port above 1023, which the kernel server refuses without it.

NFSv3, not v4: Debian 12's libnfs 4.0.0 cannot write more than about 4 KB over NFSv4 ("ZDR error: Failed
to encode COMPOUND4args", measured here against nfs-ganesha 4.3: 1,000 bytes copied, 4,000 refused), and
over NFSv3 copied a 3 MB file whole as the unprivileged etcd user. So the store is served over v3 (a
ganesha server gains v3 beside the dataset export's v4; the kernel server serves v3 by default), and the
members reach the server's rpcbind (111/tcp) and mountd besides 2049/tcp.

Both roles read this one module: roles/nfs_server renders the export and the directories, roles/etcd the
URL its members copy to, so the two cannot disagree on the path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# roles/nfs_server nfs_server_backup_path's default (a unit test keeps the two equal)
STORE_PATH = "/srv/ufcctl-etcd-backups"
ETCD_GROUPS = ("etcd_core", "etcd_events", "etcd_pods")
CLUSTERS = ("core", "events", "pods")  # one directory each, as the members' backup_dir has
NFS_SERVER = "nfs_server"
DIR_MODE = "0700"
NFS_VERSION = 3  # see above: libnfs 4.0's NFSv4 writes fail beyond ~4 KB


def options(owner: str) -> list[str]:
    """exports(5) options of the store (ganesha maps rw, all_squash, anonuid/anongid)."""
    return ["rw", "sync", "all_squash", f"anonuid={owner}", f"anongid={owner}", "no_subtree_check",
            "insecure"]


def _address(hostvars: Mapping[str, Any], host: str) -> str:
    found = (hostvars.get(host) or {}).get("ansible_host")
    return str(found) if found else str(host)


def clients(groups: Mapping[str, Any], hostvars: Mapping[str, Any]) -> list[str]:
    """Every etcd member's address (ansible_host, else its inventory name), sorted, once each."""
    members = {h for g in ETCD_GROUPS for h in (groups.get(g) or ())}
    return sorted({_address(hostvars, h) for h in members})


def url(groups: Mapping[str, Any], hostvars: Mapping[str, Any]) -> str:
    """nfs://<first nfs_server host>/<its store path>, or "" when the inventory has no NFS server or
    that server keeps no store (nfs_server_backup_path "")."""
    servers = list(groups.get(NFS_SERVER) or ())
    if not servers:
        return ""
    server_vars = hostvars.get(servers[0]) or {}
    path = str(server_vars.get("nfs_server_backup_path", STORE_PATH) or "")
    if not path:
        return ""
    if "{{" in path:  # a templated value only Ansible renders: the role's default
        path = STORE_PATH
    return f"nfs://{_address(hostvars, servers[0])}{path.rstrip('/')}"

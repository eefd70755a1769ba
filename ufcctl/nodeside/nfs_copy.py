"""Copy a file to an NFS server without mounting it: libnfs's `nfs-cp` (Debian package libnfs-utils), a
userspace NFS client, so a member never blocks on a hung mount and no NFS kernel client is needed.

Engine-level in the nodeside subsystem (tests/unit/test_layers.py): the one place it runs a program.
Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import subprocess

NFS_CP = "nfs-cp"


# NFSv3: Debian 12's libnfs 4.0.0 fails NFSv4 writes beyond ~4 KB (ufcctl/domain/nfs/backup_store.py,
# which the store's export follows; not imported: the node-side zip carries only what it needs)
NFS_VERSION = 3


def nfs_url(base: str, *parts: str) -> str:
    """`nfs://server/path` + `/part/...`, NFSv3 (the store's export)."""
    return "/".join([base.rstrip("/"), *parts]) + f"?version={NFS_VERSION}"


def copy(local: str, url: str, timeout: float) -> str:
    """Copy `local` to `url`; "" when done, else one line saying why not."""
    try:
        done = subprocess.run([NFS_CP, local, url], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{NFS_CP}: {err}"
    if done.returncode == 0:
        return ""
    why = (done.stderr or done.stdout or "").strip().splitlines()
    return f"{NFS_CP} exit {done.returncode}: {why[-1] if why else 'no message'}"

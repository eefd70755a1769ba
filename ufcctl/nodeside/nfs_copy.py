"""Copy a file to an NFS server without mounting it: libnfs's `nfs-cp` (Debian package libnfs-utils), a
userspace NFS client, so a member never blocks on a hung mount and no NFS kernel client is needed.

Engine-level in the nodeside subsystem (tests/unit/test_layers.py): the one place it runs a program.
Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import subprocess

NFS_CP = "nfs-cp"


def nfs_url(base: str, *parts: str) -> str:
    """`nfs://server/path` + `/part/...`, NFSv4 (one TCP port, as roles/nfs_server serves)."""
    return "/".join([base.rstrip("/"), *parts]) + "?version=4"


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

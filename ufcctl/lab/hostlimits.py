"""Kernel limits of this host that decide how many systemd containers can boot (read from /proc)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class InotifyUsage:
    limit: int  # fs.inotify.max_user_instances, per user: every rootful container's root is host root
    in_use: int  # inotify instances open by processes of this user right now


def inotify_usage(uid: int | None = None, proc: Path = PROC) -> InotifyUsage:
    uid = os.geteuid() if uid is None else uid
    limit = int((proc / "sys" / "fs" / "inotify" / "max_user_instances").read_text().split()[0])
    in_use = 0
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            if pid_dir.stat().st_uid != uid:
                continue
            for fd in (pid_dir / "fd").iterdir():
                if os.readlink(fd) == "anon_inode:inotify":
                    in_use += 1
        except OSError:  # the process exited, or its fds are not ours to read
            continue
    return InotifyUsage(limit, in_use)

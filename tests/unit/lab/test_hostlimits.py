"""inotify accounting read from a /proc tree: only this user's processes, only inotify descriptors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ufcctl.lab.hostlimits import inotify_usage


def _proc(tmp_path: Path, limit: int, processes: dict[str, tuple[int, list[str]]]) -> Path:
    proc = tmp_path / "proc"
    (proc / "sys" / "fs" / "inotify").mkdir(parents=True)
    (proc / "sys" / "fs" / "inotify" / "max_user_instances").write_text(f"{limit}\n")
    (proc / "self").mkdir()  # not a pid: skipped
    for pid, (uid, targets) in processes.items():
        fd_dir = proc / pid / "fd"
        fd_dir.mkdir(parents=True)
        for i, target in enumerate(targets):
            (fd_dir / str(i)).symlink_to(target)
        os.chown(proc / pid, uid, -1)
    return proc


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_counts_only_inotify_fds_of_the_given_user(tmp_path: Path) -> None:
    inotify, other = "anon_inode:inotify", "anon_inode:[eventpoll]"
    proc = _proc(tmp_path, 128, {
        "1": (0, [inotify, inotify, inotify, inotify, other]),
        "22": (0, [inotify, "/dev/null"]),
        "40": (100, [inotify, inotify]),  # dbus-daemon as messagebus: another user's budget
    })
    assert inotify_usage(uid=0, proc=proc).in_use == 5
    assert inotify_usage(uid=100, proc=proc).in_use == 2
    assert inotify_usage(uid=0, proc=proc).limit == 128


def test_real_proc_is_readable() -> None:
    usage = inotify_usage()
    assert usage.limit > 0 and usage.in_use >= 0

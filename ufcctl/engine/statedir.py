"""The .ufc/ state directory: checked before use, private (0700 directories, 0600 files).

Everything under .ufc/ may hold secrets (generated inventories with host vars, PKI, manifests), so
the directory itself is 0700 and files written by ufcctl, ansible-runner and the Ansible process
it starts are created under umask 077 (private_files).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ufcctl.errors import InputError

PRIVATE_UMASK = 0o077

_HINT = "set UFC_STATE_DIR to a writable directory of your own, or fix this one"


def prepare(path: Path, *, private: bool = True) -> Path:
    """The state directory, created 0700 if missing; InputError when it cannot be used.

    private=False leaves an existing directory's mode alone (the caller first checks what is in it).
    """
    if path.exists() and not path.is_dir():
        raise InputError(f"state directory {path} is not a directory", f"move {path} aside, or {_HINT}")
    if not path.exists():
        try:
            path.mkdir(parents=True, mode=0o700)
        except FileExistsError:  # another ufcctl created it at the same moment
            pass
        except OSError as err:
            raise InputError(f"cannot create state directory {path}: {err.strerror}", _HINT) from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"state directory {path} is not writable by this user (uid {os.geteuid()})",
                         _HINT)
    if private:
        make_private(path)
    return path


def make_private(path: Path) -> None:
    """Make our own state directory 0700 (earlier versions left it 0755); never a shared one."""
    info = path.stat()
    shared = info.st_mode & stat.S_ISVTX  # e.g. UFC_STATE_DIR=/tmp: not ours to lock down
    if info.st_uid == os.geteuid() and not shared and info.st_mode & 0o077:
        path.chmod(0o700)


def ensure_private_dir(path: Path) -> Path:
    """A 0700 directory under the state directory (runs/, locks/), created if missing."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077 and path.stat().st_uid == os.geteuid():
        path.chmod(0o700)
    return path


_umask_lock = threading.Lock()
_umask_users = 0
_umask_saved = 0


@contextmanager
def private_files() -> Iterator[None]:
    """Umask 077 while the block runs: files and directories created meanwhile are 0600/0700.

    The umask belongs to the process, and rollout threads start Ansible runs concurrently: the first
    entering block sets it, the last leaving one restores it, so no run's child inherits the old one.
    """
    global _umask_users, _umask_saved
    with _umask_lock:
        if _umask_users == 0:
            _umask_saved = os.umask(PRIVATE_UMASK)
        _umask_users += 1
    try:
        yield
    finally:
        with _umask_lock:
            _umask_users -= 1
            if _umask_users == 0:
                os.umask(_umask_saved)

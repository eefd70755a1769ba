"""The .ufc/ state directory: checked before use, private (0700 directories, 0600 files).

Everything under .ufc/ may hold secrets (generated inventories with host vars, PKI, manifests), so
directories ufcctl creates are 0700 and files written by ufcctl, ansible-runner and the Ansible
process it starts are created under umask 077 (private_files). ufcctl changes the mode of no
directory it did not create: a shared UFC_STATE_DIR (setgid, sticky) keeps the mode its owner chose.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ufcctl.errors import InputError, RunFailed

PRIVATE_UMASK = 0o077

_HINT = "set UFC_STATE_DIR to a writable directory of your own, or fix this one"


def prepare(path: Path) -> Path:
    """The state directory, created 0700 if missing; InputError when it cannot be used.

    A directory that already exists keeps its mode: it may be a team's shared one (setgid, sticky,
    group-writable on purpose), and what ufcctl writes into it is private anyway (files 0600,
    subdirectories 0700).
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
    return path


def ensure_private_dir(path: Path) -> Path:
    """A directory under the state directory (runs/, locks/, lab/): created 0700 if missing, with every
    missing parent (the state directory itself on a first `lab up`), else left as it is.

    mkdir's mode is cut by the umask only, so a new one is at most 0700 (in a setgid state directory
    it inherits the setgid bit, which lets nobody else in).
    """
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):  # mkdir(parents=True) would make the parents 0755, not 0700
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            if not directory.is_dir():  # a dangling link, or a file made meanwhile
                raise InputError(f"cannot create directory {directory}: a link to nothing or a file is in "
                                 "the way", f"remove {directory} or choose another directory") from None
        except OSError as err:  # under a file (ENOTDIR), read-only, no space
            if err.errno in (errno.ENOSPC, errno.EDQUOT):  # this machine's disk, not the input's fault
                raise RunFailed(f"cannot create directory {directory} on this machine (the controller): "
                                f"{err.strerror}", f"free space on the controller's disk under "
                                f"{directory.parent}; no node is at fault") from err
            raise InputError(f"cannot create directory {directory}: {err.strerror}",
                             "choose a directory under one you can write to") from err
    if not path.is_dir():
        raise InputError(f"{path} is not a directory", "choose a directory (it is made if missing)")
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

"""Files ufcctl writes on the controller, through the one atomic writer of ufcctl/nodeside/files.py.

Every file ufcctl itself writes here (a run's inventory, settings and summary, the lab's inventory, the
generated role vars, snapshots) is created under a per-process temporary name in its directory
(mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW, so a link planted under a predictable name is never followed),
flushed, given its mode and renamed over its name (a link at the name itself is replaced, not
followed); missing parents are made 0700 whatever the umask (statedir.ensure_private_dir). Lock files
are opened without truncating and never through a link or into a FIFO (open_lock). A failure is one
line naming the file; a full disk or quota is said to be this machine's, not a node's.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ufcctl.engine import statedir
from ufcctl.errors import InputError, RunFailed, UfcError
from ufcctl.nodeside.files import write_atomically

# this machine's disk, not a node's: the hint says where to make room
_FULL = {errno.ENOSPC, errno.EDQUOT}


def write_error(path: Path, err: OSError) -> UfcError:
    """The one-line error of a write on the controller that failed."""
    why = err.strerror or str(err)
    if err.errno in _FULL:
        return RunFailed(f"cannot write {path} on this machine (the controller): {why}",
                         f"free space on the controller's disk under {path.parent}; no node is at fault")
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP):
        return InputError(f"cannot write {path}: {why}", f"check {path.parent}, or choose another directory")
    return RunFailed(f"cannot write {path} on this machine (the controller): {why}")


def write_file(path: Path, data: bytes | str, mode: int = 0o600) -> Path:
    """`path` holds `data` (text: UTF-8) whole, with `mode`, or is left as it was; parents made 0700.
    InputError or RunFailed (write_error) when it cannot be written."""
    statedir.ensure_private_dir(path.parent)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        write_atomically(str(path), payload, mode)
    except OSError as err:
        raise write_error(path, err) from err
    return path


def open_lock(path: Path) -> int:
    """A descriptor of the lock file `path` (created 0600, never truncated); the caller closes it."""
    return _open_regular(path, os.O_RDWR, "lock file")


def open_append(path: Path) -> int:
    """A descriptor appending to the log `path` (created 0600); the caller closes it."""
    return _open_regular(path, os.O_WRONLY | os.O_APPEND, "log")


def _open_regular(path: Path, flags: int, what: str) -> int:
    """`path` opened (created 0600 if missing, parents 0700) never through a link and never a FIFO or a
    device: a planted one would make root write elsewhere, or hang at the open."""
    statedir.ensure_private_dir(path.parent)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO):  # a link (O_NOFOLLOW), a FIFO nobody reads
            raise _not_regular(what, path) from err
        raise write_error(path, err) from err
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_regular(what, path)
    return fd


def _not_regular(what: str, path: Path) -> InputError:
    return InputError(f"{what} {path} is a link, a FIFO or a device, not a file: not used",
                      f"remove {path} (ufcctl makes it again)")

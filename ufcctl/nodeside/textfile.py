"""Small text files the node-side programs write and read back: textfile metrics, checksum lines, the
join's bootstrap settings.

A write goes to a temporary file in the same directory (same filesystem, so the rename is atomic)
whose name starts with a dot and ends in .part, not .prom (the node exporter's collector ignores it),
is flushed to disk with its final mode, then renamed over the target: a reader sees the old file or
the new one, never half of one. mkstemp makes 0600; the mode is set before the rename, because the
node exporter runs as another user and must read the metrics.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO


def private_dirs(directory: str) -> None:
    """`directory` and every missing parent made 0700 (os.makedirs gives the parents 0777 less the umask:
    0777 under umask 0); ufcctl/engine/statedir.py ensure_private_dir is the controller's same rule."""
    missing = []
    path = os.path.abspath(directory)
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not os.path.isdir(path):
                raise


@contextmanager
def atomic_file(path: str, mode: int = 0o644, *, replace: bool = True) -> Iterator[BinaryIO]:
    """A new file that becomes `path` only when the block ends without an exception: written under a
    per-process temporary name in the same directory (mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW, so a link
    or file planted under a predictable name is never opened), flushed and fsynced with its final
    `mode`, then renamed over `path` (`replace=False`: linked, so an existing `path` is never replaced
    and FileExistsError says so). The temporary file is removed on any failure. A name that starts with
    a dot and ends in `.part` is what a crashed writer leaves (etcd_backup.prune removes old ones)."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace `path` with `text` whole; OSError when it cannot (the temporary file is removed)."""
    with atomic_file(path, mode) as fh:
        fh.write(text.encode("utf-8"))


def read_text(path: str) -> str | None:
    """The file's text; None when there is none yet or it cannot be read (the caller starts afresh)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None

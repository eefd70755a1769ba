"""The one atomic file writer: of everything that runs on the nodes, the node-side programs here (textfile
metrics, checksum lines, snapshots, the join's bootstrap settings) and the roles' modules, which import
this file as `ansible.module_utils.ufcctl_files` (roles/ufc_common/module_utils/ufcctl_files.py is a
relative symlink to it; Ansible ships it with every module that imports it), and on the controller
every file ufcctl writes (ufcctl/engine/files.py).

A write goes to a temporary file in the destination's directory (same filesystem, so the rename is
atomic) whose name starts with a dot and ends in .part, never the destination's own suffix (the node
exporter's collector reads only *.prom; a crashed writer's leftovers are found by that name), is
flushed to disk with its final owner and mode, then renamed over the destination, and the directory
is flushed so the rename survives a crash: a reader sees the old file or the new one, never half of
one. mkstemp makes 0600; the mode is set before the rename, because the node exporter runs as another
user and must read the metrics. `ufc_files` stages every file of a call first and renames only when
all of them passed their checks; the others write one file.

Runs on the nodes with their python3, which may be as old as 3.8 (roles/ufc_common/module_utils/
ruff.toml): the standard library only, by both rules (ufcctl/nodeside/__init__.py, and the node-side
role Python of tests/unit/test_layers.py).
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


def set_attributes(path: str, uid: int | None, gid: int | None, mode: int) -> None:
    """Owner (None: unchanged) and mode of `path`."""
    os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    os.chmod(path, mode)


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def staged_file(dest: str, mode: int, uid: int | None = None, gid: int | None = None,
                prefix: str | None = None) -> Iterator[tuple[BinaryIO, str]]:
    """(handle, name) of a new temporary file in dest's directory (mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW,
    so a link or file planted under a predictable name is never opened). When the block ends without
    an exception the file is on disk with its final owner (None: unchanged) and mode and stays for the
    caller to rename (`replace`) or remove; on any failure it is removed."""
    parent = os.path.dirname(dest) or "."
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{os.path.basename(dest)}.", suffix=".part", dir=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle, tmp
            handle.flush()
            os.fsync(handle.fileno())
        set_attributes(tmp, uid, gid, mode)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def stage_beside(dest: str, data: bytes, mode: int, uid: int | None = None, gid: int | None = None,
                 prefix: str | None = None) -> str:
    """A new temporary file in dest's directory holding `data`, on disk, with its final owner (None:
    unchanged) and mode; the caller renames it (`replace`) or removes it."""
    with staged_file(dest, mode, uid, gid, prefix) as (handle, tmp):
        handle.write(data)
    return tmp


def replace(tmp: str, dest: str) -> None:
    """Rename the staged `tmp` over `dest` and flush the directory."""
    os.replace(tmp, dest)
    fsync_directory(os.path.dirname(dest) or ".")


@contextmanager
def atomic_file(path: str, mode: int = 0o644, *, replace: bool = True, uid: int | None = None,
                gid: int | None = None) -> Iterator[BinaryIO]:
    """A new file that becomes `path` only when the block ends without an exception (`staged_file`, then
    renamed and the directory flushed; `replace=False`: linked, so an existing `path` is never replaced
    and FileExistsError says so). The temporary file is removed on any failure. A name that starts with
    a dot and ends in `.part` is what a crashed writer leaves (etcd_backup.prune removes old ones)."""
    with staged_file(path, mode, uid, gid) as (handle, tmp):
        yield handle
    try:
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            os.unlink(tmp)
        fsync_directory(os.path.dirname(path) or ".")
    except BaseException:
        _remove(tmp)
        raise


def write_atomically(dest: str, data: bytes, mode: int, uid: int | None = None,
                     gid: int | None = None) -> None:
    """Replace `dest` with `data` in one rename, with the given mode and owner (None: unchanged); OSError
    when it cannot (the temporary file is removed)."""
    with atomic_file(dest, mode, uid=uid, gid=gid) as handle:
        handle.write(data)


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace `path` with `text` (UTF-8) whole; OSError when it cannot (the temporary file is removed)."""
    write_atomically(path, text.encode("utf-8"), mode)


def write_text_if_changed(dest: str, text: str, current: str | None, mode: int, check_mode: bool) -> bool:
    """Write `text` to `dest` atomically unless `current` (its text now, None: absent) is already it;
    whether it changed (in check mode: would change)."""
    if current == text:
        return False
    if not check_mode:
        write_atomically(dest, text.encode(), mode)
    return True


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist (any other failure raises)."""
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def read_text_if_readable(path: str) -> str | None:
    """The file's text; None when there is none yet or it cannot be read (the caller starts afresh)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None

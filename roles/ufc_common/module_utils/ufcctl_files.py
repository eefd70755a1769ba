"""Atomic file writes of the roles' node-side modules: stage beside the destination, then rename.

Node-side (ansible.module_utils.ufcctl_files): standard library only, the node's python3.
A reader of the destination sees the old file or the new one, never a part: the new content is
written to a temporary file in the destination's directory (same filesystem, so the rename is
atomic), flushed to disk with its final owner and mode, renamed over the destination, and the
directory is flushed so the rename survives a crash. ufc_files stages every file of a call first
and renames only when all of them passed their checks; the others write one file.
"""

from __future__ import annotations

import os
import tempfile


def set_attributes(path, uid, gid, mode):
    """Owner (None: unchanged) and mode of `path`."""
    os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    os.chmod(path, mode)


def stage_beside(dest, data, mode, uid=None, gid=None, prefix=None):
    """A new temporary file in dest's directory holding `data` (bytes), on disk, with its final
    owner (None: unchanged) and mode; the caller renames it (replace) or removes it."""
    parent = os.path.dirname(dest) or "."
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{os.path.basename(dest)}.", suffix=".ufc", dir=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        set_attributes(tmp, uid, gid, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def fsync_directory(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(tmp, dest):
    """Rename the staged `tmp` over `dest` and flush the directory."""
    os.replace(tmp, dest)
    fsync_directory(os.path.dirname(dest) or ".")


def write_atomically(dest, data, mode, uid=None, gid=None):
    """Replace `dest` with `data` (bytes) in one rename, with the given mode and owner."""
    tmp = stage_beside(dest, data, mode, uid, gid)
    try:
        replace(tmp, dest)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def read_text(path):
    """The file's text, or None when it does not exist."""
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_text_if_changed(dest, text, current, mode, check_mode):
    """Write `text` to `dest` atomically unless `current` (its text now, None: absent) is already it;
    whether it changed (in check mode: would change)."""
    if current == text:
        return False
    if not check_mode:
        write_atomically(dest, text.encode(), mode)
    return True

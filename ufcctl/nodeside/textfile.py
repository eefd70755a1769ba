"""Small text files the node-side programs write and read back: textfile metrics, checksum lines, the
join's bootstrap settings.

A write goes to a temporary file in the same directory (same filesystem, so the rename is atomic)
whose name starts with a dot and does not end in .prom (the node exporter's collector ignores it),
is flushed to disk with its final mode, then renamed over the target: a reader sees the old file or
the new one, never half of one. mkstemp makes 0600; the mode is set before the rename, because the
node exporter runs as another user and must read the metrics.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import os
import tempfile


def write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    """Replace `path` with `text` whole; OSError when it cannot (the temporary file is removed)."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_text(path: str) -> str | None:
    """The file's text; None when there is none yet or it cannot be read (the caller starts afresh)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None

"""Identifying the state database read-only, before ufcctl writes a single byte to it.

Opening a file read-write and setting WAL mode, or running `CREATE TABLE IF NOT EXISTS`, rewrites
a foreign sqlite file and turns an unreadable one into a half-initialised one. So the file is
first read with `mode=ro`: the sqlite header, then the meta table and its schema version.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ufcctl.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every sqlite 3 database file
OUR_TABLES = frozenset({"meta", "runs", "nodes"})
SIDE_FILES = ("-wal", "-shm")


class StateFileError(InputError):
    """The state database or its directory cannot be used (foreign, corrupt, newer, unwritable).

    Raised before anything is written: the file is left exactly as it was found.
    """


def aside_hint(path: Path) -> str:
    return (f"move it aside with its -wal/-shm files, e.g. `mv {path} {path}.bad`, and ufcctl starts an "
            "empty state (the old runs are then not resumable); or set UFC_STATE_DIR to another directory")


def corrupt(path: Path, detail: object) -> StateFileError:
    return StateFileError(f"state database {path} is corrupt: {detail}",
                          f"`sqlite3 {path} .recover` may save its rows; then {aside_hint(path)}")


def identify(path: Path, schema_version: int) -> int | None:
    """The schema version of our database at `path`, or None when there is none yet (absent/empty).

    Raises StateFileError, without writing to the file, when it is not ours, corrupt or newer.
    """
    if not path.exists():
        return None
    if not path.is_file():
        raise StateFileError(f"state database {path} is not a regular file", aside_hint(path))
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as err:
        raise StateFileError(f"cannot read state database {path}: {err.strerror}",
                             "fix its owner/permissions (it should be 0600, owned by you)") from err
    if not head:
        return None  # an empty file: a first open that was killed before it wrote anything
    if head != SQLITE_MAGIC:
        raise StateFileError(f"{path} is not an sqlite database (it starts with {head[:12]!r}), so not "
                             "ufcctl's state", aside_hint(path))
    sides_before = {s for s in SIDE_FILES if Path(f"{path}{s}").exists()}
    try:
        return _read_version(path, schema_version)
    except StateFileError:
        _drop_side_files(path, sides_before)
        raise


def _read_version(path: Path, schema_version: int) -> int | None:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=30)
    except sqlite3.Error as err:
        raise StateFileError(f"cannot open state database {path}: {err}", aside_hint(path)) from err
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None  # a header but no table: a first open killed before its schema was written
        if "meta" not in tables:
            listed = ", ".join(sorted(tables)[:5]) + (" ..." if len(tables) > 5 else "")
            raise StateFileError(f"{path} is an sqlite database but not ufcctl's state (no meta table; "
                                 f"its tables: {listed})", aside_hint(path))
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        version = _version(row[0] if row else None)
        if version is None:
            raise StateFileError(f"{path} has a meta table without a schema version: not ufcctl's state",
                                 aside_hint(path))
        if version > schema_version:
            raise StateFileError(
                f"{path} has state schema {version}, newer than this ufcctl understands ({schema_version})",
                "upgrade ufcctl to the version that wrote it; or " + aside_hint(path))
        missing = OUR_TABLES - tables
        if missing:
            raise StateFileError(f"{path} lacks table(s) {', '.join(sorted(missing))}: a damaged or "
                                 "foreign state database", aside_hint(path))
        return version
    except sqlite3.OperationalError as err:
        if "locked" in str(err):
            raise StateFileError(f"state database {path} stayed locked for 30 s: {err}",
                                 "another process holds a write lock on it; retry when it is done") from err
        raise StateFileError(f"cannot read state database {path}: {err}", aside_hint(path)) from err
    except sqlite3.DatabaseError as err:
        raise corrupt(path, err) from err
    finally:
        db.close()


def _version(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _drop_side_files(path: Path, existed: set[str]) -> None:
    """Remove the empty -wal/-shm files that a read-only look at a WAL-mode file leaves behind.

    Only files that were not there before and hold no WAL frames: the file we refuse stays as found.
    """
    wal = Path(f"{path}-wal")
    if "-wal" in existed or (wal.exists() and wal.stat().st_size > 0):
        return
    for suffix in SIDE_FILES:
        if suffix not in existed:
            try:
                os.unlink(f"{path}{suffix}")
            except FileNotFoundError:
                pass


def create_private(path: Path) -> bool:
    """Create the database file 0600 before sqlite does (its -wal and -shm files inherit the mode);
    True when this process created it (an empty file found is taken over as its own too)."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        return True
    except FileExistsError:
        return path.is_file() and not path.is_symlink() and path.stat().st_size == 0


def make_private(path: Path) -> None:
    """0600 for a database an earlier ufcctl created 0644 (its -wal/-shm too)."""
    for name in (path, *(Path(f"{path}{s}") for s in ("-wal", "-shm"))):
        try:
            info = name.stat()
        except FileNotFoundError:
            continue
        if info.st_mode & 0o077 and info.st_uid == os.geteuid():
            name.chmod(0o600)


def file_error(path: Path, err: sqlite3.DatabaseError) -> StateFileError:
    if isinstance(err, sqlite3.OperationalError):
        return StateFileError(
            f"cannot use state database {path}: {err}",
            f"check that it and its directory are yours and writable, or {aside_hint(path)}")
    return corrupt(path, err)


def create_schema(db: sqlite3.Connection, path: Path, created: bool, schema: str, version: int) -> None:
    """Tables and the schema row in one transaction (IF NOT EXISTS: a concurrent first open is
    harmless). A failure (a full disk) rolls back; a file this process created then goes again, so the
    next command starts afresh instead of refusing a half-made file as not ufcctl's state."""
    row = f"INSERT OR IGNORE INTO meta VALUES ('schema', '{version}');"
    script = f"BEGIN IMMEDIATE;\n{schema}\n{row}\nCOMMIT;"
    try:
        db.executescript(script)
    except BaseException as err:
        try:
            if db.in_transaction:
                db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        if created:
            db.close()
            for name in (path, *(Path(f"{path}{s}") for s in SIDE_FILES)):
                name.unlink(missing_ok=True)
        if isinstance(err, sqlite3.OperationalError) and "full" in str(err):
            raise StateFileError(f"cannot create state database {path}: the disk is full",
                                 f"free space under {path.parent} and run the command again") from err
        raise

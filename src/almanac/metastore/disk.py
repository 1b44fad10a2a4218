"""A full or read-only disk under a catalog's files, told apart from damage.

Nothing is wrong with a catalog whose disk filled up, or that sits on a
read-only file system: the message must say so (free space; open it for
reading), not report corruption. The SQLite metastore and the identity
record beside it both turn their OS and SQLite failures into these errors.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from almanac.errors import ReadOnlyCatalogError, StorageError

__all__ = [
    "disk_full",
    "is_writable",
    "os_error",
    "read_only",
    "sqlite_error",
]

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_NEARLY_FULL_BYTES = 1 << 20
"""Below this much free space, a SQLite I/O error (it reports a failed
shared-memory or WAL extension as ``disk I/O error``) is a full disk."""


def disk_full(path: str | os.PathLike[str], cause: object) -> StorageError:
    return StorageError(
        f"The disk holding '{path}' is full ({cause}); nothing was changed: free space and retry",
        path=os.fspath(path),
        rule="disk-full",
    )


def read_only(path: str | os.PathLike[str], cause: object | None = None) -> ReadOnlyCatalogError:
    why = "" if cause is None else f" ({cause})"
    return ReadOnlyCatalogError(
        f"The catalog at '{path}' is read-only{why}: it was opened for reading, and "
        "changes are refused; nothing was changed",
        path=os.fspath(path),
        rule="read-only",
    )


def is_writable(path: str | os.PathLike[str]) -> bool:
    """Whether this process may write the file ``path`` (or create it) and
    create files beside it (SQLite's WAL and shared-memory files). A
    read-only file system says no even to root."""
    target = Path(path)
    directory = target.parent
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    return not target.exists() or os.access(target, os.W_OK)


def _nearly_full(path: str | os.PathLike[str]) -> bool:
    try:
        stat = os.statvfs(Path(path).parent)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < _NEARLY_FULL_BYTES


def os_error(path: str | os.PathLike[str], exc: OSError) -> StorageError | None:
    """The error a failed file operation on a catalog file stands for, or
    ``None`` when it is neither a full nor a read-only disk."""
    if exc.errno in _FULL_ERRNOS:
        return disk_full(path, exc.strerror or exc)
    if exc.errno in _READ_ONLY_ERRNOS:
        return read_only(path, exc.strerror or exc)
    return None


def sqlite_error(path: str | os.PathLike[str], exc: sqlite3.Error) -> StorageError | None:
    """The same for a SQLite failure on the file ``path``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or (name.startswith("SQLITE_IOERR") and _nearly_full(path)):
        return disk_full(path, f"{name}: {exc}")
    if name.startswith("SQLITE_READONLY") or (
        name == "SQLITE_CANTOPEN" and Path(path).parent.is_dir() and not is_writable(path)
    ):
        return read_only(path, f"{name}: {exc}")
    return None

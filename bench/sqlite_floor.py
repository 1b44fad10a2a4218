"""The physical floor of a catalog commit on SQLite: a bare compare-and-swap
log on the standard library's ``sqlite3``, with the pragmas
``SqliteMetastore`` sets (``journal_mode=WAL``, the same ``synchronous``,
the same busy timeout). Each commit is one ``BEGIN IMMEDIATE`` transaction
that reads ``catalog.version``, inserts ``catalog.update.{N}`` and moves
``catalog.version`` on if it still holds N-1."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from almanac.metastore.sqlite import DURABILITY_LEVELS
from almanac.node.log import KEY_VERSION, update_key

__all__ = ["SqliteFloor"]

BUSY_TIMEOUT_S = 30.0  # SqliteMetastore's default
_READ = "SELECT value FROM kv WHERE key = ?"


class SqliteFloor:
    """A new floor log in ``path`` (a file that must not exist yet)."""

    def __init__(self, path: Path, durability: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={DURABILITY_LEVELS[durability]}")
        self.conn.execute(
            "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
        )
        self.version_key = KEY_VERSION.encode()
        self.conn.execute("INSERT INTO kv VALUES (?, ?)", (self.version_key, b"0"))

    def commit(self, payload: bytes) -> None:
        """Append one version whose stored entry is ``payload``."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        (current,) = conn.execute(_READ, (self.version_key,)).fetchone()
        n = int(current) + 1
        conn.execute("INSERT INTO kv VALUES (?, ?)", (update_key(n).encode(), payload))
        conn.execute(
            "UPDATE kv SET value = ? WHERE key = ? AND value = ?",
            (str(n).encode(), self.version_key, current),
        )
        conn.execute("COMMIT")

    def latest(self) -> int:
        (value,) = self.conn.execute(_READ, (self.version_key,)).fetchone()
        return int(value)

    def close(self) -> None:
        self.conn.close()

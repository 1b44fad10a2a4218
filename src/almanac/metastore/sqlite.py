"""SQLite metastore: the embedded default, one file shared by the processes
of one machine (the catalog, Spark's driver-side commit workers, the CLI).

Concurrency. The file is in WAL mode, so readers never block the writer and
see a consistent snapshot per read transaction. Every write transaction
starts with ``BEGIN IMMEDIATE``: it takes the single write lock up front,
then re-reads the revision, evaluates the compares and writes, so two
processes can never both act on the same stale revision. Lock waits go
through SQLite's busy timeout (30 s by default) and, on top of that, a
bounded retry of the whole transaction on ``database is locked``.

Durability. ``durability="full"`` (the default) runs ``synchronous=FULL``:
COMMIT returns only once the WAL is fsynced, so a committed version survives
a power cut or an OS crash as well as the death of the process.
``durability="normal"`` runs ``synchronous=NORMAL``: a commit is in the WAL
file (and so in the OS page cache) before COMMIT returns, which survives the
death of the process, SIGKILL included, but the WAL is fsynced only at
checkpoints, so an OS crash or power cut can lose the commits since the last
checkpoint (never corrupting the file). Choose it for speed when losing the
last commits on a machine crash is acceptable.

Watches and leases. Changes made by other processes are noticed by one
background thread per store that polls ``PRAGMA data_version`` on its own
connection (every ``poll_interval`` while watches are open) and reads
nothing else unless it changed. The same thread revokes expired leases, so
that they expire with no traffic at all; every operation also revokes due
leases first. Lease deadlines are wall-clock ``time.time()`` values stored
in the file, so every process agrees on them.

Threads. A connection is used by one thread at a time: operations borrow
one from a small pool and give it back.

Read-only. A file on a read-only file system, or a file or directory this
process may not write, opens read-only (``mode=ro``; ``immutable=1`` when
the directory cannot take SQLite's shared-memory file and no WAL is left
over): reads and watches work, every write raises ``ReadOnlyCatalogError``.
A full disk is a ``StorageError`` that says so, not damage (see
``almanac.metastore.disk``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from almanac.errors import InvalidArgumentError, MetastoreError, StorageError
from almanac.metastore import disk
from almanac.metastore.base import (
    Compare,
    Delete,
    DeleteRange,
    KeyValue,
    LeaseNotFoundError,
    Metastore,
    Op,
    PollingWatch,
    Put,
    RangeResult,
    TxnResult,
    Watch,
    WatchEvent,
    WatchEventKind,
    WatchRegistry,
    apply_txn,
    check_read_revision,
    compacted_error,
    expire_leases,
    prefix_end,
    revoke_lease_keys,
    state_at,
    watchable_after_compaction,
)
from almanac.metastore.section import WriterSection, shared_file_section
from almanac.metastore.watch import ConditionWakeups

__all__ = ["DURABILITY_LEVELS", "SqliteMetastore"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

_SCHEMA_VERSION: Final = 1

DURABILITY_LEVELS: Final = {"full": "FULL", "normal": "NORMAL"}
"""``durability`` values and the ``PRAGMA synchronous`` setting each runs."""

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
    # Keys are stored as UTF-8 BLOBs: memcmp order equals str order, and a
    # prefix scan is a plain [prefix, prefix_end) range on the primary key.
    "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL,"
    " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, version INTEGER NOT NULL,"
    " lease INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS kv_by_lease ON kv (lease) WHERE lease != 0",
    # One row per change: the new state for watches, the previous state
    # (NULL when the key did not exist) for reads at past revisions.
    "CREATE TABLE IF NOT EXISTS changelog (rev INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " key BLOB NOT NULL, type INTEGER NOT NULL, value BLOB NOT NULL,"
    " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, version INTEGER NOT NULL,"
    " lease INTEGER NOT NULL, prev_value BLOB, prev_create_rev INTEGER, prev_mod_rev INTEGER,"
    " prev_version INTEGER, prev_lease INTEGER, PRIMARY KEY (rev, seq)) WITHOUT ROWID",
    # Reads at a past revision walk the changes since it by revision (the
    # primary key); an index by key cost every write two more pages.
    "DROP INDEX IF EXISTS changelog_by_key",
    # AUTOINCREMENT: a lease id is never handed out twice, even after revoke.
    "CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ttl REAL NOT NULL, expires_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expires_at)",
    "INSERT OR IGNORE INTO meta (name, value) VALUES"
    f" ('schema', {_SCHEMA_VERSION}), ('revision', 0), ('compact_revision', 0)",
)

_KV_COLUMNS: Final = "key, value, create_rev, mod_rev, version, lease"
_EVENT_COLUMNS: Final = (
    "rev, seq, key, type, value, create_rev, mod_rev, version, lease,"
    " prev_value, prev_create_rev, prev_mod_rev, prev_version, prev_lease"
)
_PUT, _DELETE = 0, 1

_MAX_ATTEMPTS: Final = 8
# A watch reads at most this many revisions per query, so a watch that
# starts far behind does not load the whole history at once.
_WATCH_WINDOW: Final = 1000


def _prefix_clause(prefix: str) -> tuple[str, tuple[bytes, ...]]:
    if not prefix:
        return "", ()
    low = prefix.encode()
    high = prefix_end(low)
    if high is None:
        return " AND key >= ?", (low,)
    return " AND key >= ? AND key < ?", (low, high)


def _damaged(what: str, value: object) -> MetastoreError:
    return MetastoreError(
        f"sqlite metastore row is damaged: {what} holds {type(value).__name__} {value!r:.80}",
        column=what,
    )


def _key(value: object) -> str:
    """A stored key: UTF-8 bytes. SQLite keeps whatever a damaged or
    hand-edited row holds in any column, so every cell is checked."""
    if type(value) is not bytes:
        raise _damaged("key", value)
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise _damaged("key", value) from None


def _blob(value: object, what: str = "value") -> bytes:
    if type(value) is not bytes:
        raise _damaged(what, value)
    return value


def _whole(value: object, what: str) -> int:
    if type(value) is not int:
        raise _damaged(what, value)
    return value


def _kv_at(row: Any, key: str, i: int) -> KeyValue:
    return KeyValue(
        key,
        _blob(row[i]),
        _whole(row[i + 1], "create_rev"),
        _whole(row[i + 2], "mod_rev"),
        _whole(row[i + 3], "version"),
        _whole(row[i + 4], "lease"),
    )


def _kv(row: Any) -> KeyValue:
    return _kv_at(row, _key(row[0]), 1)


def _event(row: Any) -> WatchEvent:
    key = _key(row[2])
    kv = _kv_at(row, key, 4)
    prev = None if row[9] is None else _kv_at(row, key, 9)
    return WatchEvent(WatchEventKind.PUT if row[3] == _PUT else WatchEventKind.DELETE, kv, prev)


def _writes(ops: Sequence[Op]) -> bool:
    return any(isinstance(op, Put | Delete | DeleteRange) for op in ops)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except (sqlite3.Error, UnicodeDecodeError):
            _log.warning("rollback failed", exc_info=True)


class _SqliteView:
    """The :class:`TxnView` over one connection inside one transaction."""

    def __init__(self, conn: sqlite3.Connection, now: float) -> None:
        self.conn = conn
        self.now = now
        self.changed = False
        self._seq_revision = -1
        self._seq = 0
        self._revision: int | None = None
        self._known: dict[str, KeyValue | None] = {}  # keys read or written in this txn

    def start(self) -> bool:
        """Read the revision (kept for ``meta``) and whether a lease is due,
        in one statement: the first of every transaction."""
        row = self.conn.execute(
            "SELECT value, EXISTS (SELECT 1 FROM leases WHERE expires_at <= ?)"
            " FROM meta WHERE name = 'revision'",
            (self.now,),
        ).fetchone()
        if row is None:
            raise MetastoreError("metastore file lacks meta entry 'revision'", name="revision")
        self._revision = _whole(row[0], "meta 'revision'")
        return bool(row[1])

    def meta(self, name: str) -> int:
        if name == "revision" and self._revision is not None:
            return self._revision
        row = self.conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise MetastoreError(f"metastore file lacks meta entry {name!r}", name=name)
        return _whole(row[0], f"meta {name!r}")

    def set_meta(self, name: str, value: int) -> None:
        self.conn.execute("UPDATE meta SET value = ? WHERE name = ?", (value, name))
        if name == "revision":
            self._revision = value

    def get(self, key: str) -> KeyValue | None:
        if key in self._known:
            return self._known[key]  # a compare and a put of one key read it once
        row = self.conn.execute(
            f"SELECT {_KV_COLUMNS} FROM kv WHERE key = ?", (key.encode(),)
        ).fetchone()
        kv = None if row is None else _kv(row)
        self._known[key] = kv
        return kv

    def range(self, prefix: str, limit: int | None) -> tuple[tuple[KeyValue, ...], bool]:
        clause, params = _prefix_clause(prefix)
        rows = self.conn.execute(
            f"SELECT {_KV_COLUMNS} FROM kv WHERE 1{clause} ORDER BY key LIMIT ?",
            (*params, -1 if limit is None else limit + 1),
        ).fetchall()
        if limit is not None and len(rows) > limit:
            return tuple(_kv(row) for row in rows[:limit]), True
        return tuple(_kv(row) for row in rows), False

    def lease_alive(self, lease_id: int) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM leases WHERE id = ? AND expires_at > ?", (lease_id, self.now)
        ).fetchone()
        return row is not None

    def lease_keys(self, lease_id: int) -> Sequence[KeyValue]:
        rows = self.conn.execute(
            f"SELECT {_KV_COLUMNS} FROM kv WHERE lease = ? ORDER BY key", (lease_id,)
        ).fetchall()
        return [_kv(row) for row in rows]

    def expired_leases(self) -> Sequence[int]:
        rows = self.conn.execute(
            "SELECT id FROM leases WHERE expires_at <= ? ORDER BY id", (self.now,)
        ).fetchall()
        return [int(row[0]) for row in rows]

    def drop_lease(self, lease_id: int) -> None:
        self.conn.execute("DELETE FROM leases WHERE id = ?", (lease_id,))
        self.changed = True

    def record(self, event: WatchEvent) -> None:
        kv, prev = event.kv, event.prev_kv
        key = kv.key.encode()
        self._known[kv.key] = kv if event.type is WatchEventKind.PUT else None
        if event.type is WatchEventKind.PUT:
            self.conn.execute(
                f"INSERT OR REPLACE INTO kv ({_KV_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease),
            )
        else:
            self.conn.execute("DELETE FROM kv WHERE key = ?", (key,))
        if kv.mod_revision == self._seq_revision:
            self._seq += 1
        else:
            self._seq_revision, self._seq = kv.mod_revision, 0
        self.conn.execute(
            f"INSERT INTO changelog ({_EVENT_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                kv.mod_revision,
                self._seq,
                key,
                _PUT if event.type is WatchEventKind.PUT else _DELETE,
                kv.value,
                kv.create_revision,
                kv.mod_revision,
                kv.version,
                kv.lease,
                None if prev is None else prev.value,
                None if prev is None else prev.create_revision,
                None if prev is None else prev.mod_revision,
                None if prev is None else prev.version,
                None if prev is None else prev.lease,
            ),
        )
        self.changed = True

    def undo_after(self, prefix: str, revision: int) -> list[tuple[str, KeyValue | None]]:
        clause, params = _prefix_clause(prefix)
        rows = self.conn.execute(
            "SELECT key, prev_value, prev_create_rev, prev_mod_rev, prev_version, prev_lease"
            f" FROM changelog WHERE rev > ?{clause} ORDER BY rev, seq",
            (revision, *params),
        ).fetchall()
        return [(_key(row[0]), None if row[1] is None else _kv(row)) for row in rows]

    def events(self, prefix: str, start: int, end: int) -> list[WatchEvent]:
        clause, params = _prefix_clause(prefix)
        rows = self.conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM changelog WHERE rev >= ? AND rev < ?{clause}"
            " ORDER BY rev, seq",
            (start, end, *params),
        ).fetchall()
        return [_event(row) for row in rows]


class SqliteMetastore(ConditionWakeups, Metastore):
    """A metastore in one SQLite file; see the module docstring for the
    concurrency and durability model.

    ``poll_interval`` is how often other processes' changes are looked for
    while watches are open; ``idle_interval`` bounds the lease sweep delay
    when none are. ``clock`` (wall-clock seconds) decides when leases
    expire; tests pass one they move by hand.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        poll_interval: float = 0.01,
        idle_interval: float = 0.1,
        durability: str = "full",
        clock: Callable[[], float] = time.time,
        read_only: bool | None = None,
    ) -> None:
        """``read_only``: open for reading only; ``None`` (the default) does
        so when the file exists and this process may not write it or its
        directory."""
        if not isinstance(durability, str) or durability not in DURABILITY_LEVELS:
            raise InvalidArgumentError(
                f"durability must be one of {', '.join(map(repr, DURABILITY_LEVELS))}, "
                f"not {durability!r}",
                durability=durability,
            )
        self._synchronous = DURABILITY_LEVELS[durability]
        self.durability = durability
        self._path = os.fspath(path)
        if read_only is None:
            read_only = os.path.exists(self._path) and not disk.is_writable(self._path)
        self.read_only = read_only
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._poll_interval = poll_interval
        self._idle_interval = idle_interval
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        self._cond = threading.Condition()
        self._token = 0
        self._wakeup = threading.Event()
        self._watches = WatchRegistry()
        self._initialize()
        self._background = threading.Thread(
            target=self._run_background, name=f"sqlite-metastore:{self._path}", daemon=True
        )
        self._background.start()

    @property
    def path(self) -> str:
        return self._path

    # -- writer section

    serializes_writers = True

    def exclusive(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        """Cooperating writers of this file, in every process, one at a time:
        a thread lock shared by the store objects of this process on the
        file, and an exclusive ``flock`` on the sidecar ``<file>-writer``.
        SQLite's own write lock stays free, so reads, leases and the other
        writes inside the section go on as usual."""
        if self.read_only:
            raise disk.read_only(self._path)
        section: WriterSection | None = getattr(self, "_writer_section", None)
        if section is None:
            section = shared_file_section(f"sqlite metastore {self._path}", self._path + "-writer")
            self._writer_section = section
        return section.hold(timeout)

    # -- connections and transactions

    def _error(self, exc: sqlite3.Error | UnicodeDecodeError) -> StorageError:
        if isinstance(exc, UnicodeDecodeError):
            # SQLite quotes damaged schema text in its message; Python's
            # sqlite3 fails to decode it when those bytes are not UTF-8
            return MetastoreError(
                f"sqlite metastore {self._path} is damaged: SQLite reported an error"
                " whose text is not UTF-8 (a damaged schema page)",
                path=self._path,
                rule="damaged",
            )
        known = disk.sqlite_error(self._path, exc)
        if known is not None:
            return known
        return MetastoreError(f"sqlite metastore {self._path}: {exc}", path=self._path)

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                conn = sqlite3.connect(
                    self._read_only_uri(),
                    uri=True,
                    timeout=self._busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(
                    self._path,
                    timeout=self._busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        if not self.read_only:
            try:
                conn.execute(f"PRAGMA synchronous={self._synchronous}")
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                conn.close()
                raise self._error(exc) from exc
        return conn

    def _read_only_uri(self) -> str:
        """``mode=ro`` reads a WAL database when SQLite can create (or find)
        its shared-memory file; a directory that takes no new file and holds
        no WAL (closed cleanly) is read as ``immutable``: nothing can change it."""
        path = os.path.abspath(self._path)
        directory = os.path.dirname(path)
        immutable = not os.access(directory, os.W_OK) and not os.path.exists(path + "-wal")
        mode = "immutable=1" if immutable else "mode=ro"
        # An empty authority: a path spelled with a leading '//' is not a host.
        return f"file://{urllib.parse.quote(path)}?{mode}"

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise MetastoreError("the metastore is closed", path=self._path)
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def _run(self, attempt: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``attempt`` on a pooled connection, redoing it from scratch
        when SQLite reports the file busy (it rolled back, so that is safe)."""
        tries = 0
        delay = 0.005
        while True:
            tries += 1
            with self._connection() as conn:
                try:
                    return attempt(conn)
                except sqlite3.OperationalError as exc:
                    _rollback(conn)
                    if not _is_busy(exc) or tries >= _MAX_ATTEMPTS:
                        raise self._error(exc) from exc
                except (sqlite3.Error, UnicodeDecodeError) as exc:
                    _rollback(conn)
                    raise self._error(exc) from exc
                except BaseException:
                    _rollback(conn)
                    raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)

    def _initialize(self) -> None:
        def check_schema(conn: sqlite3.Connection) -> None:
            try:
                row = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                raise disk.read_only(self._path, "it holds no catalog store yet") from exc
            schema = None if row is None else row[0]
            if schema != _SCHEMA_VERSION:
                raise MetastoreError(
                    f"sqlite metastore {self._path} has schema {schema},"
                    f" this code reads schema {_SCHEMA_VERSION}",
                    path=self._path,
                )

        if self.read_only:
            self._run(check_schema)
            return

        def attempt(conn: sqlite3.Connection) -> None:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise MetastoreError(
                    f"sqlite metastore {self._path} cannot use WAL mode (got {mode!r})",
                    path=self._path,
                )
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            view = _SqliteView(conn, self._clock())
            schema = view.meta("schema")
            if schema != _SCHEMA_VERSION:
                raise MetastoreError(
                    f"sqlite metastore {self._path} has schema {schema},"
                    f" this code reads schema {_SCHEMA_VERSION}",
                    path=self._path,
                )
            conn.execute("COMMIT")

        self._run(attempt)

    def _write(self, op: Callable[[_SqliteView, int], tuple[_T, int]]) -> _T:
        """Run ``op(view, revision) -> (result, new revision)`` as one write txn.

        Due leases are revoked first; if ``op`` then refuses (raises a
        MetastoreError), only its own changes are rolled back, so the
        revocation still commits.
        """
        if self.read_only:
            raise disk.read_only(self._path)

        def attempt(conn: sqlite3.Connection) -> tuple[_T, bool]:
            conn.execute("BEGIN IMMEDIATE")
            view = _SqliteView(conn, self._clock())
            due = view.start()
            start = view.meta("revision")
            if not due:
                # Nothing to keep if ``op`` refuses: ``_run`` rolls it all back.
                result, final = op(view, start)
                if final != start:
                    view.set_meta("revision", final)
                conn.execute("COMMIT")
                return result, view.changed
            revision = expire_leases(view, start)
            expired = view.changed
            conn.execute("SAVEPOINT op")
            try:
                result, final = op(view, revision)
            except MetastoreError:
                conn.execute("ROLLBACK TO op")
                conn.execute("RELEASE op")
                if revision != start:
                    view.set_meta("revision", revision)
                conn.execute("COMMIT")
                if expired:
                    self._notify()
                raise
            conn.execute("RELEASE op")
            if final != start:
                view.set_meta("revision", final)
            conn.execute("COMMIT")
            return result, view.changed

        result, changed = self._run(attempt)
        if changed:
            self._notify()
        return result

    def _read(self, read: Callable[[_SqliteView], _T]) -> _T:
        """Run ``read`` in one snapshot, after revoking any due lease."""

        def attempt(conn: sqlite3.Connection) -> tuple[_T] | None:
            conn.execute("BEGIN")
            try:
                view = _SqliteView(conn, self._clock())
                if view.start() and not self.read_only:
                    return None  # revoke the due lease first (a read-only store cannot)
                return (read(view),)
            finally:
                conn.execute("COMMIT")

        while True:
            outcome = self._run(attempt)
            if outcome is not None:
                return outcome[0]
            self._write(lambda view, revision: (None, revision))

    def _notify(self) -> None:
        with self._cond:
            self._token += 1
            self._cond.notify_all()

    # -- reads and writes

    def _current_revision(self) -> int:
        return self._read(lambda view: view.meta("revision"))

    def _current_compact_revision(self) -> int:
        return self._read(lambda view: view.meta("compact_revision"))

    def _read_range(self, prefix: str, revision: int | None, limit: int | None) -> RangeResult:
        if revision is None and not self.read_only:
            now = self._run(lambda conn: _current_range(conn, self._clock(), prefix, limit))
            if now is not None:
                return now

        def read(view: _SqliteView) -> RangeResult:
            current = view.meta("revision")
            if revision is None or revision == current:
                kvs, more = view.range(prefix, limit)
                return RangeResult(kvs, current, more)
            check_read_revision(revision, current, view.meta("compact_revision"))
            undo = view.undo_after(prefix, revision)
            kvs, more = state_at(view.range(prefix, None)[0], undo, limit)
            return RangeResult(kvs, revision, more)

        return self._read(read)

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        if not _writes(success) and not _writes(failure):
            # Read-only: a snapshot suffices and takes no write lock.
            return self._read(
                lambda view: apply_txn(view, view.meta("revision"), compares, success, failure)
            )

        def op(view: _SqliteView, revision: int) -> tuple[TxnResult, int]:
            result = apply_txn(view, revision, compares, success, failure)
            return result, result.revision

        return self._write(op)

    def _compact(self, revision: int) -> None:
        def op(view: _SqliteView, current: int) -> tuple[None, int]:
            compact_revision = view.meta("compact_revision")
            if revision > current:
                raise MetastoreError(
                    f"cannot compact to revision {revision}: current revision is {current}",
                    revision=revision,
                    current=current,
                )
            if revision < compact_revision:
                raise compacted_error(revision, compact_revision)
            if revision > compact_revision:
                view.conn.execute("DELETE FROM changelog WHERE rev < ?", (revision,))
                view.set_meta("compact_revision", revision)
            return None, current

        self._write(op)

    # -- watches

    def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        def start(view: _SqliteView) -> int:
            compact_revision = view.meta("compact_revision")
            first = view.meta("revision") + 1 if from_revision is None else from_revision
            if first < compact_revision:
                raise compacted_error(first, compact_revision)
            return first

        watch = PollingWatch(self, prefix, self._read(start))
        self._watches.add(watch)
        self._wakeup.set()
        return watch

    def _watch_poll(
        self, prefix: str, from_revision: int
    ) -> tuple[Sequence[WatchEvent], int, bool]:
        def poll(view: _SqliteView) -> tuple[Sequence[WatchEvent], int, bool]:
            compact_revision = view.meta("compact_revision")
            if from_revision < compact_revision:
                raise compacted_error(from_revision, compact_revision)
            current = view.meta("revision")
            if from_revision > current:
                return [], from_revision, False
            end = min(current + 1, from_revision + _WATCH_WINDOW)
            events = watchable_after_compaction(
                view.events(prefix, from_revision, end), compact_revision
            )
            return events, end, end <= current

        return self._read(poll)

    _watch_min_gap = 0.002
    """Reading the changelog costs a read transaction: at most one per watch per 2 ms."""

    # -- leases

    def _grant_lease(self, ttl: float) -> int:
        def op(view: _SqliteView, revision: int) -> tuple[int, int]:
            cursor = view.conn.execute(
                "INSERT INTO leases (ttl, expires_at) VALUES (?, ?)", (ttl, view.now + ttl)
            )
            if cursor.lastrowid is None:
                raise MetastoreError("sqlite did not assign a lease id", path=self._path)
            return cursor.lastrowid, revision

        return self._write(op)

    def _keep_alive(self, lease_id: int) -> float:
        def op(view: _SqliteView, revision: int) -> tuple[float, int]:
            row = view.conn.execute("SELECT ttl FROM leases WHERE id = ?", (lease_id,)).fetchone()
            if row is None:
                raise LeaseNotFoundError(lease_id)
            ttl = float(row[0])
            view.conn.execute(
                "UPDATE leases SET expires_at = ? WHERE id = ?", (view.now + ttl, lease_id)
            )
            return ttl, revision

        return self._write(op)

    def _revoke_lease(self, lease_id: int) -> int:
        def op(view: _SqliteView, revision: int) -> tuple[int, int]:
            row = view.conn.execute("SELECT 1 FROM leases WHERE id = ?", (lease_id,)).fetchone()
            if row is None:
                raise LeaseNotFoundError(lease_id)
            revision = revoke_lease_keys(view, revision, lease_id)
            return revision, revision

        return self._write(op)

    def _lease_ttl(self, lease_id: int) -> float | None:
        def read(view: _SqliteView) -> float | None:
            row = view.conn.execute(
                "SELECT expires_at FROM leases WHERE id = ?", (lease_id,)
            ).fetchone()
            if row is None or row[0] <= view.now:
                return None
            return float(row[0]) - view.now

        return self._read(read)

    # -- background thread and shutdown

    def _run_background(self) -> None:
        """Notice other connections' commits and revoke leases on time."""
        try:
            conn = self._connect()
        except MetastoreError:
            _log.warning("metastore background thread cannot connect", exc_info=True)
            return
        last_version: int | None = None
        next_expiry: float | None = None
        try:
            while not self._closed:
                failed = False
                try:
                    version = conn.execute("PRAGMA data_version").fetchone()[0]
                    if version != last_version:
                        last_version = version
                        self._notify()
                        next_expiry = _next_expiry(conn)
                    if self.read_only:
                        next_expiry = None  # leases expire only where they can be revoked
                    if next_expiry is not None and self._clock() >= next_expiry:
                        self._write(lambda view, revision: (None, revision))
                        next_expiry = _next_expiry(conn)
                except (sqlite3.Error, UnicodeDecodeError, MetastoreError):
                    if self._closed:
                        break
                    _log.warning("metastore background poll failed", exc_info=True)
                    failed = True
                interval = self._poll_interval if self._watches.active() else self._idle_interval
                if next_expiry is not None and not failed:
                    interval = min(interval, max(next_expiry - self._clock(), 0.001))
                self._wakeup.wait(interval)
                self._wakeup.clear()
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = self._idle, []
        self._wakeup.set()
        self._watches.close_all()
        self._watch_wake()
        if self._background is not threading.current_thread():
            self._background.join()
        for conn in idle:
            conn.close()


def _current_range(
    conn: sqlite3.Connection, now: float, prefix: str, limit: int | None
) -> RangeResult | None:
    """A read at the current revision in one statement (so one snapshot, with
    no BEGIN and COMMIT around it): the revision, whether a lease is due
    (then None: the caller revokes it first), and the keys."""
    clause, params = _prefix_clause(prefix)
    rows = conn.execute(
        "SELECT meta.value, EXISTS (SELECT 1 FROM leases WHERE expires_at <= ?),"
        " kv.key, kv.value, kv.create_rev, kv.mod_rev, kv.version, kv.lease"
        f" FROM meta LEFT JOIN kv ON 1{clause} WHERE meta.name = 'revision'"
        " ORDER BY kv.key LIMIT ?",
        (now, *params, -1 if limit is None else limit + 1),
    ).fetchall()
    if not rows:
        raise MetastoreError("metastore file lacks meta entry 'revision'", name="revision")
    if rows[0][1]:
        return None
    revision = _whole(rows[0][0], "meta 'revision'")
    kvs = [_kv(row[2:]) for row in rows if row[2] is not None]
    if limit is not None and len(kvs) > limit:
        return RangeResult(tuple(kvs[:limit]), revision, True)
    return RangeResult(tuple(kvs), revision, False)


def _next_expiry(conn: sqlite3.Connection) -> float | None:
    row = conn.execute("SELECT MIN(expires_at) FROM leases").fetchone()
    return None if row is None or row[0] is None else float(row[0])

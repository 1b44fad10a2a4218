"""The metastore contract: a small key-value store shaped after etcd v3.

Everything above this layer (the update log first of all) is written against
:class:`Metastore` only, so that the in-memory, SQLite and etcd backends are
interchangeable. The semantics therefore follow etcd wherever etcd has an
opinion:

* one global ``revision``, bumped by exactly one for every transaction that
  wrote something; reads, failed compares and no-op deletes do not bump it;
* every key carries ``create_revision``, ``mod_revision`` and ``version``; an
  absent key compares as 0 on all three, and a VALUE compare on an absent key
  is always false;
* a transaction may not write the same key twice (etcd rejects that too);
* ``compact(C)`` forgets history below ``C``: the state at ``C`` stays
  readable and the changes made at ``C`` stay watchable.

Besides the value types, this module holds the transaction engine shared by
the backends (:func:`apply_txn` and friends over a :class:`TxnView`), so that
compare and op semantics are written once, and :class:`PollingWatch`, the
watch iterator of the backends that can only poll.
"""

from __future__ import annotations

import bisect
import math
import operator
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Any, Final, Literal, Protocol, Self, TypeAlias

from almanac.errors import CompactedError, MetastoreError

__all__ = [
    "Compare",
    "CompareOp",
    "CompareTarget",
    "Delete",
    "DeleteRange",
    "DeleteResponse",
    "EventType",
    "Get",
    "GetResponse",
    "InvalidArgumentError",
    "KeyValue",
    "LeaseNotFoundError",
    "Metastore",
    "Op",
    "PollingWatch",
    "Put",
    "PutResponse",
    "Range",
    "RangeResult",
    "Response",
    "TxnResult",
    "TxnView",
    "Watch",
    "WatchEvent",
    "WatchRegistry",
    "WatchSource",
    "apply_txn",
    "check_branch",
    "check_compares",
    "check_read_revision",
    "compacted_error",
    "events_from",
    "expire_leases",
    "prefix_end",
    "revoke_lease_keys",
    "state_at",
]


class InvalidArgumentError(MetastoreError):
    """The caller passed a malformed argument; nothing was read or written."""


class LeaseNotFoundError(MetastoreError):
    """The lease was never granted, was revoked, or has expired."""

    def __init__(self, lease_id: int) -> None:
        super().__init__(f"lease {lease_id} does not exist or has expired", lease_id=lease_id)
        self.lease_id = lease_id


# --------------------------------------------------------------------------- validation


def _invalid(message: str, **context: Any) -> InvalidArgumentError:
    return InvalidArgumentError(message, **context)


def _check_text(value: object, what: str, *, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise _invalid(f"{what} must be a str, not {type(value).__name__}", **{what: value})
    if not value and not allow_empty:
        raise _invalid(f"{what} must not be empty", **{what: value})
    try:
        # Backends order keys by their UTF-8 bytes; lone surrogates have none.
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(f"{what} {value!r} is not valid unicode", **{what: value}) from exc
    return value


def check_key(key: object) -> str:
    return _check_text(key, "key", allow_empty=False)


def check_prefix(prefix: object) -> str:
    return _check_text(prefix, "prefix", allow_empty=True)


def check_value(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise _invalid(f"value must be bytes, not {type(value).__name__}", value=value)
    return value


def _check_int(value: object, what: str, *, minimum: int) -> int:
    # bool is an int subclass; True as a revision is always a bug in the caller.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid(f"{what} must be an int, not {type(value).__name__}", **{what: value})
    if value < minimum:
        raise _invalid(f"{what} must be >= {minimum}, got {value}", **{what: value})
    return value


def check_revision(revision: object, what: str = "revision") -> int:
    return _check_int(revision, what, minimum=0)


def check_lease_id(lease_id: object) -> int:
    return _check_int(lease_id, "lease_id", minimum=0)


def check_limit(limit: object) -> int | None:
    return None if limit is None else _check_int(limit, "limit", minimum=1)


def check_ttl(ttl: object) -> float:
    if not isinstance(ttl, int | float) or isinstance(ttl, bool):
        raise _invalid(f"ttl must be a number of seconds, not {type(ttl).__name__}", ttl=ttl)
    if not math.isfinite(ttl) or ttl <= 0:
        raise _invalid(f"ttl must be a positive finite number of seconds, got {ttl}", ttl=ttl)
    return float(ttl)


def check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise _invalid(f"timeout must be a number, not {type(timeout).__name__}", timeout=timeout)
    if math.isnan(timeout) or timeout < 0:
        raise _invalid(f"timeout must be >= 0, got {timeout}", timeout=timeout)
    return float(timeout)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    ``None`` means "no upper bound" (empty prefix, or only 0xFF bytes).
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key as stored at some revision.

    ``version`` counts the writes since the key was (re)created, so a delete
    followed by a put starts again at 1 with a new ``create_revision``.
    ``lease`` is 0 when the key is not attached to a lease.
    """

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


class CompareTarget(Enum):
    VALUE = "value"
    MOD_REVISION = "mod_revision"
    CREATE_REVISION = "create_revision"
    VERSION = "version"


CompareOp: TypeAlias = Literal["==", "!=", "<", ">"]

_COMPARE_OPS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}


@dataclass(frozen=True, slots=True)
class Compare:
    """A condition of a transaction: ``<target of key> <op> <operand>``.

    The last field is ``operand`` rather than ``value`` only because
    ``Compare.value(...)`` is the convenience constructor; positional
    construction ``Compare(key, target, op, operand)`` reads the same.
    Operands are ``bytes`` for VALUE (compared lexicographically, as etcd
    does) and non-negative ``int`` for the revision and version targets.
    """

    key: str
    target: CompareTarget
    op: CompareOp
    operand: bytes | int

    def __post_init__(self) -> None:
        check_key(self.key)
        if not isinstance(self.target, CompareTarget):
            raise _invalid(f"compare target must be a CompareTarget, not {self.target!r}")
        if self.op not in _COMPARE_OPS:
            raise _invalid(
                f"compare op must be one of {sorted(_COMPARE_OPS)}, not {self.op!r}", op=self.op
            )
        if self.target is CompareTarget.VALUE:
            check_value(self.operand)
        else:
            _check_int(self.operand, "operand", minimum=0)

    @classmethod
    def value(cls, key: str, op: CompareOp, value: bytes) -> Compare:
        return cls(key, CompareTarget.VALUE, op, value)

    @classmethod
    def mod_revision(cls, key: str, op: CompareOp, revision: int) -> Compare:
        return cls(key, CompareTarget.MOD_REVISION, op, revision)

    @classmethod
    def create_revision(cls, key: str, op: CompareOp, revision: int) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, op, revision)

    @classmethod
    def version(cls, key: str, op: CompareOp, version: int) -> Compare:
        return cls(key, CompareTarget.VERSION, op, version)

    @classmethod
    def absent(cls, key: str) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, "==", 0)

    @classmethod
    def exists(cls, key: str) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, ">", 0)

    def holds(self, kv: KeyValue | None) -> bool:
        """Evaluate against the key's current state (``None`` when absent)."""
        actual: bytes | int
        if self.target is CompareTarget.VALUE:
            if kv is None:
                # etcd: an absent key has no value to compare, even with "!=".
                return False
            actual = kv.value
        elif self.target is CompareTarget.MOD_REVISION:
            actual = kv.mod_revision if kv else 0
        elif self.target is CompareTarget.CREATE_REVISION:
            actual = kv.create_revision if kv else 0
        else:
            actual = kv.version if kv else 0
        return _COMPARE_OPS[self.op](actual, self.operand)


@dataclass(frozen=True, slots=True)
class Put:
    """Write ``value`` under ``key``; a non-zero ``lease`` must be alive."""

    key: str
    value: bytes
    lease: int = 0

    def __post_init__(self) -> None:
        check_key(self.key)
        check_value(self.value)
        check_lease_id(self.lease)


@dataclass(frozen=True, slots=True)
class Delete:
    key: str

    def __post_init__(self) -> None:
        check_key(self.key)


@dataclass(frozen=True, slots=True)
class DeleteRange:
    """Delete every key starting with ``prefix`` (all keys when it is empty)."""

    prefix: str

    def __post_init__(self) -> None:
        check_prefix(self.prefix)


@dataclass(frozen=True, slots=True)
class Get:
    key: str

    def __post_init__(self) -> None:
        check_key(self.key)


@dataclass(frozen=True, slots=True)
class Range:
    prefix: str
    limit: int | None = None

    def __post_init__(self) -> None:
        check_prefix(self.prefix)
        check_limit(self.limit)


Op: TypeAlias = Put | Delete | DeleteRange | Get | Range


@dataclass(frozen=True, slots=True)
class PutResponse:
    prev_kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class DeleteResponse:
    deleted: int
    prev_kvs: tuple[KeyValue, ...]


@dataclass(frozen=True, slots=True)
class GetResponse:
    kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class RangeResult:
    """Keys sorted by key, and the revision whose state they show.

    ``more`` is true when ``limit`` cut the result short.
    """

    kvs: tuple[KeyValue, ...]
    revision: int
    more: bool = False


Response: TypeAlias = PutResponse | DeleteResponse | GetResponse | RangeResult


@dataclass(frozen=True, slots=True)
class TxnResult:
    """``revision`` is the new revision if the txn wrote, else the current one.

    ``responses`` has one entry per op of the branch that ran.
    """

    succeeded: bool
    revision: int
    responses: tuple[Response, ...]


class EventType(Enum):
    PUT = "put"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change. ``kv.mod_revision`` is the revision of the change.

    For a DELETE, ``kv`` is a tombstone (empty value, create revision and
    version 0, as etcd reports it) and ``prev_kv`` the deleted key.
    """

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None = None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


def _tombstone(prev: KeyValue, revision: int) -> WatchEvent:
    return WatchEvent(EventType.DELETE, KeyValue(prev.key, b"", 0, revision, 0, 0), prev)


# --------------------------------------------------------------------------- shared engine


class TxnView(Protocol):
    """What the engine needs from a backend inside one atomic write.

    ``record`` must apply the event to the current state *and* append it to
    the change history, so that later reads of the same txn see it.
    """

    def get(self, key: str) -> KeyValue | None: ...

    def range(self, prefix: str, limit: int | None) -> tuple[tuple[KeyValue, ...], bool]: ...

    def lease_alive(self, lease_id: int) -> bool: ...

    def lease_keys(self, lease_id: int) -> Sequence[KeyValue]: ...

    def expired_leases(self) -> Sequence[int]: ...

    def drop_lease(self, lease_id: int) -> None: ...

    def record(self, event: WatchEvent) -> None: ...


def check_branch(ops: Iterable[object], branch: str) -> tuple[Op, ...]:
    """Validate one txn branch; reject overlapping writes like etcd does."""
    checked: list[Op] = []
    puts: set[str] = set()
    deleted_keys: set[str] = set()
    deleted_prefixes: list[str] = []
    for op in ops:
        if not isinstance(op, Put | Delete | DeleteRange | Get | Range):
            raise _invalid(f"{branch} op must be Put, Delete, DeleteRange, Get or Range: {op!r}")
        checked.append(op)
        if isinstance(op, Put):
            if op.key in puts:
                raise _invalid(f"duplicate key {op.key!r} in {branch} branch", key=op.key)
            puts.add(op.key)
        elif isinstance(op, Delete):
            deleted_keys.add(op.key)
        elif isinstance(op, DeleteRange):
            deleted_prefixes.append(op.prefix)
    for key in puts:
        if key in deleted_keys or any(key.startswith(p) for p in deleted_prefixes):
            raise _invalid(f"key {key!r} is both put and deleted in {branch} branch", key=key)
    return tuple(checked)


def check_compares(compares: Iterable[object]) -> tuple[Compare, ...]:
    checked: list[Compare] = []
    for compare in compares:
        if not isinstance(compare, Compare):
            raise _invalid(f"compares must be Compare values: {compare!r}")
        checked.append(compare)
    return tuple(checked)


def apply_txn(
    view: TxnView,
    revision: int,
    compares: Sequence[Compare],
    success: Sequence[Op],
    failure: Sequence[Op],
) -> TxnResult:
    """Run one (already validated) txn against ``view`` at store ``revision``.

    Raises :class:`LeaseNotFoundError` before writing anything if the chosen
    branch puts with a dead lease; the other branch's leases are not checked,
    as in etcd.
    """
    succeeded = all(compare.holds(view.get(compare.key)) for compare in compares)
    ops = success if succeeded else failure
    for op in ops:
        if isinstance(op, Put) and op.lease and not view.lease_alive(op.lease):
            raise LeaseNotFoundError(op.lease)
    new_revision = revision + 1
    wrote = False
    pending: list[Response | tuple[tuple[KeyValue, ...], bool]] = []
    for op in ops:
        if isinstance(op, Put):
            prev = view.get(op.key)
            kv = KeyValue(
                op.key,
                op.value,
                prev.create_revision if prev else new_revision,
                new_revision,
                prev.version + 1 if prev else 1,
                op.lease,
            )
            view.record(WatchEvent(EventType.PUT, kv, prev))
            wrote = True
            pending.append(PutResponse(prev))
        elif isinstance(op, Delete | DeleteRange):
            if isinstance(op, Delete):
                found = view.get(op.key)
                victims: tuple[KeyValue, ...] = (found,) if found else ()
            else:
                victims = view.range(op.prefix, None)[0]
            for prev in victims:
                view.record(_tombstone(prev, new_revision))
                wrote = True
            pending.append(DeleteResponse(len(victims), victims))
        elif isinstance(op, Get):
            pending.append(GetResponse(view.get(op.key)))
        else:
            pending.append(view.range(op.prefix, op.limit))
    final = new_revision if wrote else revision
    responses = tuple(
        RangeResult(p[0], final, p[1]) if isinstance(p, tuple) else p for p in pending
    )
    return TxnResult(succeeded, final, responses)


def revoke_lease_keys(view: TxnView, revision: int, lease_id: int) -> int:
    """Delete the lease's keys in one revision and forget the lease."""
    victims = sorted(view.lease_keys(lease_id), key=lambda kv: kv.key)
    if victims:
        revision += 1
        for prev in victims:
            view.record(_tombstone(prev, revision))
    view.drop_lease(lease_id)
    return revision


def expire_leases(view: TxnView, revision: int) -> int:
    """Revoke every expired lease, one revision per lease that had keys."""
    for lease_id in sorted(view.expired_leases()):
        revision = revoke_lease_keys(view, revision, lease_id)
    return revision


def compacted_error(revision: int, compact_revision: int) -> CompactedError:
    return CompactedError(
        f"revision {revision} was compacted (compact revision is {compact_revision})",
        revision=revision,
        compact_revision=compact_revision,
    )


def check_read_revision(revision: int, current: int, compact_revision: int) -> None:
    if revision > current:
        raise MetastoreError(
            f"revision {revision} is in the future (current revision is {current})",
            revision=revision,
            current=current,
        )
    if revision < compact_revision:
        raise compacted_error(revision, compact_revision)


def state_at(
    current: Iterable[KeyValue], undo: Iterable[tuple[str, KeyValue | None]], limit: int | None
) -> tuple[tuple[KeyValue, ...], bool]:
    """Roll the current state back through ``undo``, oldest change first.

    ``undo`` lists, for each change after the wanted revision, the key and
    its value before that change; the first entry of each key is its state
    at the wanted revision. Backends keep only this undo history (not a full
    copy per revision), which is why a past read costs the changes since.
    """
    state = {kv.key: kv for kv in current}
    seen: set[str] = set()
    for key, prev in undo:
        if key in seen:
            continue
        seen.add(key)
        if prev is None:
            state.pop(key, None)
        else:
            state[key] = prev
    ordered = sorted(state.values(), key=lambda kv: kv.key)
    if limit is not None and len(ordered) > limit:
        return tuple(ordered[:limit]), True
    return tuple(ordered), False


# --------------------------------------------------------------------------- watches


class Watch(ABC):
    """An ordered stream of changes under a prefix, from a start revision on.

    Iterating blocks until the next event and ends when the watch or its
    store is closed. Use :meth:`next` with a timeout to poll instead.
    """

    @abstractmethod
    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; ``None`` on timeout or once the watch is closed.

        Raises :class:`CompactedError` if the history the watch still needs
        was compacted away.
        """

    @abstractmethod
    def close(self) -> None:
        """Stop the watch; a thread blocked in :meth:`next` returns ``None``."""

    @property
    @abstractmethod
    def closed(self) -> bool: ...

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> WatchEvent:
        event = self.next()
        if event is None:
            raise StopIteration
        return event

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class WatchSource(Protocol):
    """The backend side of a :class:`PollingWatch`.

    ``_watch_token`` changes whenever new events may exist; a watch reads it
    *before* polling and then waits for it to change, so no commit between
    the poll and the wait is missed.
    """

    def _watch_poll(
        self, prefix: str, from_revision: int
    ) -> tuple[Sequence[WatchEvent], int, bool]: ...

    def _watch_token(self) -> int: ...

    @property
    def _watch_min_gap(self) -> float:
        """Seconds a watch waits between two reads of the history."""
        ...

    def _watch_wait(self, token: int, timeout: float | None) -> None: ...

    def _watch_wake(self) -> None: ...


class PollingWatch(Watch):
    """A watch that reads the backend's change history in revision order.

    ``_watch_poll(prefix, r)`` returns the events with revision >= ``r`` up
    to some bound, the revision to continue from, and whether history beyond
    that bound already exists. Continuing from the returned revision (not
    the last event's) lets a watch that received nothing still move forward,
    so it is not hit by a later compaction of history it never needed.
    """

    def __init__(self, source: WatchSource, prefix: str, start_revision: int) -> None:
        self._source = source
        self._prefix = prefix
        self._next_revision = start_revision
        self._buffer: deque[WatchEvent] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self._last_poll = 0.0

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def closed(self) -> bool:
        return self._closed

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        wait = check_timeout(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            with self._lock:
                if self._closed:
                    return None
                if self._buffer:
                    return self._buffer.popleft()
                # Coalesce bursts: a writer committing thousands of times a second
                # should cost a watcher one read per gap, not one per commit.
                gap = self._last_poll + self._source._watch_min_gap - time.monotonic()
                if gap > 0:
                    time.sleep(gap)
                token = self._source._watch_token()
                try:
                    events, resume, behind = self._source._watch_poll(
                        self._prefix, self._next_revision
                    )
                except CompactedError:
                    raise
                except MetastoreError:
                    if self._closed:
                        return None
                    raise
                self._last_poll = time.monotonic()
                self._next_revision = max(self._next_revision, resume)
                if events:
                    self._buffer.extend(events)
                    return self._buffer.popleft()
                if behind:
                    continue
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            self._source._watch_wait(token, remaining)

    def close(self) -> None:
        self._closed = True
        self._source._watch_wake()


class WatchRegistry:
    """The open watches of a store, so that closing the store ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: weakref.WeakSet[Watch] = weakref.WeakSet()

    def add(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)

    def active(self) -> int:
        with self._lock:
            return sum(1 for watch in self._watches if not watch.closed)

    def close_all(self) -> None:
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.close()


# --------------------------------------------------------------------------- the interface


class Metastore(ABC):
    """The key-value interface every backend implements.

    Public methods validate their arguments here, once for all backends,
    and delegate to the ``_``-prefixed hooks. All methods are thread-safe.
    """

    # -- hooks for backends

    @abstractmethod
    def _current_revision(self) -> int: ...

    @abstractmethod
    def _current_compact_revision(self) -> int: ...

    @abstractmethod
    def _read_range(self, prefix: str, revision: int | None, limit: int | None) -> RangeResult: ...

    @abstractmethod
    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult: ...

    @abstractmethod
    def _watch(self, prefix: str, from_revision: int | None) -> Watch: ...

    @abstractmethod
    def _grant_lease(self, ttl: float) -> int: ...

    @abstractmethod
    def _keep_alive(self, lease_id: int) -> float: ...

    @abstractmethod
    def _revoke_lease(self, lease_id: int) -> int: ...

    @abstractmethod
    def _lease_ttl(self, lease_id: int) -> float | None: ...

    @abstractmethod
    def _compact(self, revision: int) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Release the store; later calls raise :class:`MetastoreError` and
        open watches end. Closing twice is harmless."""

    # -- public API

    @property
    def revision(self) -> int:
        """The revision of the last write; 0 for an empty store."""
        return self._current_revision()

    @property
    def compact_revision(self) -> int:
        """Reads and watches below this revision raise :class:`CompactedError`."""
        return self._current_compact_revision()

    def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        check_key(key)
        # A key sorts first among the keys it prefixes, so one row decides.
        result = self.range(key, revision=revision, limit=1)
        if result.kvs and result.kvs[0].key == key:
            return result.kvs[0]
        return None

    def range(
        self, prefix: str, *, revision: int | None = None, limit: int | None = None
    ) -> RangeResult:
        """Keys starting with ``prefix`` (all keys for ``""``), sorted.

        With ``revision``, the state as of that revision; the result's
        ``revision`` is then that revision, otherwise the current one.
        """
        check_prefix(prefix)
        if revision is not None:
            check_revision(revision)
        return self._read_range(prefix, revision, check_limit(limit))

    def txn(
        self,
        compares: Iterable[Compare],
        success: Iterable[Op],
        failure: Iterable[Op] = (),
    ) -> TxnResult:
        """If every compare holds run ``success``, else ``failure``, atomically.

        All writes share one new revision. Reads inside the txn see the
        writes of earlier ops of the same txn.
        """
        return self._txn(
            check_compares(compares),
            check_branch(success, "success"),
            check_branch(failure, "failure"),
        )

    def put(self, key: str, value: bytes, lease: int = 0) -> int:
        """Write one key; returns the revision of the write."""
        return self.txn((), (Put(key, value, lease),)).revision

    def delete(self, key: str) -> int:
        """Delete one key; returns the store revision afterwards (unchanged if
        the key did not exist)."""
        return self.txn((), (Delete(key),)).revision

    def watch(self, prefix: str, from_revision: int | None = None) -> Watch:
        """Every change under ``prefix`` with revision >= ``from_revision``.

        Past changes are replayed first, then new ones follow. Without
        ``from_revision`` only changes after the current revision arrive.
        Raises :class:`CompactedError` if ``from_revision`` is below the
        compact revision.
        """
        check_prefix(prefix)
        if from_revision is not None:
            check_revision(from_revision, "from_revision")
        return self._watch(prefix, from_revision)

    def watch_callback(
        self,
        prefix: str,
        from_revision: int | None,
        callback: Callable[[WatchEvent], None],
        *,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> Watch:
        """Deliver events to ``callback`` on a daemon thread until the watch
        returned here is closed.

        An exception from the watch or the callback closes the watch and goes
        to ``on_error`` (or the thread's excepthook when there is none).
        """
        watch = self.watch(prefix, from_revision)

        def run() -> None:
            try:
                for event in watch:
                    callback(event)
            except BaseException as exc:
                watch.close()
                if on_error is None:
                    raise
                on_error(exc)

        threading.Thread(target=run, name=f"metastore-watch:{prefix}", daemon=True).start()
        return watch

    def grant_lease(self, ttl_seconds: float) -> int:
        """A new lease id; keys put with it vanish once it expires."""
        return self._grant_lease(check_ttl(ttl_seconds))

    def keep_alive(self, lease_id: int) -> float:
        """Reset the lease's remaining time to its full ttl (as etcd does) and
        return that ttl. Raises :class:`LeaseNotFoundError` if it is gone."""
        return self._keep_alive(_check_int(lease_id, "lease_id", minimum=1))

    def revoke_lease(self, lease_id: int) -> int:
        """Delete the lease's keys in one revision; returns the store revision."""
        return self._revoke_lease(_check_int(lease_id, "lease_id", minimum=1))

    def lease_ttl(self, lease_id: int) -> float | None:
        """Seconds until the lease expires, or ``None`` if it is gone."""
        return self._lease_ttl(_check_int(lease_id, "lease_id", minimum=1))

    def compact(self, revision: int) -> None:
        """Forget history below ``revision``; the state at it stays readable.

        Compacting to the current compact revision is a no-op; below it
        raises :class:`CompactedError`, beyond the store revision
        :class:`MetastoreError`.
        """
        self._compact(check_revision(revision))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def events_from(events: Sequence[WatchEvent], revision: int) -> int:
    """Index of the first event with revision >= ``revision`` in a sorted list."""
    return bisect.bisect_left(events, revision, key=lambda event: event.kv.mod_revision)

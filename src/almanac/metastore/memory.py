"""In-process metastore: the reference backend for unit tests of upper layers.

All state sits behind one condition variable, which is also what watches
wait on, so a write wakes its watchers without any polling. Lease deadlines
use the monotonic clock: nothing outside this process can see them.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from almanac.errors import MetastoreError
from almanac.metastore.base import (
    Compare,
    KeyValue,
    LeaseNotFoundError,
    Metastore,
    Op,
    PollingWatch,
    RangeResult,
    TxnResult,
    Watch,
    WatchEvent,
    WatchEventKind,
    WatchRegistry,
    apply_txn,
    check_read_revision,
    compacted_error,
    events_from,
    expire_leases,
    revoke_lease_keys,
    state_at,
    watchable_after_compaction,
)
from almanac.metastore.section import WriterSection
from almanac.metastore.watch import ConditionWakeups

__all__ = ["MemoryMetastore"]


@dataclass(slots=True)
class _Lease:
    ttl: float
    expires_at: float


class _MemoryView:
    """The :class:`TxnView` over the store's own dicts (caller holds the lock)."""

    def __init__(self, store: MemoryMetastore, now: float) -> None:
        self._store = store
        self.now = now
        self.changed = False

    def get(self, key: str) -> KeyValue | None:
        return self._store._kvs.get(key)

    def range(self, prefix: str, limit: int | None) -> tuple[tuple[KeyValue, ...], bool]:
        keys = self._store._keys
        kvs = self._store._kvs
        found: list[KeyValue] = []
        for index in range(bisect.bisect_left(keys, prefix), len(keys)):
            key = keys[index]
            if not key.startswith(prefix):
                break
            if limit is not None and len(found) == limit:
                return tuple(found), True
            found.append(kvs[key])
        return tuple(found), False

    def lease_alive(self, lease_id: int) -> bool:
        lease = self._store._leases.get(lease_id)
        return lease is not None and lease.expires_at > self.now

    def lease_keys(self, lease_id: int) -> Sequence[KeyValue]:
        return [kv for kv in self._store._kvs.values() if kv.lease == lease_id]

    def expired_leases(self) -> Sequence[int]:
        return [i for i, lease in self._store._leases.items() if lease.expires_at <= self.now]

    def drop_lease(self, lease_id: int) -> None:
        self._store._leases.pop(lease_id, None)

    def record(self, event: WatchEvent) -> None:
        store = self._store
        key = event.kv.key
        if event.prev_kv is None:
            bisect.insort(store._keys, key)
        if event.type is WatchEventKind.PUT:
            store._kvs[key] = event.kv
        else:
            del store._kvs[key]
            del store._keys[bisect.bisect_left(store._keys, key)]
        store._events.append(event)
        self.changed = True


class MemoryMetastore(ConditionWakeups, Metastore):
    """A thread-safe metastore held in this process's memory.

    History (the events since the compact revision) is kept in one list;
    past reads undo the events after the wanted revision.
    """

    def __init__(
        self,
        *,
        serialize_writers: bool = True,
        clock: Callable[[], float] = time.monotonic,
        max_txn_ops: int | None = None,
    ) -> None:
        """``serialize_writers=False`` makes :meth:`exclusive` exclude nothing,
        like a backend that cannot serialise its writers. ``clock`` (seconds)
        decides when leases expire; tests pass one they move by hand.
        ``max_txn_ops`` imitates etcd's cap on the size of a transaction."""
        self.serializes_writers = serialize_writers
        self.max_txn_ops = max_txn_ops
        self._clock = clock
        self._section = WriterSection("the in-memory metastore")
        self._cond = threading.Condition()
        self._kvs: dict[str, KeyValue] = {}
        self._keys: list[str] = []
        self._events: list[WatchEvent] = []
        self._revision = 0
        self._compact_revision_value = 0
        self._leases: dict[int, _Lease] = {}
        self._next_lease_id = 1
        self._token = 0
        self._closed = False
        self._sweeper: threading.Thread | None = None
        self._watches = WatchRegistry()

    @contextmanager
    def _view(self) -> Iterator[_MemoryView]:
        """Lock, expire due leases, and wake watchers if anything changed."""
        with self._cond:
            if self._closed:
                raise MetastoreError("the metastore is closed")
            view = _MemoryView(self, self._clock())
            try:
                self._revision = expire_leases(view, self._revision)
                yield view
            finally:
                if view.changed:
                    self._token += 1
                    self._cond.notify_all()

    def exclusive(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        if not self.serializes_writers:
            return contextlib.nullcontext()
        return self._section.hold(timeout)

    def _current_revision(self) -> int:
        with self._view():
            return self._revision

    def _current_compact_revision(self) -> int:
        with self._view():
            return self._compact_revision_value

    def _read_range(self, prefix: str, revision: int | None, limit: int | None) -> RangeResult:
        with self._view() as view:
            current = self._revision
            if revision is None or revision == current:
                kvs, more = view.range(prefix, limit)
                return RangeResult(kvs, current, more)
            check_read_revision(revision, current, self._compact_revision_value)
            later = self._events[events_from(self._events, revision + 1) :]
            undo = ((e.kv.key, e.prev_kv) for e in later if e.kv.key.startswith(prefix))
            kvs, more = state_at(view.range(prefix, None)[0], undo, limit)
            return RangeResult(kvs, revision, more)

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        with self._view() as view:
            result = apply_txn(view, self._revision, compares, success, failure)
            self._revision = result.revision
            return result

    def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        with self._view():
            start = self._revision + 1 if from_revision is None else from_revision
            if start < self._compact_revision_value:
                raise compacted_error(start, self._compact_revision_value)
            watch = PollingWatch(self, prefix, start)
            self._watches.add(watch)
            return watch

    def _watch_poll(
        self, prefix: str, from_revision: int
    ) -> tuple[Sequence[WatchEvent], int, bool]:
        with self._view():
            if from_revision < self._compact_revision_value:
                raise compacted_error(from_revision, self._compact_revision_value)
            events = watchable_after_compaction(
                (
                    event
                    for event in self._events[events_from(self._events, from_revision) :]
                    if event.kv.key.startswith(prefix)
                ),
                self._compact_revision_value,
            )
            return events, max(from_revision, self._revision + 1), False

    _watch_min_gap = 0.0

    def _grant_lease(self, ttl: float) -> int:
        with self._view() as view:
            lease_id = self._next_lease_id
            self._next_lease_id += 1
            self._leases[lease_id] = _Lease(ttl, view.now + ttl)
            if self._sweeper is None:
                self._sweeper = threading.Thread(
                    target=self._sweep, name="memory-metastore-lease-sweeper", daemon=True
                )
                self._sweeper.start()
            self._cond.notify_all()
            return lease_id

    def _keep_alive(self, lease_id: int) -> float:
        with self._view() as view:
            lease = self._leases.get(lease_id)
            if lease is None:
                raise LeaseNotFoundError(lease_id)
            lease.expires_at = view.now + lease.ttl
            self._cond.notify_all()
            return lease.ttl

    def _revoke_lease(self, lease_id: int) -> int:
        with self._view() as view:
            if lease_id not in self._leases:
                raise LeaseNotFoundError(lease_id)
            self._revision = revoke_lease_keys(view, self._revision, lease_id)
            return self._revision

    def _lease_ttl(self, lease_id: int) -> float | None:
        with self._view() as view:
            lease = self._leases.get(lease_id)
            return None if lease is None else lease.expires_at - view.now

    def _sweep(self) -> None:
        """Expire leases on time even when nobody calls the store."""
        with self._cond:
            while not self._closed:
                view = _MemoryView(self, self._clock())
                self._revision = expire_leases(view, self._revision)
                if view.changed:
                    self._token += 1
                    self._cond.notify_all()
                deadline = min((lease.expires_at for lease in self._leases.values()), default=None)
                timeout = None if deadline is None else max(deadline - self._clock(), 0.001)
                self._cond.wait(timeout)

    def _compact(self, revision: int) -> None:
        with self._view():
            if revision > self._revision:
                raise MetastoreError(
                    f"cannot compact to revision {revision}: current revision is {self._revision}",
                    revision=revision,
                    current=self._revision,
                )
            if revision < self._compact_revision_value:
                raise compacted_error(revision, self._compact_revision_value)
            del self._events[: events_from(self._events, revision)]
            self._compact_revision_value = revision

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            sweeper = self._sweeper
        self._watches.close_all()
        if sweeper is not None and sweeper is not threading.current_thread():
            sweeper.join()

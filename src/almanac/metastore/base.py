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
  readable and the puts made at ``C`` stay watchable (a delete made at ``C``
  is compacted with the history before it, as etcd drops its tombstone).

The pieces the backends share live beside it: the value types and argument
checks in ``types``, the transaction engine (:func:`apply_txn` over a
:class:`TxnView`, so compare and op semantics are written once) in
``engine``, and the watch iterators in ``watch``. This module re-exports
them so that a backend imports one place.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Self

from almanac.errors import InvalidArgumentError, LeaseNotFoundError
from almanac.metastore.engine import (
    TxnView,
    apply_txn,
    check_branch,
    check_compares,
    check_read_revision,
    compacted_error,
    expire_leases,
    revoke_lease_keys,
    state_at,
    watchable_after_compaction,
)
from almanac.metastore.types import (
    Compare,
    CompareOp,
    CompareTarget,
    Delete,
    DeleteRange,
    DeleteResponse,
    Get,
    GetResponse,
    KeyValue,
    Op,
    Put,
    PutResponse,
    Range,
    RangeResult,
    Response,
    TxnResult,
    WatchEvent,
    WatchEventKind,
    _check_int,
    check_key,
    check_limit,
    check_prefix,
    check_revision,
    check_ttl,
    prefix_end,
)
from almanac.metastore.watch import (
    PollingWatch,
    Watch,
    WatchRegistry,
    WatchSource,
)

__all__ = [
    "Compare",
    "CompareOp",
    "CompareTarget",
    "Delete",
    "DeleteRange",
    "DeleteResponse",
    "WatchEventKind",
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
    "watchable_after_compaction",
]


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

    max_txn_ops: int | None = None
    """The most compares, or ops in one branch, a transaction may carry
    (etcd: 128 by default); None for no limit. Callers that write many keys
    (log truncation) split their work by it."""

    read_only: bool = False
    """True when the store was opened for reading only (a SQLite file on a
    read-only file system): every write raises ``ReadOnlyCatalogError``."""

    serializes_writers: bool = False
    """True when :meth:`exclusive` excludes every other writer that also
    takes it (in this process and, for a shared file, in the others)."""

    def exclusive(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        """A section in which the calling thread is the only writer among
        those that take it; re-entrant per thread. Raises
        :class:`~almanac.errors.WaitTimeoutError` when it is not free within
        ``timeout`` seconds.

        Operations inside it are ordinary operations (a writer that does not
        take the section is not held back): it is a way for cooperating
        writers to stop racing, not a transaction. This default excludes
        nothing (``serializes_writers`` is False): its callers keep
        compare-and-swap loops that tolerate losing races."""
        return contextlib.nullcontext()

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
        checked = (
            check_compares(compares),
            check_branch(success, "success"),
            check_branch(failure, "failure"),
        )
        limit = self.max_txn_ops
        if limit is not None:
            for what, part in zip(("compares", "success ops", "failure ops"), checked, strict=True):
                if len(part) > limit:
                    raise InvalidArgumentError(
                        f"A transaction carries {len(part)} {what}; "
                        f"this metastore allows at most {limit}",
                        count=len(part),
                        limit=limit,
                    )
        return self._txn(*checked)

    def put(self, key: str, value: bytes, lease: int = 0) -> int:
        """Write one key; returns the revision of the write."""
        return self.txn((), (Put(key, value, lease),)).revision

    def delete(self, key: str) -> int:
        """Delete one key; returns the store revision afterwards (unchanged if
        the key did not exist)."""
        return self.txn((), (Delete(key),)).revision

    def watch(self, prefix: str, from_revision: int | None = None) -> Watch:
        """Every change under ``prefix`` with revision >= ``from_revision``.

        Past changes are replayed first, then new ones follow. As in etcd, an
        event at the compact revision comes without ``prev_kv`` (the state
        before it was compacted away). Without
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

"""The transaction engine shared by the backends: compare and op semantics,
lease expiry and past-state rebuild written once over a ``TxnView``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from almanac.errors import CompactedError, LeaseNotFoundError, MetastoreError
from almanac.metastore.types import (
    Compare,
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
    _invalid,
    _tombstone,
)

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
            view.record(WatchEvent(WatchEventKind.PUT, kv, prev))
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


def watchable_after_compaction(
    events: Iterable[WatchEvent], compact_revision: int
) -> list[WatchEvent]:
    """Events as a watch delivers them once history below ``compact_revision``
    is gone, following etcd: compaction keeps, of each key, its newest
    revision at or below the compact revision unless that is a tombstone, so
    a DELETE at the compact revision is gone too; and an event's ``prev_kv``
    is read at the revision before it, so an event at the compact revision
    arrives without it."""
    return [
        WatchEvent(event.type, event.kv, None)
        if event.prev_kv is not None and event.revision <= compact_revision
        else event
        for event in events
        if not (event.type is WatchEventKind.DELETE and event.revision <= compact_revision)
    ]


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

"""Whether a version publishes the data commits it names: the data plane's
check of the entries an ``execute(attach=...)`` returns, against the whole
transaction (``Catalog.set_data_commit_check``).

A version pins each table's data snapshot; pinning one that has no record,
or one the table's pointer does not name once the transaction ran, would
make the table unreadable at that version (and at the latest until its
next commit), reported as expired though nothing was. The committer knows
nothing of the data plane's keys, so the plane checks its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from almanac.data.snapshots import decode_pointer, decode_record, snapshot_key, table_key
from almanac.errors import CatalogError, ConflictError, ValidationError
from almanac.metastore import Compare, Delete, DeleteRange, Metastore, Op, Put
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog_types import HookWork

__all__ = ["check_published"]


def check_published(store: Metastore, work: HookWork) -> list[Compare]:
    """Refuse a version whose data commits its transaction does not
    publish: after ``work.ops`` (or, for a key they leave alone, as
    stored now) each entry's snapshot must have a record naming the
    entry's ``metadata.json``, and the table's pointer must name that
    snapshot. A new snapshot is published by the ops themselves; a
    change that re-names the current one (a ref move, an expiry, new
    metadata) gets back compares that hold it until the transaction. A
    version pinning a snapshot without a record would make the table
    unreadable at it, reported as expired. The catalog's committer calls
    this on the entries an ``execute(attach=...)`` callback returns, with
    the whole transaction's writes: a commit hook's too (an ALTER's
    moves the table's record to a new ``metadata.json``).

    Work planned on a state that changed since (an expiry that read the
    chain before an append landed) fails its own compares: that is a
    ``ConflictError``, as its transaction would have said, so the
    caller plans again."""
    compares: list[Compare] = []
    try:
        for entry in work.entries:
            compares += _check_entry(store, entry, work.ops)
    except ValidationError:
        stale = next((c for c in work.compares if not c.holds(store.get(c.key))), None)
        if stale is None:
            raise
        raise ConflictError(
            "The commit was refused: a condition attached to it no longer holds "
            f"(key '{stale.key}' changed since its data commits were planned)",
            attempts=1,
        ) from None
    return compares


def _check_entry(store: Metastore, entry: TableDataCommitted, ops: Sequence[Op]) -> list[Compare]:
    record_key = snapshot_key(entry.table_id, entry.snapshot_id)
    raw, held = _after(store, ops, record_key)
    if raw is None:
        raise _unpublished(
            entry,
            "its transaction leaves no record of that snapshot (it publishes none, "
            "and none is stored)",
            "data-commit-published",
        )
    try:
        record = decode_record(record_key, raw)
    except CatalogError as exc:
        raise _unpublished(
            entry, f"its record is unreadable ({exc})", "data-commit-record"
        ) from None
    if record.metadata != entry.metadata:
        raise _unpublished(
            entry,
            f"its record names metadata '{record.metadata}', not '{entry.metadata}'",
            "data-commit-metadata",
        )
    pointer_key = table_key(entry.table_id)
    pointer, pointer_held = _after(store, ops, pointer_key)
    try:
        current = None if pointer is None else decode_pointer(pointer_key, pointer)
    except CatalogError as exc:
        raise _unpublished(
            entry, f"the table's pointer is unreadable ({exc})", "data-commit-current"
        ) from None
    if current != entry.snapshot_id:
        now = "no snapshot" if current is None else f"snapshot {current}"
        raise _unpublished(
            entry,
            f"the table's current data after its transaction would be {now}",
            "data-commit-current",
        )
    return [c for c in (held, pointer_held) if c is not None]


def _after(store: Metastore, ops: Sequence[Op], key: str) -> tuple[bytes | None, Compare | None]:
    """The value ``ops`` leave at ``key``, or the stored one when they
    leave it alone, with the compare that holds while it stays so."""
    value: bytes | None = None
    touched = False
    for op in ops:
        if isinstance(op, Put) and op.key == key:
            value, touched = op.value, True
        elif (isinstance(op, Delete) and op.key == key) or (
            isinstance(op, DeleteRange) and key.startswith(op.prefix)
        ):
            value, touched = None, True
    if touched:
        return value, None
    kv = store.get(key)
    if kv is None:
        return None, Compare.absent(key)
    return kv.value, Compare.value(key, "==", kv.value)


def _unpublished(entry: TableDataCommitted, why: str, rule: str) -> ValidationError:
    return ValidationError(
        f"TableDataCommitted of table id {entry.table_id} names data snapshot "
        f"{entry.snapshot_id}, but {why}; a version pins only a snapshot its transaction "
        "leaves recorded and current, so nothing was committed",
        table_id=entry.table_id,
        snapshot_id=entry.snapshot_id,
        rule=rule,
    )

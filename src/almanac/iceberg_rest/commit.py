"""Publishing planned Iceberg commits (``plan``'s ``Change``s). Everything
of one request, for one table or for many (``/v1/transactions/commit``),
is one catalog version: one ``Catalog.execute`` of its catalog commands with
each table's new data snapshot (``TableData.adopt_ops``) or metadata riding
its transaction as a ``TableDataCommitted`` entry. Only a change of the
properties of a table that has no data yet is a bare compare-and-swap (there
is no snapshot to name). A table that moved between the check and the
commit is a 409 ``CommitFailedException``; nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from almanac.data.commits import COMMIT_SECTION_TIMEOUT_S, TableData
from almanac.data.expired import mark
from almanac.data.iceberg_schema import CATALOG_VERSION_PROPERTY
from almanac.data.snapshots import (
    pointer_unchanged,
)
from almanac.data.sweep import Sweep, read_sweep
from almanac.errors import ConflictError
from almanac.iceberg_rest.errors import CommitFailedError, refused
from almanac.iceberg_rest.mapping import (
    check_expressed,
)
from almanac.iceberg_rest.plan import Change
from almanac.metastore import Compare, Op
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import HookWork

__all__ = ["commit"]

_SWEEP_ATTEMPTS = 10


def commit(cat: Catalog, changes: Sequence[Change]) -> None:
    """Publish every change at once, or none (see the module docstring)."""
    seen: set[int] = set()
    for change in changes:
        if change.loaded.table.id in seen:
            raise refused(
                f"Table '{change.full_name}' appears twice in one transaction",
                table=change.full_name,
                rule="transaction-tables",
            )
        seen.add(change.loaded.table.id)
    data = TableData.for_catalog(cat)
    for _ in range(_SWEEP_ATTEMPTS):
        if _commit_once(cat, data, changes):
            return
    raise CommitFailedError(
        "Janitor runs kept starting while "
        + ", ".join(f"'{c.full_name}'" for c in changes)
        + " committed; retry"
    )


def _commit_once(cat: Catalog, data: TableData, changes: Sequence[Change]) -> bool:
    """One try; False when nothing was published because a janitor sweep
    began meanwhile (``almanac.data.sweep``): the new files are checked again."""
    commands = [c for change in changes for c in change.commands]
    leases: list[int] = []
    sweeps: list[Sweep] = []
    adds = any(change.operation is not None for change in changes)

    def attach(base: CatalogVersion, new: CatalogVersion) -> HookWork:
        written: list[str] = []
        compares: list[Compare] = []
        ops: list[Op] = []
        entries: list[TableDataCommitted] = []
        try:
            sweep = None
            if adds:
                sweep = read_sweep(data.store)
                sweeps.append(sweep)
                compares.append(sweep.compare())
            for change in changes:
                more = _publish(data, change, base, new, written, leases, sweep)
                compares += more[0]
                ops += more[1]
                entries += more[2]
        except BaseException:
            data.iceberg.remove(written)
            raise

        def finish(ok: bool) -> None:
            if not ok:
                data.iceberg.remove(written)

        return HookWork(compares, ops, finish, entries)

    try:
        if commands or any(_versioned(change) for change in changes):
            cat.execute(commands, attach=attach)
        else:
            store = cat.metastore
            with store.exclusive(COMMIT_SECTION_TIMEOUT_S):
                version = cat.catalog()
                work = attach(version, version)
                succeeded = False
                try:
                    succeeded = not work.ops or store.txn(work.compares, work.ops).succeeded
                finally:
                    work.finished(succeeded)
                if not succeeded:
                    raise CommitFailedError(
                        "Another commit changed "
                        + ", ".join(f"'{c.full_name}'" for c in changes)
                        + " first; refresh and retry",
                    )
    except ConflictError as exc:
        if sweeps and read_sweep(data.store).revision != sweeps[-1].revision:
            return False
        if isinstance(exc, CommitFailedError):
            raise
        raise CommitFailedError(
            "Another commit changed "
            + ", ".join(f"'{c.full_name}'" for c in changes)
            + f" first; refresh and retry ({exc.message})",
        ) from exc
    finally:
        for lease in leases:
            data.staging.release(lease)
    return True


def _expires(change: Change) -> bool:
    kept = {s.snapshot_id for s in change.wanted.snapshots}
    return any(s.snapshot_id not in kept for s in change.loaded.metadata.snapshots)


def _rewrites(change: Change) -> bool:
    """Whether a change without a new snapshot writes a new metadata.json of
    the current one (its properties, an expiry, or what ``plan`` says)."""
    if change.loaded.record is None or change.commands:
        return False
    return change.properties is not None or change.rewrite or _expires(change)


def _versioned(change: Change) -> bool:
    """Whether the change makes an entry of its own: a new snapshot, or new
    metadata of the current one (a DDL's metadata rides its version)."""
    return change.operation is not None or _rewrites(change)


def _publish(
    data: TableData,
    change: Change,
    base: CatalogVersion,
    new: CatalogVersion,
    written: list[str],
    leases: list[int],
    sweep: Sweep | None,
) -> tuple[list[Compare], list[Op], list[TableDataCommitted]]:
    loaded = change.loaded
    table_id = loaded.table.id
    if change.creates:
        now = new.table(loaded.table.name, loaded.namespace)
        if now is None or now.id != table_id or base.tables_by_id.get(table_id) is not None:
            raise CommitFailedError(
                f"Table '{change.full_name}' would be created with another id than it was "
                "staged for (a concurrent change); stage it again",
                table=change.full_name,
            )
    elif base.tables_by_id.get(table_id) != loaded.table:
        raise CommitFailedError(
            f"Table '{change.full_name}' was changed by another commit; refresh and retry",
            table=change.full_name,
        )
    made = new.tables_by_id.get(table_id)
    if made is None:  # a command of the same request dropped it
        raise refused(f"Table '{change.full_name}' is dropped by its own commit")
    if change.commands:
        check_expressed(change.full_name, made, change.wanted.schema())
    compares: list[Compare] = [Compare.exists(key) for key in change.needs]
    ops: list[Op] = []
    entries: list[TableDataCommitted] = []
    parent = loaded.record
    if change.operation is not None:
        metadata = change.wanted
        if change.commands:
            metadata = metadata.model_copy(
                update={
                    "properties": {
                        **metadata.properties,
                        CATALOG_VERSION_PROPERTY: str(new.version),
                    }
                }
            )
        more = data.adopt_ops(table_id, parent, metadata, operation=change.operation, at=new)
        entries.append(more[3])
        written.append(more[2].metadata)
        assert sweep is not None  # read for every change that adds files
        sweep.check_fresh(
            data.warehouse,
            [*change.added, more[2].metadata],
            f"The commit to table '{change.full_name}'",
        )
        compares += more[0]
        ops += more[1]
    else:
        compares.append(
            pointer_unchanged(data.store, table_id, None if parent is None else parent.snapshot_id)
        )
        if parent is not None and _rewrites(change):
            # The properties (and whatever else ``rewrite`` says, the
            # snapshots left after an expiry included) go into a new
            # metadata.json of the same snapshot, as an ALTER's schema does
            # (a commit answers a new metadata location); the hold keeps the
            # janitor off it.
            hold = data.staging.hold(table_id)
            leases.append(hold.lease)
            location = data.iceberg.write_adopted(
                data.warehouse.table_dir(table_id),
                change.wanted,
                write_id=parent.write_id,
                snapshot_version=parent.catalog_version,
            )
            written.append(location)
            moved = data.repoint(parent, location, hold)
            compares += moved[0]
            ops += moved[1]
            operation = "expire" if _expires(change) else "metadata"
            entries.append(TableDataCommitted(table_id, parent.snapshot_id, operation, location))
    if change.properties is not None:
        compares.append(loaded.properties.unchanged())
        ops.append(loaded.properties.replace(change.properties))
    if change.expired:
        marked = mark(
            data, table_id, change.expired, None if parent is None else parent.snapshot_id
        )
        compares += marked[0]
        ops += marked[1]
    return compares, ops, entries

"""Branches, tags and moves of ``main`` in an Iceberg client's commit.

A table's refs live in the ``metadata.json`` of its data snapshot, so a
commit that creates, moves or removes one, or rolls ``main`` back, is a new
data snapshot (operation ``refs`` when ``main`` stays, ``overwrite`` when it
moves to a snapshot the table had): kept, time-travelled and counted by
retention and the janitor like any other (``IcebergReader.referenced``).

A ref may point only at a snapshot whose files are certain to be there: one
the commit adds, one a branch or tag (``main`` included) points at now, or
one that was ``main`` in a data snapshot the table keeps. The last holds
only while that data snapshot is kept, so the commit requires its record.
Any other snapshot the metadata lists (an intermediate snapshot of a
multi-snapshot commit, an old head of a branch) may have lost its files to
the janitor and is refused.
"""

from __future__ import annotations

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot

from almanac.data.commits import TableData
from almanac.data.iceberg_schema import WRITE_ID_PROPERTY
from almanac.data.snapshots import decode_record, snapshot_key, write_key
from almanac.errors import CatalogError
from almanac.iceberg_rest.errors import refused

__all__ = ["check_refs"]


def check_refs(
    data: TableData, full: str, table_id: int, base: TableMetadata, wanted: TableMetadata
) -> tuple[str, ...]:
    """Refuse refs the catalog cannot keep; return the metastore keys of the
    data-snapshot records whose files the refs of ``wanted`` rely on."""

    def no(what: str, rule: str) -> CatalogError:
        return refused(f"Table '{full}': {what}", table=full, rule=rule)

    main = wanted.refs.get(MAIN_BRANCH)
    if base.current_snapshot_id is not None and main is None:
        raise no("its main branch cannot be removed", "main-ref")
    if main is not None and main.snapshot_ref_type != SnapshotRefType.BRANCH:
        raise no("'main' is its main branch, not a tag", "main-ref")
    if main is None and wanted.refs:
        raise no(
            f"branch or tag '{min(wanted.refs)}' needs a snapshot on the main branch first",
            "main-ref",
        )
    known = {s.snapshot_id for s in base.snapshots}
    held = {r.snapshot_id for r in base.refs.values()}
    if base.current_snapshot_id is not None:
        held.add(base.current_snapshot_id)
    needs: set[str] = set()
    for name, ref in sorted(wanted.refs.items()):
        target = ref.snapshot_id
        if target not in known or target in held:
            continue  # added by this commit, or kept by the table's current refs
        snapshot = base.snapshot_by_id(target)
        key = None if snapshot is None else _kept_record(data, table_id, snapshot)
        if key is None:
            raise no(
                f"ref '{name}' cannot point at snapshot {target}: a ref points at a snapshot "
                "the commit adds, one a branch or tag points at, or one that was the main "
                "branch's in a data snapshot the table keeps (the files of any other may "
                "have been collected)",
                "snapshot-not-kept",
            )
        needs.add(key)
    return tuple(sorted(needs))


def _kept_record(data: TableData, table_id: int, snapshot: Snapshot) -> str | None:
    """The key of the kept record whose ``metadata.json`` has ``snapshot`` as
    its current one (found by the write id Almanac stamps on it), or None."""
    summary = snapshot.summary
    write_id = None if summary is None else summary.additional_properties.get(WRITE_ID_PROPERTY)
    if not write_id:
        return None
    written = data.store.get(write_key(write_id))
    value = b"" if written is None else written.value
    owner, _, number = value.decode("ascii", "replace").partition(".")
    if owner != str(table_id) or not number.isdigit():
        return None
    key = snapshot_key(table_id, int(number))
    kv = data.store.get(key)
    if kv is None:
        return None
    record = decode_record(key, kv.value)
    if data.iceberg.snapshot_id(record.metadata) != snapshot.snapshot_id:
        return None
    return key

"""Serializers of the update entries and of ``VersionedUpdate``, the log record.

An entry that only names an object (``DropTable``, ``StopIndex``, …) is one
svarint; entries that carry a descriptor nest it with its own type id and
version, so a new ``Table`` format never needs a new ``TableCreated`` format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from almanac.model import entries as e
from almanac.model.descriptors import TableProperties
from almanac.serialization.io import Reader, Writer
from almanac.serialization.registry import ENTRY_TYPES, REGISTRY, SerializerInfo
from almanac.serialization.types import (
    read_collations,
    read_column,
    read_index,
    read_index_kind,
    read_partition_spec,
    read_schema,
    read_sort_order,
    read_table,
    read_zone,
)

__all__: list[str] = []

_T = TypeVar("_T")
_R010 = "0.1.0"
_R020 = "0.2.0"
_nested = REGISTRY.write_nested
_read_properties = REGISTRY.nested_reader(TableProperties)


def _register_v1(
    cls: type[_T], read: Callable[[Reader], _T], write: Callable[[Writer, _T], None]
) -> None:
    REGISTRY.register(SerializerInfo(cls, 1, _R010, read, write))


def _register_id_entry_v1(cls: type[Any], field: str) -> None:
    """Entries whose only field is an object id: one svarint."""

    def write(w: Writer, obj: object) -> None:
        w.svarint(getattr(obj, field))

    def read(r: Reader) -> object:
        return cls(**{field: r.svarint()})

    _register_v1(cls, read, write)


def _register_nested_entry_v1(
    cls: type[Any], field: str, read_field: Callable[[Reader], object]
) -> None:
    """Entries whose only field is a descriptor, nested with its own header."""

    def write(w: Writer, obj: object) -> None:
        _nested(w, getattr(obj, field))

    def read(r: Reader) -> object:
        return cls(**{field: read_field(r)})

    _register_v1(cls, read, write)


def _register_renaming_entry_v1(cls: type[Any], field: str) -> None:
    """Entries made of an object id and a new name."""

    def write(w: Writer, obj: Any) -> None:
        w.svarint(getattr(obj, field))
        w.string(obj.name)

    def read(r: Reader) -> object:
        return cls(**{field: r.svarint(), "name": r.string()})

    _register_v1(cls, read, write)


_register_id_entry_v1(e.ObjectIdsReserved, "delta")
_register_nested_entry_v1(e.SchemaCreated, "schema", read_schema)
_register_id_entry_v1(e.SchemaDropped, "schema_id")
_register_nested_entry_v1(e.ZoneCreated, "zone", read_zone)
_register_nested_entry_v1(e.ZoneAltered, "zone", read_zone)
_register_id_entry_v1(e.ZoneDropped, "zone_id")
_register_id_entry_v1(e.DefaultZoneSet, "zone_id")
_register_nested_entry_v1(e.TableCreated, "table", read_table)
_register_id_entry_v1(e.TableDropped, "table_id")
_register_renaming_entry_v1(e.TableRenamed, "table_id")
_register_id_entry_v1(e.TableRecovered, "table_id")
_register_nested_entry_v1(e.IndexCreated, "index", read_index)
_register_renaming_entry_v1(e.IndexRenamed, "index_id")
_register_id_entry_v1(e.IndexBuildStarted, "index_id")
_register_id_entry_v1(e.IndexMadeAvailable, "index_id")
_register_id_entry_v1(e.IndexStopped, "index_id")
_register_id_entry_v1(e.IndexRemoved, "index_id")


def _write_new_columns_v1(w: Writer, obj: e.ColumnsAdded) -> None:
    w.svarint(obj.table_id)
    w.uvarint(len(obj.columns))
    for column in obj.columns:
        _nested(w, column)


def _read_new_columns_v1(r: Reader) -> e.ColumnsAdded:
    return e.ColumnsAdded(
        table_id=r.svarint(),
        columns=tuple([read_column(r) for _ in range(r.count("column", 3))]),
    )


def _write_drop_columns_v1(w: Writer, obj: e.ColumnsDropped) -> None:
    w.svarint(obj.table_id)
    w.strings(obj.names)


def _read_drop_columns_v1(r: Reader) -> e.ColumnsDropped:
    return e.ColumnsDropped(table_id=r.svarint(), names=r.strings())


def _write_alter_column_v1(w: Writer, obj: e.ColumnAltered) -> None:
    w.svarint(obj.table_id)
    _nested(w, obj.column)


def _read_alter_column_v1(r: Reader) -> e.ColumnAltered:
    return e.ColumnAltered(table_id=r.svarint(), column=read_column(r))


def _write_set_table_properties_v1(w: Writer, obj: e.TablePropertiesSet) -> None:
    w.svarint(obj.table_id)
    _nested(w, obj.properties)


def _read_set_table_properties_v1(r: Reader) -> e.TablePropertiesSet:
    return e.TablePropertiesSet(table_id=r.svarint(), properties=_read_properties(r))


def _write_soft_drop_v1(w: Writer, obj: e.TableSoftDropped) -> None:
    w.svarint(obj.table_id)
    w.svarint(obj.dropped_at)
    w.svarint(obj.reserve_ms)


def _read_soft_drop_v1(r: Reader) -> e.TableSoftDropped:
    return e.TableSoftDropped(table_id=r.svarint(), dropped_at=r.svarint(), reserve_ms=r.svarint())


def _write_set_primary_key_v1(w: Writer, obj: e.PrimaryKeySet) -> None:
    w.svarint(obj.table_id)
    w.strings(obj.primary_key)
    w.uvarint(obj.kind._value_)
    w.uvarint(len(obj.collations))
    for collation in obj.collations:
        w.uvarint(collation._value_)
    w.opt_svarint(obj.index_id)


def _read_set_primary_key_v1(r: Reader) -> e.PrimaryKeySet:
    return e.PrimaryKeySet(
        table_id=r.svarint(),
        primary_key=r.strings(),
        kind=read_index_kind(r),
        collations=read_collations(r),
        index_id=r.opt_svarint(),
    )


REGISTRY.register(
    SerializerInfo(e.PrimaryKeySet, 1, "0.4.0", _read_set_primary_key_v1, _write_set_primary_key_v1)
)
_R050 = "0.5.0"


def _write_spec_added_v1(w: Writer, obj: e.PartitionSpecAdded) -> None:
    w.svarint(obj.table_id)
    _nested(w, obj.spec)


def _read_spec_added_v1(r: Reader) -> e.PartitionSpecAdded:
    return e.PartitionSpecAdded(table_id=r.svarint(), spec=read_partition_spec(r))


def _write_default_spec_v1(w: Writer, obj: e.DefaultPartitionSpecSet) -> None:
    w.svarint(obj.table_id)
    w.svarint(obj.spec_id)


def _read_default_spec_v1(r: Reader) -> e.DefaultPartitionSpecSet:
    return e.DefaultPartitionSpecSet(table_id=r.svarint(), spec_id=r.svarint())


def _write_order_added_v1(w: Writer, obj: e.SortOrderAdded) -> None:
    w.svarint(obj.table_id)
    _nested(w, obj.order)


def _read_order_added_v1(r: Reader) -> e.SortOrderAdded:
    return e.SortOrderAdded(table_id=r.svarint(), order=read_sort_order(r))


def _write_default_order_v1(w: Writer, obj: e.DefaultSortOrderSet) -> None:
    w.svarint(obj.table_id)
    w.svarint(obj.order_id)


def _read_default_order_v1(r: Reader) -> e.DefaultSortOrderSet:
    return e.DefaultSortOrderSet(table_id=r.svarint(), order_id=r.svarint())


REGISTRY.register(
    SerializerInfo(e.PartitionSpecAdded, 1, _R050, _read_spec_added_v1, _write_spec_added_v1)
)
REGISTRY.register(
    SerializerInfo(
        e.DefaultPartitionSpecSet, 1, _R050, _read_default_spec_v1, _write_default_spec_v1
    )
)
REGISTRY.register(
    SerializerInfo(e.SortOrderAdded, 1, _R050, _read_order_added_v1, _write_order_added_v1)
)
REGISTRY.register(
    SerializerInfo(e.DefaultSortOrderSet, 1, _R050, _read_default_order_v1, _write_default_order_v1)
)
_register_v1(e.TableSoftDropped, _read_soft_drop_v1, _write_soft_drop_v1)


def _write_table_moved_v1(w: Writer, obj: e.TableMoved) -> None:
    w.svarint(obj.table_id)
    w.svarint(obj.schema_id)
    w.string(obj.name)


def _read_table_moved_v1(r: Reader) -> e.TableMoved:
    return e.TableMoved(table_id=r.svarint(), schema_id=r.svarint(), name=r.string())


REGISTRY.register(
    SerializerInfo(e.TableMoved, 1, "0.6.0", _read_table_moved_v1, _write_table_moved_v1)
)


def _write_data_committed_v1(w: Writer, obj: e.TableDataCommitted) -> None:
    w.svarint(obj.table_id)
    w.svarint(obj.snapshot_id)
    w.string(obj.operation)
    w.string(obj.metadata)
    w.svarints((obj.rows_added, obj.rows_removed, obj.files_added, obj.files_removed))


def _read_data_committed_v1(r: Reader) -> e.TableDataCommitted:
    table_id, snapshot_id, operation, metadata = r.svarint(), r.svarint(), r.string(), r.string()
    start = r.pos
    counts = r.svarints()
    if len(counts) != 4:
        r.fail(f"A data commit holds 4 counts, not {len(counts)}", start)
    return e.TableDataCommitted(table_id, snapshot_id, operation, metadata, *counts)


REGISTRY.register(
    SerializerInfo(
        e.TableDataCommitted, 1, "0.7.0", _read_data_committed_v1, _write_data_committed_v1
    )
)

_register_v1(e.ColumnsAdded, _read_new_columns_v1, _write_new_columns_v1)
_register_v1(e.ColumnsDropped, _read_drop_columns_v1, _write_drop_columns_v1)
_register_v1(e.ColumnAltered, _read_alter_column_v1, _write_alter_column_v1)
_register_v1(e.TablePropertiesSet, _read_set_table_properties_v1, _write_set_table_properties_v1)


# -- VersionedUpdate -----------------------------------------------------------------

_read_entry = REGISTRY.nested_reader_any(ENTRY_TYPES)


def _write_versioned_update_v1(w: Writer, obj: e.VersionedUpdate) -> None:
    w.svarint(obj.version)
    w.svarint(obj.commit_time)
    w.svarint(obj.delay_ms)
    w.uvarint(len(obj.entries))
    for entry in obj.entries:
        _nested(w, entry)


def _read_update_head(r: Reader) -> tuple[int, int, int, tuple[e.UpdateEntry, ...]]:
    """v1's fields in order: version, commit time, delay and entries."""
    return (
        r.svarint(),
        r.svarint(),
        r.svarint(),
        tuple([cast(e.UpdateEntry, _read_entry(r)) for _ in range(r.count("entry", 3))]),
    )


def _read_versioned_update_v1(r: Reader) -> e.VersionedUpdate:
    return e.VersionedUpdate(*_read_update_head(r))


def _write_versioned_update_v2(w: Writer, obj: e.VersionedUpdate) -> None:
    """v1's fields, then who committed it and the request it answered: the
    node name, the request id (a flag, then the id), the digest of the
    request's commands and one applied flag per command."""
    _write_versioned_update_v1(w, obj)
    w.string(obj.node)
    if obj.request_id is None:
        w.boolean(False)
    else:
        w.boolean(True)
        w.string(obj.request_id)
    w.blob(obj.request_digest)
    w.uvarint(len(obj.applied))
    for applied in obj.applied:
        w.boolean(applied)


def _read_versioned_update_v2(r: Reader) -> e.VersionedUpdate:
    # Built once, not as v1's update and a copy: every version a node
    # replays on opening its log comes through here.
    head = _read_update_head(r)
    node = r.string()
    request_id = r.string() if r.boolean() else None
    digest = r.blob()
    applied = tuple([r.boolean() for _ in range(r.count("applied flag", 1))])
    return e.VersionedUpdate(*head, node, request_id, digest, applied)


REGISTRY.register(
    SerializerInfo(
        e.VersionedUpdate, 1, _R010, _read_versioned_update_v1, _write_versioned_update_v1
    ),
    SerializerInfo(
        e.VersionedUpdate, 2, _R020, _read_versioned_update_v2, _write_versioned_update_v2
    ),
)

"""Serializers of the catalog descriptors (schemas, tables, columns, indexes, zones).

Each ``_write_X_vN`` / ``_read_X_vN`` pair is the contract of version N of
type X: once released its layout never changes; a change is a new version
registered next to it. Integer fields are svarints (zigzag, 64-bit), enums
are written by their ``.value`` (a stable id, unlike a name or a position;
read through ``_value_``, the same attribute without the slower property),
and nested descriptors carry their own type id and version.

Readers build each descriptor with keyword arguments, which Python evaluates
left to right: the order of the keywords in a reader is the order of the
fields on the wire, and naming them keeps a reader correct if a descriptor's
fields are ever reordered.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar, cast

from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    Collation,
    Column,
    ConsistencyMode,
    ConstantDefault,
    DefaultValue,
    FunctionDefault,
    Index,
    IndexKind,
    IndexStatus,
    Schema,
    Table,
    TableProperties,
    Zone,
    initial_default_of,
)
from almanac.model.partitioning import PartitionField, PartitionSpec, SortField, SortOrder
from almanac.serialization.io import Reader, Writer
from almanac.serialization.registry import REGISTRY, SerializerInfo
from almanac.serialization.values import read_value, write_value

__all__ = [
    "enum_reader",
    "read_column",
    "read_index",
    "read_partition_spec",
    "read_schema",
    "read_sort_order",
    "read_table",
    "read_zone",
]

_E = TypeVar("_E", bound=enum.Enum)

_nested = REGISTRY.write_nested


def enum_reader(cls: type[_E]) -> Callable[[Reader], _E]:
    """Reads an enum member by its stable ``.value``; an unknown value is corruption."""
    members: dict[object, _E] = {member.value: member for member in cls}
    name = cls.__name__

    def read(r: Reader) -> _E:
        start = r.pos
        value = r.uvarint()
        member = members.get(value)
        if member is None:
            r.fail(f"Unknown {name} value {value}", start)
        return member

    return read


def _enum_tuple_reader(cls: type[_E]) -> Callable[[Reader], tuple[_E, ...]]:
    read_one = enum_reader(cls)

    def read(r: Reader) -> tuple[_E, ...]:
        return tuple([read_one(r) for _ in range(r.count(cls.__name__))])

    return read


def _write_enums(w: Writer, members: tuple[enum.Enum, ...]) -> None:
    w.uvarint(len(members))
    for member in members:
        w.uvarint(member._value_)


_read_column_type = enum_reader(ColumnType)
read_index_kind = enum_reader(IndexKind)
_read_index_status = enum_reader(IndexStatus)
_read_consistency = enum_reader(ConsistencyMode)
read_collations = _enum_tuple_reader(Collation)


# -- defaults -------------------------------------------------------------------


def _write_constant_default_v1(w: Writer, obj: ConstantDefault) -> None:
    write_value(w, obj.value)


def _read_constant_default_v1(r: Reader) -> ConstantDefault:
    return ConstantDefault(read_value(r))


def _write_function_default_v1(w: Writer, obj: FunctionDefault) -> None:
    w.string(obj.name)


def _read_function_default_v1(r: Reader) -> FunctionDefault:
    return FunctionDefault(r.string())


# -- schema ------------------------------------------------------------------------


def _write_schema_v1(w: Writer, obj: Schema) -> None:
    w.svarint(obj.id)
    w.string(obj.name)
    w.svarint(obj.update_version)


def _read_schema_v1(r: Reader) -> Schema:
    return Schema(id=r.svarint(), name=r.string(), update_version=r.svarint())


# -- column ----------------------------------------------------------------------


def _write_column_v1(w: Writer, obj: Column) -> None:
    w.svarint(obj.id)
    w.string(obj.name)
    w.uvarint(obj.type._value_)
    w.boolean(obj.nullable)
    w.opt_svarint(obj.precision)
    w.opt_svarint(obj.scale)
    w.opt_svarint(obj.length)
    if obj.default is None:
        w.append(0)
    else:
        w.append(1)
        _nested(w, obj.default)


_read_default = REGISTRY.nested_reader_any((ConstantDefault, FunctionDefault))


def _read_column_v1(r: Reader) -> Column:
    """v1 has no initial default; it reads as the constant default, which is
    what rows written before the column existed read as when v1 was current.

    That is exact for a column v1 knew from its ADD COLUMN (the entry holds
    the default it was added with) and keeps a v1 checkpoint's old rows reading
    as they did. ``ColumnAltered`` keeps the initial default already in the
    catalog, so a v1 ALTER's guess is never used.
    """
    column = Column(
        id=r.svarint(),
        name=r.string(),
        type=_read_column_type(r),
        nullable=r.boolean(),
        precision=r.opt_svarint(),
        scale=r.opt_svarint(),
        length=r.opt_svarint(),
        default=cast(DefaultValue, _read_default(r)) if r.boolean() else None,
    )
    initial = initial_default_of(column.default)
    return column if initial is None else replace(column, initial_default=initial)


def _write_column_v2(w: Writer, obj: Column) -> None:
    """v1's fields, then the initial default (a flag, then a nested ConstantDefault)."""
    _write_column_v1(w, obj)
    if obj.initial_default is None:
        w.append(0)
    else:
        w.append(1)
        _nested(w, obj.initial_default)


_read_constant_default = REGISTRY.nested_reader(ConstantDefault)


def _read_column_v2(r: Reader) -> Column:
    return Column(
        id=r.svarint(),
        name=r.string(),
        type=_read_column_type(r),
        nullable=r.boolean(),
        precision=r.opt_svarint(),
        scale=r.opt_svarint(),
        length=r.opt_svarint(),
        default=cast(DefaultValue, _read_default(r)) if r.boolean() else None,
        initial_default=_read_constant_default(r) if r.boolean() else None,
    )


def _write_column_v3(w: Writer, obj: Column) -> None:
    """v2's fields, then the doc (a flag, then a string) and the nested
    fields, each a nested Column (at the newest version, so v3 or later)."""
    _write_column_v2(w, obj)
    if obj.doc is None:
        w.append(0)
    else:
        w.append(1)
        w.string(obj.doc)
    w.uvarint(len(obj.fields))
    for field in obj.fields:
        _nested(w, field)


def _read_column_v3(r: Reader) -> Column:
    column = _read_column_v2(r)
    doc = r.string() if r.boolean() else None
    fields = tuple([read_column(r) for _ in range(r.count("nested field", 3))])
    if doc is None and not fields:
        return column
    return replace(column, doc=doc, fields=fields)


# -- table -----------------------------------------------------------------------


def _write_table_properties_v1(w: Writer, obj: TableProperties) -> None:
    w.float64(obj.stale_rows_fraction)
    w.svarint(obj.min_stale_rows)


def _read_table_properties_v1(r: Reader) -> TableProperties:
    return TableProperties(stale_rows_fraction=r.float64(), min_stale_rows=r.svarint())


read_column = REGISTRY.nested_reader(Column)
_read_properties = REGISTRY.nested_reader(TableProperties)


def _write_table_v1(w: Writer, obj: Table) -> None:
    w.svarint(obj.id)
    w.svarint(obj.schema_id)
    w.string(obj.name)
    w.svarint(obj.zone_id)
    w.uvarint(len(obj.columns))
    for column in obj.columns:
        _nested(w, column)
    w.strings(obj.primary_key)
    w.uvarint(obj.primary_key_kind._value_)
    _write_enums(w, obj.primary_key_collations)
    w.strings(obj.colocation)
    w.svarint(_old_pk_index_id(obj))
    w.string(obj.storage_profile)
    w.svarint(obj.table_version)
    _nested(w, obj.properties)
    w.svarint(obj.next_column_id)
    w.svarint(obj.created_version)
    w.svarint(obj.update_version)


def _old_pk_index_id(obj: Table) -> int:
    """Tables before v3 always had a key; a keyless one needs v3."""
    if obj.primary_key_index_id is None:
        raise TypeError(f"Table '{obj.name}' has no primary key, which Table v1 and v2 cannot hold")
    return obj.primary_key_index_id


def _read_table_v1(r: Reader) -> Table:
    return Table(
        id=r.svarint(),
        schema_id=r.svarint(),
        name=r.string(),
        zone_id=r.svarint(),
        columns=tuple([read_column(r) for _ in range(r.count("column", 3))]),
        primary_key=r.strings(),
        primary_key_kind=read_index_kind(r),
        primary_key_collations=read_collations(r),
        colocation=r.strings(),
        primary_key_index_id=r.svarint(),
        storage_profile=r.string(),
        table_version=r.svarint(),
        properties=_read_properties(r),
        next_column_id=r.svarint(),
        created_version=r.svarint(),
        update_version=r.svarint(),
    )


def _write_table_v2(w: Writer, obj: Table) -> None:
    _write_table_v1(w, obj)
    w.opt_svarint(obj.dropped_at)
    w.svarint(obj.reserve_ms)


def _read_table_v2(r: Reader) -> Table:
    table = _read_table_v1(r)
    return replace(table, dropped_at=r.opt_svarint(), reserve_ms=r.svarint())


def _write_table_v3(w: Writer, obj: Table) -> None:
    """v2's fields, except that the primary-key index id may be absent (a
    table without a key), then the layout flag."""
    w.svarint(obj.id)
    w.svarint(obj.schema_id)
    w.string(obj.name)
    w.svarint(obj.zone_id)
    w.uvarint(len(obj.columns))
    for column in obj.columns:
        _nested(w, column)
    w.strings(obj.primary_key)
    w.uvarint(obj.primary_key_kind._value_)
    _write_enums(w, obj.primary_key_collations)
    w.strings(obj.colocation)
    w.opt_svarint(obj.primary_key_index_id)
    w.string(obj.storage_profile)
    w.svarint(obj.table_version)
    _nested(w, obj.properties)
    w.svarint(obj.next_column_id)
    w.svarint(obj.created_version)
    w.svarint(obj.update_version)
    w.opt_svarint(obj.dropped_at)
    w.svarint(obj.reserve_ms)
    w.boolean(obj.bucketed)


def _read_table_v3(r: Reader) -> Table:
    return Table(
        id=r.svarint(),
        schema_id=r.svarint(),
        name=r.string(),
        zone_id=r.svarint(),
        columns=tuple([read_column(r) for _ in range(r.count("column", 3))]),
        primary_key=r.strings(),
        primary_key_kind=read_index_kind(r),
        primary_key_collations=read_collations(r),
        colocation=r.strings(),
        primary_key_index_id=r.opt_svarint(),
        storage_profile=r.string(),
        table_version=r.svarint(),
        properties=_read_properties(r),
        next_column_id=r.svarint(),
        created_version=r.svarint(),
        update_version=r.svarint(),
        dropped_at=r.opt_svarint(),
        reserve_ms=r.svarint(),
        bucketed=r.boolean(),
    )


def _write_table_v4(w: Writer, obj: Table) -> None:
    """v3's fields, then the layout: one flag, 0 for the default one (only
    the unpartitioned spec 0 and the unsorted order 0, last partition id
    1000), which most tables have and which costs no nested object; else 1,
    the partition specs and sort orders (each nested, with its own header),
    the ids of the current ones and the highest partition field id
    assigned."""
    _write_table_v3(w, obj)
    if _default_layout(obj):
        w.append(0)
        return
    w.append(1)
    w.uvarint(len(obj.partition_specs))
    for spec in obj.partition_specs:
        _nested(w, spec)
    w.svarint(obj.default_spec_id)
    w.svarint(obj.last_partition_id)
    w.uvarint(len(obj.sort_orders))
    for order in obj.sort_orders:
        _nested(w, order)
    w.svarint(obj.default_sort_order_id)


_DEFAULT_LAYOUT = Table(0, 0, "", 0, (), (), IndexKind.HASH, (), (), None, "")


def _default_layout(obj: Table) -> bool:
    d = _DEFAULT_LAYOUT
    return (
        obj.partition_specs == d.partition_specs
        and obj.default_spec_id == d.default_spec_id
        and obj.last_partition_id == d.last_partition_id
        and obj.sort_orders == d.sort_orders
        and obj.default_sort_order_id == d.default_sort_order_id
    )


def _read_table_v4(r: Reader) -> Table:
    table = _read_table_v3(r)
    if not r.boolean():
        return table
    return replace(
        table,
        partition_specs=tuple([read_partition_spec(r) for _ in range(r.count("spec", 3))]),
        default_spec_id=r.svarint(),
        last_partition_id=r.svarint(),
        sort_orders=tuple([read_sort_order(r) for _ in range(r.count("sort order", 3))]),
        default_sort_order_id=r.svarint(),
    )


# -- partition specs and sort orders ---------------------------------------------


def _write_partition_spec_v1(w: Writer, obj: PartitionSpec) -> None:
    """The spec id, then per field its source id, field id, name and transform."""
    w.svarint(obj.spec_id)
    w.uvarint(len(obj.fields))
    for f in obj.fields:
        w.svarint(f.source_id)
        w.svarint(f.field_id)
        w.string(f.name)
        w.string(f.transform)


def _read_partition_field(r: Reader) -> PartitionField:
    return PartitionField(
        source_id=r.svarint(), field_id=r.svarint(), name=r.string(), transform=r.string()
    )


def _read_partition_spec_v1(r: Reader) -> PartitionSpec:
    spec_id = r.svarint()
    fields = tuple([_read_partition_field(r) for _ in range(r.count("partition field", 4))])
    return PartitionSpec(spec_id, fields)


def _write_sort_order_v1(w: Writer, obj: SortOrder) -> None:
    """The order id, then per field its source id, transform, direction and null order."""
    w.svarint(obj.order_id)
    w.uvarint(len(obj.fields))
    for f in obj.fields:
        w.svarint(f.source_id)
        w.string(f.transform)
        w.boolean(f.descending)
        w.boolean(f.nulls_first)


def _read_sort_field(r: Reader) -> SortField:
    return SortField(
        source_id=r.svarint(), transform=r.string(), descending=r.boolean(), nulls_first=r.boolean()
    )


def _read_sort_order_v1(r: Reader) -> SortOrder:
    order_id = r.svarint()
    return SortOrder(
        order_id, tuple([_read_sort_field(r) for _ in range(r.count("sort field", 4))])
    )


# -- index -----------------------------------------------------------------------


def _write_index_v1(w: Writer, obj: Index) -> None:
    w.svarint(obj.id)
    w.string(obj.name)
    w.svarint(obj.table_id)
    w.svarint(obj.schema_id)
    w.boolean(obj.unique)
    w.uvarint(obj.kind._value_)
    w.strings(obj.columns)
    _write_enums(w, obj.collations)
    w.uvarint(obj.status._value_)
    w.boolean(obj.primary_key)
    w.svarint(obj.created_version)
    w.svarint(obj.update_version)


def _read_index_v1(r: Reader) -> Index:
    return Index(
        id=r.svarint(),
        name=r.string(),
        table_id=r.svarint(),
        schema_id=r.svarint(),
        unique=r.boolean(),
        kind=read_index_kind(r),
        columns=r.strings(),
        collations=read_collations(r),
        status=_read_index_status(r),
        primary_key=r.boolean(),
        created_version=r.svarint(),
        update_version=r.svarint(),
    )


# -- zone ------------------------------------------------------------------------


def _write_zone_v1(w: Writer, obj: Zone) -> None:
    w.svarint(obj.id)
    w.string(obj.name)
    w.svarint(obj.partitions)
    w.svarint(obj.replicas)
    w.svarint(obj.quorum_size)
    w.svarint(obj.scale_up_seconds)
    w.svarint(obj.scale_down_seconds)
    w.string(obj.node_filter)
    w.strings(obj.storage_profiles)
    w.uvarint(obj.consistency_mode._value_)
    w.svarint(obj.update_version)


def _read_zone_v1(r: Reader) -> Zone:
    return Zone(
        id=r.svarint(),
        name=r.string(),
        partitions=r.svarint(),
        replicas=r.svarint(),
        quorum_size=r.svarint(),
        scale_up_seconds=r.svarint(),
        scale_down_seconds=r.svarint(),
        node_filter=r.string(),
        storage_profiles=r.strings(),
        consistency_mode=_read_consistency(r),
        update_version=r.svarint(),
    )


read_schema = REGISTRY.nested_reader(Schema)
read_partition_spec = REGISTRY.nested_reader(PartitionSpec)
read_sort_order = REGISTRY.nested_reader(SortOrder)
read_table = REGISTRY.nested_reader(Table)
read_index = REGISTRY.nested_reader(Index)
read_zone = REGISTRY.nested_reader(Zone)

_R010 = "0.1.0"
_R020 = "0.2.0"
_R030 = "0.3.0"
"""Soft delete: Table v2."""
_R040 = "0.4.0"
"""Column docs and nested fields: Column v3. Optional primary key and
per-table layout: Table v3, PrimaryKeySet v1."""
_R050 = "0.5.0"
"""Partition specs and sort orders: Table v4, PartitionSpec v1, SortOrder v1
and their entries."""
REGISTRY.register(
    SerializerInfo(ConstantDefault, 1, _R010, _read_constant_default_v1, _write_constant_default_v1)
)
REGISTRY.register(
    SerializerInfo(FunctionDefault, 1, _R010, _read_function_default_v1, _write_function_default_v1)
)
REGISTRY.register(SerializerInfo(Schema, 1, _R010, _read_schema_v1, _write_schema_v1))
REGISTRY.register(
    SerializerInfo(Column, 1, _R010, _read_column_v1, _write_column_v1),
    SerializerInfo(Column, 2, _R020, _read_column_v2, _write_column_v2),
    SerializerInfo(Column, 3, _R040, _read_column_v3, _write_column_v3),
)
REGISTRY.register(
    SerializerInfo(TableProperties, 1, _R010, _read_table_properties_v1, _write_table_properties_v1)
)
REGISTRY.register(
    SerializerInfo(Table, 1, _R010, _read_table_v1, _write_table_v1),
    SerializerInfo(Table, 2, _R030, _read_table_v2, _write_table_v2),
    SerializerInfo(Table, 3, _R040, _read_table_v3, _write_table_v3),
    SerializerInfo(Table, 4, _R050, _read_table_v4, _write_table_v4),
)
REGISTRY.register(
    SerializerInfo(PartitionSpec, 1, _R050, _read_partition_spec_v1, _write_partition_spec_v1)
)
REGISTRY.register(SerializerInfo(SortOrder, 1, _R050, _read_sort_order_v1, _write_sort_order_v1))
REGISTRY.register(SerializerInfo(Index, 1, _R010, _read_index_v1, _write_index_v1))
REGISTRY.register(SerializerInfo(Zone, 1, _R010, _read_zone_v1, _write_zone_v1))

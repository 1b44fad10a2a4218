"""The catalog table as Iceberg sees it: its schema (field ids are column
ids, with initial and write defaults), its ``bucket[N]`` partition spec on
the partition column (the tablet), and the ``CommitShape`` a data commit is
written against.

STRUCT, LIST and MAP columns are Iceberg's nested types, every nested
field's id its column id. Types Iceberg lacks get the nearest wider one (INT8 and INT16 are ``int``,
a STRING length is dropped, UUID is ``string`` because that is how the
Parquet files hold it); the catalog stays the source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, parse_transform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

from almanac import _check as check
from almanac.catalog_version import CatalogVersion
from almanac.data.arrow import column_defaults
from almanac.data.tablets import partition_column, table_partitions
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table
from almanac.errors import DataError

__all__ = [
    "PARTITION_FIELD_ID",
    "TABLET_FIELD",
    "CommitShape",
    "iceberg_schema",
    "iceberg_type",
    "iceberg_layout",
    "identifier_ids",
    "partition_spec",
    "same_spec",
]

TABLET_FIELD = "tablet"
"""Name of the partition field that holds a file's tablet."""
PARTITION_FIELD_ID = 1000
_MAX_ICEBERG_DECIMAL = 38

_SIMPLE: dict[ColumnType, PrimitiveType] = {
    ColumnType.BOOLEAN: BooleanType(),
    ColumnType.INT8: IntegerType(),
    ColumnType.INT16: IntegerType(),
    ColumnType.INT32: IntegerType(),
    ColumnType.INT64: LongType(),
    ColumnType.FLOAT: FloatType(),
    ColumnType.DOUBLE: DoubleType(),
    ColumnType.STRING: StringType(),
    ColumnType.BYTES: BinaryType(),
    ColumnType.DATE: DateType(),
    ColumnType.TIME: TimeType(),
    ColumnType.TIMESTAMP: TimestampType(),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: TimestamptzType(),
    ColumnType.UUID: StringType(),
    ColumnType.TIMESTAMP_NS: TimestampNanoType(),
    ColumnType.TIMESTAMPTZ_NS: TimestamptzNanoType(),
}


def iceberg_type(column: Column) -> IcebergType:
    """The Iceberg type of a column, nested fields with their column ids as
    field ids; ``DataError`` for a DECIMAL wider than Iceberg's 38 digits,
    which no Iceberg reader could read."""
    kind = column.type
    if kind is ColumnType.STRUCT:
        return StructType(*(_field(f) for f in column.fields))
    if kind is ColumnType.LIST:
        (element,) = column.fields
        return ListType(
            element_id=element.id,
            element=iceberg_type(element),
            element_required=not element.nullable,
        )
    if kind is ColumnType.MAP:
        key, value = column.fields
        return MapType(
            key_id=key.id,
            key_type=iceberg_type(key),
            value_id=value.id,
            value_type=iceberg_type(value),
            value_required=not value.nullable,
        )
    if kind is ColumnType.FIXED:
        return FixedType(column.length or 0)
    if column.type is ColumnType.DECIMAL:
        precision = column.precision or _MAX_ICEBERG_DECIMAL + 1
        if precision > _MAX_ICEBERG_DECIMAL:
            raise DataError(
                f"Column '{column.name}' is DECIMAL({column.precision}, {column.scale or 0}); an "
                f"Iceberg table holds decimals of at most {_MAX_ICEBERG_DECIMAL} digits, so this "
                "table cannot hold data",
                column=column.name,
                rule="iceberg-decimal-precision",
            )
        return DecimalType(precision, column.scale or 0)
    return _SIMPLE[column.type]


def iceberg_schema(table: Table, schema_id: int = 0) -> Schema:
    """The table's columns as an Iceberg schema whose field ids are column
    ids and whose identifier fields are its primary key."""
    return Schema(
        *(_field(c) for c in table.columns),
        schema_id=schema_id,
        identifier_field_ids=identifier_ids(table),
    )


def identifier_ids(table: Table) -> list[int]:
    """The primary key's column ids, Iceberg's identifier fields; none when
    a key column is FLOAT or DOUBLE, which Iceberg does not allow there."""
    keys = [c for c in table.columns if c.name in table.primary_key]
    if any(c.type in (ColumnType.FLOAT, ColumnType.DOUBLE) for c in keys):
        return []
    return [c.id for c in keys]


def _field(column: Column) -> NestedField:
    """A column or nested field as an Iceberg field, with its doc, its
    ``initial-default`` (what rows written before it existed read) and
    ``write-default``."""
    initial, write = column_defaults(column)
    defaults: dict[str, Any] = {"initial_default": initial, "write_default": write}
    return NestedField(
        field_id=column.id,
        name=column.name,
        field_type=iceberg_type(column),
        required=not column.nullable,
        doc=column.doc,
        **defaults,
    )


def partition_spec(table: Table, partitions: int, spec_id: int = 0) -> PartitionSpec:
    """``bucket[partitions]`` on the partition column, named ``tablet``, or
    unpartitioned when no colocation column can be bucketed (then the tablet
    is only in the file's path)."""
    column = partition_column(table)
    if column is None:
        return PartitionSpec(spec_id=spec_id)
    field = PartitionField(
        source_id=column.id,
        field_id=PARTITION_FIELD_ID,
        transform=BucketTransform(partitions),
        name=TABLET_FIELD,
    )
    return PartitionSpec(field, spec_id=spec_id)


def iceberg_layout(table: Table, partitions: int) -> dict[str, Any]:
    """The table's partition specs and sort orders as the fields of Iceberg
    table metadata (``partition-specs`` to ``default-sort-order-id``): every
    spec of ``Table.partition_specs`` under its own id, the hidden tablet
    field first when the table is bucketed, and every sort order."""
    tablet = partition_spec(table, partitions).fields
    specs = [
        PartitionSpec(
            *tablet,
            *(
                PartitionField(f.source_id, f.field_id, parse_transform(f.transform), f.name)
                for f in spec.fields
            ),
            spec_id=spec.spec_id,
        )
        for spec in table.partition_specs
    ]
    orders = [
        SortOrder(
            *(
                SortField(
                    source_id=f.source_id,
                    transform=parse_transform(f.transform),
                    direction=SortDirection.DESC if f.descending else SortDirection.ASC,
                    null_order=NullOrder.NULLS_FIRST if f.nulls_first else NullOrder.NULLS_LAST,
                )
                for f in order.fields
            ),
            order_id=order.order_id,
        )
        for order in table.sort_orders
    ]
    fields = any(s.fields for s in specs)
    return {
        "partition-specs": specs,
        "default-spec-id": table.default_spec_id,
        "last-partition-id": table.last_partition_id if fields else PARTITION_FIELD_ID - 1,
        "sort-orders": orders,
        "default-sort-order-id": table.default_sort_order_id,
    }


def same_spec(a: PartitionSpec, b: PartitionSpec) -> bool:
    return [(f.source_id, str(f.transform), f.name) for f in a.fields] == [
        (f.source_id, str(f.transform), f.name) for f in b.fields
    ]


@dataclass(frozen=True, slots=True)
class CommitShape:
    """What a data commit writes against: the catalog table (schema and
    partition column), its tablet count, the catalog version, and that
    version's activation time (a commit is never stamped before it, so a
    read by timestamp never pairs the rows with an older schema)."""

    table: Table
    partitions: int
    catalog_version: int
    activated_at: int = 0

    def __post_init__(self) -> None:
        check.instance(self.table, Table, "Field 'table' of CommitShape")
        check.integer(self.partitions, "Field 'partitions' of CommitShape", lo=1, hi=2**31 - 1)
        check.integer(self.catalog_version, "Field 'catalog_version' of CommitShape", lo=0)
        check.integer(self.activated_at, "Field 'activated_at' of CommitShape", lo=0)

    @staticmethod
    def of(version: CatalogVersion, table: Table) -> CommitShape:
        return CommitShape(
            table, table_partitions(version, table), version.version, version.activation_time
        )

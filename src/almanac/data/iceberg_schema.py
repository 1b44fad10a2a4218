"""The catalog table as Iceberg sees it: its schema (field ids are column
ids, with initial and write defaults), its partition specs and sort orders,
the ``almanac.*`` properties on its metadata and snapshots, and the
``CommitShape`` a data commit is written against.

Iceberg spec ids are the catalog's spec ids. A ``bucketed`` table's specs
each start with the hidden ``tablet`` field (``bucket[N]`` on its partition
column, N its zone's partitions; field id 1000), which the catalog's
``Table.partition_specs`` leaves out: ``spec_fields`` and ``iceberg_specs``
put it back, so every file Almanac ever wrote keeps the spec it names.

STRUCT, LIST and MAP columns are Iceberg's nested types, every nested
field's id its column id. Types Iceberg lacks get the nearest wider one (INT8 and INT16 are ``int``,
a STRING length is dropped, UUID is ``string`` because that is how the
Parquet files hold it; ICEBERG_UUID is ``uuid``); the catalog stays the
source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.partitioning import PartitionField as IcebergPartitionField
from pyiceberg.partitioning import PartitionSpec as IcebergPartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection
from pyiceberg.table.sorting import SortField as IcebergSortField
from pyiceberg.table.sorting import SortOrder as IcebergSortOrder
from pyiceberg.transforms import parse_transform as iceberg_transform
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
    UUIDType,
)

from almanac import _check as check
from almanac.data.arrow import column_defaults
from almanac.data.tablets import partition_column, table_partitions, tablet_column
from almanac.errors import DataError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Column, Table
from almanac.model.partitioning import FIRST_FIELD_ID, PartitionField

__all__ = [
    "CATALOG_VERSION_PROPERTY",
    "PARTITION_FIELD_ID",
    "TABLE_ID_PROPERTY",
    "TABLETS_PROPERTY",
    "TABLET_COLUMN_PROPERTY",
    "TABLET_FIELD",
    "WRITE_ID_PROPERTY",
    "CommitShape",
    "iceberg_schema",
    "iceberg_sort_orders",
    "iceberg_specs",
    "iceberg_type",
    "iceberg_layout",
    "identifier_ids",
    "last_partition_id",
    "layout_properties",
    "partition_fields",
    "partition_spec",
    "same_spec",
    "sort_order",
    "spec_fields",
    "tablet_field",
]

TABLET_FIELD = "tablet"
"""Name of the hidden partition field that holds a bucketed table's tablet."""
PARTITION_FIELD_ID = FIRST_FIELD_ID
"""Field id of the hidden ``tablet`` field."""
TABLETS_PROPERTY = "almanac.tablets"
"""On the table: its zone's partition count, by which a data file that no
``tablet=<t>`` directory places (an Iceberg client's, in an unpartitioned
table) gets the tablet its name hashes to (``file_tablet``)."""
TABLET_COLUMN_PROPERTY = "almanac.tablet-column"
"""On the table: the id of the column whose ``bucket[N]`` (N the tablets
property) is a file's tablet when the file's spec has such a field."""
WRITE_ID_PROPERTY = "almanac.write-id"
CATALOG_VERSION_PROPERTY = "almanac.catalog-version"
"""On a snapshot: the catalog version its rows were written against; on the
table: the catalog version whose schema is the current Iceberg schema."""
TABLE_ID_PROPERTY = "almanac.table-id"
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
    ColumnType.ICEBERG_UUID: UUIDType(),
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


def tablet_field(table: Table, partitions: int) -> PartitionField | None:
    """The hidden ``tablet`` field of a bucketed table (``bucket[partitions]``
    on its partition column), None for any other table or when no
    colocation column can be bucketed (its tablet is then in the path)."""
    column = partition_column(table)
    if column is None:
        return None
    return PartitionField(column.id, PARTITION_FIELD_ID, TABLET_FIELD, f"bucket[{partitions}]")


def spec_fields(table: Table, partitions: int) -> dict[int, tuple[PartitionField, ...]]:
    """Every partition spec of the table by spec id, as Iceberg and the data
    files see it: the hidden tablet field first when bucketed, then the
    spec's own fields. The one place the hidden field is added."""
    hidden = tablet_field(table, partitions)
    first = () if hidden is None else (hidden,)
    return {spec.spec_id: (*first, *spec.fields) for spec in table.partition_specs}


def _iceberg_spec(spec_id: int, fields: tuple[PartitionField, ...]) -> IcebergPartitionSpec:
    return IcebergPartitionSpec(
        *(
            IcebergPartitionField(
                source_id=f.source_id,
                field_id=f.field_id,
                transform=iceberg_transform(f.transform),
                name=f.name,
            )
            for f in fields
        ),
        spec_id=spec_id,
    )


def partition_fields(spec: IcebergPartitionSpec) -> tuple[PartitionField, ...]:
    """An Iceberg spec's fields as the catalog's (what a file written under
    it records values for)."""
    return tuple(
        PartitionField(f.source_id, f.field_id, f.name, str(f.transform)) for f in spec.fields
    )


def iceberg_specs(table: Table, partitions: int) -> list[IcebergPartitionSpec]:
    """Every partition spec of the table as pyiceberg specs (what a
    ``metadata.json`` and a REST ``LoadTableResult`` list), spec ids the
    catalog's, old specs kept since files written under them keep their id."""
    return [_iceberg_spec(i, fields) for i, fields in spec_fields(table, partitions).items()]


def partition_spec(table: Table, partitions: int) -> IcebergPartitionSpec:
    """The spec new files are written under (``default-spec-id``)."""
    return _iceberg_spec(
        table.default_spec_id, spec_fields(table, partitions)[table.default_spec_id]
    )


def last_partition_id(table: Table, partitions: int) -> int:
    """Iceberg's ``last-partition-id``: the highest field id ever assigned,
    999 (Iceberg's value for none) while the table never had a field."""
    ids = [f.field_id for fields in spec_fields(table, partitions).values() for f in fields]
    if not ids and table.last_partition_id <= FIRST_FIELD_ID:
        return FIRST_FIELD_ID - 1
    return max([*ids, table.last_partition_id])


def iceberg_sort_orders(table: Table) -> list[IcebergSortOrder]:
    """Every sort order of the table as pyiceberg orders (order 0, unsorted,
    always among them); ``table.default_sort_order_id`` names the current."""
    return [
        IcebergSortOrder(
            *(
                IcebergSortField(
                    source_id=f.source_id,
                    transform=iceberg_transform(f.transform),
                    direction=SortDirection.DESC if f.descending else SortDirection.ASC,
                    null_order=NullOrder.NULLS_FIRST if f.nulls_first else NullOrder.NULLS_LAST,
                )
                for f in order.fields
            ),
            order_id=order.order_id,
        )
        for order in table.sort_orders
    ]


def sort_order(table: Table) -> IcebergSortOrder:
    """The order Almanac's writers sort new files by (``default-sort-order-id``)."""
    return next(o for o in iceberg_sort_orders(table) if o.order_id == table.default_sort_order_id)


def layout_properties(table: Table, partitions: int) -> dict[str, str]:
    """The table properties by which a data file's tablet follows from its
    Iceberg entry alone (see ``almanac.data.tablets``): the partition count
    and, when the table has one, the column whose bucket is the tablet."""
    properties = {TABLETS_PROPERTY: str(partitions)}
    column = tablet_column(table)
    if column is not None:
        properties[TABLET_COLUMN_PROPERTY] = str(column.id)
    return properties


def iceberg_layout(table: Table, partitions: int) -> dict[str, Any]:
    """The table's partition specs and sort orders as the fields of Iceberg
    table metadata (``partition-specs`` to ``default-sort-order-id``)."""
    return {
        "partition-specs": iceberg_specs(table, partitions),
        "default-spec-id": table.default_spec_id,
        "last-partition-id": last_partition_id(table, partitions),
        "sort-orders": iceberg_sort_orders(table),
        "default-sort-order-id": table.default_sort_order_id,
    }


def same_spec(a: IcebergPartitionSpec, b: IcebergPartitionSpec) -> bool:
    """Whether two specs partition alike (ids and spec ids aside)."""
    return [(f.source_id, str(f.transform), f.name) for f in a.fields] == [
        (f.source_id, str(f.transform), f.name) for f in b.fields
    ]


@dataclass(frozen=True, slots=True)
class CommitShape:
    """What a data commit writes against: the catalog table (schema and
    partition column), its tablet count and the catalog version. (The
    commit is stamped with the version that publishes it, which activates
    after this one.)"""

    table: Table
    partitions: int
    catalog_version: int

    def __post_init__(self) -> None:
        check.instance(self.table, Table, "Field 'table' of CommitShape")
        check.integer(self.partitions, "Field 'partitions' of CommitShape", lo=1, hi=2**31 - 1)
        check.integer(self.catalog_version, "Field 'catalog_version' of CommitShape", lo=0)

    @staticmethod
    def of(version: CatalogVersion, table: Table) -> CommitShape:
        return CommitShape(table, table_partitions(version, table), version.version)

"""Tables the Iceberg REST tests create: a schema the catalog can hold
(an identifier field is the primary key), Arrow batches for it, and rows
read back in one order."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "NAME", StringType(), required=False),
    NestedField(3, "QTY", IntegerType(), required=False),
    identifier_field_ids=[1],
)
"""ID INT64 PRIMARY KEY, NAME STRING, QTY INT32, as a catalog table."""

ARROW = pa.schema(
    [
        pa.field("ID", pa.int64(), nullable=False),
        pa.field("NAME", pa.string()),
        pa.field("QTY", pa.int32()),
    ]
)

Row = tuple[Any, ...]


def batch(rows: list[Row], schema: pa.Schema = ARROW) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)


def ordered(rows: list[Row]) -> list[Row]:
    """Rows sorted with None first, as the Spark tests order them."""
    return sorted(rows, key=lambda row: tuple((v is not None, v) for v in row))


def arrow_rows(data: pa.Table) -> list[Row]:
    return ordered([tuple(r.values()) for r in data.to_pylist()])


def scanned(table: Table) -> list[Row]:
    """Every row of the table's current snapshot, read by pyiceberg itself."""
    return arrow_rows(table.scan().to_arrow())

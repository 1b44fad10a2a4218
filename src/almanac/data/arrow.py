"""Catalog types as Arrow types: schemas with field ids, projection by
field id, and the values that fill a column a file or a write lacks.

UUID columns are Arrow ``string`` in canonical form (lower-case
``8-4-4-4-12``), not ``fixed_size_binary(16)``: Spark has no UUID type and
reads strings natively. ICEBERG_UUID columns (Iceberg's ``uuid``) are
Arrow's ``uuid`` extension type, 16 bytes, as Iceberg clients write them.
DECIMAL(p, s) is ``decimal128`` up to p = 38 and ``decimal256`` above,
capped at Arrow's p = 76. TIMESTAMP types are microseconds (Spark's unit;
TIMESTAMP WITH LOCAL TIME ZONE is UTC); TIME is microseconds whatever its
precision, as Iceberg's ``time`` is (a file holding nanoseconds is
unreadable to Iceberg readers).

Making incoming rows fit a table is ``almanac.data.conform``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from almanac import _check as check
from almanac.errors import NotFoundError, ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Column, ConstantDefault, DefaultValue, FunctionDefault, Table

__all__ = [
    "MAX_DECIMAL256",
    "UUID_PATTERN",
    "check_rows",
    "uuid_text",
    "FIELD_ID",
    "by_field_id",
    "arrow_schema",
    "arrow_type",
    "column_defaults",
    "column_fill",
    "output_schema",
    "project",
]

FIELD_ID = b"PARQUET:field_id"
"""Field metadata key that pyarrow's Parquet writer stores as the field id."""

MAX_DECIMAL128 = 38
MAX_DECIMAL256 = 76
UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)

_FIXED: dict[ColumnType, pa.DataType] = {
    ColumnType.BOOLEAN: pa.bool_(),
    ColumnType.INT8: pa.int8(),
    ColumnType.INT16: pa.int16(),
    ColumnType.INT32: pa.int32(),
    ColumnType.INT64: pa.int64(),
    ColumnType.FLOAT: pa.float32(),
    ColumnType.DOUBLE: pa.float64(),
    ColumnType.STRING: pa.string(),
    ColumnType.BYTES: pa.binary(),
    ColumnType.DATE: pa.date32(),
    ColumnType.TIME: pa.time64("us"),
    ColumnType.TIMESTAMP: pa.timestamp("us"),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: pa.timestamp("us", tz="UTC"),
    ColumnType.UUID: pa.string(),
    ColumnType.ICEBERG_UUID: pa.uuid(),
    ColumnType.TIMESTAMP_NS: pa.timestamp("ns"),
    ColumnType.TIMESTAMPTZ_NS: pa.timestamp("ns", tz="UTC"),
}


def check_rows(value: object, what: str) -> pa.Table | pa.RecordBatch:
    """Rows for a write: a ``pyarrow.Table`` or ``pyarrow.RecordBatch``."""
    if not isinstance(value, pa.Table | pa.RecordBatch):
        raise check.fail(what, "a pyarrow.Table or pyarrow.RecordBatch", value)
    return value


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow type that stores ``column``."""
    check.instance(column, Column, "Parameter 'column' of arrow_type")
    kind = column.type
    if kind is ColumnType.STRUCT:
        return pa.struct([_arrow_field(f) for f in column.fields])
    if kind is ColumnType.LIST:
        return pa.list_(_arrow_field(column.fields[0]))
    if kind is ColumnType.MAP:
        return pa.map_(_arrow_field(column.fields[0]), _arrow_field(column.fields[1]))
    if kind is ColumnType.FIXED:
        return pa.binary(column.length or 0)
    if column.type is ColumnType.DECIMAL:
        precision = column.precision or MAX_DECIMAL256
        scale = column.scale or 0
        if precision <= MAX_DECIMAL128:
            return pa.decimal128(precision, scale)
        return pa.decimal256(min(precision, MAX_DECIMAL256), scale)
    return _FIXED[column.type]


def _arrow_field(column: Column) -> pa.Field:
    return pa.field(
        column.name,
        arrow_type(column),
        column.nullable,
        metadata={FIELD_ID: str(column.id).encode()},
    )


def arrow_schema(table: Table) -> pa.Schema:
    """The table's columns in catalog order with catalog names, nullability
    and their column ids as Parquet field ids (nested fields too)."""
    check.instance(table, Table, "Parameter 'table' of arrow_schema")
    return pa.schema([_arrow_field(c) for c in table.columns])


def project(table: Table, columns: Sequence[str] | None) -> list[Column]:
    """The named columns in catalog order (all when ``columns`` is None);
    ``NotFoundError`` for a name the table does not have."""
    if columns is None:
        return list(table.columns)
    if isinstance(columns, str | bytes) or not isinstance(columns, Sequence):
        raise ValidationError(
            f"Parameter 'columns' of a read of table '{table.name}' must be a sequence of "
            f"column names, got {type(columns).__name__} {columns!r:.80}",
            table=table.name,
        )
    for name in columns:
        check.string(name, f"Column name in parameter 'columns' of a read of table '{table.name}'")
    wanted: set[int] = set()  # column ids: any spelling names a column
    for name in columns:
        column = table.column(name)
        if column is None:
            raise NotFoundError(
                f"Column '{name}' does not exist in table '{table.name}'",
                kind="column",
                table=table.name,
                column=name,
            )
        wanted.add(column.id)
    return [c for c in table.columns if c.id in wanted]


def by_field_id(arr: pa.Array, column: Column) -> pa.Array:
    """A file's values of a nested column in the column's current shape:
    nested fields matched by their field ids, so a field renamed or reordered
    since the file was written is found, one added since reads as its initial
    default or NULL, one dropped is left out, and a widened one is cast.
    Values of other columns are cast as they are."""
    target = arrow_type(column)
    if not column.type.nested:
        return arr if arr.type == target else arr.cast(target)
    if arr.offset:
        arr = pa.concat_arrays([arr])  # offsets and children from 0
    mask = arr.is_null()
    if column.type is ColumnType.STRUCT:
        children = arr.flatten()
        by_id = {_id_of(f): i for i, f in enumerate(arr.type)}
        arrays = [
            by_field_id(children[by_id[f.id]], f)
            if f.id in by_id
            else column_fill(f, len(arr), generate=False)
            for f in column.fields
        ]
        return pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask)
    if column.type is ColumnType.LIST:
        values = by_field_id(arr.values, column.fields[0])
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=mask)
    keys = by_field_id(arr.keys, column.fields[0])
    items = by_field_id(arr.items, column.fields[1])
    return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)


def _id_of(field: pa.Field) -> int | None:
    metadata = field.metadata or {}
    return int(metadata[FIELD_ID]) if FIELD_ID in metadata else None


def output_schema(table: Table, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of batches a read yields: ``arrow_schema`` types, every field
    nullable and without metadata (Spark matches fields on nullability)."""
    check.instance(table, Table, "Parameter 'table' of output_schema")
    return pa.schema([pa.field(c.name, arrow_type(c), True) for c in project(table, columns)])


def column_defaults(column: Column) -> tuple[object, object]:
    """``(initial, write)``: the column's Iceberg ``initial-default`` (what
    rows written before the column existed read as) and ``write-default``
    (what a write without the column stores), as the Python values the
    column stores (a UUID as its text, like the data); ``None`` for none. A
    function default such as ``RAND_UUID`` has no constant: its write value
    is None."""
    check.instance(column, Column, "Parameter 'column' of column_defaults")
    initial = _constant(column, column.initial_default)
    write = _constant(column, column.default)
    return (
        None if initial is None else initial.as_py(),
        None if write is None else write.as_py(),
    )


def _constant(column: Column, default: DefaultValue | None) -> pa.Scalar | None:
    if not isinstance(default, ConstantDefault) or default.value is None:
        return None
    value = default.value
    if isinstance(value, uuid.UUID):
        value = value.bytes if column.type is ColumnType.ICEBERG_UUID else str(value)
    return pa.scalar(value, arrow_type(column))


def column_fill(column: Column, rows: int, *, generate: bool) -> pa.Array:
    """``rows`` values of a column absent from the input. A write
    (``generate``) stores the current default: its constant, or fresh UUIDs
    for ``RAND_UUID``. A read of a file that predates the column gets its
    initial default, which a later SET/DROP DEFAULT never changes, else NULL."""
    default = column.default if generate else column.initial_default
    constant = _constant(column, default)
    if constant is not None:
        return pa.repeat(constant, rows)
    if isinstance(default, FunctionDefault) and generate and default.name == "RAND_UUID":
        raw = np.frombuffer(os.urandom(16 * rows), dtype=np.uint8).reshape(rows, 16).copy()
        raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
        raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
        return uuid_text(raw, None)
    return pa.nulls(rows, arrow_type(column))


def uuid_text(raw: np.ndarray[Any, np.dtype[np.uint8]], valid: pa.Array | None) -> pa.Array:
    """Canonical UUID strings from an (n, 16) byte matrix, vectorized."""
    rows = raw.shape[0]
    chars = np.full((rows, 36), ord("-"), dtype=np.uint8)
    hexed = np.empty((rows, 32), dtype=np.uint8)
    hexed[:, 0::2] = _HEX[raw >> 4]
    hexed[:, 1::2] = _HEX[raw & 0x0F]
    for start, end, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        chars[:, at : at + end - start] = hexed[:, start:end]
    texts = pa.array(chars.reshape(-1).view("S36"), pa.binary(36)).cast(pa.string())
    return texts if valid is None else pc.if_else(valid, texts, pa.nulls(rows, pa.string()))

"""Catalog types as Arrow types, and making incoming rows fit a table.

UUID columns are Arrow ``string`` in canonical form (lower-case
``8-4-4-4-12``), not ``fixed_size_binary(16)``: Spark has no UUID type and
reads strings natively. DECIMAL(p, s) is ``decimal128`` up to p = 38 and
``decimal256`` above, capped at Arrow's p = 76. TIMESTAMP types are
microseconds (Spark's unit; TIMESTAMP WITH LOCAL TIME ZONE is UTC); TIME is
microseconds, nanoseconds above precision 6.
"""

from __future__ import annotations

import decimal
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from almanac import _check as check
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, ConstantDefault, DefaultValue, FunctionDefault, Table
from almanac.errors import DataError, NotFoundError

__all__ = [
    "FIELD_ID",
    "arrow_schema",
    "arrow_type",
    "column_defaults",
    "column_fill",
    "conform",
    "output_schema",
    "project",
]

FIELD_ID = b"PARQUET:field_id"
"""Field metadata key that pyarrow's Parquet writer stores as the field id."""

MAX_DECIMAL128 = 38
MAX_DECIMAL256 = 76
_UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
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
    ColumnType.TIMESTAMP: pa.timestamp("us"),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: pa.timestamp("us", tz="UTC"),
    ColumnType.UUID: pa.string(),
}


def check_rows(value: object, what: str) -> pa.Table | pa.RecordBatch:
    """Rows for a write: a ``pyarrow.Table`` or ``pyarrow.RecordBatch``."""
    if not isinstance(value, pa.Table | pa.RecordBatch):
        raise check.fail(what, "a pyarrow.Table or pyarrow.RecordBatch", value)
    return value


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow type that stores ``column``."""
    check.instance(column, Column, "Parameter 'column' of arrow_type")
    if column.type is ColumnType.DECIMAL:
        precision = column.precision or MAX_DECIMAL256
        scale = column.scale or 0
        if precision <= MAX_DECIMAL128:
            return pa.decimal128(precision, scale)
        return pa.decimal256(min(precision, MAX_DECIMAL256), scale)
    if column.type is ColumnType.TIME:
        return pa.time64("ns" if (column.precision or 0) > 6 else "us")
    return _FIXED[column.type]


def arrow_schema(table: Table) -> pa.Schema:
    """The table's columns in catalog order with catalog names, nullability
    and their column ids as Parquet field ids."""
    check.instance(table, Table, "Parameter 'table' of arrow_schema")
    return pa.schema(
        [
            pa.field(c.name, arrow_type(c), c.nullable, metadata={FIELD_ID: str(c.id).encode()})
            for c in table.columns
        ]
    )


def project(table: Table, columns: Sequence[str] | None) -> list[Column]:
    """The named columns in catalog order (all when ``columns`` is None);
    ``NotFoundError`` for a name the table does not have."""
    if columns is None:
        return list(table.columns)
    wanted = set(columns)
    for name in columns:
        if table.column(name) is None:
            raise NotFoundError(
                f"Column '{name}' does not exist in table '{table.name}'",
                kind="column",
                table=table.name,
                column=name,
            )
    return [c for c in table.columns if c.name in wanted]


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
    value = str(default.value) if isinstance(default.value, uuid.UUID) else default.value
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
        return _uuid_text(raw, None)
    return pa.nulls(rows, arrow_type(column))


def _uuid_text(raw: np.ndarray[Any, np.dtype[np.uint8]], valid: pa.Array | None) -> pa.Array:
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


# --------------------------------------------------------------------------- conform


def _fail(table: Table, column: Column, what: str) -> DataError:
    return DataError(
        f"Column '{column.name}' of table '{table.name}' {what}",
        table=table.name,
        column=column.name,
    )


def _roundtrip(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | None:
    """``arr`` cast to ``target`` if casting back gives the same values."""
    out = pc.cast(arr, target, safe=True)
    back = pc.cast(out, arr.type, safe=False)
    same = pc.or_kleene(pc.equal(back, arr), pc.and_(pc.is_nan(back), pc.is_nan(arr)))
    return out if pc.all(pc.fill_null(same, True)).as_py() else None


def _cast_numeric(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | None:
    src = arr.type
    if pa.types.is_floating(src) and (pa.types.is_floating(target) or pa.types.is_decimal(target)):
        if pa.types.is_decimal(target):
            # Arrow rounds floats into decimals silently; only exact values pass.
            return _roundtrip(arr, target)
        return _roundtrip(arr, target) if target.bit_width < src.bit_width else arr.cast(target)
    if pa.types.is_integer(src) and pa.types.is_decimal(target):
        # int64 -> decimal(10, 2) is refused statically; go through a wide decimal.
        wide = pc.cast(arr, pa.decimal256(MAX_DECIMAL256, target.scale), safe=True)
        return pc.cast(wide, target, safe=True)
    return pc.cast(arr, target, safe=True)


def _cast_uuid(arr: pa.ChunkedArray) -> pa.ChunkedArray | None:
    src = arr.type
    if isinstance(src, pa.ExtensionType):
        arr = pa.chunked_array([c.storage for c in arr.chunks], src.storage_type)
        src = src.storage_type
    if pa.types.is_fixed_size_binary(src) and src.byte_width == 16:
        flat = arr.combine_chunks()
        raw = np.frombuffer(flat.buffers()[1], dtype=np.uint8)
        raw = raw[flat.offset * 16 : (flat.offset + len(flat)) * 16].reshape(len(flat), 16)
        return pa.chunked_array([_uuid_text(raw, pc.is_valid(flat))])
    if pa.types.is_string(src) or pa.types.is_large_string(src) or pa.types.is_string_view(src):
        return pc.utf8_lower(arr.cast(pa.string()))
    return None


_Kind = Callable[[pa.DataType], bool]
_SOURCES: dict[ColumnType, tuple[_Kind, ...]] = {
    ColumnType.BOOLEAN: (pa.types.is_boolean,),
    ColumnType.FLOAT: (pa.types.is_integer, pa.types.is_floating),
    ColumnType.DOUBLE: (pa.types.is_integer, pa.types.is_floating),
    ColumnType.DECIMAL: (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal),
    ColumnType.STRING: (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view),
    ColumnType.BYTES: (
        pa.types.is_binary,
        pa.types.is_large_binary,
        pa.types.is_binary_view,
        pa.types.is_fixed_size_binary,
    ),
    ColumnType.DATE: (pa.types.is_date,),
    ColumnType.TIME: (pa.types.is_time,),
    ColumnType.TIMESTAMP: (lambda t: pa.types.is_timestamp(t) and t.tz is None,),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: (pa.types.is_timestamp,),
}
for _int in (ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64):
    _SOURCES[_int] = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)


def _cast(arr: pa.ChunkedArray, column: Column, table: Table) -> pa.ChunkedArray:
    target = arrow_type(column)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if arr.type == target and column.type is not ColumnType.UUID:
        return arr
    if pa.types.is_null(arr.type):
        return pa.chunked_array([pa.nulls(len(arr), target)])
    out: pa.ChunkedArray | None = None
    try:
        if column.type is ColumnType.UUID:
            out = _cast_uuid(arr)
        elif any(kind(arr.type) for kind in _SOURCES[column.type]):
            out = _cast_numeric(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, decimal.InvalidOperation) as exc:
        raise _fail(
            table, column, f"cannot store its {arr.type} values as {target} without loss: {exc}"
        ) from exc
    if out is None:
        raise _fail(
            table,
            column,
            f"has type {column.type.sql_name} ({target}); values of type {arr.type} cannot be "
            "stored in it without loss",
        )
    return out


def _check_values(arr: pa.ChunkedArray, column: Column, table: Table) -> None:
    if column.type is ColumnType.UUID:
        bad = pc.invert(pc.match_substring_regex(arr, _UUID_PATTERN))
        if pc.any(pc.fill_null(bad, False)).as_py():
            first = arr.filter(pc.fill_null(bad, False))[0].as_py()
            raise _fail(table, column, f"has type UUID; {first!r} is not a UUID")
    if column.length is not None and column.type in (ColumnType.STRING, ColumnType.BYTES):
        lengths = pc.utf8_length(arr) if column.type is ColumnType.STRING else pc.binary_length(arr)
        longest = pc.max(lengths).as_py()
        if longest is not None and longest > column.length:
            raise _fail(
                table,
                column,
                f"allows at most {column.length} "
                f"{'characters' if column.type is ColumnType.STRING else 'bytes'}; "
                f"a value has {longest}",
            )
    if not column.nullable and arr.null_count:
        raise _fail(table, column, f"is NOT NULL; the data has {arr.null_count} NULL value(s)")


def conform(data: pa.Table | pa.RecordBatch, table: Table) -> pa.Table:
    """Rows as ``arrow_schema(table)``: columns matched by exact catalog name,
    reordered, cast without loss; a missing column gets its constant default
    (or a fresh UUID per row for ``RAND_UUID``) or NULL. Raises ``DataError``
    naming the column and table for an unknown or duplicate column, a missing
    NOT NULL column without default, a lossy or impossible cast, a value longer
    than the column's length, a malformed UUID, or a NULL in a NOT NULL column."""
    check.instance(table, Table, "Parameter 'table' of conform")
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise DataError(
            f"Data for table '{table.name}' must be a pyarrow Table or RecordBatch, "
            f"not {type(data).__name__}",
            table=table.name,
        )
    names = data.column_names
    for name in names:
        if names.count(name) > 1:
            raise DataError(
                f"Column '{name}' appears more than once in the data for table '{table.name}'",
                table=table.name,
                column=name,
            )
        if table.column(name) is None:
            raise DataError(
                f"Column '{name}' of the data is not a column of table '{table.name}' "
                f"(its columns: {', '.join(c.name for c in table.columns)})",
                table=table.name,
                column=name,
            )
    arrays: list[pa.ChunkedArray | pa.Array] = []
    for column in table.columns:
        if column.name in names:
            arr = _cast(data.column(column.name), column, table)
        else:
            if not column.nullable and column.default is None:
                raise _fail(table, column, "is NOT NULL and has no default, but the data lacks it")
            arr = pa.chunked_array([column_fill(column, data.num_rows, generate=True)])
        _check_values(arr, column, table)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=arrow_schema(table))

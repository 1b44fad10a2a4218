"""Iceberg partition transforms over a table's rows and over single values.

Almanac's writers split rows by the values of the default spec's fields
(``transform_values``), and the planner compares a predicate's value,
transformed the same way (``transform_value``), with the partition values a
file's manifest entry records. Both compute with pyiceberg's transforms,
so a value lands in the partition every Iceberg engine would put it in.

Partition values are kept in Iceberg's own representation, the one its
manifests hold: a date as days since 1970-01-01, a time as microseconds
of the day, a timestamp as microseconds (nanoseconds for the ``_ns``
types) since the epoch, a UUID column's value as its text (the column is an
Iceberg ``string``, see ``iceberg_schema``); ``year``/``month``/``day``/
``hour`` give counts since the epoch, ``bucket`` the bucket number and
``truncate`` a value of the source's type.

A partition or sort field may name a column inside STRUCT columns (by its
id); one inside a LIST or MAP has no single value per row and is refused.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.transforms import Transform
from pyiceberg.transforms import parse_transform as iceberg_transform

from almanac.data.iceberg_schema import iceberg_type
from almanac.data.tablets import iceberg_hash_values
from almanac.errors import DataError, ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Column, Table
from almanac.model.partitioning import PartitionField

__all__ = [
    "UNKNOWN",
    "internal_value",
    "partition_keys",
    "single_partition",
    "source_column",
    "source_values",
    "transform_value",
    "transform_values",
]

UNKNOWN = object()
"""What ``transform_value`` gives for a value it cannot place (another
type than the column's): a partition value then proves nothing."""

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DAY = dt.date(1970, 1, 1)
_NANOS = frozenset({ColumnType.TIMESTAMP_NS, ColumnType.TIMESTAMPTZ_NS})
_SMALL_INTS = frozenset({ColumnType.INT8, ColumnType.INT16})


@functools.lru_cache(maxsize=256)
def _transform(transform: str) -> Transform[Any, Any]:
    return iceberg_transform(transform)


def source_column(table: Table, source_id: int) -> tuple[tuple[str, ...], Column]:
    """The column with id ``source_id`` and the names leading to it from
    the table (through STRUCT columns only); ``ValidationError`` when the
    table has no such column or it sits in a LIST or MAP."""

    def walk(
        columns: tuple[Column, ...], path: tuple[str, ...]
    ) -> tuple[tuple[str, ...], Column] | None:
        for column in columns:
            if column.id == source_id:
                return (*path, column.name), column
            if column.type is ColumnType.STRUCT:
                found = walk(column.fields, (*path, column.name))
                if found is not None:
                    return found
        return None

    found = walk(table.columns, ())
    if found is None:
        raise ValidationError(
            f"Table '{table.name}' has no column with id {source_id} outside a LIST or MAP, "
            "which its partition spec or sort order names",
            table=table.name,
            source_id=source_id,
            rule="partition-source",
        )
    return found


def source_values(table: Table, data: pa.Table, source_id: int) -> tuple[Column, pa.Array]:
    """The values of the column ``source_id`` names in rows of the table's
    write schema (a STRUCT's field of a NULL struct is NULL)."""
    path, column = source_column(table, source_id)
    values: pa.Array = data.column(path[0]).combine_chunks()
    for name in path[1:]:
        values = pc.struct_field(values, name)
    return column, values


def _internal_array(column: Column, values: pa.Array) -> pa.Array:
    """Dates, times and timestamps as the integers Iceberg stores them as."""
    kind = values.type
    if pa.types.is_date32(kind):
        return values.cast(pa.int32())
    if pa.types.is_time(kind) or pa.types.is_timestamp(kind):
        return values.cast(pa.int64())
    return values


def transform_values(transform: str, column: Column, values: pa.Array) -> pa.Array:
    """``transform`` of every value of ``column`` (rows as the table's write
    schema holds them), in Iceberg's representation (see the module);
    ``DataError`` naming the column when Iceberg cannot compute it."""
    if transform == "identity":
        return _internal_array(column, values)
    source = values.cast(pa.int32()) if column.type in _SMALL_INTS else values
    try:
        return _transform(transform).pyarrow_transform(iceberg_type(column))(source)
    except Exception as exc:  # pyiceberg_core's errors have no common base
        raise DataError(
            f"Column '{column.name}' cannot be partitioned or sorted by {transform}: {exc}",
            column=column.name,
            transform=transform,
        ) from exc


def internal_value(value: object) -> object:
    """A partition value read back from a manifest (or computed by Arrow) in
    Iceberg's representation: dates, times and timestamps as integers."""
    if isinstance(value, dt.datetime):
        delta = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - _EPOCH_DAY).days
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + (
            value.microsecond
        )
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _operand(column: Column, value: object) -> object:
    """A predicate's value in the column's Iceberg representation, or
    ``UNKNOWN`` when it is not a value of the column's type."""
    kind = column.type
    if kind in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_NS):
        ok = isinstance(value, dt.datetime) and value.tzinfo is None
    elif kind in (ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE, ColumnType.TIMESTAMPTZ_NS):
        ok = isinstance(value, dt.datetime) and value.tzinfo is not None
    elif kind is ColumnType.DATE:
        ok = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    elif kind is ColumnType.TIME:
        ok = isinstance(value, dt.time)
    elif kind in (*_SMALL_INTS, ColumnType.INT32, ColumnType.INT64):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is ColumnType.UUID:
        ok = isinstance(value, str | uuid.UUID)
    elif kind is ColumnType.STRING:
        ok = isinstance(value, str)
    elif kind in (ColumnType.BYTES, ColumnType.FIXED):
        ok = isinstance(value, bytes)
    elif kind is ColumnType.BOOLEAN:
        ok = isinstance(value, bool)
    elif kind in (ColumnType.FLOAT, ColumnType.DOUBLE):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind is ColumnType.DECIMAL:
        return _decimal(column, value)
    else:
        ok = False
    if not ok:
        return UNKNOWN
    internal = internal_value(value)
    if kind in _NANOS and isinstance(internal, int):
        internal *= 1000
    return internal


def _decimal(column: Column, value: object) -> object:
    """A decimal at the column's scale (Iceberg hashes and truncates the
    unscaled value), ``UNKNOWN`` when it has more digits than the scale."""
    if isinstance(value, bool) or not isinstance(value, int | decimal.Decimal):
        return UNKNOWN
    exact = decimal.Decimal(value)
    if not exact.is_finite():
        return UNKNOWN
    try:
        scaled = exact.quantize(decimal.Decimal(1).scaleb(-(column.scale or 0)))
    except decimal.InvalidOperation:
        return UNKNOWN
    return scaled if scaled == exact else UNKNOWN


def transform_value(transform: str, column: Column, value: object) -> object:
    """``transform`` of one value of ``column`` (a predicate's operand, as
    a Python value of the column's type), in Iceberg's representation;
    ``UNKNOWN`` when it is no value of that type or Iceberg cannot
    transform it."""
    operand = _operand(column, value)
    if operand is UNKNOWN or transform == "identity":
        return operand
    try:
        return _transform(transform).transform(iceberg_type(column))(operand)
    except Exception:
        return UNKNOWN


_NULL_HASH = np.int64(0x5BD1E995)
_MIX = np.int64(1_000_003)


def _hash_part(values: pa.Array) -> np.ndarray[Any, np.dtype[np.int64]]:
    """A 32-bit hash per partition value (a NULL has its own); booleans and
    floats hash as integers and IEEE bits, which the bucket hash refuses."""
    kind = values.type
    if pa.types.is_boolean(kind):
        values = values.cast(pa.int64())
    elif pa.types.is_floating(kind):
        values = pa.array(
            np.asarray(pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy()).view(np.int64)
        )
    hashed = iceberg_hash_values(values).astype(np.int64)
    valid = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)
    return np.where(valid, hashed, _NULL_HASH)


def partition_keys(
    table: Table, fields: Sequence[PartitionField], rows: pa.Table
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Per row, a 64-bit key of its values for ``fields``: equal for rows of
    one partition, so an engine that cannot compute Iceberg's transforms
    itself (Spark's writer) can split rows by it. Rows of two partitions
    may share a key only by a hash collision, which ``single_partition``
    then catches."""
    key = np.zeros(rows.num_rows, dtype=np.int64)
    with np.errstate(over="ignore"):
        for f in fields:
            column, values = source_values(table, rows, f.source_id)
            key = key * _MIX + _hash_part(transform_values(f.transform, column, values))
    return key


def single_partition(
    table: Table, fields: Sequence[PartitionField], rows: pa.Table
) -> tuple[object, ...] | None:
    """The values for ``fields`` that every row shares, None when the rows
    span more than one partition."""
    out: list[object] = []
    for f in fields:
        column, values = source_values(table, rows, f.source_id)
        distinct = pc.unique(transform_values(f.transform, column, values))
        if len(distinct) != 1:
            return None
        out.append(internal_value(distinct[0].as_py()))
    return tuple(out)

"""Which tablet a row belongs to: a hash of its colocation columns modulo the
zone's partitions.

The hash is computed here with numpy from the values' logical form (every
integer width as int64, floats as float64, timestamps as UTC microseconds,
times as nanoseconds, text and decimals as UTF-8 bytes), never with Python's
per-process ``hash()`` nor a library's internal hash, so every process on
every machine, and every table colocated on the same key values, puts the
same key in the same tablet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from almanac import _check as check
from almanac.catalog_version import CatalogVersion
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table
from almanac.errors import CatalogError, DataError, ValidationError

__all__ = ["hash_columns", "partition_column", "table_partitions", "tablets_of"]

_U64 = np.dtype(np.uint64)
U64Array = np.ndarray[Any, np.dtype[np.uint64]]
I32Array = np.ndarray[Any, np.dtype[np.int32]]

_NULL_HASH = np.uint64(0x6E756C6C)
_BYTE_BASE = np.uint64(0x100000001B3)  # FNV prime: odd, so powers never vanish mod 2**64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_WINDOW_BYTES = 1 << 22


def _mix(z: U64Array) -> U64Array:
    """splitmix64's finalizer: every input bit flips about half the output bits."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _window_hash(data: np.ndarray[Any, Any], offsets: np.ndarray[Any, Any]) -> U64Array:
    """Hash of each value between consecutive ``offsets`` into ``data``."""
    base = int(offsets[0])
    starts = offsets[:-1] - base
    lengths = np.diff(offsets)
    total = int(offsets[-1]) - base
    rel = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
    powers = np.ones(int(lengths.max()) + 1, dtype=_U64)
    powers[1:] = np.cumprod(np.full(len(powers) - 1, _BYTE_BASE, dtype=_U64), dtype=_U64)
    terms = (data[base : base + total].astype(_U64) + np.uint64(1)) * powers[rel]
    sums = np.concatenate([np.zeros(1, dtype=_U64), np.cumsum(terms, dtype=_U64)])
    row = sums[starts + lengths] - sums[starts]
    return _mix(row ^ (lengths.astype(_U64) * _GOLDEN))


def _bytes_hash(arr: pa.Array) -> U64Array:
    """A polynomial hash of each value's bytes (mod 2**64), mixed with its
    length; computed over windows of about ``_WINDOW_BYTES`` so that the
    temporary arrays stay small whatever the batch size."""
    flat = arr.cast(pa.large_binary())
    buffers = flat.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[flat.offset : flat.offset + len(flat) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0)
    out = np.empty(len(flat), dtype=_U64)
    first = 0
    while first < len(flat):
        limit = np.searchsorted(offsets, offsets[first] + _WINDOW_BYTES, side="right") - 1
        last = min(max(first + 1, int(limit)), len(flat))
        out[first:last] = _window_hash(data, offsets[first : last + 1])
        first = last
    return out


def _numbers(arr: pa.Array) -> U64Array:
    """Fixed-width values as 64-bit patterns of their logical value."""
    kind = arr.type
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind):
        target = pa.uint64() if kind == pa.uint64() else pa.int64()
        values = pc.fill_null(arr.cast(target), 0)
    elif pa.types.is_floating(kind):
        floats = pc.fill_null(arr.cast(pa.float64()), 0.0)
        floats = pc.if_else(pc.is_nan(floats), float("nan"), pc.add(floats, 0.0))  # -0.0 -> 0.0
        return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64).view(_U64)
    elif pa.types.is_date(kind):
        values = pc.fill_null(arr.cast(pa.date32()).cast(pa.int32()).cast(pa.int64()), 0)
    elif pa.types.is_time(kind):
        values = pc.fill_null(arr.cast(pa.time64("ns")).cast(pa.int64()), 0)
    elif pa.types.is_timestamp(kind):
        values = pc.fill_null(arr.cast(pa.timestamp("us", tz=kind.tz)).cast(pa.int64()), 0)
    else:
        raise TypeError(str(kind))
    return np.asarray(values.to_numpy(zero_copy_only=False)).astype(np.int64).view(_U64)


def _column_hash(arr: pa.Array) -> U64Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    kind = arr.type
    if pa.types.is_decimal(kind):
        arr = arr.cast(pa.string())
        kind = arr.type
    if pa.types.is_null(kind):
        return np.full(len(arr), _NULL_HASH, dtype=_U64)
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_string_view(kind)
        or pa.types.is_binary_view(kind)
    ):
        hashed = _bytes_hash(arr)
    else:
        hashed = _mix(_numbers(arr))
    if arr.null_count:
        nulls = np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), dtype=bool)
        hashed[nulls] = _NULL_HASH
    return hashed


def hash_columns(data: pa.Table, columns: Sequence[str]) -> U64Array:
    """A stable 64-bit hash per row of the named columns' values."""
    acc = np.zeros(data.num_rows, dtype=_U64)
    for name in columns:
        if name not in data.column_names:
            raise DataError(f"Colocation column '{name}' is missing from the data", column=name)
        try:
            column = _column_hash(data.column(name).combine_chunks())
        except (TypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise DataError(
                f"Colocation column '{name}' of type {data.column(name).type} cannot be "
                f"hashed: {exc}",
                column=name,
            ) from exc
        acc = _mix(acc * _GOLDEN + column)
    return acc


def tablets_of(data: pa.Table, colocation: Sequence[str], partitions: int) -> I32Array:
    """The tablet (0 <= t < partitions) of every row, from the colocation columns."""
    check.instance(data, pa.Table, "Parameter 'data' of tablets_of", "a pyarrow.Table")
    check.sequence_of(colocation, "Parameter 'colocation' of tablets_of", check.string)
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ValidationError(
            f"Partitions must be a positive integer, got {partitions!r}", partitions=partitions
        )
    if not colocation:
        raise ValidationError("Colocation columns must not be empty")
    hashed = hash_columns(data, colocation)
    return (hashed % np.uint64(partitions)).astype(np.int32)


def table_partitions(snapshot: CatalogVersion, table: Table) -> int:
    """The partition count of the table's zone in that catalog version."""
    check.instance(snapshot, CatalogVersion, "Parameter 'snapshot' of table_partitions")
    check.instance(table, Table, "Parameter 'table' of table_partitions")
    zone = snapshot.zone_by_id(table.zone_id)
    if zone is None:
        raise CatalogError(
            f"Zone {table.zone_id} of table '{table.name}' does not exist in catalog version "
            f"{snapshot.version}",
            table=table.name,
        )
    return zone.partitions


_UNBUCKETABLE = frozenset({ColumnType.BOOLEAN, ColumnType.FLOAT, ColumnType.DOUBLE})


def partition_column(table: Table) -> Column | None:
    """The column whose Iceberg bucket is a row's tablet: the first
    colocation column of a type Iceberg can bucket, None if there is none."""
    for name in table.colocation:
        column = table.column(name)
        if column is not None and column.type not in _UNBUCKETABLE:
            return column
    return None

"""Which tablet a row belongs to: the Iceberg ``bucket[N]`` of the table's
partition column, N being the zone's partitions.

Tablets are the buckets of the table's Iceberg partition spec, so the bucket
is computed exactly as the Iceberg spec defines it (murmur3_x86_32, seed 0,
over the spec's single-value serialization; ``(hash & 0x7FFFFFFF) % N``) and
any Iceberg reader prunes our files correctly. Integers, dates, times and
timestamps hash as their 8-byte little-endian long (days; microseconds, with
nanoseconds floored to microseconds as Iceberg does); strings as UTF-8 bytes;
binary as its bytes; decimals as the minimal big-endian two's-complement
bytes of the unscaled value. A UUID column is an Iceberg ``string`` (its
Parquet files hold the canonical text, which Spark reads natively), so it
hashes as that text; ``iceberg_bucket_values(..., uuid=True)`` gives the
16-byte hash of Iceberg's ``uuid`` type for callers that need it.

The partition column is the first colocation column that Iceberg can bucket
(every catalog type but BOOLEAN, FLOAT and DOUBLE). Colocated tables share
their colocation columns, hence the partition column, hence the tablets.

A table that is not ``bucketed`` (the default for new tables; see
``Table``) has no hidden tablet field: its rows go to files by its own
partition spec, and a data file's tablet is ``file_tablet``: the file's
bucket when its spec buckets the table's tablet column (``tablet_column``,
the first bucketable colocation column) into N, the zone's partitions
(``tablet_position`` finds that field); otherwise the same murmur3 over the
UTF-8 bytes of the file's name (the last part of its path, which never
changes when the file moves under a ``tablet=<t>`` directory), modulo N.

Two choices are ours, not Iceberg's: a NULL key (Iceberg's null partition)
goes to tablet 0, since tablets are integers; and a table none of whose
colocation columns is bucketable (its Iceberg spec is unpartitioned) places
rows by the first colocation column with the same murmur3 over a long: a
boolean as 0 or 1, a float as the IEEE bits of its float64 value (with -0.0
as 0.0 and every NaN as the canonical NaN).

Everything is vectorized with numpy over windows of ``_WINDOW_ROWS`` values
(so that temporaries stay small and in cache): murmur3 runs block by block
across all values of a window at once; values longer than ``_LONG_VALUE``
bytes are hashed one by one with ``mmh3`` so that a single huge value does not
cost one numpy pass per 4 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from almanac import _check as check
from almanac.errors import CatalogError, DataError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Column, Table

__all__ = [
    "iceberg_bucket_values",
    "iceberg_hash_values",
    "file_tablet",
    "bucket_column",
    "partition_column",
    "table_partitions",
    "tablet_column",
    "tablet_position",
    "tablets_of",
]

U32Array = np.ndarray[Any, np.dtype[np.uint32]]
I32Array = np.ndarray[Any, np.dtype[np.int32]]
I64Array = np.ndarray[Any, np.dtype[np.int64]]
U8Array = np.ndarray[Any, np.dtype[np.uint8]]

UNBUCKETABLE = frozenset({ColumnType.BOOLEAN, ColumnType.FLOAT, ColumnType.DOUBLE})
"""Catalog types that Iceberg's bucket transform does not accept."""

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_LONG_VALUE = 256
_WINDOW_ROWS = 1 << 16
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_TAIL_MASKS = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], dtype=np.uint32)
_UUID_HEX = np.array([i for i in range(36) if i not in (8, 13, 18, 23)], dtype=np.int64)
_UUID_DASH = np.array([8, 13, 18, 23], dtype=np.int64)
_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF", start=10):
    _NIBBLE[_c] = _i


# --------------------------------------------------------------------------- murmur3


def _rotl(x: U32Array, r: int) -> U32Array:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k(k: U32Array) -> U32Array:
    return _rotl(k * _C1, 15) * _C2


def _mix_h(h: U32Array, k: U32Array) -> U32Array:
    return _rotl(h ^ _mix_k(k), 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _finish(h: U32Array, length: U32Array | np.uint32) -> U32Array:
    h = h ^ length
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _murmur_longs(values: I64Array) -> U32Array:
    """murmur3_x86_32 (seed 0) of each value's 8 little-endian bytes."""
    words = np.ascontiguousarray(values, dtype="<i8").view("<u4").reshape(-1, 2)
    h = _mix_h(np.zeros(len(words), dtype=np.uint32), words[:, 0])
    return _finish(_mix_h(h, words[:, 1]), np.uint32(8))


def _murmur_bytes(data: U8Array, starts: I64Array, lengths: I64Array) -> U32Array:
    """murmur3_x86_32 (seed 0) of ``data[starts[i] : starts[i] + lengths[i]]``
    for every i."""
    if len(starts) == 0:
        return np.zeros(0, dtype=np.uint32)
    first = int(starts.min())
    last = int((starts + lengths).max())
    padded = np.zeros(last - first + 4, dtype=np.uint8)
    padded[: last - first] = data[first:last]
    return _murmur_window(padded, starts - first, lengths)


def _murmur_window(padded: U8Array, starts: I64Array, lengths: I64Array) -> U32Array:
    """``_murmur_bytes`` of values in ``padded``, which has 4 spare zero bytes
    at its end: block j of all values at least 4*(j+1) bytes long at once,
    then the tails; values longer than ``_LONG_VALUE`` one by one."""
    out = np.zeros(len(starts), dtype=np.uint32)
    # Every byte offset read as a little-endian 32-bit word (unaligned view).
    words: U32Array = np.ndarray((len(padded) - 3,), dtype="<u4", buffer=padded, strides=(1,))
    short = lengths <= _LONG_VALUE
    for i in np.flatnonzero(~short).tolist():
        start = int(starts[i])
        out[i] = mmh3.hash(padded[start : start + int(lengths[i])].tobytes(), 0, signed=False)
    blocks = lengths >> 2
    rows = np.flatnonzero((blocks > 0) & short)
    h = np.zeros(len(rows), dtype=np.uint32)
    at, left = starts[rows], blocks[rows]
    while len(rows):
        h = _mix_h(h, words[at])
        at, left = at + 4, left - 1
        done = left == 0
        if done.any():
            out[rows[done]] = h[done]
            keep = ~done
            rows, h, at, left = rows[keep], h[keep], at[keep], left[keep]
    rest = lengths & 3
    tail = np.flatnonzero((rest > 0) & short)
    if len(tail):
        k = words[starts[tail] + 4 * blocks[tail]] & _TAIL_MASKS[rest[tail]]
        out[tail] ^= _mix_k(k)
    out[short] = _finish(out[short], lengths[short].astype(np.uint32))
    return out


# --------------------------------------------------------------------------- serializations


def _binary_hash(arr: pa.Array) -> U32Array:
    """Hash of each value's bytes (string, binary, large and view variants)."""
    flat = arr.cast(pa.large_binary())
    buffers = flat.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[flat.offset : flat.offset + len(flat) + 1]
    base, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(buffers[2], dtype=np.uint8)[base:end] if end > base else np.empty(0)
    return _murmur_bytes(data.astype(np.uint8, copy=False), offsets[:-1] - base, np.diff(offsets))


def _fixed_hash(matrix: U8Array, starts: I64Array | None = None) -> U32Array:
    """Hash of each row of a (rows, width) byte matrix, from ``starts`` on
    (all of each row when None: then block j of every row at once)."""
    rows, width = matrix.shape
    if starts is not None:
        offsets = np.arange(rows, dtype=np.int64) * width + starts
        data = np.ascontiguousarray(matrix).reshape(-1)
        return _murmur_bytes(data, offsets, width - starts)
    blocks, rest = divmod(width, 4)
    h = np.zeros(rows, dtype=np.uint32)
    words = np.ascontiguousarray(matrix[:, : 4 * blocks]).view("<u4")
    for j in range(blocks):
        h = _mix_h(h, words[:, j])
    if rest:
        k = np.zeros(rows, dtype=np.uint32)
        for i in range(rest):
            k |= matrix[:, 4 * blocks + i].astype(np.uint32) << np.uint32(8 * i)
        h ^= _mix_k(k)
    return _finish(h, np.uint32(width))


def _fixed_matrix(arr: pa.Array, width: int) -> U8Array:
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    return raw[arr.offset * width : (arr.offset + len(arr)) * width].reshape(len(arr), width)


def _decimal_hash(arr: pa.Array) -> U32Array:
    """Hash of the minimal big-endian two's-complement bytes of each unscaled
    value: leading sign-fill bytes dropped while the next byte keeps the sign
    (0 and -1 keep one byte; 128 needs two, -128 one)."""
    width = arr.type.byte_width
    big = _fixed_matrix(arr, width)[:, ::-1]
    sign = big[:, 0] >> np.uint8(7)
    differs = big != (sign * np.uint8(0xFF))[:, None]
    first = np.where(differs.any(axis=1), differs.argmax(axis=1), width - 1)
    lead = big[np.arange(len(big)), first]
    starts = first - ((lead >> np.uint8(7)) != sign)
    return _fixed_hash(big, starts.astype(np.int64))


def _uuid_hash(arr: pa.Array) -> U32Array:
    """Hash of the 16 bytes of each canonical ``8-4-4-4-12`` UUID string."""
    flat = arr.cast(pa.large_binary())
    offsets = np.frombuffer(flat.buffers()[1], dtype=np.int64)
    offsets = offsets[flat.offset : flat.offset + len(flat) + 1]
    rows = np.flatnonzero(np.asarray(pc.is_valid(flat).to_numpy(zero_copy_only=False), bool))
    out = np.zeros(len(flat), dtype=np.uint32)
    starts = offsets[rows]
    ok = offsets[rows + 1] - starts == 36
    if ok.all() and len(rows):
        data = np.frombuffer(flat.buffers()[2], dtype=np.uint8)
        if len(rows) == len(flat):  # back to back: a zero-copy view
            chars = data[starts[0] : starts[0] + 36 * len(rows)].reshape(-1, 36)
        else:
            chars = data[starts[:, None] + np.arange(36)]
        nibbles = _NIBBLE[chars[:, _UUID_HEX]]
        ok = (nibbles != 255).all(axis=1) & (chars[:, _UUID_DASH] == ord("-")).all(axis=1)
    if not ok.all():
        bad = flat[int(rows[int(np.argmin(ok))])].as_py()
        raise TypeError(f"{bad!r} is not a UUID in canonical form")
    if len(rows):
        out[rows] = _fixed_hash((nibbles[:, 0::2] << np.uint8(4)) | nibbles[:, 1::2])
    return out


def _long_values(arr: pa.Array) -> I64Array:
    """Integers, dates, times and timestamps as the long Iceberg hashes:
    days, microseconds of the day, microseconds since the epoch."""
    kind = arr.type
    if pa.types.is_integer(kind):
        longs = arr.cast(pa.int64())
    elif pa.types.is_date(kind):
        longs = arr.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
    elif pa.types.is_time(kind) or pa.types.is_timestamp(kind):
        unit = kind.unit
        longs = arr.cast(pa.int64()) if pa.types.is_timestamp(kind) else _time_longs(arr)
        if unit in ("s", "ms"):
            longs = pc.multiply_checked(longs, 1_000_000 if unit == "s" else 1_000)
        values = np.asarray(pc.fill_null(longs, 0).to_numpy(zero_copy_only=False), np.int64)
        return values // 1000 if unit == "ns" else values
    else:
        raise TypeError(f"Iceberg cannot bucket values of type {kind}")
    return np.asarray(pc.fill_null(longs, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _time_longs(arr: pa.Array) -> pa.Array:
    width = pa.int32() if pa.types.is_time32(arr.type) else pa.int64()
    return arr.cast(width).cast(pa.int64())


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array of plain values: chunks combined, dictionaries
    decoded, extension types (such as ``pa.uuid()``) as their storage."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(arr.type):
        values = arr.dictionary
        if pa.types.is_string_view(values.type) or pa.types.is_binary_view(values.type):
            # Arrow cannot take from view types; decode through the large type.
            wide = pa.large_string() if pa.types.is_string_view(values.type) else pa.large_binary()
            arr = pa.DictionaryArray.from_arrays(arr.indices, values.cast(wide))
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    return arr


def _is_text(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def _raw_hash(arr: pa.Array, *, uuid: bool) -> U32Array:
    kind = arr.type
    if pa.types.is_null(kind):
        return np.zeros(len(arr), dtype=np.uint32)
    if uuid and _is_text(kind):
        return _uuid_hash(arr)
    if pa.types.is_decimal(kind):
        return _decimal_hash(arr)
    if pa.types.is_fixed_size_binary(kind):
        return _fixed_hash(_fixed_matrix(arr, kind.byte_width))
    if _is_text(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return _binary_hash(arr)
    if pa.types.is_binary_view(kind):
        return _binary_hash(arr)
    return _murmur_longs(_long_values(arr))


def _zero_nulls(arr: pa.Array, out: I32Array) -> I32Array:
    if arr.null_count:
        out[np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), dtype=bool)] = 0
    return out


MAX_BUCKETS = 2**31 - 1
"""The most buckets (and partitions) a table may have: Iceberg's bucket
numbers are 32-bit ints."""


def _check_buckets(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BUCKETS:
        raise ValidationError(
            f"{what} must be an integer from 1 to {MAX_BUCKETS}, got {check.describe(n)}",
            partitions=check.describe(n),
        )
    return n


def _to_buckets(hashed: U32Array, n: int) -> I32Array:
    return ((hashed & np.uint32(0x7FFFFFFF)) % np.uint32(n)).astype(np.int32)


def _fallback_hash(arr: pa.Array) -> U32Array:
    """murmur3 of a boolean as the long 0/1 or a float as its float64 bits."""
    if pa.types.is_boolean(arr.type):
        return _murmur_longs(pc.fill_null(arr, False).cast(pa.int64()).to_numpy())
    if not pa.types.is_floating(arr.type):
        return _raw_hash(arr, uuid=False)
    floats = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0.0).to_numpy(), dtype=np.float64)
    with np.errstate(invalid="ignore"):  # signalling NaNs
        bits = np.where(floats == 0.0, 0.0, floats).view(np.uint64)  # -0.0 as 0.0
        bits[np.isnan(floats)] = _CANONICAL_NAN
    return _murmur_longs(bits.view(np.int64))


def _hash(
    arr: pa.Array, what: str, *, uuid: bool, fallback: bool = False, **details: Any
) -> U32Array:
    """The hash of every value, or a ``DataError`` that starts with ``what``."""
    try:
        parts = [
            _fallback_hash(part) if fallback else _raw_hash(part, uuid=uuid)
            for part in (arr.slice(lo, _WINDOW_ROWS) for lo in range(0, len(arr), _WINDOW_ROWS))
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    except (TypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(
            f"{what} of type {arr.type} cannot be bucketed: {exc}", type=str(arr.type), **details
        ) from exc


# --------------------------------------------------------------------------- public


def iceberg_hash_values(values: pa.Array | pa.ChunkedArray, *, uuid: bool = False) -> I32Array:
    """The Iceberg spec's 32-bit hash (signed, as Java's ``int``) of every
    value, chosen by Arrow type; ``uuid`` reads strings as canonical UUIDs.
    NULL hashes to 0 here. ``DataError`` for types Iceberg cannot bucket
    (boolean, floating point, nested), malformed UUIDs, and integers beyond
    the long range."""
    arr = _plain(values)
    return _zero_nulls(arr, _hash(arr, "Values", uuid=uuid).view(np.int32))


def iceberg_bucket_values(
    values: pa.Array | pa.ChunkedArray, n: int, *, uuid: bool = False
) -> I32Array:
    """Iceberg ``bucket[n]`` of every value (``uuid`` and errors as for
    ``iceberg_hash_values``); NULL goes to bucket 0."""
    n = _check_buckets(n, "Bucket count")
    check.boolean(uuid, "Parameter 'uuid' of iceberg_bucket_values")
    if not isinstance(values, pa.Array | pa.ChunkedArray):
        raise check.fail(
            "Parameter 'values' of iceberg_bucket_values",
            "a pyarrow Array or ChunkedArray",
            values,
        )
    arr = _plain(values)
    return _zero_nulls(arr, _to_buckets(_hash(arr, "Values", uuid=uuid), n))


def partition_column(table: Table) -> Column | None:
    """The column of the table's Iceberg ``bucket[N]`` partition: its first
    colocation column of a bucketable type; None when there is none (the
    table's Iceberg spec is then unpartitioned)."""
    check.instance(table, Table, "Parameter 'table' of partition_column")
    if not table.bucketed:
        return None
    for name in table.colocation:
        column = table.column(name)
        if column is not None and column.type not in UNBUCKETABLE:
            return column
    return None


def bucket_column(table: Table) -> Column:
    """The column whose hash places a bucketed table's rows: its partition
    column, else (no colocation column Iceberg can bucket) its first
    colocation column, a boolean or float hashed as a long. Every writer of
    a bucketed table, Python or Spark, asks this one function."""
    check.instance(table, Table, "Parameter 'table' of bucket_column")
    column = partition_column(table)
    if column is not None:
        return column
    if not table.colocation:
        raise ValidationError(f"Table '{table.name}' has no colocation columns", table=table.name)
    first = table.column(table.colocation[0])
    if first is None:
        raise CatalogError(
            f"Colocation column '{table.colocation[0]}' of table '{table.name}' is not "
            "one of its columns",
            table=table.name,
        )
    return first


def tablet_column(table: Table) -> Column | None:
    """The column whose ``bucket[N]`` is a file's tablet (N the zone's
    partitions): the first colocation column Iceberg can bucket, bucketed or
    not; None when there is none."""
    check.instance(table, Table, "Parameter 'table' of tablet_column")
    for name in table.colocation:
        column = table.column(name)
        if column is not None and column.type not in UNBUCKETABLE:
            return column
    return None


def tablet_position(
    fields: Sequence[tuple[int, str]], column_id: int | None, partitions: int
) -> int | None:
    """Where in a spec's ``(source id, transform)`` fields the tablet is: the
    first field that is ``bucket[partitions]`` of column ``column_id``;
    None when there is none (the file's tablet then hashes its name)."""
    if column_id is None:
        return None
    wanted = f"bucket[{partitions}]"
    for i, (source, transform) in enumerate(fields):
        if source == column_id and transform == wanted:
            return i
    return None


def file_tablet(path: str, partitions: int, bucket: object = None) -> int:
    """The tablet of a data file: its ``bucket`` when its spec buckets the
    tablet column into ``partitions`` (see ``tablet_position``), else a stable
    hash of its name modulo ``partitions``, so files spread evenly over
    tablets whatever wrote them (a file whose bucket is NULL too)."""
    check.string(path, "Parameter 'path' of file_tablet")
    partitions = _check_buckets(partitions, "Partitions")
    if isinstance(bucket, int) and not isinstance(bucket, bool) and 0 <= bucket < partitions:
        return bucket
    if bucket is not None and not isinstance(bucket, bool) and isinstance(bucket, int):
        raise DataError(
            f"Data file '{path}' has bucket {bucket}, not one of the {partitions} tablets",
            path=path,
            rule="tablet-in-range",
        )
    name = path.rsplit("/", 1)[-1].encode("utf-8", "surrogatepass")
    return (mmh3.hash(name, 0, signed=False) & 0x7FFFFFFF) % partitions


def tablets_of(data: pa.Table, table: Table, partitions: int) -> I32Array:
    """The tablet (0 <= t < partitions) of every row: the Iceberg bucket of
    the table's partition column (see the module docstring for NULL keys and
    tables without one)."""
    check.instance(data, pa.Table, "Parameter 'data' of tablets_of", "a pyarrow.Table")
    check.instance(table, Table, "Parameter 'table' of tablets_of")
    partitions = _check_buckets(partitions, "Partitions")
    if not table.bucketed:
        raise ValidationError(
            f"Table '{table.name}' is unpartitioned: its rows have no tablet, its files have "
            "one (file_tablet)",
            table=table.name,
        )
    column = bucket_column(table)
    if column.name not in data.column_names:
        raise DataError(
            f"Partition column '{column.name}' of table '{table.name}' is missing from the data",
            table=table.name,
            column=column.name,
        )
    arr = _plain(data.column(column.name))
    hashed = _hash(
        arr,
        f"Partition column '{column.name}' of table '{table.name}' has values",
        uuid=False,  # a UUID column is an Iceberg string: see the module docstring
        fallback=column.type in UNBUCKETABLE,
        table=table.name,
        column=column.name,
    )
    return _zero_nulls(arr, _to_buckets(hashed, partitions))


def table_partitions(version: CatalogVersion, table: Table) -> int:
    """The partition count of the table's zone in that catalog version."""
    check.instance(version, CatalogVersion, "Parameter 'snapshot' of table_partitions")
    check.instance(table, Table, "Parameter 'table' of table_partitions")
    zone = version.zone_by_id(table.zone_id)
    if zone is None:
        raise CatalogError(
            f"Zone {table.zone_id} of table '{table.name}' does not exist in catalog version "
            f"{version.version}",
            table=table.name,
        )
    return zone.partitions

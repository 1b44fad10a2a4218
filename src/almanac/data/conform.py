"""Making incoming rows fit a table: the cast rules and ``conform``.

Incoming rows are cast by ``cast_rule``, one rule per (Arrow type, column)
decided by the types alone, so Spark's writer can apply the same one: a
value is stored unchanged or the write is refused, unless the caller asks
for rounding. ``conform`` then checks what the types cannot (required
columns, unique keys) and fills what the rows lack.
"""

from __future__ import annotations

import decimal
import enum
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from almanac import _check as check
from almanac.data.arrow import (
    MAX_DECIMAL256,
    UUID_PATTERN,
    arrow_schema,
    arrow_type,
    column_fill,
    uuid_text,
)
from almanac.errors import DataError
from almanac.model.datatypes import ColumnType, shown
from almanac.model.descriptors import Column, Table

__all__ = ["CastRule", "cast_is_safe", "cast_rule", "check_unique_keys", "conform"]

# --------------------------------------------------------------------------- cast rules


class CastRule(enum.Enum):
    """How values of one Arrow type go into one column, decided by the types
    alone so that every writer (Arrow here, Spark's native writer) agrees."""

    EXACT = "exact"
    """Every value of the source type is stored unchanged."""
    CHECKED = "checked"
    """Each value is checked; a value the column cannot hold unchanged is refused."""
    REFUSED = "refused"
    """Refused whatever the values."""


_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}
"""Decimal digits of the widest value of an integer type of that many bits
(unsigned counts; 2**63 - 1 has 19, 2**64 - 1 has 20)."""
_MANTISSA_BITS = {16: 11, 32: 24, 64: 53}
_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _value_type(source: pa.DataType) -> pa.DataType:
    return source.value_type if pa.types.is_dictionary(source) else source


_Kind = Callable[[pa.DataType], bool]
_TEXT: tuple[_Kind, ...] = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BYTES: tuple[_Kind, ...] = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
_NUMBER: tuple[_Kind, ...] = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)


def _is_text(t: pa.DataType) -> bool:
    return any(kind(t) for kind in _TEXT)


def _is_bytes(t: pa.DataType) -> bool:
    return any(kind(t) for kind in _BYTES)


def _int_magnitude_bits(t: pa.DataType) -> int:
    """Bits a value of integer type ``t`` may need as a magnitude."""
    return int(t.bit_width) - (1 if pa.types.is_signed_integer(t) else 0)


def _exact_if(fits: bool) -> CastRule:
    return CastRule.EXACT if fits else CastRule.CHECKED


def _numeric_rule(source: pa.DataType, target: pa.DataType, rounding: bool) -> CastRule:
    """Numbers: integers and decimals are exact values, floats are binary
    fractions. A float never becomes an integer or a decimal (0.1 is not one
    tenth) and a decimal never becomes a float, unless ``rounding``."""
    rounded = CastRule.CHECKED if rounding else CastRule.REFUSED
    if pa.types.is_integer(target):
        magnitude = int(target.bit_width) - 1
        if pa.types.is_integer(source):
            return _exact_if(_int_magnitude_bits(source) <= magnitude)
        if pa.types.is_decimal(source):
            return _exact_if(source.scale == 0 and 10**source.precision <= 2**magnitude)
        return rounded
    if pa.types.is_floating(target):
        mantissa = _MANTISSA_BITS[target.bit_width]
        if pa.types.is_floating(source):
            return _exact_if(source.bit_width <= target.bit_width)
        if pa.types.is_integer(source):
            return _exact_if(_int_magnitude_bits(source) <= mantissa)
        return rounded
    # target is a decimal
    room = target.precision - target.scale
    if pa.types.is_integer(source):
        return _exact_if(_INT_DIGITS[source.bit_width] <= room)
    if pa.types.is_decimal(source):
        return _exact_if(source.scale <= target.scale and source.precision - source.scale <= room)
    return rounded


def _is_number(t: pa.DataType) -> bool:
    return any(kind(t) for kind in _NUMBER)


def _unit_rule(source: pa.DataType, target: pa.DataType, *, bounded: bool) -> CastRule:
    """Finer units are checked for a lost remainder; coarser timestamps for
    overflow (``bounded`` values, times of day, cannot overflow)."""
    finer = _UNIT_ORDER[source.unit] > _UNIT_ORDER[target.unit]
    coarser = _UNIT_ORDER[source.unit] < _UNIT_ORDER[target.unit]
    return _exact_if(not finer and (bounded or not coarser))


def cast_rule(source: pa.DataType, column: Column, *, rounding: bool = False) -> CastRule:
    """Whether values of Arrow type ``source`` can be stored in ``column``:
    ``EXACT`` when every value fits unchanged (a widening), ``CHECKED`` when
    each value must be checked (a narrowing, a length, a UUID's text),
    ``REFUSED`` when the types never go together. Floats go only into FLOAT
    and DOUBLE, decimals not into either; ``rounding`` allows those numeric
    casts and narrowings with rounding to the column's precision (half to
    even), never an overflow. A timestamp without a time zone is not an
    instant and never goes into TIMESTAMP WITH LOCAL TIME ZONE, nor the other
    way round. NOT NULL is checked apart from the type."""
    check.instance(source, pa.DataType, "Parameter 'source' of cast_rule")
    check.instance(column, Column, "Parameter 'column' of cast_rule")
    source = _value_type(source)
    target = arrow_type(column)
    kind = column.type
    if pa.types.is_null(source):
        return CastRule.EXACT
    if kind is ColumnType.BOOLEAN:
        return CastRule.EXACT if pa.types.is_boolean(source) else CastRule.REFUSED
    if kind.nested:
        if source.equals(target):
            return CastRule.EXACT
        same_kind = _NESTED_KINDS[kind](source)
        return CastRule.CHECKED if same_kind else CastRule.REFUSED
    if kind is ColumnType.FIXED:
        if pa.types.is_fixed_size_binary(source):
            return _exact_if(source.byte_width == column.length)
        return CastRule.CHECKED if _is_bytes(source) else CastRule.REFUSED
    if kind in _NUMBERS:
        return _numeric_rule(source, target, rounding) if _is_number(source) else CastRule.REFUSED
    if kind is ColumnType.STRING:
        return _exact_if(column.length is None) if _is_text(source) else CastRule.REFUSED
    if kind is ColumnType.BYTES:
        if pa.types.is_fixed_size_binary(source):
            return _exact_if(column.length is None or source.byte_width <= column.length)
        return _exact_if(column.length is None) if _is_bytes(source) else CastRule.REFUSED
    if kind in (ColumnType.UUID, ColumnType.ICEBERG_UUID):
        if isinstance(source, pa.BaseExtensionType):
            source = source.storage_type
        if pa.types.is_fixed_size_binary(source) and source.byte_width == 16:
            return CastRule.EXACT
        return CastRule.CHECKED if _is_text(source) else CastRule.REFUSED
    if kind is ColumnType.DATE:
        if pa.types.is_date32(source):
            return CastRule.EXACT
        return CastRule.CHECKED if pa.types.is_date64(source) else CastRule.REFUSED
    if kind is ColumnType.TIME:
        if pa.types.is_time(source):
            return _unit_rule(source, target, bounded=True)
        return CastRule.REFUSED
    if pa.types.is_timestamp(source) and (source.tz is None) == (target.tz is None):
        return _unit_rule(source, target, bounded=False)
    return CastRule.REFUSED


_NESTED_KINDS: dict[ColumnType, _Kind] = {
    ColumnType.STRUCT: pa.types.is_struct,
    ColumnType.LIST: lambda t: pa.types.is_list(t) or pa.types.is_large_list(t),
    ColumnType.MAP: pa.types.is_map,
}
"""A nested column takes values of its own Arrow kind, cast field by field
(and checked: a field may narrow or fail), never another kind."""


def cast_is_safe(source: pa.DataType, column: Column) -> bool:
    """True when every value of ``source`` fits ``column`` unchanged, so a
    writer may cast without looking at the values."""
    return cast_rule(source, column) is CastRule.EXACT


_NUMBERS = frozenset(
    {
        ColumnType.INT8,
        ColumnType.INT16,
        ColumnType.INT32,
        ColumnType.INT64,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.DECIMAL,
    }
)


# --------------------------------------------------------------------------- conform


def _fail(table: Table, column: Column, what: str) -> DataError:
    return DataError(
        f"Column '{column.name}' of table '{table.name}' {what}",
        table=table.name,
        column=column.name,
    )


class _Lossy(Exception):
    """A value would change in the cast."""


def _same(back: pa.ChunkedArray | pa.Array, arr: pa.ChunkedArray | pa.Array) -> bool:
    equal = pc.equal(back, arr)
    if pa.types.is_floating(arr.type):
        equal = pc.or_kleene(equal, pc.and_(pc.is_nan(back), pc.is_nan(arr)))
    return bool(pc.all(pc.fill_null(equal, True)).as_py())


def _to_float(arr: pa.ChunkedArray, target: pa.DataType, rounding: bool) -> pa.ChunkedArray:
    """Into FLOAT or DOUBLE: Arrow refuses exactly representable integers
    above 2**53, so cast unchecked and compare on the way back."""
    if pa.types.is_floating(arr.type) and arr.type.bit_width <= target.bit_width:
        return pc.cast(arr, target)
    out = pc.cast(arr, target, safe=False)
    overflow = pc.is_inf(out)
    if pa.types.is_floating(arr.type):
        overflow = pc.and_(overflow, pc.invert(pc.is_inf(arr)))
    if pc.any(pc.fill_null(overflow, False)).as_py():
        raise _Lossy
    if rounding:
        return out
    try:
        back = pc.cast(out, arr.type, safe=True)
    except pa.ArrowInvalid as exc:
        raise _Lossy from exc
    if _same(back, arr):
        return out
    raise _Lossy


def _convert(arr: pa.ChunkedArray, target: pa.DataType, rounding: bool) -> pa.ChunkedArray:
    """``arr`` as ``target`` (a type ``cast_rule`` allows); ``_Lossy`` when
    a value would change."""
    src = arr.type
    try:
        if pa.types.is_floating(target):
            return _to_float(arr, target, rounding)
        if rounding and pa.types.is_floating(src) and pa.types.is_integer(target):
            arr = pc.round(arr, 0, round_mode="half_to_even")
        elif rounding and pa.types.is_decimal(src):
            digits = target.scale if pa.types.is_decimal(target) else 0
            if src.scale > digits:
                # Widen first: 999.995 rounds to 1000.00, a digit more than it had.
                wide = pc.cast(arr, pa.decimal256(MAX_DECIMAL256, src.scale))
                arr = pc.round(wide, digits, round_mode="half_to_even")
        if pa.types.is_integer(src) and pa.types.is_decimal(target):
            # int64 -> decimal(10, 2) is refused statically; go through a wide decimal.
            wide = pc.cast(arr, pa.decimal256(MAX_DECIMAL256, target.scale), safe=True)
            return pc.cast(wide, target, safe=True)
        return pc.cast(arr, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, decimal.InvalidOperation) as exc:
        raise _Lossy from exc


def _uuid_text_of(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    src = arr.type
    if isinstance(src, pa.BaseExtensionType):
        arr = pa.chunked_array([c.storage for c in arr.chunks], src.storage_type)
        src = src.storage_type
    if pa.types.is_fixed_size_binary(src):
        flat = arr.combine_chunks()
        raw = np.frombuffer(flat.buffers()[1], dtype=np.uint8)
        raw = raw[flat.offset * 16 : (flat.offset + len(flat)) * 16].reshape(len(flat), 16)
        return pa.chunked_array([uuid_text(raw, pc.is_valid(flat))])
    return pc.utf8_lower(arr.cast(pa.string()))


def _uuid_bytes_of(arr: pa.ChunkedArray, column: Column, table: Table) -> pa.ChunkedArray:
    """Iceberg ``uuid`` values (Arrow's ``uuid`` type) of 16-byte values or
    of canonical UUID text, in either case; other text is refused."""
    src = arr.type
    if isinstance(src, pa.BaseExtensionType):
        if src == pa.uuid():
            return arr
        arr = pa.chunked_array([c.storage for c in arr.chunks], src.storage_type)
    if _is_text(arr.type):
        text = pc.utf8_lower(arr.cast(pa.string()))
        bad = pc.fill_null(pc.invert(pc.match_substring_regex(text, UUID_PATTERN)), False)
        if pc.any(bad).as_py():
            first = arr.filter(bad)[0].as_py()
            raise _fail(table, column, f"has type {column.type.sql_name}; {first!r} is not a UUID")
        flat = pc.fill_null(text.combine_chunks(), _ZERO_UUID)
        hexed = pc.replace_substring(flat, "-", "").cast(pa.binary())
        start = int(np.frombuffer(hexed.buffers()[1], dtype=np.int32)[hexed.offset])
        chars = np.frombuffer(hexed.buffers()[2], dtype=np.uint8)[start : start + 32 * len(flat)]
        nibbles = _HEX_VALUE[chars.reshape(len(flat), 32)]
        raw = (nibbles[:, 0::2] << np.uint8(4)) | nibbles[:, 1::2]
        values = pa.Array.from_buffers(
            pa.binary(16), len(flat), [None, pa.py_buffer(raw.tobytes())]
        )
        nulls = pa.nulls(len(flat), pa.binary(16))
        arr = pa.chunked_array([pc.if_else(pc.is_valid(text.combine_chunks()), values, nulls)])
    return pa.chunked_array(
        [pa.ExtensionArray.from_storage(pa.uuid(), c) for c in arr.chunks], pa.uuid()
    )


_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_HEX_VALUE = np.zeros(256, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_VALUE[_c] = _i


def _first_lossy(
    arr: pa.ChunkedArray, convert: Callable[[pa.ChunkedArray], pa.ChunkedArray]
) -> str:
    """A value that ``convert`` refuses, found by halving: casts are per
    value, so some single value of a refused array is refused alone."""
    while len(arr) > 1:
        half = arr.slice(0, len(arr) // 2)
        try:
            convert(half)
        except _Lossy:
            arr = half
        else:
            arr = arr.slice(len(arr) // 2)
    return _shown_scalar(arr[0]) if len(arr) else "?"


def _plain(value: pa.Scalar) -> object:
    """A scalar as a Python value; a date or timestamp beyond Python's years
    1-9999 as its count since the epoch."""
    try:
        return value.as_py()
    except (OverflowError, ValueError):
        count = pa.int32() if pa.types.is_date32(value.type) else pa.int64()
        return pc.cast(value, count, safe=False).as_py()


def _shown_scalar(value: pa.Scalar) -> str:
    if pa.types.is_timestamp(value.type) and value.type.unit == "ns":
        return f"{pc.cast(value, pa.int64()).as_py()} ns since the epoch"  # finer than Python's
    plain = _plain(value)
    if isinstance(plain, int) and pa.types.is_date32(value.type):
        return f"{plain} days since the epoch"
    if isinstance(plain, int) and pa.types.is_timestamp(value.type):
        return f"{plain} {value.type.unit} since the epoch"
    return shown(plain)


def _cast(arr: pa.ChunkedArray, column: Column, table: Table, rounding: bool) -> pa.ChunkedArray:
    target = arrow_type(column)
    rule = cast_rule(arr.type, column, rounding=rounding)
    if rule is CastRule.REFUSED:
        why = ""
        if cast_rule(arr.type, column, rounding=True) is not CastRule.REFUSED:
            why = "; round them first or conform with rounding=True"
        raise _fail(
            table,
            column,
            f"has type {column.type.sql_name} ({target}); values of type {arr.type} cannot be "
            f"stored in it without loss{why}",
        )
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_null(arr.type):
        return pa.chunked_array([pa.nulls(len(arr), target)])
    if column.type is ColumnType.UUID:
        return _uuid_text_of(arr)
    if column.type is ColumnType.ICEBERG_UUID:
        return _uuid_bytes_of(arr, column, table)
    if arr.type == target:
        return arr

    def convert(part: pa.ChunkedArray) -> pa.ChunkedArray:
        return _convert(part, target, rounding)

    try:
        return convert(arr)
    except _Lossy:
        value = _first_lossy(arr, convert)
    raise _fail(
        table,
        column,
        f"has type {column.type.sql_name} ({target}); the {arr.type} value {value} "
        "cannot be stored in it without loss",
    )


def _check_values(arr: pa.ChunkedArray, column: Column, table: Table) -> None:
    if column.type is ColumnType.UUID:
        bad = pc.invert(pc.match_substring_regex(arr, UUID_PATTERN))
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
    if column.type.nested:
        for chunk in arr.chunks:
            found = _null_in_required(chunk, column, column.name)
            if found is not None:
                path, count = found
                raise DataError(
                    f"Field '{path}' of table '{table.name}' is NOT NULL; the data has {count} "
                    "NULL value(s) in it",
                    table=table.name,
                    column=path,
                )


def _null_in_required(arr: pa.Array, column: Column, path: str) -> tuple[str, int] | None:
    """The first required nested field holding a NULL where its parent is
    not NULL (path and count), or None: Parquet cannot store one."""
    if arr.offset:
        arr = pa.concat_arrays([arr])
    if column.type is ColumnType.STRUCT:
        valid = arr.is_valid()
        children = list(zip(column.fields, arr.flatten(), strict=True))
        for field, child in children:
            nulls = int(pc.sum(pc.and_(valid, child.is_null())).as_py() or 0)
            if nulls and not field.nullable:
                return f"{path}.{field.name}", nulls
        pairs = [(f, pc.filter(c, valid)) for f, c in children]
    elif column.type is ColumnType.LIST:
        pairs = [(column.fields[0], pc.list_flatten(arr))]
    else:
        pairs = [(column.fields[1], arr.items)]
    for field, child in pairs:
        if column.type is not ColumnType.STRUCT and child.null_count and not field.nullable:
            return f"{path}.{field.name}", child.null_count
        if field.type.nested:
            found = _null_in_required(child, field, f"{path}.{field.name}")
            if found is not None:
                return found
    return None


_INT64 = 2**63


def _codes(arr: pa.ChunkedArray) -> tuple[np.ndarray[Any, np.dtype[np.int64]], int]:
    """Each value as a non-negative int64 code, equal codes for equal values,
    and the number of codes: integer-like values offset by their minimum,
    the rest by dictionary index."""
    t = arr.type
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif pa.types.is_temporal(t):
        arr = arr.cast(pa.int32() if t.bit_width == 32 else pa.int64())
    if pa.types.is_integer(arr.type) and not pa.types.is_uint64(arr.type):
        values = arr.to_numpy().astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        if high - low < _INT64:
            return values - np.int64(low), high - low + 1
    encoded = pc.dictionary_encode(arr).combine_chunks()
    return encoded.indices.to_numpy().astype(np.int64), len(encoded.dictionary)


def _groups(keys: pa.Table) -> int:
    return int(keys.group_by(keys.column_names, use_threads=False).aggregate([]).num_rows)


def _repeats(keys: pa.Table) -> bool:
    """Whether some key repeats: one int64 code per row, sorted, compared
    with its neighbour (a tenth of a hash aggregation's cost)."""
    rows = int(keys.num_rows)
    if any(column.null_count for column in keys.columns):
        return _groups(keys) < rows
    combined = np.zeros(rows, dtype=np.int64)
    span = 1
    for column in keys.columns:
        codes, count = _codes(column)
        if span * count >= _INT64:
            return _groups(keys) < rows
        combined += codes * np.int64(span)
        span *= count
    ordered = np.sort(combined)
    return bool((ordered[1:] == ordered[:-1]).any())


def check_unique_keys(rows: pa.Table, table: Table) -> None:
    """Refuse rows that repeat a primary key. Iceberg keeps no key index, so
    one write's own rows are what can be checked cheaply; keys already
    stored are not looked at."""
    check.instance(rows, pa.Table, "Parameter 'rows' of check_unique_keys")
    check.instance(table, Table, "Parameter 'table' of check_unique_keys")
    key = list(table.primary_key)
    if rows.num_rows < 2 or not key or not _repeats(rows.select(key)):
        return
    counts = rows.select(key).group_by(key, use_threads=False).aggregate([([], "count_all")])
    first = counts.filter(pc.greater(counts.column("count_all"), 1)).slice(0, 1)
    values = [first.column(name)[0] for name in key]
    shown_key = ", ".join(f"{n}={_shown_scalar(v)}" for n, v in zip(key, values, strict=True))
    raise DataError(
        f"Primary key ({', '.join(key)}) of table '{table.name}' must be unique within a "
        f"write; the data repeats ({shown_key}) {first.column('count_all')[0].as_py()} times",
        table=table.name,
        columns=tuple(key),
        key=tuple(_plain(v) for v in values),
    )


def conform(data: pa.Table | pa.RecordBatch, table: Table, *, rounding: bool = False) -> pa.Table:
    """Rows as ``arrow_schema(table)``: columns matched by exact catalog name,
    reordered, cast by ``cast_rule`` (no value changes unless ``rounding``);
    a missing column gets its constant default (or a fresh UUID per row for
    ``RAND_UUID``) or NULL. Raises ``DataError`` naming the column and table
    for an unknown or duplicate column, a missing NOT NULL column without
    default, a refused cast (with an offending value), a value longer than
    the column's length, a malformed UUID, a NULL in a NOT NULL column, or a
    primary key repeated within the rows."""
    check.instance(table, Table, "Parameter 'table' of conform")
    check.boolean(rounding, "Parameter 'rounding' of conform")
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise DataError(
            f"Data for table '{table.name}' must be a pyarrow Table or RecordBatch, "
            f"not {type(data).__name__}",
            table=table.name,
        )
    names = data.column_names
    given: dict[int, str] = {}  # column id -> the data's spelling (any case names it)
    for name in names:
        column = table.column(name)
        other = None if column is None else given.get(column.id)
        if names.count(name) > 1 or other is not None:
            also = "" if other is None else f" (also as '{other}')"
            raise DataError(
                f"Column '{name}' appears more than once in the data for table "
                f"'{table.name}'{also}",
                table=table.name,
                column=name,
            )
        if column is None:
            raise DataError(
                f"Column '{name}' of the data is not a column of table '{table.name}' "
                f"(its columns: {', '.join(c.name for c in table.columns)})",
                table=table.name,
                column=name,
            )
        given[column.id] = name
    arrays: list[pa.ChunkedArray | pa.Array] = []
    for column in table.columns:
        if column.id in given:
            arr = _cast(data.column(given[column.id]), column, table, rounding)
        else:
            if not column.nullable and column.default is None:
                raise _fail(table, column, "is NOT NULL and has no default, but the data lacks it")
            arr = pa.chunked_array([column_fill(column, data.num_rows, generate=True)])
        _check_values(arr, column, table)
        arrays.append(arr)
    rows = pa.Table.from_arrays(arrays, schema=arrow_schema(table))
    check_unique_keys(rows, table)
    return rows

"""Which Spark column types Almanac's native Spark writer stores in which
catalog columns: a Spark type goes into a column only without loss
(``check_type``), by the same cast rules as the data plane, and a table
whose fields Spark's Parquet writer cannot write is named by
``native_refusal`` (it is then written through the data layer)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_type

from almanac.data.conform import CastRule, cast_rule
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table
from almanac.errors import DataError
from almanac.nested import walk
from almanac.spark.types import spark_type

__all__ = ["CATALOG_BITS", "check_type", "native_refusal"]

_GUARDED = frozenset({ColumnType.STRING, ColumnType.BYTES, ColumnType.UUID})
"""Types whose CHECKED casts (length, UUID text) the job checks itself."""

_INT_BITS: dict[type[Any], int] = {
    st.ByteType: 8,
    st.ShortType: 16,
    st.IntegerType: 32,
    st.LongType: 64,
}
_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}
CATALOG_BITS = {
    ColumnType.INT8: 8,
    ColumnType.INT16: 16,
    ColumnType.INT32: 32,
    ColumnType.INT64: 64,
}


def _lossy(source: Any, column: Column, target: Any) -> str | None:
    """Why a ``source`` Spark type cannot go into ``column`` without loss, or None."""
    kind = column.type
    if isinstance(source, st.NullType) or source == target:
        return None
    src_bits = next((b for t, b in _INT_BITS.items() if isinstance(source, t)), None)
    if kind in CATALOG_BITS:
        bits = CATALOG_BITS[kind]
        if src_bits is not None:
            return None if src_bits <= bits else f"a {src_bits}-bit integer may not fit"
        if isinstance(source, st.DecimalType):
            if source.scale == 0 and source.precision < _INT_DIGITS[bits]:
                return None
            return "a decimal may have a fraction or too many digits"
        if isinstance(source, st.FloatType | st.DoubleType):
            return "floating point values may have a fraction or be out of range"
    elif kind is ColumnType.FLOAT:
        if src_bits is not None and src_bits <= 16:
            return None
        if isinstance(source, st.FloatType):
            return None
        if src_bits is not None or isinstance(source, st.DoubleType | st.DecimalType):
            return "FLOAT holds only 24 significant bits"
    elif kind is ColumnType.DOUBLE:
        if (src_bits is not None and src_bits <= 32) or isinstance(
            source, st.FloatType | st.DoubleType
        ):
            return None
        if src_bits is not None or isinstance(source, st.DecimalType):
            return "DOUBLE holds only 53 significant bits"
    elif kind is ColumnType.DECIMAL:
        integral = target.precision - target.scale
        if src_bits is not None:
            digits = _INT_DIGITS[src_bits]
            return None if digits <= integral else f"integers need {digits} digits before the point"
        if isinstance(source, st.DecimalType):
            if source.scale <= target.scale and source.precision - source.scale <= integral:
                return None
            return "the decimal has more digits before or after the point"
        if isinstance(source, st.FloatType | st.DoubleType):
            return "binary floating point values are not exact decimals"
    elif kind in (ColumnType.STRING, ColumnType.UUID):
        if isinstance(source, st.StringType | st.VarcharType | st.CharType):
            return None
    elif kind is ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE and isinstance(
        source, st.TimestampNTZType
    ):
        return "a wall-clock timestamp has no time zone; convert it to an instant first"
    return "the types do not convert"


def _arrow_of(source: Any) -> pa.DataType | None:
    if isinstance(source, st.VarcharType | st.CharType):
        return pa.string()
    try:
        return to_arrow_type(source)
    except Exception:  # a Spark type Arrow cannot describe: our own rules decide
        return None


def _data_plane_rule(source: Any, column: Column) -> str | None:
    """Why ``almanac.data.conform.cast_rule`` refuses this pair in a job that
    cannot look at values first: only ``EXACT`` passes, and ``CHECKED`` for
    a length or a UUID's text, which the job itself checks."""
    arrow = _arrow_of(source)
    if arrow is None:
        return None
    rule = cast_rule(arrow, column)
    if rule is CastRule.EXACT:
        return None
    textual = pa.types.is_string(arrow) or pa.types.is_binary(arrow)
    if rule is CastRule.CHECKED and textual and column.type in _GUARDED:
        return None
    if rule is CastRule.CHECKED:
        return "some values may not fit (the data plane checks each value; cast in the query)"
    return "the data plane refuses this pair of types"


def _struct_rule(source: Any, column: Column, target: Any) -> str | None:
    """Why a Spark ``struct`` cannot go into STRUCT ``column`` (Spark casts
    structs field by field in order), or None."""
    if not isinstance(source, st.StructType):
        return "the types do not convert"
    theirs = [f.name for f in source.fields]
    ours = [f.name for f in column.fields]
    if [n.lower() for n in theirs] != [n.lower() for n in ours]:
        return f"the struct's fields {theirs} are not the column's fields {ours}, in order"
    for given, field, wanted in zip(source.fields, column.fields, target.fields, strict=True):
        why = _field_rule(given.dataType, field, wanted.dataType)
        if why is not None:
            return f"field '{field.name}': {why}"
    return None


def _field_rule(source: Any, column: Column, target: Any) -> str | None:
    if column.type is ColumnType.STRUCT:
        return _struct_rule(source, column, target)
    return _lossy(source, column, target) or _data_plane_rule(source, column)


def check_type(source: Any, column: Column, full: str) -> Any:
    target = spark_type(column, full)
    why = _field_rule(source, column, target)
    if why is not None:
        raise DataError(
            f"Column '{column.name}' of table '{full}' has type {column.type.sql_name} "
            f"({target.simpleString()}); values of type {source.simpleString()} cannot be "
            f"stored in it without loss: {why}",
            table=full,
            column=column.name,
            rule="lossless-cast",
        )
    return target


def native_refusal(table: Table) -> str | None:
    """Why Spark's Parquet writer cannot write ``table`` as Iceberg data
    (naming the first field that it cannot write), or None."""
    for path, field in walk(table.columns):
        lacks = _NATIVE_LACKS.get(field.type)
        if lacks is not None:
            return (
                f"field '{path}' is {field.type.sql_name} and Spark's Parquet writer has no {lacks}"
            )
    return None


_NATIVE_LACKS = {
    ColumnType.FIXED: "fixed-length binary",
    ColumnType.TIMESTAMP_NS: "nanosecond timestamps",
    ColumnType.TIMESTAMPTZ_NS: "nanosecond timestamps",
    ColumnType.LIST: "field id for a list element",
    ColumnType.MAP: "field ids for map keys and values",
}

"""Catalog column types as Spark types and back.

Reading maps each catalog type to the Spark type that holds every value
(UUID is a string, as the data layer stores it). TIME has no Spark type that
tables accept (Spark 4 keeps ``TimeType`` behind an experimental flag), so a
table with a TIME column cannot be read through Spark; the error names the
column. DECIMAL wider than Spark's 38 digits reads as DECIMAL(38, s'): values
that do not fit fail the read with a ``DataError`` rather than lose digits.
FIXED(L) reads as ``binary``. STRUCT, ARRAY and MAP read as Spark's
``struct``, ``array`` and ``map`` of the same field types, by field id.

Spark's timestamps hold microseconds, so TIMESTAMP_NS and TIMESTAMPTZ_NS
read as ``timestamp_ntz`` and ``timestamp``: a value that is a whole
number of microseconds reads exactly; one with sub-microsecond digits fails
the read with an error naming the column (rule ``spark-nanoseconds``) rather
than be truncated. Writing them loses nothing (microseconds are whole
nanoseconds).

CREATE TABLE AS SELECT goes the other way. Spark's ``timestamp`` is an instant
shown in the session time zone, which is the catalog's TIMESTAMP WITH LOCAL
TIME ZONE; ``timestamp_ntz`` is a wall-clock TIMESTAMP. Both keep
microseconds (precision 6). ``string`` becomes STRING of the default length;
``varchar(n)``/``char(n)`` keep their length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from almanac import _check as check
from almanac.commands import ColumnDef
from almanac.data import DataError
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table
from almanac.errors import ValidationError
from almanac.nested import ELEMENT, KEY, VALUE

__all__ = [
    "SPARK_MAX_DECIMAL_PRECISION",
    "column_defs",
    "fit_batch",
    "spark_arrow_schema",
    "spark_schema",
    "spark_type",
]

SPARK_MAX_DECIMAL_PRECISION = 38

_SIMPLE: dict[ColumnType, Any] = {
    ColumnType.BOOLEAN: st.BooleanType(),
    ColumnType.INT8: st.ByteType(),
    ColumnType.INT16: st.ShortType(),
    ColumnType.INT32: st.IntegerType(),
    ColumnType.INT64: st.LongType(),
    ColumnType.FLOAT: st.FloatType(),
    ColumnType.DOUBLE: st.DoubleType(),
    ColumnType.STRING: st.StringType(),
    ColumnType.BYTES: st.BinaryType(),
    ColumnType.DATE: st.DateType(),
    ColumnType.TIMESTAMP: st.TimestampNTZType(),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: st.TimestampType(),
    ColumnType.UUID: st.StringType(),
    ColumnType.FIXED: st.BinaryType(),
    ColumnType.TIMESTAMP_NS: st.TimestampNTZType(),
    ColumnType.TIMESTAMPTZ_NS: st.TimestampType(),
}

_FROM_SPARK: list[tuple[type[Any], ColumnType]] = [
    (st.BooleanType, ColumnType.BOOLEAN),
    (st.ByteType, ColumnType.INT8),
    (st.ShortType, ColumnType.INT16),
    (st.IntegerType, ColumnType.INT32),
    (st.LongType, ColumnType.INT64),
    (st.FloatType, ColumnType.FLOAT),
    (st.DoubleType, ColumnType.DOUBLE),
    (st.BinaryType, ColumnType.BYTES),
    (st.DateType, ColumnType.DATE),
    (st.TimestampNTZType, ColumnType.TIMESTAMP),
    (st.TimestampType, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
]

_SPARK_TIMESTAMP_PRECISION = 6


def spark_type(column: Column, table: str, path: str | None = None) -> Any:
    """The Spark type that reads ``column`` of ``table`` (``path``: its dotted
    name when nested); ``ValidationError`` naming both when Spark has none.
    Nested fields are nullable in Spark, as columns are (see ``spark_schema``)."""
    path = column.name if path is None else path
    simple = _SIMPLE.get(column.type)
    if simple is not None:
        return simple
    if column.type is ColumnType.STRUCT:
        return st.StructType(
            [
                st.StructField(f.name, spark_type(f, table, f"{path}.{f.name}"), True)
                for f in column.fields
            ]
        )
    if column.type is ColumnType.LIST:
        (element,) = column.fields
        return st.ArrayType(spark_type(element, table, f"{path}.{element.name}"), True)
    if column.type is ColumnType.MAP:
        key, value = column.fields
        return st.MapType(
            spark_type(key, table, f"{path}.{key.name}"),
            spark_type(value, table, f"{path}.{value.name}"),
            True,
        )
    if column.type is ColumnType.DECIMAL:
        precision = column.precision if column.precision is not None else 38
        scale = column.scale or 0
        precision = min(precision, SPARK_MAX_DECIMAL_PRECISION)
        return st.DecimalType(precision, min(scale, precision))
    raise ValidationError(
        f"Column '{path}' of table '{table}' has type {column.type.sql_name}, "
        "which Spark tables cannot hold",
        table=table,
        column=path,
        rule="spark-type",
    )


def spark_schema(table: Table, full_name: str) -> Any:
    """The table as a Spark ``StructType``: catalog names, every field nullable
    (NOT NULL is enforced by the writer, which names the column)."""
    check.instance(table, Table, "Parameter 'table' of spark_schema")
    check.string(full_name, "Parameter 'full_name' of spark_schema")
    seen: dict[str, str] = {}
    fields = []
    for column in table.columns:
        folded = column.name.lower()
        if folded in seen:
            raise ValidationError(
                f"Columns '{seen[folded]}' and '{column.name}' of table '{full_name}' differ "
                "only in case, which Spark cannot tell apart",
                table=full_name,
                column=column.name,
                rule="spark-case-insensitive-names",
            )
        seen[folded] = column.name
        fields.append(st.StructField(column.name, spark_type(column, full_name), True))
    return st.StructType(fields)


def spark_arrow_schema(schema: Any) -> pa.Schema:
    """The exact Arrow schema Spark expects a reader to yield for ``schema``
    (PySpark 4.1: timestamps in UTC)."""
    return to_arrow_schema(schema, timestamp_utc=True)


def fit_batch(batch: pa.RecordBatch, target: pa.Schema, table: str) -> pa.RecordBatch:
    """``batch`` (as the data layer reads it) in Spark's expected layout: fields
    by name in ``target`` order, cast to Spark's types and nullability. A
    field the batch lacks (the table changed after Spark fixed its schema)
    reads as NULL."""
    arrays = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            arrays.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(index)
        if not column.type.equals(field.type):
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise DataError(
                    f"Column '{field.name}' of table '{table}' holds values that Spark's type "
                    f"{field.type} cannot represent: {exc}",
                    table=table,
                    column=field.name,
                    rule="spark-type",
                ) from exc
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def column_defs(
    schema: Any, primary_key: Sequence[str], table: str, *, upper: bool
) -> tuple[tuple[ColumnDef, ...], tuple[str, ...]]:
    """Catalog column definitions for a DataFrame's schema, and the primary key
    spelled as those columns are. Primary-key columns are NOT NULL; names are
    upper-cased like unquoted SQL identifiers when ``upper``."""
    names = {field.name.lower(): field.name for field in schema.fields}
    key: list[str] = []
    for name in primary_key:
        found = names.get(name.lower())
        if found is None:
            raise ValidationError(
                f"Primary key column '{name}' of table '{table}' is not a column of the query "
                f"(columns: {', '.join(f.name for f in schema.fields)})",
                table=table,
                column=name,
            )
        key.append(found)
    defs = tuple(
        _column_def(
            field.name.upper() if upper else field.name,
            field.dataType,
            field.name not in key,
            table,
            field.name,
            upper,
        )
        for field in schema.fields
    )
    pk = tuple(name.upper() if upper else name for name in key)
    return defs, pk


def _column_def(
    name: str, dtype: Any, nullable: bool, table: str, path: str, upper: bool
) -> ColumnDef:
    """A Spark type as a column definition. ``struct``, ``array`` and ``map``
    become STRUCT, ARRAY and MAP: struct fields named like columns, the
    others as Iceberg names them (``element``, ``key``, ``value``); every
    nested field but a map key is nullable, as the columns are."""
    if isinstance(dtype, st.StructType):
        fields = tuple(
            _column_def(
                f.name.upper() if upper else f.name,
                f.dataType,
                True,
                table,
                f"{path}.{f.name}",
                upper,
            )
            for f in dtype.fields
        )
        return ColumnDef(name=name, type=ColumnType.STRUCT, nullable=nullable, fields=fields)
    if isinstance(dtype, st.ArrayType):
        element = _column_def(ELEMENT, dtype.elementType, True, table, f"{path}.{ELEMENT}", upper)
        return ColumnDef(name=name, type=ColumnType.LIST, nullable=nullable, fields=(element,))
    if isinstance(dtype, st.MapType):
        key = _column_def(KEY, dtype.keyType, False, table, f"{path}.{KEY}", upper)
        value = _column_def(VALUE, dtype.valueType, True, table, f"{path}.{VALUE}", upper)
        return ColumnDef(name=name, type=ColumnType.MAP, nullable=nullable, fields=(key, value))
    ctype, precision, scale, length = _catalog_type(dtype, path, table)
    return ColumnDef(
        name=name,
        type=ctype,
        nullable=nullable,
        precision=precision,
        scale=scale,
        length=length,
    )


def _catalog_type(
    dtype: Any, path: str, table: str
) -> tuple[ColumnType, int | None, int | None, int | None]:
    if isinstance(dtype, st.DecimalType):
        return ColumnType.DECIMAL, dtype.precision, dtype.scale, None
    if isinstance(dtype, st.VarcharType | st.CharType):
        return ColumnType.STRING, None, None, dtype.length
    if isinstance(dtype, st.StringType):
        return ColumnType.STRING, None, None, None
    for spark_cls, ctype in _FROM_SPARK:
        if isinstance(dtype, spark_cls):
            temporal = ctype in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE)
            return ctype, _SPARK_TIMESTAMP_PRECISION if temporal else None, None, None
    raise ValidationError(
        f"Column '{path}' of table '{table}' has Spark type {dtype.simpleString()}, "
        "which has no catalog column type",
        table=table,
        column=path,
        rule="spark-type",
    )

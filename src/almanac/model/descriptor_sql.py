"""How descriptor values read as SQL text: one spelling for ``DESCRIBE``,
``SHOW`` and the diff's default values, so the three never disagree.

A spelled type or default is text the SQL dialect reads back as the same
value (``STRING(100)``, ``DECIMAL(10, 2)``, ``'EU'``, ``RAND_UUID()``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    Column,
    ConstantDefault,
    DefaultValue,
    FunctionDefault,
    Index,
    Table,
)
from almanac.model.partitioning import (
    PartitionField,
    SortField,
    default_field_name,
    transform_name,
    transform_width,
)

__all__ = [
    "column_sql",
    "constant_sql",
    "default_sql",
    "index_columns_sql",
    "partition_field_sql",
    "sort_field_sql",
    "source_path",
    "type_sql",
]


def type_sql(column: Column) -> str:
    """``STRING(100)``, ``DECIMAL(10, 2)``, ``INT64``: the type with the
    parameters it holds; a nested type with its fields, struct field names
    quoted (``STRUCT<"a": INT32 NOT NULL COMMENT 'x'>``, ``ARRAY<INT32 NOT
    NULL>``, ``MAP<STRING(65536), INT64>``; a map's key is never NULL)."""
    if column.type is ColumnType.STRUCT:
        return f"STRUCT<{', '.join(_struct_field_sql(f) for f in column.fields)}>"
    if column.type.nested:
        map_key = column.fields[0] if column.type is ColumnType.MAP else None
        inner = [
            type_sql(f) + ("" if f.nullable or f is map_key else " NOT NULL") for f in column.fields
        ]
        return f"{column.type.sql_name}<{', '.join(inner)}>"
    params = [p for p in (column.precision, column.scale, column.length) if p is not None]
    name = column.type.sql_name
    return f"{name}({', '.join(map(str, params))})" if params else name


def column_sql(column: Column) -> str:
    """``STRING(16) NOT NULL DEFAULT 'new' COMMENT 'why'``: a column's
    definition after its name, as ``CREATE TABLE`` writes it."""
    text = type_sql(column)
    if not column.nullable:
        text += " NOT NULL"
    default = default_sql(column.default)
    if default is not None:
        text += f" DEFAULT {default}"
    if column.doc is not None:
        text += f" COMMENT {_quoted(column.doc)}"
    return text


def index_columns_sql(index: Index) -> str:
    """``A DESC, B ASC`` for a SORTED index, ``A, B`` for a HASH one."""
    if not index.collations:
        return ", ".join(index.columns)
    return ", ".join(
        f"{name} {'ASC' if c.ascending else 'DESC'}"
        for name, c in zip(index.columns, index.collations, strict=True)
    )


def _struct_field_sql(field: Column) -> str:
    name = '"' + field.name.replace('"', '""') + '"'
    text = f"{name}: {type_sql(field)}"
    if not field.nullable:
        text += " NOT NULL"
    if field.doc is not None:
        text += f" COMMENT {_quoted(field.doc)}"
    return text


def default_sql(default: DefaultValue | None) -> str | None:
    """The ``DEFAULT`` clause's expression, or ``None`` when the column has none."""
    if default is None:
        return None
    if isinstance(default, FunctionDefault):
        return f"{default.name}()"
    return constant_sql(default)


def constant_sql(default: ConstantDefault) -> str:
    """A constant as an SQL literal (``NULL``, ``TRUE``, ``7``, ``'it''s'``,
    ``X'00ff'``); dates, times and UUIDs as quoted ISO text, which the
    dialect reads into the column's type."""
    value = default.value
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, dt.date | dt.time):
        return _quoted(value.isoformat())
    if isinstance(value, uuid.UUID):
        return _quoted(str(value))
    return _quoted(str(value))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- partition specs and sort orders ---------------------------------------------


def source_path(table: Table, source_id: int) -> str:
    """The dotted path of the column or struct field a partition or sort
    field reads (``#id`` for one no longer there)."""
    stack = [(c, c.name) for c in table.columns]
    while stack:
        column, path = stack.pop(0)
        if column.id == source_id:
            return path
        stack += [(f, f"{path}.{f.name}") for f in column.fields]
    return f"#{source_id}"


def _term(table: Table, source_id: int, transform: str) -> str:
    path = source_path(table, source_id)
    name = transform_name(transform)
    if name == "identity":
        return path
    width = transform_width(transform)
    return f"{name}({path})" if width is None else f"{name}({width}, {path})"


def partition_field_sql(table: Table, field: PartitionField) -> str:
    """``bucket(16, ID) AS B``: a field as PARTITIONED BY spells it (with
    its name where that is not the default)."""
    term = _term(table, field.source_id, field.transform)
    default = default_field_name(source_path(table, field.source_id), field.transform)
    return term if field.name == default else f"{term} AS {field.name}"


def sort_field_sql(table: Table, field: SortField) -> str:
    """``TS DESC NULLS LAST``: a field as WRITE ORDERED BY spells it."""
    direction = "DESC" if field.descending else "ASC"
    nulls = "FIRST" if field.nulls_first else "LAST"
    return f"{_term(table, field.source_id, field.transform)} {direction} NULLS {nulls}"

"""How descriptor values read as SQL text: one spelling for ``DESCRIBE``,
``SHOW`` and the diff's default values, so the three never disagree.

A spelled type or default is text the SQL dialect reads back as the same
value (``STRING(100)``, ``DECIMAL(10, 2)``, ``'EU'``, ``RAND_UUID()``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

from almanac.datatypes import ColumnType
from almanac.descriptors import Column, ConstantDefault, DefaultValue, FunctionDefault, Index

__all__ = ["column_sql", "constant_sql", "default_sql", "index_columns_sql", "type_sql"]


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

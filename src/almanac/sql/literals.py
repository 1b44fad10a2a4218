"""What the dialect's type names and literals mean as catalog types and
Python values: a ``DataType`` node as a catalog type with its parameters
(:func:`column_type`), and a literal as a column default of that type
(:func:`default_value`), refusing with ``Untranslatable`` what does not fit.
Kept apart from the grammar, which only says what parses.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import uuid
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    FUNCTION_DEFAULTS,
    ConstantDefault,
    DefaultValue,
    FunctionDefault,
)
from almanac.sql.dialect import Untranslatable, check_clauses

__all__ = [
    "TypeSpec",
    "column_type",
    "default_value",
    "duration_seconds",
    "integer_literal",
    "number_text",
    "unwrapped",
]


_TYPES: dict[exp.DType, ColumnType] = {
    exp.DType.BOOLEAN: ColumnType.BOOLEAN,
    exp.DType.TINYINT: ColumnType.INT8,
    exp.DType.SMALLINT: ColumnType.INT16,
    exp.DType.INT: ColumnType.INT32,
    exp.DType.BIGINT: ColumnType.INT64,
    exp.DType.FLOAT: ColumnType.FLOAT,
    exp.DType.DOUBLE: ColumnType.DOUBLE,
    exp.DType.DECIMAL: ColumnType.DECIMAL,
    exp.DType.VARCHAR: ColumnType.STRING,
    exp.DType.TEXT: ColumnType.STRING,
    exp.DType.VARBINARY: ColumnType.BYTES,
    exp.DType.DATE: ColumnType.DATE,
    exp.DType.TIME: ColumnType.TIME,
    exp.DType.TIMESTAMP: ColumnType.TIMESTAMP,
    exp.DType.TIMESTAMPLTZ: ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
    exp.DType.UUID: ColumnType.UUID,
    exp.DType.BINARY: ColumnType.BYTES,
    exp.DType.FIXEDSTRING: ColumnType.FIXED,
    exp.DType.STRUCT: ColumnType.STRUCT,
    exp.DType.ARRAY: ColumnType.LIST,
    exp.DType.MAP: ColumnType.MAP,
}

_NAMED_TYPES: dict[str, ColumnType] = {
    "TIMESTAMP_NS": ColumnType.TIMESTAMP_NS,
    "TIMESTAMPTZ_NS": ColumnType.TIMESTAMPTZ_NS,
    "ICEBERG_UUID": ColumnType.ICEBERG_UUID,
}
"""Iceberg's names sqlglot has no type for: they parse as user-defined
types and mean these (unquoted, in any case)."""

_TIMESTAMPS = frozenset({ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE})

TypeSpec = tuple[ColumnType, int | None, int | None, int | None]
"""(type, precision, scale, length), parameters ``None`` where not written."""


def column_type(node: object, column: str) -> TypeSpec:
    """A sqlglot ``DataType`` as a catalog type and its written parameters."""
    if not isinstance(node, exp.DataType):
        raise Untranslatable(f"Column '{column}' needs a type", node)
    dtype = node.this
    ctype = _TYPES.get(dtype) if isinstance(dtype, exp.DType) else None
    if dtype == exp.DType.USERDEFINED and isinstance(node.args.get("kind"), str):
        ctype = _NAMED_TYPES.get(str(node.args["kind"]).upper())
    if ctype is not None and ctype.nested:
        # Its expressions are the nested types, read by the caller.
        return ctype, None, None, None
    if ctype is None:
        name = node.args.get("kind") if dtype == exp.DType.USERDEFINED else None
        shown = str(name) if name else getattr(dtype, "name", str(dtype))
        raise Untranslatable(f"Unknown type {shown} of column '{column}'", node)
    check_clauses(
        node, ("this", "expressions", "nested", "kind", "nullable"), f"Type {ctype.sql_name}"
    )
    params = [_type_param(p, column) for p in node.expressions]
    allowed = 2 if ctype.takes_scale else int(ctype.takes_length or ctype.takes_precision)
    if len(params) > allowed:
        takes = f"at most {allowed} parameter(s)" if allowed else "no parameters"
        raise Untranslatable(f"Type {ctype.sql_name} of column '{column}' takes {takes}", node)
    first, second = [*params, None, None][:2]
    if ctype.takes_length:
        return ctype, None, None, first
    return ctype, first, second, None


def _type_param(node: exp.Expr, column: str) -> int:
    value = None
    if isinstance(node, exp.DataTypeParam) and node.args.get("expression") is None:
        value = integer_literal(node.this)
    if value is None or value < 0:
        raise Untranslatable(f"Type parameter of column '{column}' must be an integer", node)
    return value


_MAX_DIGITS = 1000


def unwrapped(node: object) -> tuple[object, bool]:
    """``node`` without its parentheses and minus signs, and whether an odd
    number of minus signs was removed: ``-(1)``, ``((2))``, ``- -3``."""
    negative = False
    while isinstance(node, exp.Paren | exp.Neg):
        negative ^= isinstance(node, exp.Neg)
        node = node.this
    return node, negative


def number_text(node: object) -> str | None:
    """The text of a (possibly parenthesised, signed) number literal, with a
    leading ``-`` when negative; ``None`` for anything else."""
    value, negative = unwrapped(node)
    if not isinstance(value, exp.Literal) or value.is_string:
        return None
    text = str(value.this)
    return f"-{text}" if negative else text


def integer_literal(node: object) -> int | None:
    """The value of an integer literal (``-`` and parentheses allowed), else
    ``None``; digit strings too long for ``int`` are not integers here."""
    text = number_text(node)
    digits = "" if text is None else text.removeprefix("-")
    if text is None or not digits.isdecimal() or len(digits) > _MAX_DIGITS:
        return None
    return int(text)


def default_value(node: object, ctype: ColumnType | None, column: str) -> DefaultValue:
    """``DEFAULT`` → a function default or a constant of the column's type
    (``ctype`` is ``None`` when the type is not known here: the literal's own
    syntax decides)."""
    node, negative = unwrapped(node)
    if negative:
        return ConstantDefault(_negated(node, ctype, column))
    name: str | None = None
    if isinstance(node, exp.Column) and len(node.parts) == 1 and not node.this.quoted:
        name = str(node.name).upper()
    elif isinstance(node, exp.Anonymous) and not node.expressions:
        name = str(node.this).upper()
    if name is not None:
        if name not in FUNCTION_DEFAULTS:
            raise Untranslatable(f"Unknown default function {name} of column '{column}'", node)
        return FunctionDefault(name)
    return ConstantDefault(_literal(node, ctype, column))


def _negated(node: object, ctype: ColumnType | None, column: str) -> Any:
    """``-x`` as a default: only numbers have a sign."""
    if isinstance(node, exp.Literal) and not node.is_string:
        return _number(f"-{node.this}", ctype, column, node)
    raise Untranslatable(f"Only a number can be negated in the DEFAULT of column '{column}'", node)


def _literal(node: object, ctype: ColumnType | None, column: str) -> Any:
    """A literal (in parentheses or not) as a Python value of ``ctype``."""
    node, negative = unwrapped(node)
    if negative:
        return _negated(node, ctype, column)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean) and ctype in (None, ColumnType.BOOLEAN):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return _from_string(str(node.this), ctype, column, node)
        return _number(str(node.this), ctype, column, node)
    if isinstance(node, exp.HexString) and ctype in (None, ColumnType.BYTES):
        text = str(node.this)
        if len(text) % 2:
            raise Untranslatable(f"Odd number of hex digits in DEFAULT of '{column}'", node)
        return bytes.fromhex(text)
    if isinstance(node, exp.Cast) and isinstance(unwrapped(node.this)[0], exp.Literal):
        cast_type = column_type(node.to, column)[0]
        if ctype is not None and cast_type is not ctype and {cast_type, ctype} - _TIMESTAMPS:
            raise Untranslatable(
                f"A {cast_type.sql_name} literal is not a valid default of {ctype.sql_name} "
                f"column '{column}'",
                node,
            )
        return _literal(node.this, cast_type if ctype is None else ctype, column)
    if isinstance(node, exp.Boolean | exp.HexString):
        raise Untranslatable(f"Not a valid {_type_name(ctype)} default of column '{column}'", node)
    raise Untranslatable(f"DEFAULT of column '{column}' must be a literal", node)


def _type_name(ctype: ColumnType | None) -> str:
    return "untyped" if ctype is None else ctype.sql_name


_INTEGER_TYPES = frozenset({ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64})


def _number(text: str, ctype: ColumnType | None, column: str, node: exp.Expr) -> Any:
    """Without a column type, SQL's rules pick one from the literal's form:
    integer, exact decimal, or (with an exponent) approximate."""
    integral = text.lstrip("-").isdecimal()
    if ctype is None:
        if integral:
            ctype = ColumnType.INT64
        elif "e" in text.lower():
            ctype = ColumnType.DOUBLE
        else:
            ctype = ColumnType.DECIMAL
    try:
        if ctype in _INTEGER_TYPES and integral:
            return int(text)
        if ctype in (ColumnType.FLOAT, ColumnType.DOUBLE):
            value = float(text)
            if not math.isfinite(value):
                raise ValueError(f"{text} overflows")
            return value
        if ctype is ColumnType.DECIMAL:
            return decimal.Decimal(text)
    except (ValueError, ArithmeticError) as exc:
        raise Untranslatable(f"Number out of range for column '{column}'", node) from exc
    raise Untranslatable(f"{text} is not a valid {ctype.sql_name} default of '{column}'", node)


_PARSE_STRING: dict[ColumnType, Callable[[str], object]] = {
    ColumnType.STRING: str,
    ColumnType.DATE: dt.date.fromisoformat,
    ColumnType.TIME: dt.time.fromisoformat,
    ColumnType.TIMESTAMP: dt.datetime.fromisoformat,
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: dt.datetime.fromisoformat,
    ColumnType.UUID: uuid.UUID,
    ColumnType.ICEBERG_UUID: uuid.UUID,
}


def _from_string(text: str, ctype: ColumnType | None, column: str, node: exp.Expr) -> object:
    convert = str if ctype is None else _PARSE_STRING.get(ctype)
    if convert is None:
        raise Untranslatable(f"A string is not a valid {_type_name(ctype)} default", node)
    try:
        return convert(text.strip() if convert is not str else text)
    except ValueError as exc:
        raise Untranslatable(
            f"'{text}' is not a valid {_type_name(ctype)} value for column '{column}'", node
        ) from exc


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(node: object, what: str) -> float:
    """A quoted duration such as ``'90s'``, ``'15m'``, ``'1h'`` or ``'2d'`` in seconds."""
    if not isinstance(node, exp.Literal) or not node.is_string:
        raise Untranslatable(
            f"{what} takes a quoted duration such as '90s', '15m', '1h' or '2d'", node
        )
    text = str(node.this)
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise Untranslatable(
            f"'{text}' is not a duration: expecting a number and a unit s, m, h or d, "
            "such as '90s', '15m', '1h' or '2d'",
            node,
        )
    return float(match[1]) * _UNIT_SECONDS[match[2].lower()]

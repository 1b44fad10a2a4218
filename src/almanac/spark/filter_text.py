"""Spark SQL filter text as ``Predicate``s for file pruning.

``read_table`` applies a text filter verbatim as a Spark ``where``, so rows
are exact whatever it says. For pruning it also reads the simple parts: the
top-level AND terms of the form ``column <op> literal`` (either side),
``column IN (literals)``, ``column BETWEEN a AND b`` and ``column IS [NOT]
NULL``, where the literal means the same value under Spark's comparison as
under the statistics' Python comparison. Anything else prunes nothing: a
wrong prune would silently drop rows, a missed one only reads more files.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import sqlglot
from sqlglot import exp

from almanac.data import Predicate
from almanac.datatypes import ColumnType
from almanac.descriptors import Column, Table

__all__ = ["text_predicates"]

_DIALECT = sqlglot.Dialect.get_or_raise("spark")
_INTEGERS = {ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64}
_FLOATS = {ColumnType.FLOAT, ColumnType.DOUBLE}
_TEXT = {ColumnType.STRING, ColumnType.UUID}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_OPS: dict[type[exp.Expression], tuple[str, str]] = {
    exp.EQ: ("=", "="),
    exp.LT: ("<", ">"),
    exp.LTE: ("<=", ">="),
    exp.GT: (">", "<"),
    exp.GTE: (">=", "<="),
}


def _column(node: exp.Expression, table: Table) -> Column | None:
    if not isinstance(node, exp.Column) or node.table:
        return None
    name = node.name
    exact = table.column(name)
    if exact is not None:
        return exact
    folded = [c for c in table.columns if c.name.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def _value(node: exp.Expression, column: Column) -> tuple[bool, object]:
    """(True, value) when ``node`` is a literal whose value, compared with
    the column under Python rules, orders as Spark compares it."""
    ctype = column.type
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        ok, value = _value(node.this, column)
        if ok and isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            return True, -value
        return False, None
    if isinstance(node, exp.Boolean):
        return (True, bool(node.this)) if ctype is ColumnType.BOOLEAN else (False, None)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        if ctype is ColumnType.DATE and node.to.is_type(exp.DataType.Type.DATE):
            return _value(node.this, column)
        return False, None
    if not isinstance(node, exp.Literal):
        return False, None
    text = node.this
    if node.is_string:
        if ctype in _TEXT:
            return True, text
        if ctype is ColumnType.DATE and _ISO_DATE.match(text):
            try:
                return True, dt.date.fromisoformat(text)
            except ValueError:
                return False, None
        return False, None
    if ctype in _INTEGERS and re.fullmatch(r"\d+", text):
        return True, int(text)
    if ctype is ColumnType.DECIMAL:
        try:
            return True, decimal.Decimal(text)
        except decimal.InvalidOperation:
            return False, None
    if ctype in _FLOATS and re.fullmatch(r"\d+(\.\d*)?([eE][-+]?\d+)?", text):
        return True, float(text)
    return False, None


def _sub(node: object, table: Table) -> list[Predicate]:
    return _term(node, table) if isinstance(node, exp.Expression) else []


def _term(node: exp.Expression, table: Table) -> list[Predicate]:
    if isinstance(node, exp.Paren):
        return _sub(node.this, table)
    if isinstance(node, exp.And):
        return _sub(node.left, table) + _sub(node.right, table)
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        column = _column(node.this, table)
        return [] if column is None else [Predicate(column.name, "is_null")]
    if (
        isinstance(node, exp.Not)
        and isinstance(node.this, exp.Is)
        and isinstance(node.this.expression, exp.Null)
    ):
        column = _column(node.this.this, table)
        return [] if column is None else [Predicate(column.name, "is_not_null")]
    if isinstance(node, exp.In) and not node.args.get("query"):
        column = _column(node.this, table)
        if column is None:
            return []
        values = [_value(v, column) for v in node.expressions]
        if not values or not all(ok for ok, _ in values):
            return []
        return [Predicate(column.name, "in", [v for _, v in values])]
    if isinstance(node, exp.Between):
        column = _column(node.this, table)
        if column is None:
            return []
        (low_ok, low), (high_ok, high) = (
            _value(node.args["low"], column),
            _value(node.args["high"], column),
        )
        out = []
        if low_ok:
            out.append(Predicate(column.name, ">=", low))
        if high_ok:
            out.append(Predicate(column.name, "<=", high))
        return out
    ops = _OPS.get(type(node))
    if ops is None:
        return []
    left, right = node.this, node.expression
    column = _column(left, table)
    op, literal = ops[0], right
    if column is None:
        column = _column(right, table)
        op, literal = ops[1], left
    if column is None:
        return []
    ok, value = _value(literal, column)
    return [Predicate(column.name, op, value)] if ok else []


def text_predicates(text: str, table: Table) -> list[Predicate]:
    """The predicates that prune files for Spark filter ``text`` on
    ``table`` (possibly none). Text sqlglot cannot parse prunes nothing;
    Spark judges it when the filter is applied."""
    try:
        tree = sqlglot.parse_one(text, dialect=_DIALECT)
    except sqlglot.errors.SqlglotError:
        return []
    if not isinstance(tree, exp.Expression):
        return []
    return _term(tree, table)

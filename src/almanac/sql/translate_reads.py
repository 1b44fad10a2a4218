"""Read statements' trees (SHOW, DESCRIBE, SELECT from a system table,
``AS OF``) → the ``ReadStatement`` values ``almanac.sql.answer.run_read`` answers."""

from __future__ import annotations

from sqlglot import exp

from almanac.errors import ValidationError
from almanac.model.read_point import ReadPoint, parse_instant
from almanac.sql.dialect import AsOfClause, ReadStatementTree, Untranslatable
from almanac.sql.literals import integer_literal
from almanac.sql.names import ident, table_name
from almanac.sql.reads import ReadStatement

__all__ = ["translate_read"]


def translate_read(tree: ReadStatementTree, *, default_schema: str) -> ReadStatement:
    """A read statement's tree as the value ``almanac.sql.answer.run_read`` answers."""
    kind = str(tree.args["kind"].name)
    as_of = _as_of(tree.args.get("as_of"))
    target = tree.args.get("this")
    if kind == "DESCRIBE":
        schema, table = table_name(target, default_schema, "table")
        return ReadStatement("DESCRIBE TABLE", schema=schema, table=table, as_of=as_of)
    if kind == "TABLES" and target is not None:
        return ReadStatement("SHOW TABLES", schema=ident(target, "schema"), as_of=as_of)
    if kind == "DROPPED":
        named = None if target is None else ident(target, "schema")
        return ReadStatement("SHOW DROPPED TABLES", schema=named, as_of=as_of)
    if kind in ("INDEXES", "TABLETS") and target is not None:
        schema, table = table_name(target, default_schema, "table")
        return ReadStatement(f"SHOW {kind}", schema=schema, table=table, as_of=as_of)
    if kind == "SELECT":
        schema, table = table_name(target, default_schema, "table")
        return ReadStatement("SELECT", schema=schema, table=table, as_of=as_of)
    if kind == "HISTORY":
        limit = tree.args.get("limit")
        count = None if limit is None else _read_number(limit, "LIMIT", "a count of versions")
        if target is None:
            return ReadStatement("SHOW HISTORY", limit=count, as_of=as_of)
        schema, table = table_name(target, default_schema, "table")
        return ReadStatement("SHOW HISTORY", schema=schema, table=table, limit=count, as_of=as_of)
    if kind == "DIFF":
        if not as_of.latest:
            raise Untranslatable(
                "SHOW DIFF names both of its versions and takes no AS OF", tree.args["as_of"]
            )
        first, second = (_read_number(v, "SHOW DIFF", "a version") for v in tree.expressions)
        return ReadStatement("SHOW DIFF", versions=(first, second))
    return ReadStatement(f"SHOW {kind}", as_of=as_of)


def _read_number(node: exp.Expr, where: str, what: str) -> int:
    value = integer_literal(node)
    if value is None or not 0 <= value < 2**63:
        raise Untranslatable(f"{where} takes {what}: a non-negative 64-bit integer", node)
    return value


def _as_of(node: object) -> ReadPoint:
    if not isinstance(node, AsOfClause):
        return ReadPoint()
    value = node.this
    if node.args["kind"] == "VERSION":
        return ReadPoint(version=_read_number(value, "AS OF VERSION", "a version"))
    text = str(value.this)
    try:
        return ReadPoint(timestamp=parse_instant(text, "Timestamp"))
    except ValidationError as exc:
        raise Untranslatable(str(exc), value) from None

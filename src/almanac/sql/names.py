"""Names in the Almanac dialect's trees: identifiers (unquoted ones fold to
upper case), ``[schema.]name`` of tables and indexes, schema names, and node
class names as words for messages. DDL and read translation share them."""

from __future__ import annotations

import re

from sqlglot import exp

from almanac.sql.dialect import Untranslatable, check_clauses

__all__ = ["ident", "schema_name", "table_name", "words"]


def words(class_name: str) -> str:
    """``PrimaryKeyColumnConstraint`` → ``PRIMARY KEY COLUMN CONSTRAINT`` for messages."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", class_name).upper()


def ident(node: object, what: str) -> str:
    """Unquoted identifiers are case-insensitive and stored upper-case."""
    if not isinstance(node, exp.Identifier):
        raise Untranslatable(f"Expecting a simple {what} name", node)
    name = str(node.this)
    return name if node.quoted else name.upper()


def table_name(node: object, default_schema: str, what: str) -> tuple[str, str]:
    """``[schema.]name`` of a table or index → (schema, name)."""
    if not isinstance(node, exp.Table):
        raise Untranslatable(f"Expecting a {what} name", node)
    check_clauses(node, ("this", "db"), f"A {what} name")
    db = node.args.get("db")
    schema = default_schema if db is None else ident(db, "schema")
    return schema, ident(node.this, what)


def schema_name(node: object) -> str:
    """Schema statements name the schema in sqlglot's ``db`` slot."""
    if not isinstance(node, exp.Table) or node.args.get("this") is not None:
        raise Untranslatable("Expecting a schema name", node)
    check_clauses(node, ("db",), "A schema name")
    return ident(node.args.get("db"), "schema")

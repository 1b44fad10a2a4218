"""Partitioning and write order in SQL: ``PARTITIONED BY``, ``ALTER TABLE …
ADD/DROP/REPLACE PARTITION FIELD`` and ``WRITE [UN]ORDERED``, as Spark's
Iceberg extensions spell them, into the commands of
:mod:`almanac.commands.partitions`.

A term is a column (``c``, or ``s.f`` for a struct's field) or a transform
call on one: ``bucket(16, c)``, ``truncate(4, c)``, ``years(c)``,
``months(c)``, ``days(c)``, ``hours(c)`` (also ``year``, ``month``,
``day``, ``hour``, ``identity`` and ``void``). Whether the transform fits
the column is the command's to say.
"""

from __future__ import annotations

from sqlglot import exp

from almanac.commands import (
    Command,
    EvolvePartitionSpec,
    PartitionFieldDef,
    SetSortOrder,
    SortFieldDef,
)
from almanac.sql.dialect import (
    KeyColumn,
    PartitionFieldStatement,
    Untranslatable,
    WriteOrderStatement,
)
from almanac.sql.literals import integer_literal
from almanac.sql.names import ident, table_name

__all__ = ["partitioned_by", "partition_field_statement", "write_order_statement"]

_WIDTHS = ("bucket", "truncate")
_PLAIN = (
    "identity",
    "void",
    "year",
    "years",
    "month",
    "months",
    "day",
    "days",
    "date",
    "hour",
    "hours",
    "date_hour",
)


def _path(node: object) -> str:
    """A column or a struct field's dotted path, each part folded as a name is."""
    if isinstance(node, exp.Identifier):
        return ident(node, "column")
    if isinstance(node, exp.Column):
        return ".".join(ident(part, "column") for part in node.parts)
    if isinstance(node, exp.Dot):
        return f"{_path(node.this)}.{ident(node.expression, 'column')}"
    raise Untranslatable("Expecting a column name", node)


def _width(node: object, name: str) -> int:
    width = integer_literal(node)
    if width is None:
        raise Untranslatable(f"The first argument of {name}(…) must be an integer", node)
    return width


def _term(node: exp.Expr) -> tuple[str, str]:
    """(column path, transform) of a partition or sort term."""
    if isinstance(node, exp.PartitionedByBucket | exp.PartitionByTruncate):
        name = "bucket" if isinstance(node, exp.PartitionedByBucket) else "truncate"
        return _path(node.this), f"{name}[{_width(node.expression, name)}]"
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        args = node.expressions
        if name in _WIDTHS:
            if len(args) != 2:
                raise Untranslatable(f"{name}(…) takes a width and a column: {name}(16, c)", node)
            return _path(args[1]), f"{name}[{_width(args[0], name)}]"
        if name in _PLAIN:
            if len(args) != 1:
                raise Untranslatable(f"{name}(…) takes one column", node)
            return _path(args[0]), name
        raise Untranslatable(
            f"Unknown partition transform {name}(…): use bucket, truncate, years, months, "
            "days, hours, identity or void",
            node,
        )
    return _path(node), "identity"


def _field(node: exp.Expr, alias: object = None) -> PartitionFieldDef:
    column, transform = _term(node)
    name = None if alias is None else ident(alias, "partition field")
    return PartitionFieldDef(column, transform, name)


def partitioned_by(prop: exp.PartitionedByProperty) -> tuple[PartitionFieldDef, ...]:
    """The fields of ``PARTITIONED BY (term, …)``."""
    body = prop.this
    terms = body.expressions if isinstance(body, exp.Schema | exp.Tuple) else [body]
    return tuple(_field(term) for term in terms)


def partition_field_statement(tree: PartitionFieldStatement, default_schema: str) -> list[Command]:
    """ADD, DROP or REPLACE one partition field. A dropped or replaced field
    is named by its name when it is a bare name, else by its term."""
    schema, table = table_name(tree.this, default_schema, "table")
    action = tree.args["action"]
    alias = tree.args.get("alias")
    term = tree.args["expression"]
    if action == "ADD":
        add: tuple[PartitionFieldDef, ...] = (_field(term, alias),)
        drop: tuple[str | PartitionFieldDef, ...] = ()
    else:
        dropped: str | PartitionFieldDef
        if isinstance(term, exp.Column) and len(term.parts) == 1:
            dropped = ident(term.this, "partition field")
        else:
            dropped = _field(term)
        drop = (dropped,)
        add = () if action == "DROP" else (_field(tree.args["replacement"], alias),)
    return [
        EvolvePartitionSpec(
            name=table, schema=schema, add=add, drop=drop, if_exists=bool(tree.args.get("exists"))
        )
    ]


def write_order_statement(tree: WriteOrderStatement, default_schema: str) -> list[Command]:
    """``WRITE ORDERED BY …`` or ``WRITE UNORDERED``."""
    schema, table = table_name(tree.this, default_schema, "table")
    fields: list[SortFieldDef] = []
    for item in tree.expressions:
        assert isinstance(item, KeyColumn)
        column, transform = _term(item.this)
        fields.append(
            SortFieldDef(
                column,
                transform,
                descending=bool(item.args.get("desc")),
                nulls_first=item.args.get("nulls_first"),
            )
        )
    return [
        SetSortOrder(
            name=table,
            schema=schema,
            fields=tuple(fields),
            if_exists=bool(tree.args.get("exists")),
        )
    ]

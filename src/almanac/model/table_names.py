"""Which table a name means: ``T``, ``S.T`` or ``"my.schema"."Orders"``
parsed once into a ``TableName`` and resolved against one catalog version
by the catalog's one name rule (``almanac.model.names``). Shared by the front
ends that take a table name as text (Spark, Flight reads)."""

from __future__ import annotations

from dataclasses import dataclass

from almanac.errors import NotFoundError, ValidationError
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.descriptors import Schema, Table

__all__ = ["TableName", "parse_name", "resolve_schema", "resolve_table"]


@dataclass(frozen=True, slots=True)
class TableName:
    """A possibly schema-qualified name. A quoted part may hold dots; like
    every name it finds its object without regard to case (its exact
    spelling first, which picks one of an old catalog's case-only twins)."""

    schema: str | None
    schema_quoted: bool
    table: str
    table_quoted: bool

    def __str__(self) -> str:
        return self.table if self.schema is None else f"{self.schema}.{self.table}"


def parse_name(text: str) -> TableName:
    """``T``, ``S.T``, with double quotes around a part to keep its case or
    hold a dot: ``"my.schema"."Orders"``."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("A table name is required (the load/save path 'SCHEMA.TABLE')")
    parts: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise ValidationError(f"Unterminated quote in table name {text!r}", name=text)
            parts.append((text[i + 1 : end], True))
            i = end + 1
        else:
            end = text.find(".", i)
            end = n if end < 0 else end
            parts.append((text[i:end].strip(), False))
            i = end
        if i < n:
            if text[i] != ".":
                raise ValidationError(f"Invalid table name {text!r}", name=text)
            i += 1
            if i == n:
                parts.append(("", False))
    if len(parts) > 2 or any(not part for part, _ in parts):
        raise ValidationError(
            f"Invalid table name {text!r}: expected TABLE or SCHEMA.TABLE", name=text
        )
    if len(parts) == 1:
        return TableName(None, False, parts[0][0], parts[0][1])
    (schema, sq), (table, tq) = parts
    return TableName(schema, sq, table, tq)


def resolve_schema(version: CatalogVersion, name: TableName) -> Schema:
    """The schema a name means, by the catalog's one name rule: any spelling
    finds it, quoted or not (quoting keeps a dot or a space in a part)."""
    wanted = DEFAULT_SCHEMA if name.schema is None else name.schema
    schema = version.schema(wanted)
    if schema is None:
        raise NotFoundError(f"Schema '{wanted}' does not exist", kind="schema", name=wanted)
    return schema


def resolve_table(version: CatalogVersion, name: TableName) -> tuple[Schema, Table]:
    """The schema and table a name means at this version."""
    schema = resolve_schema(version, name)
    table = version.table(name.table, schema.name)
    if table is None:
        full = f"{schema.name}.{name.table}"
        raise NotFoundError(
            f"Table '{full}' does not exist at catalog version {version.version}",
            kind="table",
            name=full,
            version=version.version,
        )
    return schema, table

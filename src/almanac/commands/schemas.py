"""CREATE SCHEMA and DROP SCHEMA."""

from __future__ import annotations

from dataclasses import dataclass

from almanac.commands.base import (
    DEFAULT_SCHEMA,
    RESERVED_SCHEMAS,
    Command,
    IdAllocator,
    already_exists,
    check_name,
    require_schema,
    taken_by,
)
from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Schema
from almanac.model.entries import (
    IndexRemoved,
    SchemaCreated,
    SchemaDropped,
    TableDropped,
    UpdateEntry,
)
from almanac.model.names import name_key

__all__ = ["CreateSchema", "DropSchema", "drop_table_entries"]


def _check_not_reserved(name: str, action: str) -> None:
    if name_key(name) in _RESERVED_KEYS:
        raise ValidationError(
            f"Schema name '{name}' is reserved and cannot be {action}",
            kind="schema",
            name=name,
            rule="reserved",
        )


_RESERVED_KEYS = frozenset(name_key(name) for name in RESERVED_SCHEMAS)


def drop_table_entries(version: CatalogVersion, table_id: int) -> list[UpdateEntry]:
    """A table goes with all its indexes (STOPPING ones included)."""
    removes: list[UpdateEntry] = [IndexRemoved(i) for i in version.table_indexes.get(table_id, ())]
    return [*removes, TableDropped(table_id)]


@dataclass(frozen=True, slots=True)
class CreateSchema(Command):
    name: str
    if_not_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Schema", self.name)
        _check_not_reserved(self.name, "created")
        existing = taken_by(version, "schema", self.name)
        if existing is not None:
            if self.if_not_exists:
                return []
            raise already_exists("Schema", self.name, version.schemas_by_id[existing].name)
        ids = IdAllocator(version)
        return ids.entries(SchemaCreated(Schema(id=ids.next(), name=self.name)))


@dataclass(frozen=True, slots=True)
class DropSchema(Command):
    name: str
    if_exists: bool = False
    cascade: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Schema", self.name, lookup=True)
        _check_not_reserved(self.name, "dropped")
        if name_key(self.name) == name_key(DEFAULT_SCHEMA):
            raise ValidationError(
                f"Schema '{self.name}' is the default schema and cannot be dropped",
                kind="schema",
                name=self.name,
                rule="default",
            )
        if self.if_exists and version.schema(self.name) is None:
            return []
        schema = require_schema(version, self.name)
        tables = [t for t in version.tables_by_id.values() if t.schema_id == schema.id]
        if tables and not self.cascade:
            tables.sort(key=lambda t: (t.soft_deleted, t.id))
            example = f"'{self.name}.{tables[0].name}'" + (
                " (soft-deleted)" if tables[0].soft_deleted else ""
            )
            raise ValidationError(
                f"Schema '{self.name}' is not empty ({len(tables)} table(s), e.g. "
                f"{example}); use CASCADE to drop it with its objects",
                kind="schema",
                name=self.name,
                rule="not-empty",
            )
        entries: list[UpdateEntry] = []
        for table in sorted(tables, key=lambda t: t.id):
            entries.extend(drop_table_entries(version, table.id))
        entries.append(SchemaDropped(schema.id))
        return entries

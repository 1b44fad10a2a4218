"""CREATE / DROP / RENAME INDEX and the index status lifecycle.

REGISTERED → BUILDING → AVAILABLE → STOPPING → removed; REGISTERED and
BUILDING indexes are removed directly when dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from almanac.commands.base import (
    DEFAULT_SCHEMA,
    Command,
    IdAllocator,
    already_exists,
    check_enum,
    check_enum_tuple,
    check_name,
    ensure_relation_name_free,
    find_index,
    qualified,
    require_index_id,
    require_schema,
    require_table,
    taken_by,
)
from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Collation, Index, IndexKind, IndexStatus, Table
from almanac.model.entries import (
    IndexBuildStarted,
    IndexCreated,
    IndexMadeAvailable,
    IndexRemoved,
    IndexRenamed,
    IndexStopped,
    UpdateEntry,
)
from almanac.model.nested import check_key_column

__all__ = [
    "CreateIndex",
    "DropIndex",
    "MakeIndexAvailable",
    "RemoveIndex",
    "RenameIndex",
    "StartBuildingIndex",
]


def _refuse_primary_key(index: Index, schema: str, action: str) -> None:
    if index.primary_key:
        raise ValidationError(
            f"Index '{qualified(schema, index.name)}' is the primary-key index of its table "
            f"and cannot be {action}",
            index=qualified(schema, index.name),
            rule="primary-key-index",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateIndex(Command):
    """An index starts REGISTERED, or AVAILABLE when its table is created in
    the same version (there is nothing to build yet)."""

    name: str
    table: str
    columns: tuple[str, ...]
    schema: str = DEFAULT_SCHEMA
    kind: IndexKind = IndexKind.SORTED
    unique: bool = False
    collations: tuple[Collation, ...] | None = None
    if_not_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Index", self.name)
        schema = require_schema(version, self.schema)
        full = qualified(self.schema, self.name)
        existing = taken_by(version, "index", self.name, schema.id)
        found = None if existing is None else version.indexes_by_id[existing]
        if found is not None and not version.tables_by_id[found.table_id].soft_deleted:
            if self.if_not_exists:
                return []
            raise already_exists("Index", full, qualified(schema.name, found.name))
        table = require_table(version, self.schema, self.table)
        ensure_relation_name_free(version, schema, self.name)
        tname = qualified(self.schema, table.name)
        columns = tuple(_defined(table, c) for c in self.columns)
        if not columns:
            raise ValidationError(f"Index '{full}' needs at least one column", index=full)
        seen: set[str] = set()
        for col in columns:
            if col in seen:
                raise ValidationError(
                    f"Column '{col}' appears more than once in index '{full}'",
                    index=full,
                    column=col,
                )
            seen.add(col)
            column = table.column(col)
            if column is None:
                raise ValidationError(
                    f"Column '{col}' of index '{full}' does not exist in table '{tname}'",
                    index=full,
                    column=col,
                )
            check_key_column(tname, column, f"index '{full}'")
        if self.unique:
            missing = [c for c in table.colocation if c not in seen]
            if missing:
                raise ValidationError(
                    f"Unique index '{full}' must contain every colocation column of table "
                    f"'{tname}'; missing {missing}",
                    index=full,
                    rule="unique-colocation",
                )
        check_enum("Index kind", self.kind, IndexKind, f"index '{full}'")
        if self.collations is not None:
            check_enum_tuple("Sort order", self.collations, Collation, f"index '{full}'")
        collations: tuple[Collation, ...] = ()
        if self.kind is IndexKind.HASH:
            if self.collations:
                raise ValidationError(f"HASH index '{full}' takes no sort order", index=full)
        elif self.collations is None:
            collations = tuple(Collation.ASC_NULLS_LAST for _ in columns)
        elif len(self.collations) != len(columns):
            raise ValidationError(
                f"Index '{full}' has {len(columns)} column(s) but {len(self.collations)} "
                "sort order(s)",
                index=full,
            )
        else:
            collations = tuple(self.collations)
        status = (
            IndexStatus.AVAILABLE
            if table.created_version == version.version
            else IndexStatus.REGISTERED
        )
        ids = IdAllocator(version)
        index = Index(
            id=ids.next(),
            name=self.name,
            table_id=table.id,
            schema_id=schema.id,
            unique=self.unique,
            kind=self.kind,
            columns=columns,
            collations=collations,
            status=status,
        )
        return ids.entries(IndexCreated(index))


@dataclass(frozen=True, slots=True)
class DropIndex(Command):
    """An AVAILABLE index moves to STOPPING (readers may still use it); a
    REGISTERED or BUILDING one is removed at once."""

    name: str
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        index = find_index(version, self.schema, self.name, missing_ok=self.if_exists)
        if index is None:
            return []
        _refuse_primary_key(index, self.schema, "dropped")
        if index.status is IndexStatus.AVAILABLE:
            return [IndexStopped(index.id)]
        return [IndexRemoved(index.id)]


@dataclass(frozen=True, slots=True)
class RenameIndex(Command):
    name: str
    new_name: str
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Index", self.new_name)
        index = find_index(version, self.schema, self.name, missing_ok=self.if_exists)
        if index is None or index.name == self.new_name:
            return []
        _refuse_primary_key(index, self.schema, "renamed (rename its table instead)")
        schema = require_schema(version, self.schema)
        ensure_relation_name_free(version, schema, self.new_name, ignore_index=index.id)
        return [IndexRenamed(index.id, self.new_name)]


@dataclass(frozen=True, slots=True)
class _IndexTransition(Command):
    index_id: int
    source: ClassVar[IndexStatus]
    action: ClassVar[str]

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        index = require_index_id(version, self.index_id)
        if index.status is not self.source:
            raise ValidationError(
                f"Cannot {self.action} index '{index.name}' (id {index.id}): it is "
                f"{index.status.name}, expected {self.source.name}",
                index=index.name,
                status=index.status.name,
                rule="index-status",
            )
        return [self._entry(index.id)]

    def _entry(self, index_id: int) -> UpdateEntry:
        raise TypeError(f"{type(self).__name__} does not define _entry()")


@dataclass(frozen=True, slots=True)
class StartBuildingIndex(_IndexTransition):
    source = IndexStatus.REGISTERED
    action = "start building"

    def _entry(self, index_id: int) -> UpdateEntry:
        return IndexBuildStarted(index_id)


@dataclass(frozen=True, slots=True)
class MakeIndexAvailable(_IndexTransition):
    source = IndexStatus.BUILDING
    action = "make available"

    def _entry(self, index_id: int) -> UpdateEntry:
        return IndexMadeAvailable(index_id)


@dataclass(frozen=True, slots=True)
class RemoveIndex(_IndexTransition):
    source = IndexStatus.STOPPING
    action = "remove"

    def _entry(self, index_id: int) -> UpdateEntry:
        return IndexRemoved(index_id)


def _defined(table: Table, name: str) -> str:
    """The column as the table spells it (any case finds it), else as given."""
    column = table.column(name)
    return name if column is None else column.name

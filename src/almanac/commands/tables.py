"""CREATE / DROP / RENAME TABLE and table properties."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from almanac.commands.base import (
    DEFAULT_SCHEMA,
    ColumnDef,
    Command,
    CommitContext,
    IdAllocator,
    already_exists,
    check_column_count,
    check_column_def,
    check_column_names,
    check_default,
    check_enum,
    check_enum_tuple,
    check_name,
    ensure_relation_name_free,
    find_table,
    qualified,
    require_schema,
    reserve_text,
    taken_by,
)
from almanac.commands.partitions import PartitionFieldDef, SortFieldDef, new_table_layout
from almanac.commands.schemas import drop_table_entries
from almanac.commands.zones import DEFAULT_ZONE_NAME, new_zone
from almanac.errors import NotFoundError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import shown
from almanac.model.descriptors import (
    Collation,
    Index,
    IndexKind,
    IndexStatus,
    Schema,
    Table,
    TableProperties,
)
from almanac.model.entries import (
    DefaultZoneSet,
    IndexCreated,
    IndexRemoved,
    PrimaryKeySet,
    TableCreated,
    TableMoved,
    TablePropertiesSet,
    TableRecovered,
    TableRenamed,
    TableSoftDropped,
    UpdateEntry,
    ZoneCreated,
    pk_index_name,
)
from almanac.model.names import name_key
from almanac.model.nested import assign_ids, check_key_column

__all__ = [
    "MAX_RESERVE_S",
    "CreateTable",
    "DropTable",
    "PurgeTable",
    "RecoverTable",
    "RenameTable",
    "SetPrimaryKey",
    "SetTableProperties",
    "check_reserve",
]

MAX_STALE_ROWS = 2**63 - 1
"""Stored as a signed 64-bit integer."""
MAX_RESERVE_S = 10 * 365 * 86400
"""The longest soft-delete reserve (ten years): its end stays far inside
the hybrid clock's range."""


def check_reserve(value: object, what: str) -> float:
    """A reserve is a finite number of seconds in [0, MAX_RESERVE_S]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_RESERVE_S  # before isfinite: a huge int is no float
        or not math.isfinite(value)
    ):
        raise ValidationError(
            f"{what} must be a number of seconds in [0, {MAX_RESERVE_S}] (ten years), "
            f"got {shown(value)}",
            rule="reserve",
        )
    return float(value)


def _reserve_ms(seconds: float) -> int:
    """Whole milliseconds, never rounding a positive reserve down to none."""
    return math.ceil(seconds * 1000)


def _check_properties(table: str, props: TableProperties) -> None:
    fraction = props.stale_rows_fraction
    if (
        isinstance(fraction, bool)
        or not isinstance(fraction, int | float)
        or not math.isfinite(fraction)
        or not 0 <= fraction <= 1
    ):
        raise ValidationError(
            f"Stale rows fraction of table '{table}' must be in [0, 1], got {fraction!r}",
            table=table,
        )
    rows = props.min_stale_rows
    if isinstance(rows, bool) or not isinstance(rows, int) or not 0 <= rows <= MAX_STALE_ROWS:
        raise ValidationError(
            f"Minimum stale rows of table '{table}' must be a non-negative integer "
            f"(in [0, {MAX_STALE_ROWS}]), got {shown(rows)}",
            table=table,
            rule="min-stale-rows",
        )


def spelled_as_defined(names: tuple[str, ...], defined: Iterable[str]) -> tuple[str, ...]:
    """Column names as the table defines them: a key may name its columns
    in any case (names that match nothing are left for the checks)."""
    spelled = {name_key(name): name for name in defined}
    return tuple(spelled.get(name_key(name), name) for name in names)


def _check_key_list(
    table: str,
    what: str,
    names: tuple[str, ...],
    allowed: set[str],
    outside: str = "is not part of the primary key",
) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValidationError(
                f"Column '{name}' appears more than once in the {what} of table '{table}'",
                table=table,
                column=name,
            )
        seen.add(name)
        if name not in allowed:
            raise ValidationError(
                f"Column '{name}' of the {what} of table '{table}' {outside}",
                table=table,
                column=name,
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTable(Command):
    """A table, with its primary-key index ``<NAME>_PK`` when it has a key,
    in one version.

    A table without ``primary_key`` is a plain table. A new table is
    unpartitioned unless ``colocation`` is given: then its rows are
    bucketed on the first colocation column into its zone's partitions.
    Without a zone the table goes to the default zone, which is created as
    ``Default`` in the same version when the catalog has none yet.
    ``partitioned_by`` and ``ordered_by`` are its first partition spec and
    sort order (see ``almanac.commands.partitions``).
    """

    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    schema: str = DEFAULT_SCHEMA
    primary_key_kind: IndexKind = IndexKind.HASH
    primary_key_collations: tuple[Collation, ...] | None = None
    colocation: tuple[str, ...] | None = None
    zone: str | None = None
    storage_profile: str | None = None
    properties: TableProperties = field(default_factory=TableProperties)
    if_not_exists: bool = False
    partitioned_by: tuple[PartitionFieldDef, ...] = ()
    ordered_by: tuple[SortFieldDef, ...] = ()

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Table", self.name)
        schema = require_schema(version, self.schema)
        full = qualified(self.schema, self.name)
        existing = taken_by(version, "table", self.name, schema.id)
        if existing is not None and not version.tables_by_id[existing].soft_deleted:
            if self.if_not_exists:
                return []
            raise already_exists(
                "Table", full, qualified(schema.name, version.tables_by_id[existing].name)
            )
        ensure_relation_name_free(version, schema, self.name)

        if not self.columns:
            raise ValidationError(f"Table '{full}' needs at least one column", table=full)
        check_column_count(full, len(self.columns))
        check_column_names(full, [c.name for c in self.columns])
        for col in self.columns:
            check_column_def(full, col)

        defined = [c.name for c in self.columns]
        pk = spelled_as_defined(tuple(self.primary_key), defined)
        by_name = {c.name: c for c in self.columns}
        check_primary_key(full, pk, by_name)
        if pk:
            ensure_relation_name_free(version, schema, pk_index_name(self.name))
        collations = pk_collations(full, pk, self.primary_key_kind, self.primary_key_collations)
        colocation = pk if self.colocation is None else spelled_as_defined(self.colocation, defined)
        if self.colocation is not None and not colocation:
            raise ValidationError(f"Colocation columns of table '{full}' are empty", table=full)
        if pk:
            _check_key_list(full, "colocation columns", colocation, set(pk))
        else:
            _check_key_list(full, "colocation columns", colocation, set(by_name), "does not exist")
        _check_properties(full, self.properties)

        ids = IdAllocator(version)
        columns, next_column_id = assign_ids(self.columns, 0)
        for column in columns:
            check_default(full, column, column.default, primary_key=column.name in pk)
            if column.name in pk:
                check_key_column(full, column, "a primary key")

        zone_entries: list[UpdateEntry] = []
        if self.zone is not None:
            zone = version.zone(self.zone)
            if zone is None:
                raise NotFoundError(
                    f"Zone '{self.zone}' does not exist", kind="zone", name=self.zone
                )
        elif version.default_zone is not None:
            zone = version.default_zone
        else:
            zone = version.zone(DEFAULT_ZONE_NAME)
            if zone is None:
                zone = new_zone(ids.next(), DEFAULT_ZONE_NAME)
                zone_entries.append(ZoneCreated(zone))
            zone_entries.append(DefaultZoneSet(zone.id))
        profile = zone.default_storage_profile
        if self.storage_profile is not None:
            if self.storage_profile not in zone.storage_profiles:
                raise ValidationError(
                    f"Storage profile '{self.storage_profile}' of table '{full}' is not one of "
                    f"zone '{zone.name}' profiles {list(zone.storage_profiles)}",
                    table=full,
                    rule="storage-profile",
                )
            profile = self.storage_profile

        table_id = ids.next()
        pk_index_id = ids.next() if pk else None
        table = Table(
            id=table_id,
            schema_id=schema.id,
            name=self.name,
            zone_id=zone.id,
            columns=columns,
            primary_key=pk,
            primary_key_kind=self.primary_key_kind,
            primary_key_collations=collations,
            colocation=colocation,
            primary_key_index_id=pk_index_id,
            storage_profile=profile,
            properties=self.properties,
            next_column_id=next_column_id,
            bucketed=self.colocation is not None,
        )
        if self.partitioned_by or self.ordered_by:
            table = new_table_layout(
                full, table, zone.partitions, self.partitioned_by, self.ordered_by
            )
        if pk_index_id is None:
            return ids.entries(*zone_entries, TableCreated(table))
        index = pk_index(table, pk_index_id)
        return ids.entries(*zone_entries, TableCreated(table), IndexCreated(index))


def pk_index(table: Table, index_id: int) -> Index:
    """The unique index that enforces the table's primary key."""
    return Index(
        id=index_id,
        name=pk_index_name(table.name),
        table_id=table.id,
        schema_id=table.schema_id,
        unique=True,
        kind=table.primary_key_kind,
        columns=table.primary_key,
        collations=table.primary_key_collations,
        status=IndexStatus.AVAILABLE,
        primary_key=True,
    )


def check_primary_key(full: str, pk: tuple[str, ...], by_name: Mapping[str, object]) -> None:
    """Key columns exist, appear once and are NOT NULL."""
    _check_key_list(full, "primary key", pk, set(by_name), "does not exist")
    for name in pk:
        if getattr(by_name[name], "nullable", False):
            raise ValidationError(
                f"Primary key column '{name}' of table '{full}' cannot be nullable",
                table=full,
                column=name,
            )


def pk_collations(
    full: str,
    pk: tuple[str, ...],
    kind: IndexKind,
    given: tuple[Collation, ...] | None,
) -> tuple[Collation, ...]:
    """The sort order of a key of ``kind``: none for HASH, ascending by default."""
    where = f"table '{full}'"
    check_enum("Primary key kind", kind, IndexKind, where)
    if given is not None:
        check_enum_tuple("Primary key sort order", given, Collation, where)
    if kind is IndexKind.HASH or not pk:
        if given:
            raise ValidationError(
                f"A HASH primary key of table '{full}' takes no sort order"
                if pk
                else f"Table '{full}' has no primary key to take a sort order",
                table=full,
            )
        return ()
    if given is None:
        return tuple(Collation.ASC_NULLS_LAST for _ in pk)
    if len(given) != len(pk):
        raise ValidationError(
            f"Primary key of table '{full}' has {len(pk)} column(s) but {len(given)} sort order(s)",
            table=full,
        )
    return tuple(given)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPrimaryKey(Command):
    """Sets, changes or (with an empty ``primary_key``) drops a table's key,
    replacing its primary-key index. Refused while the table's layout
    depends on the key: a bucketed table's colocation columns must stay key
    columns. An unbucketed table's colocation follows its key."""

    name: str
    primary_key: tuple[str, ...]
    schema: str = DEFAULT_SCHEMA
    primary_key_kind: IndexKind = IndexKind.HASH
    primary_key_collations: tuple[Collation, ...] | None = None
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        full = qualified(self.schema, self.name)
        pk = spelled_as_defined(tuple(self.primary_key), [c.name for c in table.columns])
        check_primary_key(full, pk, {c.name: c for c in table.columns})
        collations = pk_collations(full, pk, self.primary_key_kind, self.primary_key_collations)
        if (pk, self.primary_key_kind, collations) == (
            table.primary_key,
            table.primary_key_kind,
            table.primary_key_collations,
        ):
            return []
        outside = [c for c in table.colocation if c not in pk]
        if table.bucketed and outside and (pk or table.primary_key):
            raise ValidationError(
                f"The primary key of table '{full}' cannot "
                + ("be dropped" if not pk else f"become ({', '.join(pk)})")
                + f": the table is bucketed on its colocation columns "
                f"({', '.join(table.colocation)}), which must be key columns, and "
                f"{', '.join(repr(c) for c in outside)} would not be",
                table=full,
                rule="primary-key-in-use",
                depends=", ".join(table.colocation),
            )
        colocation = table.colocation if table.bucketed else pk
        for owned in version.table_indexes.get(table.id, ()):
            index = version.indexes_by_id[owned]
            missing = [c for c in colocation if c not in index.columns]
            if index.unique and not index.primary_key and index.status.alive and missing:
                raise ValidationError(
                    f"The primary key of table '{full}' cannot become ({', '.join(pk)}): unique "
                    f"index '{index.name}' must contain every colocation column, which follow "
                    f"the key, and lacks {', '.join(repr(c) for c in missing)}",
                    table=full,
                    index=index.name,
                    rule="primary-key-in-use",
                )
        schema = require_schema(version, self.schema)
        entries: list[UpdateEntry] = []
        if table.primary_key_index_id is not None:
            entries.append(IndexRemoved(table.primary_key_index_id))
        ids = IdAllocator(version)
        index_id = ids.next() if pk else None
        if pk:
            ensure_relation_name_free(
                version, schema, pk_index_name(table.name), ignore_index=table.primary_key_index_id
            )
        entries.append(PrimaryKeySet(table.id, pk, self.primary_key_kind, collations, index_id))
        if index_id is None:
            return entries
        changed = table.evolve(
            primary_key=pk,
            primary_key_kind=self.primary_key_kind,
            primary_key_collations=collations,
        )
        return ids.entries(*entries, IndexCreated(pk_index(changed, index_id)))


@dataclass(frozen=True, slots=True)
class DropTable(Command):
    """Drops a table, or soft-deletes it when the reserve is positive.

    ``reserve_s`` None takes the committing node's default
    (``soft_delete_reserve_s`` of ``connect``); 0 drops at once. A
    soft-deleted table keeps its id, name and indexes for the reserve:
    ``RecoverTable`` brings it back, a purge removes it. ``at`` is the hybrid
    time of the drop: the committing node sets it (``bind``), replacing any
    value given, so no caller dates a drop; a command validated unbound
    (``preview``) judges time at the base version's activation.
    """

    name: str
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False
    reserve_s: float | None = None
    at: int | None = None

    def bind(self, context: CommitContext) -> DropTable:
        return replace(
            self,
            reserve_s=context.soft_delete_reserve_s if self.reserve_s is None else self.reserve_s,
            at=context.now,
        )

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        full = qualified(self.schema, self.name)
        reserve = 0.0 if self.reserve_s is None else self.reserve_s
        reserve = check_reserve(reserve, f"The reserve of DROP TABLE '{full}'")
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        if reserve == 0:
            return drop_table_entries(version, table.id)
        at = version.activation_time if self.at is None else self.at
        return [TableSoftDropped(table.id, at, _reserve_ms(reserve))]


@dataclass(frozen=True, slots=True)
class RecoverTable(Command):
    """Brings a soft-deleted table back, under ``new_name`` when given, while
    its reserve lasts (judged at ``at``, as for ``DropTable``)."""

    name: str
    schema: str = DEFAULT_SCHEMA
    new_name: str | None = None
    at: int | None = None

    def bind(self, context: CommitContext) -> RecoverTable:
        return replace(self, at=context.now)

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        schema = require_schema(version, self.schema)
        full = qualified(self.schema, self.name)
        table = version.soft_deleted_table(self.name, self.schema)
        if table is None:
            if version.table(self.name, self.schema) is not None:
                raise ValidationError(
                    f"Table '{full}' is not soft-deleted; only a soft-deleted table can be "
                    "recovered",
                    table=full,
                    rule="not-soft-deleted",
                )
            raise NotFoundError(
                f"No soft-deleted table '{full}' to recover (it was never soft-deleted, or "
                "it was purged or recovered)",
                kind="table",
                name=full,
            )
        at = version.activation_time if self.at is None else self.at
        end = table.purge_at
        if end is not None and at > end:
            raise ValidationError(
                f"Table '{full}' can no longer be recovered: its reserve has ended "
                f"({reserve_text(table)}); it awaits purge",
                table=full,
                rule="reserve-ended",
            )
        entries: list[UpdateEntry] = [TableRecovered(table.id)]
        if self.new_name is not None and self.new_name != table.name:
            check_name("Table", self.new_name)
            own_pk, own = table.primary_key_index_id, table.id
            names = (
                [self.new_name] if own_pk is None else [self.new_name, pk_index_name(self.new_name)]
            )
            for name in names:
                ensure_relation_name_free(
                    version, schema, name, ignore_index=own_pk, ignore_table=own
                )
            entries.append(TableRenamed(table.id, self.new_name))
        return entries


@dataclass(frozen=True, slots=True)
class PurgeTable(Command):
    """Removes a soft-deleted table for good, with its indexes, as a DROP
    without reserve would have. ``expired_only`` makes it a no-op while the
    reserve lasts (judged at ``at``): what the periodic purge commits, so a
    table recovered or re-dropped meanwhile is left alone."""

    name: str
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False
    expired_only: bool = False
    at: int | None = None

    def bind(self, context: CommitContext) -> PurgeTable:
        return replace(self, at=context.now)

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        full = qualified(self.schema, self.name)
        if self.if_exists and version.schema(self.schema) is None:
            return []
        require_schema(version, self.schema)
        table = version.soft_deleted_table(self.name, self.schema)
        if table is None:
            if self.if_exists:
                return []
            if version.table(self.name, self.schema) is not None:
                raise ValidationError(
                    f"Table '{full}' is not soft-deleted; only a soft-deleted table can be "
                    "purged (DROP TABLE it)",
                    table=full,
                    rule="not-soft-deleted",
                )
            raise NotFoundError(f"No soft-deleted table '{full}' to purge", kind="table", name=full)
        at = version.activation_time if self.at is None else self.at
        end = table.purge_at
        if self.expired_only and end is not None and at <= end:
            return []
        return drop_table_entries(version, table.id)


@dataclass(frozen=True, slots=True)
class RenameTable(Command):
    """Renames the table and its primary-key index; ids stay. With
    ``new_schema`` (another schema) it moves there too, with its indexes,
    whose names must be free in it."""

    name: str
    new_name: str
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False
    new_schema: str | None = None

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Table", self.new_name)
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        target = require_schema(
            version, self.schema if self.new_schema is None else self.new_schema
        )
        if target.id != table.schema_id:
            return self._move(version, table, target)
        if table.name == self.new_name:
            return []
        schema = require_schema(version, self.schema)
        # The table's own primary-key index is renamed by the same entry, so
        # its current name does not block either new name, nor does the
        # table's own name a change of case.
        own_pk, own = table.primary_key_index_id, table.id
        names = [self.new_name] if own_pk is None else [self.new_name, pk_index_name(self.new_name)]
        for name in names:
            ensure_relation_name_free(version, schema, name, ignore_index=own_pk, ignore_table=own)
        return [TableRenamed(table.id, self.new_name)]

    def _move(self, version: CatalogVersion, table: Table, target: Schema) -> list[UpdateEntry]:
        """Every name the table brings must be free in ``target``: its own,
        its primary-key index's new one, and its alive indexes' names."""
        own_pk = table.primary_key_index_id
        names = [self.new_name] if own_pk is None else [self.new_name, pk_index_name(self.new_name)]
        for index_id in version.table_indexes.get(table.id, ()):
            index = version.indexes_by_id[index_id]
            if index.id != own_pk and index.status.alive:
                names.append(index.name)
        for name in names:
            ensure_relation_name_free(version, target, name)
        return [TableMoved(table.id, target.id, self.new_name)]


@dataclass(frozen=True, slots=True, kw_only=True)
class SetTableProperties(Command):
    name: str
    schema: str = DEFAULT_SCHEMA
    stale_rows_fraction: float | None = None
    min_stale_rows: int | None = None
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        props = table.properties
        if self.stale_rows_fraction is not None:
            props = TableProperties(self.stale_rows_fraction, props.min_stale_rows)
        if self.min_stale_rows is not None:
            props = TableProperties(props.stale_rows_fraction, self.min_stale_rows)
        _check_properties(qualified(self.schema, self.name), props)
        if props == table.properties:
            return []
        return [TablePropertiesSet(table.id, props)]

"""Update entries: the small changes a version is made of, and how each applies.

An entry is a frozen value with one pure function ``apply(catalog)``. The
working catalog passed in already carries the new version number, which is
stamped on every object the entry touches. Entries are what the update log
stores; replaying them from version 0 rebuilds every version exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from almanac.errors import CorruptLogError
from almanac.model.catalog_version import CatalogVersion, bind_name, unbind_name
from almanac.model.clock import LOGICAL_BITS
from almanac.model.descriptors import (
    Collation,
    Column,
    Index,
    IndexKind,
    IndexStatus,
    Schema,
    Table,
    TableProperties,
    Zone,
)
from almanac.model.events import EventType
from almanac.model.nested import field_ids
from almanac.model.partitioning import PartitionSpec, SortOrder
from almanac.model.schema_sync import MAX_DELAY_MS

__all__ = [
    "ColumnAltered",
    "ZoneAltered",
    "ColumnsDropped",
    "SchemaDropped",
    "TableDropped",
    "ZoneDropped",
    "IndexMadeAvailable",
    "ColumnsAdded",
    "IndexCreated",
    "SchemaCreated",
    "TableCreated",
    "ZoneCreated",
    "ObjectIdsReserved",
    "IndexRemoved",
    "IndexRenamed",
    "TableRenamed",
    "TableMoved",
    "TableDataCommitted",
    "DATA_OPERATIONS",
    "TableSoftDropped",
    "TableRecovered",
    "DefaultZoneSet",
    "TablePropertiesSet",
    "PrimaryKeySet",
    "PartitionSpecAdded",
    "DefaultPartitionSpecSet",
    "SortOrderAdded",
    "DefaultSortOrderSet",
    "IndexBuildStarted",
    "IndexStopped",
    "UpdateEntry",
    "VersionedUpdate",
    "activation_time",
    "apply_entries",
    "apply_update",
    "data_only",
    "pk_index_name",
]


def _missing(kind: str, object_id: int, entry: object) -> CorruptLogError:
    return CorruptLogError(
        f"{type(entry).__name__} refers to {kind} id {object_id}, which does not exist",
        kind=kind,
        id=object_id,
    )


def _table(version: CatalogVersion, table_id: int, entry: object) -> Table:
    table = version.tables_by_id.get(table_id)
    if table is None:
        raise _missing("table", table_id, entry)
    return table


def _index(version: CatalogVersion, index_id: int, entry: object) -> Index:
    index = version.indexes_by_id.get(index_id)
    if index is None:
        raise _missing("index", index_id, entry)
    return index


def _put_table(version: CatalogVersion, table: Table) -> CatalogVersion:
    return version.evolve(tables_by_id=version.tables_by_id.set(table.id, table))


def _put_index(version: CatalogVersion, old: Index, new: Index) -> CatalogVersion:
    names, keys = version.index_names, version.index_keys
    if old.status.alive:
        names, keys = unbind_name(names, keys, (old.schema_id, old.name), old.id)
    if new.status.alive:
        names, keys = bind_name(names, keys, (new.schema_id, new.name), new.id)
    return version.evolve(
        indexes_by_id=version.indexes_by_id.set(new.id, new), index_names=names, index_keys=keys
    )


class UpdateEntry:
    """Base of all entries. ``event_type`` names the event it fires, if any."""

    __slots__ = ()
    event_type: ClassVar[EventType | None] = None

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        raise TypeError(f"{type(self).__name__} does not define apply()")

    def object_id(self) -> int:
        return -1


@dataclass(frozen=True, slots=True)
class ObjectIdsReserved(UpdateEntry):
    """Reserves ``delta`` object ids; ids are never handed out twice."""

    delta: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        return version.evolve(object_id_gen=version.object_id_gen + self.delta)


# -- schemas ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchemaCreated(UpdateEntry):
    schema: Schema

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        schema = replace(self.schema, update_version=version.version)
        names, keys = bind_name(version.schema_names, version.schema_keys, schema.name, schema.id)
        return version.evolve(
            schemas_by_id=version.schemas_by_id.set(schema.id, schema),
            schema_names=names,
            schema_keys=keys,
        )

    def object_id(self) -> int:
        return self.schema.id


@dataclass(frozen=True, slots=True)
class SchemaDropped(UpdateEntry):
    schema_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        schema = version.schemas_by_id.get(self.schema_id)
        if schema is None:
            raise _missing("schema", self.schema_id, self)
        names, keys = unbind_name(version.schema_names, version.schema_keys, schema.name, schema.id)
        return version.evolve(
            schemas_by_id=version.schemas_by_id.delete(schema.id),
            schema_names=names,
            schema_keys=keys,
        )

    def object_id(self) -> int:
        return self.schema_id


# -- zones --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneCreated(UpdateEntry):
    event_type = EventType.ZONE_CREATE
    zone: Zone

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        zone = replace(self.zone, update_version=version.version)
        names, keys = bind_name(version.zone_names, version.zone_keys, zone.name, zone.id)
        return version.evolve(
            zones_by_id=version.zones_by_id.set(zone.id, zone), zone_names=names, zone_keys=keys
        )

    def object_id(self) -> int:
        return self.zone.id


@dataclass(frozen=True, slots=True)
class ZoneAltered(UpdateEntry):
    """Replaces a zone's descriptor (alter or rename; the id stays)."""

    event_type = EventType.ZONE_ALTER
    zone: Zone

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = version.zones_by_id.get(self.zone.id)
        if old is None:
            raise _missing("zone", self.zone.id, self)
        zone = replace(self.zone, update_version=version.version)
        names, keys = unbind_name(version.zone_names, version.zone_keys, old.name, old.id)
        names, keys = bind_name(names, keys, zone.name, zone.id)
        return version.evolve(
            zones_by_id=version.zones_by_id.set(zone.id, zone), zone_names=names, zone_keys=keys
        )

    def object_id(self) -> int:
        return self.zone.id


@dataclass(frozen=True, slots=True)
class ZoneDropped(UpdateEntry):
    event_type = EventType.ZONE_DROP
    zone_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        zone = version.zones_by_id.get(self.zone_id)
        if zone is None:
            raise _missing("zone", self.zone_id, self)
        names, keys = unbind_name(version.zone_names, version.zone_keys, zone.name, zone.id)
        return version.evolve(
            zones_by_id=version.zones_by_id.delete(zone.id), zone_names=names, zone_keys=keys
        )

    def object_id(self) -> int:
        return self.zone_id


@dataclass(frozen=True, slots=True)
class DefaultZoneSet(UpdateEntry):
    event_type = EventType.SET_DEFAULT_ZONE
    zone_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        if self.zone_id not in version.zones_by_id:
            raise _missing("zone", self.zone_id, self)
        return version.evolve(default_zone_id=self.zone_id)

    def object_id(self) -> int:
        return self.zone_id


# -- tables -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableCreated(UpdateEntry):
    """Adds a table; its primary-key index arrives in a ``IndexCreated`` right after."""

    event_type = EventType.TABLE_CREATE
    table: Table

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        table = replace(self.table, created_version=version.version, update_version=version.version)
        key = (table.schema_id, table.name)
        names, keys = bind_name(version.table_names, version.table_keys, key, table.id)
        return version.evolve(
            tables_by_id=version.tables_by_id.set(table.id, table),
            table_names=names,
            table_keys=keys,
            table_indexes=version.table_indexes.set(table.id, ()),
        )

    def object_id(self) -> int:
        return self.table.id


@dataclass(frozen=True, slots=True)
class TableDropped(UpdateEntry):
    """Removes a table; its indexes were removed by the entries before it."""

    event_type = EventType.TABLE_DROP
    table_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        table = _table(version, self.table_id, self)
        key = (table.schema_id, table.name)
        names, keys = unbind_name(version.table_names, version.table_keys, key, table.id)
        data = version.table_data
        return version.evolve(
            tables_by_id=version.tables_by_id.delete(table.id),
            table_names=names,
            table_keys=keys,
            table_indexes=version.table_indexes.delete(table.id),
            table_data=data.delete(table.id) if table.id in data else data,
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TableSoftDropped(UpdateEntry):
    """Soft-deletes a table: it keeps its id, its name and its indexes, and
    name lookups stop seeing it. ``dropped_at`` (a hybrid timestamp of the
    committing node) and ``reserve_ms`` are decided when the drop commits
    and stored here, so every node agrees on when its reserve ends."""

    event_type = EventType.TABLE_SOFT_DROP
    table_id: int
    dropped_at: int
    reserve_ms: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        return _put_table(
            version,
            replace(
                old,
                dropped_at=self.dropped_at,
                reserve_ms=self.reserve_ms,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TableRecovered(UpdateEntry):
    """Brings a soft-deleted table back under its name (a ``TableRenamed``
    after it gives it another)."""

    event_type = EventType.TABLE_RECOVER
    table_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        return _put_table(
            version, replace(old, dropped_at=None, reserve_ms=0, update_version=version.version)
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TableRenamed(UpdateEntry):
    """Renames a table and its primary-key index to ``<NAME>_PK``."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    name: str

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        table = replace(old, name=self.name, update_version=version.version)
        names, keys = unbind_name(
            version.table_names, version.table_keys, (old.schema_id, old.name), old.id
        )
        names, keys = bind_name(names, keys, (table.schema_id, table.name), table.id)
        version = version.evolve(
            tables_by_id=version.tables_by_id.set(table.id, table),
            table_names=names,
            table_keys=keys,
        )
        if table.primary_key_index_id is None:
            return version
        pk = _index(version, table.primary_key_index_id, self)
        return _put_index(
            version, pk, replace(pk, name=pk_index_name(self.name), update_version=version.version)
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TableMoved(UpdateEntry):
    """Moves a table, with its indexes, to schema ``schema_id`` under
    ``name`` (its primary-key index to ``<NAME>_PK``): a rename across
    schemas. Ids stay, and so does its data, whose paths hold ids only."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    schema_id: int
    name: str

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        if self.schema_id not in version.schemas_by_id:
            raise _missing("schema", self.schema_id, self)
        table = replace(
            old, schema_id=self.schema_id, name=self.name, update_version=version.version
        )
        names, keys = unbind_name(
            version.table_names, version.table_keys, (old.schema_id, old.name), old.id
        )
        names, keys = bind_name(names, keys, (table.schema_id, table.name), table.id)
        version = version.evolve(
            tables_by_id=version.tables_by_id.set(table.id, table),
            table_names=names,
            table_keys=keys,
        )
        for index_id in version.table_indexes.get(table.id, ()):
            index = _index(version, index_id, self)
            pk = index.id == table.primary_key_index_id
            name = pk_index_name(self.name) if pk else index.name
            moved = replace(
                index, schema_id=self.schema_id, name=name, update_version=version.version
            )
            version = _put_index(version, index, moved)
        return version

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class PrimaryKeySet(UpdateEntry):
    """Sets, changes or (with an empty ``primary_key``) drops a table's key.
    The old key's index goes in an ``IndexRemoved`` before it, the new
    one's (``index_id``) arrives in an ``IndexCreated`` after it. The
    colocation of a table that is not bucketed follows the key."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    primary_key: tuple[str, ...]
    kind: IndexKind
    collations: tuple[Collation, ...]
    index_id: int | None

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        return _put_table(
            version,
            replace(
                old,
                primary_key=self.primary_key,
                primary_key_kind=self.kind,
                primary_key_collations=self.collations,
                primary_key_index_id=self.index_id,
                colocation=old.colocation if old.bucketed else self.primary_key,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


def pk_index_name(table_name: str) -> str:
    return f"{table_name}_PK"


@dataclass(frozen=True, slots=True)
class ColumnsAdded(UpdateEntry):
    """Appends columns whose ids the command took from ``next_column_id``."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    columns: tuple[Column, ...]

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        next_id = max([old.next_column_id, *(i + 1 for i in field_ids(self.columns))])
        return _put_table(
            version,
            replace(
                old,
                columns=old.columns + self.columns,
                next_column_id=next_id,
                table_version=old.table_version + 1,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class ColumnsDropped(UpdateEntry):
    event_type = EventType.TABLE_ALTER
    table_id: int
    names: tuple[str, ...]

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        gone = set(self.names)
        return _put_table(
            version,
            replace(
                old,
                columns=tuple(c for c in old.columns if c.name not in gone),
                table_version=old.table_version + 1,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class ColumnAltered(UpdateEntry):
    """Replaces the column with the same id (nested fields new to it took
    their ids from ``next_column_id``), except its ``initial_default``:
    that is fixed when the column is added, and an entry from a Column v1
    serializer only guesses it, so the replacement keeps the current one."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    column: Column

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        columns = tuple(
            replace(self.column, initial_default=c.initial_default) if c.id == self.column.id else c
            for c in old.columns
        )
        next_id = max([old.next_column_id, *(i + 1 for i in field_ids((self.column,)))])
        return _put_table(
            version,
            replace(
                old,
                columns=columns,
                next_column_id=next_id,
                table_version=old.table_version + 1,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TablePropertiesSet(UpdateEntry):
    event_type = EventType.TABLE_ALTER
    table_id: int
    properties: TableProperties

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        return _put_table(
            version, replace(old, properties=self.properties, update_version=version.version)
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class PartitionSpecAdded(UpdateEntry):
    """Adds a partition spec (not yet the default: a ``DefaultPartitionSpecSet``
    follows when it is). Its new field ids raise ``last_partition_id``."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    spec: PartitionSpec

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        last = max([old.last_partition_id, *(f.field_id for f in self.spec.fields)])
        return _put_table(
            version,
            replace(
                old,
                partition_specs=(*old.partition_specs, self.spec),
                last_partition_id=last,
                update_version=version.version,
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class DefaultPartitionSpecSet(UpdateEntry):
    """Makes an existing spec the one new files are written under."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    spec_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        if all(s.spec_id != self.spec_id for s in old.partition_specs):
            raise _missing("partition spec", self.spec_id, self)
        return _put_table(
            version, replace(old, default_spec_id=self.spec_id, update_version=version.version)
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class SortOrderAdded(UpdateEntry):
    """Adds a sort order (a ``DefaultSortOrderSet`` follows when it becomes
    the default)."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    order: SortOrder

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        return _put_table(
            version,
            replace(
                old, sort_orders=(*old.sort_orders, self.order), update_version=version.version
            ),
        )

    def object_id(self) -> int:
        return self.table_id


@dataclass(frozen=True, slots=True)
class DefaultSortOrderSet(UpdateEntry):
    """Makes an existing sort order the one Almanac's writers sort by."""

    event_type = EventType.TABLE_ALTER
    table_id: int
    order_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _table(version, self.table_id, self)
        if all(o.order_id != self.order_id for o in old.sort_orders):
            raise _missing("sort order", self.order_id, self)
        return _put_table(
            version,
            replace(old, default_sort_order_id=self.order_id, update_version=version.version),
        )

    def object_id(self) -> int:
        return self.table_id


# -- table data -----------------------------------------------------------------

DATA_OPERATIONS = ("append", "overwrite", "delete", "replace", "refs", "expire", "metadata")
"""What a data commit did: ``append`` adds rows, ``overwrite`` replaces
them, ``delete`` removes rows (a merge-on-read delete or a copy-on-write
one), ``replace`` rewrites files keeping every row (compaction), ``refs``
moves branches or tags, ``expire`` drops old snapshots from the table's
metadata, ``metadata`` changes only its Iceberg metadata (properties, a
ref's retention, a schema kept for later) over the same snapshot."""


@dataclass(frozen=True, slots=True)
class TableDataCommitted(UpdateEntry):
    """A data commit of one table: snapshot ``snapshot_id`` (whose
    ``metadata.json`` is ``metadata``) becomes the table's data at this
    version. The counts are what the commit added and removed, for history
    and listeners; the files themselves stay in the warehouse's metadata."""

    event_type = EventType.DATA_COMMIT
    table_id: int
    snapshot_id: int
    operation: str
    metadata: str
    rows_added: int = 0
    rows_removed: int = 0
    files_added: int = 0
    files_removed: int = 0

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        _table(version, self.table_id, self)
        if self.operation not in DATA_OPERATIONS:
            raise CorruptLogError(
                f"TableDataCommitted of table id {self.table_id} names operation "
                f"{self.operation!r}, not one of {', '.join(DATA_OPERATIONS)}",
                id=self.table_id,
            )
        return version.evolve(table_data=version.table_data.set(self.table_id, self.snapshot_id))

    def object_id(self) -> int:
        return self.table_id


# -- indexes ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexCreated(UpdateEntry):
    event_type = EventType.INDEX_CREATE
    index: Index

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        index = replace(self.index, created_version=version.version, update_version=version.version)
        _table(version, index.table_id, self)
        owned = version.table_indexes.get(index.table_id, ())
        key = (index.schema_id, index.name)
        names, keys = bind_name(version.index_names, version.index_keys, key, index.id)
        return version.evolve(
            indexes_by_id=version.indexes_by_id.set(index.id, index),
            index_names=names,
            index_keys=keys,
            table_indexes=version.table_indexes.set(index.table_id, (*owned, index.id)),
        )

    def object_id(self) -> int:
        return self.index.id


@dataclass(frozen=True, slots=True)
class IndexRenamed(UpdateEntry):
    index_id: int
    name: str

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _index(version, self.index_id, self)
        return _put_index(
            version, old, replace(old, name=self.name, update_version=version.version)
        )

    def object_id(self) -> int:
        return self.index_id


@dataclass(frozen=True, slots=True)
class _IndexStatusEntry(UpdateEntry):
    index_id: int
    target: ClassVar[IndexStatus]

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        old = _index(version, self.index_id, self)
        return _put_index(
            version, old, replace(old, status=self.target, update_version=version.version)
        )

    def object_id(self) -> int:
        return self.index_id


@dataclass(frozen=True, slots=True)
class IndexBuildStarted(_IndexStatusEntry):
    event_type = EventType.INDEX_BUILDING
    target = IndexStatus.BUILDING


@dataclass(frozen=True, slots=True)
class IndexMadeAvailable(_IndexStatusEntry):
    event_type = EventType.INDEX_AVAILABLE
    target = IndexStatus.AVAILABLE


@dataclass(frozen=True, slots=True)
class IndexStopped(_IndexStatusEntry):
    """An AVAILABLE index being dropped: it frees its name but stays until removed."""

    event_type = EventType.INDEX_STOPPING
    target = IndexStatus.STOPPING


@dataclass(frozen=True, slots=True)
class IndexRemoved(UpdateEntry):
    event_type = EventType.INDEX_REMOVED
    index_id: int

    def apply(self, version: CatalogVersion) -> CatalogVersion:
        index = _index(version, self.index_id, self)
        key = (index.schema_id, index.name)
        names, keys = unbind_name(version.index_names, version.index_keys, key, index.id)
        owned = version.table_indexes.get(index.table_id, ())
        return version.evolve(
            indexes_by_id=version.indexes_by_id.delete(index.id),
            index_names=names,
            index_keys=keys,
            table_indexes=version.table_indexes.set(
                index.table_id, tuple(i for i in owned if i != index.id)
            ),
        )

    def object_id(self) -> int:
        return self.index_id


# -- versions -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VersionedUpdate:
    """Everything version ``version`` changes, as stored in the update log.

    ``commit_time`` is the hybrid timestamp of the committing node; the
    version becomes active ``delay_ms`` later (see ``activation_time``).
    ``node`` names the committing node ("" in entries older than the field).
    ``request_id`` is the caller's idempotency key, ``request_digest`` a
    digest of the commands it named and ``applied[i]`` whether command ``i``
    changed anything: what a retry of the request gets back, on any node,
    without a side table that could disagree with the log.
    """

    version: int
    commit_time: int
    delay_ms: int
    entries: tuple[UpdateEntry, ...]
    node: str = ""
    request_id: str | None = None
    request_digest: bytes = b""
    applied: tuple[bool, ...] = ()


def data_only(entries: Iterable[UpdateEntry]) -> bool:
    """Whether ``entries`` are data commits alone, no DDL (true of none: a
    batch of no commands plans none, and what its attach adds is data). A
    version of them changes no schema anyone plans with: it has no
    schema-sync delay, is ready once applied and every earlier DDL version
    is ready, and its writer waits for no listener (see
    ``almanac.node.dispatch``)."""
    return all(isinstance(entry, TableDataCommitted) for entry in entries)


def activation_time(base: CatalogVersion, update: VersionedUpdate) -> int:
    """Commit time plus the delay, pushed past the previous version's so it
    increases strictly even when clocks or delays differ between nodes. A
    stored delay past ``MAX_DELAY_MS`` (committed by a release before the
    bound) counts as the bound: else every later version would activate, and
    every DDL wait, as far in the future as that one."""
    delay = min(max(update.delay_ms, 0), MAX_DELAY_MS)
    proposed = update.commit_time + (delay << LOGICAL_BITS)
    return max(proposed, base.activation_time + 1)


def apply_update(
    base: CatalogVersion, update: VersionedUpdate, applied: CatalogVersion | None = None
) -> CatalogVersion:
    """The one way a version is made, on the committing node and on replay alike.

    ``applied`` is what ``apply_entries`` already made of the update's
    entries on ``base`` (a committer's preview), so they are not applied twice.
    """
    if update.version != base.version + 1:
        raise CorruptLogError(
            f"Update of version {update.version} cannot follow version {base.version}",
            version=update.version,
        )
    activation = activation_time(base, update)
    if applied is None or applied.version != update.version:
        # Number and activation time in one copy (no entry reads the latter):
        # every version a node replays on opening its log is made here.
        working = base.evolve(version=update.version, activation_time=activation)
        return apply_entries(working, update.entries)
    if applied.activation_time == activation:
        return applied
    return applied.evolve(activation_time=activation)


def apply_entries(working: CatalogVersion, entries: Iterable[UpdateEntry]) -> CatalogVersion:
    """Apply entries in order to a working version that already carries the
    new version number; the one loop behind replay, commit and preview."""
    for entry in entries:
        working = entry.apply(working)
    return working

"""One line saying, in plain words, what a version changed.

Error messages (a lost race), logs, ``SHOW HISTORY``, the API's history and
the console all describe versions this way: ``added column STATUS
STRING(16) to SALES.ORDERS``. Each kind of entry has one small function
here that owns its wording (registered with ``@wording``); an entry kind
without one still reads as words (``partition spec set: SALES.ORDERS``),
and ``entry_kinds_without_wording`` lists such kinds so a test notices them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptor_sql import (
    column_sql,
    default_sql,
    index_columns_sql,
    partition_field_sql,
    sort_field_sql,
    type_sql,
)
from almanac.model.descriptors import Column, Index, Table, Zone
from almanac.model.entries import (
    ColumnAltered,
    ColumnsAdded,
    ColumnsDropped,
    DefaultPartitionSpecSet,
    DefaultSortOrderSet,
    DefaultZoneSet,
    IndexBuildStarted,
    IndexCreated,
    IndexMadeAvailable,
    IndexRemoved,
    IndexRenamed,
    IndexStopped,
    ObjectIdsReserved,
    PartitionSpecAdded,
    PrimaryKeySet,
    SchemaCreated,
    SchemaDropped,
    SortOrderAdded,
    TableCreated,
    TableDataCommitted,
    TableDropped,
    TableMoved,
    TablePropertiesSet,
    TableRecovered,
    TableRenamed,
    TableSoftDropped,
    UpdateEntry,
    VersionedUpdate,
    ZoneAltered,
    ZoneCreated,
    ZoneDropped,
)
from almanac.model.partitioning import PartitionSpec, SortOrder

__all__ = [
    "CHECKPOINT_SUMMARY",
    "SUMMARY_ENTRIES",
    "Names",
    "describe_entry",
    "entry_kinds_without_wording",
    "object_name",
    "summarize_update",
    "touches_table",
    "wording",
]

CHECKPOINT_SUMMARY = "checkpoint: the whole catalog as of this version; older versions compacted"
"""What the history says of the earliest version once the log was checkpointed."""

SUMMARY_ENTRIES = 20
"""The most entries a summary names; a script of thousands of statements
still gets one readable line (``…, and 2980 more``), in every history
row, event and error message that carries it."""

COLUMNS_NAMED = 8
"""The most columns a created table's or added columns' wording lists."""


@dataclass(frozen=True, slots=True)
class Names:
    """Objects named as the version left them (``after``), or as the one
    before had them, for an object the version removed."""

    before: CatalogVersion
    after: CatalogVersion

    def of(self, object_id: int) -> str:
        return (
            object_name(self.after, object_id)
            or object_name(self.before, object_id)
            or f"#{object_id}"
        )

    def before_name(self, object_id: int) -> str:
        """The name the object had before the version (a rename's old name)."""
        return object_name(self.before, object_id) or self.of(object_id)

    def table(self, table_id: int) -> Table | None:
        return self.after.tables_by_id.get(table_id) or self.before.tables_by_id.get(table_id)

    def index(self, index_id: int) -> Index | None:
        return self.after.indexes_by_id.get(index_id) or self.before.indexes_by_id.get(index_id)

    def zone(self, zone_id: int) -> Zone | None:
        return self.after.zones_by_id.get(zone_id) or self.before.zones_by_id.get(zone_id)


_E = TypeVar("_E", bound=UpdateEntry)
Wording = Callable[[Any, Names], str | None]
"""An entry's words, or ``None`` for bookkeeping that says nothing."""

_WORDINGS: dict[type[UpdateEntry], Wording] = {}


def wording(*kinds: type[_E]) -> Callable[[Callable[[_E, Names], str | None]], Wording]:
    """Make the decorated function the words of entries of ``kinds``."""

    def register(function: Callable[[_E, Names], str | None]) -> Wording:
        for kind in kinds:
            _WORDINGS[kind] = function
        return function

    return register


def describe_entry(entry: UpdateEntry, names: Names) -> str | None:
    """What ``entry`` did, in words; ``None`` for an entry that says nothing."""
    own = _WORDINGS.get(type(entry))
    if own is not None:
        return own(entry, names)
    words = " ".join(w.lower() for w in re.findall(r"[A-Z][a-z0-9]*", type(entry).__name__))
    object_id = entry.object_id()
    return f"{words}: {names.of(object_id)}" if object_id >= 0 else words


def entry_kinds_without_wording() -> list[str]:
    """Every entry class of almanac's own that falls back to its class name's words."""

    def every(kind: type[UpdateEntry]) -> Iterator[type[UpdateEntry]]:
        for sub in kind.__subclasses__():
            yield sub
            yield from every(sub)

    return sorted(
        {
            k.__name__
            for k in every(UpdateEntry)
            if k.__module__.startswith("almanac.") and not k.__name__.startswith("_")
        }
        - {k.__name__ for k in _WORDINGS}
    )


def summarize_update(update: VersionedUpdate, before: CatalogVersion, after: CatalogVersion) -> str:
    """``created schema SALES, added column NOTE STRING(200) to SALES.ORDERS``:
    each entry in words, objects named as of ``after`` (or ``before``, for
    an object the version removed). An update without entries is the one
    ``Catalog.history`` lists for a checkpoint."""
    if not update.entries:
        return CHECKPOINT_SUMMARY
    names = Names(before, after)
    parts: list[str] = []
    said = 0
    for entry in update.entries:
        text = describe_entry(entry, names)
        if text is None:
            continue
        said += 1
        if len(parts) < SUMMARY_ENTRIES:
            parts.append(text)
    more = said - len(parts)
    return ", ".join(parts) + (f", and {more} more" if more else "")


def touches_table(
    update: VersionedUpdate, table_id: int, before: CatalogVersion, after: CatalogVersion
) -> bool:
    """Whether a version changed the table (its data commits included) or
    one of its indexes."""
    names = Names(before, after)
    for entry in update.entries:
        object_id = entry.object_id()
        if object_id == table_id:
            return True
        index = names.index(object_id)
        if index is not None and index.table_id == table_id:
            return True
    return False


def object_name(version: CatalogVersion, object_id: int) -> str | None:
    """A table as ``SCHEMA.TABLE``, other objects by their name; ``None`` when
    ``version`` has no object of that id."""
    table = version.tables_by_id.get(object_id)
    if table is not None:
        schema = version.schemas_by_id.get(table.schema_id)
        return f"{schema.name}.{table.name}" if schema is not None else table.name
    for by_id in (version.schemas_by_id, version.zones_by_id, version.indexes_by_id):
        found = by_id.get(object_id)
        if found is not None:
            return str(found.name)
    return None


# -- the words of each entry ------------------------------------------------------


def column_text(column: Column) -> str:
    """``STATUS STRING(16) NOT NULL DEFAULT 'new'``: a column as DDL spells it."""
    return f"{column.name} {column_sql(column)}"


def _columns_text(columns: tuple[Column, ...]) -> str:
    shown = ", ".join(column_text(c) for c in columns[:COLUMNS_NAMED])
    more = len(columns) - COLUMNS_NAMED
    return shown + (f", and {more} more" if more > 0 else "")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


@wording(ObjectIdsReserved)
def _ids_reserved(entry: ObjectIdsReserved, names: Names) -> None:
    return None


@wording(SchemaCreated)
def _schema_created(entry: SchemaCreated, names: Names) -> str:
    return f"created schema {entry.schema.name}"


@wording(SchemaDropped)
def _schema_dropped(entry: SchemaDropped, names: Names) -> str:
    return f"dropped schema {names.of(entry.schema_id)}"


def _zone_shape(zone: Zone) -> str:
    return (
        f"{_plural(zone.partitions, 'partition')}, {_plural(zone.replicas, 'replica')}, "
        f"{zone.consistency_mode.name} consistency"
    )


@wording(ZoneCreated)
def _zone_created(entry: ZoneCreated, names: Names) -> str:
    return f"created zone {entry.zone.name} ({_zone_shape(entry.zone)})"


@wording(ZoneAltered)
def _zone_altered(entry: ZoneAltered, names: Names) -> str:
    old, new = names.before.zones_by_id.get(entry.zone.id), entry.zone
    if old is None:
        return f"altered zone {new.name} ({_zone_shape(new)})"
    changes = [
        f"{field.replace('_', ' ')} {_word(getattr(old, field))} → {_word(getattr(new, field))}"
        for field in (
            "partitions",
            "replicas",
            "quorum_size",
            "scale_up_seconds",
            "scale_down_seconds",
            "node_filter",
            "storage_profiles",
            "consistency_mode",
        )
        if getattr(old, field) != getattr(new, field)
    ]
    if old.name != new.name:
        changes.insert(0, f"renamed to {new.name}")
    return f"altered zone {old.name}" + (f": {', '.join(changes)}" if changes else "")


@wording(ZoneDropped)
def _zone_dropped(entry: ZoneDropped, names: Names) -> str:
    return f"dropped zone {names.of(entry.zone_id)}"


@wording(DefaultZoneSet)
def _default_zone_set(entry: DefaultZoneSet, names: Names) -> str:
    return f"made zone {names.of(entry.zone_id)} the default"


@wording(TableCreated)
def _table_created(entry: TableCreated, names: Names) -> str:
    table = entry.table
    text = f"created table {names.of(table.id)} ({_columns_text(table.columns)})"
    if table.primary_key:
        text += f" with primary key ({', '.join(table.primary_key)})"
    if table.partition_spec.fields:
        text += f", partitioned by ({_spec_text(table, table.partition_spec)})"
    if table.sort_order.fields:
        text += f", ordered by ({_order_text(table, table.sort_order)})"
    return text


@wording(TableDropped)
def _table_dropped(entry: TableDropped, names: Names) -> str:
    old = names.before.tables_by_id.get(entry.table_id)
    verb = "purged" if old is not None and old.dropped_at is not None else "dropped"
    return f"{verb} table {names.of(entry.table_id)}"


@wording(TableSoftDropped)
def _table_soft_dropped(entry: TableSoftDropped, names: Names) -> str:
    return (
        f"dropped table {names.of(entry.table_id)}, recoverable for {_duration(entry.reserve_ms)}"
    )


@wording(TableRecovered)
def _table_recovered(entry: TableRecovered, names: Names) -> str:
    return f"recovered table {names.of(entry.table_id)}"


@wording(TableRenamed)
def _table_renamed(entry: TableRenamed, names: Names) -> str:
    return f"renamed table {names.before_name(entry.table_id)} to {entry.name}"


@wording(TableMoved)
def _table_moved(entry: TableMoved, names: Names) -> str:
    schema = names.after.schemas_by_id.get(entry.schema_id)
    where = entry.schema_id if schema is None else schema.name
    return f"moved table {names.before_name(entry.table_id)} to {where}.{entry.name}"


@wording(PrimaryKeySet)
def _primary_key_set(entry: PrimaryKeySet, names: Names) -> str:
    table = names.of(entry.table_id)
    if not entry.primary_key:
        return f"dropped the primary key of {table}"
    return f"set the primary key of {table} to ({', '.join(entry.primary_key)})"


def _layout_table(table_id: int, names: Names) -> Table | None:
    return names.after.tables_by_id.get(table_id) or names.before.tables_by_id.get(table_id)


def _spec_text(table: Table | None, spec: PartitionSpec) -> str:
    if not spec.fields:
        return "unpartitioned"
    if table is None:
        return ", ".join(f"{f.transform}({f.source_id})" for f in spec.fields)
    return ", ".join(partition_field_sql(table, f) for f in spec.fields)


def _order_text(table: Table | None, order: SortOrder) -> str:
    if not order.fields:
        return "unordered"
    if table is None:
        return ", ".join(f"{f.transform}({f.source_id})" for f in order.fields)
    return ", ".join(sort_field_sql(table, f) for f in order.fields)


@wording(PartitionSpecAdded)
def _partition_spec_added(entry: PartitionSpecAdded, names: Names) -> str:
    table = _layout_table(entry.table_id, names)
    return (
        f"added partition spec {entry.spec.spec_id} ({_spec_text(table, entry.spec)}) "
        f"to {names.of(entry.table_id)}"
    )


@wording(DefaultPartitionSpecSet)
def _default_partition_spec_set(entry: DefaultPartitionSpecSet, names: Names) -> str:
    return f"made partition spec {entry.spec_id} the default of {names.of(entry.table_id)}"


@wording(SortOrderAdded)
def _sort_order_added(entry: SortOrderAdded, names: Names) -> str:
    table = _layout_table(entry.table_id, names)
    return (
        f"added sort order {entry.order.order_id} ({_order_text(table, entry.order)}) "
        f"to {names.of(entry.table_id)}"
    )


@wording(DefaultSortOrderSet)
def _default_sort_order_set(entry: DefaultSortOrderSet, names: Names) -> str:
    if entry.order_id == 0:
        return f"made {names.of(entry.table_id)} write unordered"
    return f"made sort order {entry.order_id} the default of {names.of(entry.table_id)}"


@wording(ColumnsAdded)
def _columns_added(entry: ColumnsAdded, names: Names) -> str:
    word = "column" if len(entry.columns) == 1 else "columns"
    return f"added {word} {_columns_text(entry.columns)} to {names.of(entry.table_id)}"


@wording(ColumnsDropped)
def _columns_dropped(entry: ColumnsDropped, names: Names) -> str:
    word = "column" if len(entry.names) == 1 else "columns"
    return f"dropped {word} {', '.join(entry.names)} from {names.of(entry.table_id)}"


@wording(ColumnAltered)
def _column_altered(entry: ColumnAltered, names: Names) -> str:
    new = entry.column
    table = names.before.tables_by_id.get(entry.table_id)
    old = next((c for c in table.columns if c.id == new.id), None) if table else None
    where = f"of {names.of(entry.table_id)}"
    if old is None:
        return f"altered column {column_text(new)} {where}"
    changes = []
    if old.name != new.name:
        changes.append(f"renamed to {new.name}")
    if type_sql(old) != type_sql(new):
        changes.append(f"type {type_sql(old)} → {type_sql(new)}")
    if old.nullable != new.nullable:
        changes.append("now nullable" if new.nullable else "now NOT NULL")
    if old.default != new.default:
        changes.append(
            f"default {default_sql(old.default) or 'none'} → {default_sql(new.default) or 'none'}"
        )
    if old.doc != new.doc:
        changes.append("comment dropped" if new.doc is None else f"comment {new.doc!r}")
    return f"altered column {old.name} {where}" + (f": {', '.join(changes)}" if changes else "")


@wording(TablePropertiesSet)
def _table_properties_set(entry: TablePropertiesSet, names: Names) -> str:
    table = names.before.tables_by_id.get(entry.table_id)
    new = entry.properties
    changes = [
        f"{field} {_word(getattr(table.properties, field))} → {_word(getattr(new, field))}"
        for field in ("stale_rows_fraction", "min_stale_rows")
        if table is not None and getattr(table.properties, field) != getattr(new, field)
    ]
    return f"set properties of {names.of(entry.table_id)}" + (
        f": {', '.join(changes)}" if changes else ""
    )


@wording(IndexCreated)
def _index_created(entry: IndexCreated, names: Names) -> str | None:
    index = entry.index
    table = names.table(index.table_id)
    if index.primary_key and table is not None and table.created_version == names.after.version:
        return None  # the table's own words name its key
    what = ("unique " if index.unique and not index.primary_key else "") + index.kind.name
    where = names.of(index.table_id)
    key = " primary-key" if index.primary_key else ""
    return f"created{key} {what} index {index.name} on {where} ({index_columns_sql(index)})"


@wording(IndexRenamed)
def _index_renamed(entry: IndexRenamed, names: Names) -> str:
    return f"renamed index {names.before_name(entry.index_id)} to {entry.name}"


@wording(IndexBuildStarted)
def _index_build_started(entry: IndexBuildStarted, names: Names) -> str:
    return f"started building index {names.of(entry.index_id)}"


@wording(IndexMadeAvailable)
def _index_made_available(entry: IndexMadeAvailable, names: Names) -> str:
    return f"made index {names.of(entry.index_id)} available"


@wording(IndexStopped)
def _index_stopped(entry: IndexStopped, names: Names) -> str:
    return f"dropped index {names.of(entry.index_id)} (stopping)"


@wording(IndexRemoved)
def _index_removed(entry: IndexRemoved, names: Names) -> str | None:
    index = names.before.indexes_by_id.get(entry.index_id)
    if index is not None and index.table_id not in names.after.tables_by_id:
        return None  # went with its table, whose own words say so
    return f"removed index {names.of(entry.index_id)}"


def _rows(count: int) -> str:
    """``1,000 rows``: a data commit's counts, with thousands separators."""
    return f"{count:,} row" if count == 1 else f"{count:,} rows"


def _files(count: int) -> str:
    return f"{count:,} file" if count == 1 else f"{count:,} files"


@wording(TableDataCommitted)
def _table_data_committed(entry: TableDataCommitted, names: Names) -> str:
    """A data commit in the words of its operation (``entries.DATA_OPERATIONS``);
    the table is named as the version left it, or as the one before had it."""
    table = names.of(entry.table_id)
    added, removed = entry.rows_added, entry.rows_removed
    match entry.operation:
        case "append":
            return f"append {_rows(added)} to {table} ({_files(entry.files_added)})"
        case "overwrite":
            gone = (
                f"{_rows(removed)} ({_files(entry.files_removed)})"
                if entry.files_removed
                else "nothing"
            )
            return f"overwrite {table}: {_rows(added)} ({_files(entry.files_added)}) replace {gone}"
        case "delete":
            # An engine's merge-on-read delete may not count the rows it hides.
            return f"delete {_rows(removed) if removed else 'rows'} from {table}"
        case "replace":
            return (
                f"compact {table}: {_files(entry.files_removed)} into {entry.files_added:,} "
                f"({_rows(added)})"
            )
        case "refs":
            return f"move refs of {table}"
        case "expire":
            return f"expire old snapshots of {table}"
        case _:  # "metadata"
            return f"change the Iceberg metadata of {table}"


def _word(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, enum.Enum):
        return value.name
    return "''" if value == "" else str(value)


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"

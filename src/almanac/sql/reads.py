"""The read statements: ``SHOW …``, ``DESCRIBE TABLE``, ``SHOW HISTORY`` and
``SHOW DIFF``, each answered as columns and rows of JSON scalars.

Every answer is a pure function of one ``CatalogVersion`` (plus, for the
history and the diff, what the node keeps of its versions), so that a read
``AS OF`` an old version is the same code as a read of the latest one.
``almanac.sql.answer.run_read`` picks the version and calls them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from almanac.commands.base import require_schema, require_table
from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import to_datetime
from almanac.model.descriptor_sql import default_sql, type_sql
from almanac.model.descriptors import Collation, Index, IndexKind, Table
from almanac.model.diff import CatalogDiff, JsonValue
from almanac.model.read_point import ReadPoint
from almanac.model.summary import summarize_update, touches_table
from almanac.sql.results import Cell, SqlResult

if TYPE_CHECKING:
    from almanac.metastore import Metastore
    from almanac.node.catalog_types import VersionInfo

__all__ = [
    "DESCRIBE_COLUMNS",
    "DIFF_COLUMNS",
    "DROPPED_COLUMNS",
    "HISTORY_COLUMNS",
    "INDEX_COLUMNS",
    "READ_KINDS",
    "SCHEMA_COLUMNS",
    "TABLE_COLUMNS",
    "ZONE_COLUMNS",
    "ReadSource",
    "ReadStatement",
    "Rows",
    "describe_table",
    "diff_rows",
    "history_rows",
    "iso_utc",
    "column_rows",
    "history_infos",
    "answer",
    "show_dropped_tables",
    "version_summary",
    "show_indexes",
    "show_schemas",
    "show_tables",
    "show_zones",
    "utc_text",
]

Rows = tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True, slots=True)
class ReadStatement:
    """One read statement as written; ``kind`` is ``SHOW SCHEMAS``, ``SHOW
    TABLES``, ``SHOW DROPPED TABLES``, ``SHOW INDEXES``, ``SHOW ZONES``, ``SHOW
    HISTORY``, ``SHOW TABLETS``, ``SHOW SERVERS``, ``SHOW DIFF``, ``DESCRIBE
    TABLE`` or ``SELECT`` (``SELECT * FROM`` a system table).

    ``schema``/``table`` name what ``IN``, ``ON``, ``DESCRIBE`` or ``FROM``
    names (``None``: every schema, every table); ``limit`` is ``SHOW HISTORY``'s,
    ``versions`` the two of ``SHOW DIFF``.
    """

    kind: str
    schema: str | None = None
    table: str | None = None
    limit: int | None = None
    versions: tuple[int, int] | None = None
    as_of: ReadPoint = field(default_factory=ReadPoint)

    def __post_init__(self) -> None:
        if self.kind not in READ_KINDS:
            raise ValidationError(f"Unknown read statement {self.kind!r}")
        if (self.kind == "SHOW DIFF") != (self.versions is not None):
            raise ValidationError("SHOW DIFF, and only it, names two versions")
        named = self.schema is not None and self.table is not None
        if self.kind in ("DESCRIBE TABLE", "SELECT") and not named:
            raise ValidationError(f"{self.kind} names a schema and a table")


READ_KINDS = (
    "SHOW SCHEMAS",
    "SHOW TABLES",
    "SHOW DROPPED TABLES",
    "SHOW INDEXES",
    "SHOW ZONES",
    "SHOW HISTORY",
    "SHOW TABLETS",
    "SHOW SERVERS",
    "SHOW DIFF",
    "DESCRIBE TABLE",
    "SELECT",
)


class ReadSource(Protocol):
    """What a read needs of a catalog node (``Catalog`` is one)."""

    @property
    def earliest_version(self) -> int: ...

    def catalog(self, version: int | None = None) -> CatalogVersion: ...

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogVersion: ...

    def history(self, since: int = 1) -> list[VersionInfo]: ...

    def diff(self, v1: int, v2: int) -> CatalogDiff: ...

    @property
    def metastore(self) -> Metastore:
        """Where the placement state of ``SHOW TABLETS``/``SHOW SERVERS`` lives."""
        ...


def answer(statement: ReadStatement, version: CatalogVersion) -> SqlResult:
    """The answer to a ``SHOW``/``DESCRIBE`` of one catalog version (not the
    history, the diff nor the system tables: ``almanac.sql.answer`` routes those)."""
    columns, rows = _ANSWERS[statement.kind]
    return SqlResult(version.version, columns, rows(version, statement))


# -- the catalog's objects ------------------------------------------------------------

SCHEMA_COLUMNS = ("NAME", "ID", "TABLES")


def show_schemas(version: CatalogVersion) -> Rows:
    """Schemas by name, with how many tables each holds."""
    counts: dict[int, int] = {}
    for t in version.tables():
        counts[t.schema_id] = counts.get(t.schema_id, 0) + 1
    return tuple(
        (s.name, s.id, counts.get(s.id, 0)) for s in sorted(version.schemas(), key=lambda s: s.name)
    )


TABLE_COLUMNS = ("SCHEMA", "NAME", "ID", "TABLE_VERSION", "ZONE", "COLUMNS", "PRIMARY_KEY")


def show_tables(version: CatalogVersion, schema: str | None) -> Rows:
    """Tables by schema and name, of one schema when ``schema`` is given
    (``NotFoundError`` if it does not exist)."""
    tables = (
        version.tables() if schema is None else version.tables(require_schema(version, schema).name)
    )
    return tuple(
        (
            _schema_name(version, t.schema_id),
            t.name,
            t.id,
            t.table_version,
            _zone_name(version, t.zone_id),
            len(t.columns),
            ", ".join(t.primary_key),
        )
        for t in sorted(tables, key=lambda t: (_schema_name(version, t.schema_id), t.name))
    )


DROPPED_COLUMNS = ("SCHEMA", "NAME", "ID", "DROP_VERSION", "DROPPED_AT", "RESERVED_UNTIL")


def show_dropped_tables(version: CatalogVersion, schema: str | None) -> Rows:
    """Soft-deleted tables by schema and name (of one schema when given),
    with when each went and until when RECOVER TABLE can bring it back."""
    if schema is None:
        tables = version.soft_deleted_tables()
    else:
        tables = version.soft_deleted_tables(require_schema(version, schema).name)
    return tuple(
        (
            _schema_name(version, t.schema_id),
            t.name,
            t.id,
            t.update_version,
            iso_utc(t.dropped_at or 0),
            iso_utc(t.purge_at or 0),
        )
        for t in sorted(tables, key=lambda t: (_schema_name(version, t.schema_id), t.name))
    )


INDEX_COLUMNS = ("SCHEMA", "TABLE", "NAME", "ID", "KIND", "UNIQUE", "COLUMNS", "STATUS")


def show_indexes(version: CatalogVersion, table: tuple[str, str] | None) -> Rows:
    """Indexes (primary keys and STOPPING ones included) by schema, table and
    name; of one ``(schema, table)`` when given (``NotFoundError`` if missing)."""
    if table is None:
        indexes = version.indexes()
    else:
        indexes = version.indexes(require_table(version, table[0], table[1]).id)
    rows = []
    for i in indexes:
        owner = version.tables_by_id.get(i.table_id)
        schema, table_name = _schema_name(version, i.schema_id), owner.name if owner else ""
        row = (schema, table_name, i.name, i.id, i.kind.name, i.unique, _key_columns(i))
        rows.append(((schema, table_name, i.name, i.id), (*row, i.status.name)))
    return tuple(row for _, row in sorted(rows))


ZONE_COLUMNS = (
    "NAME",
    "ID",
    "PARTITIONS",
    "REPLICAS",
    "STORAGE_PROFILES",
    "NODE_FILTER",
    "DEFAULT",
    "QUORUM_SIZE",
    "CONSISTENCY_MODE",
)


def show_zones(version: CatalogVersion) -> Rows:
    """Zones by name; ``STORAGE_PROFILES`` as ``CREATE ZONE`` takes them."""
    return tuple(
        (
            z.name,
            z.id,
            z.partitions,
            z.replicas,
            ",".join(z.storage_profiles),
            z.node_filter,
            z.id == version.default_zone_id,
            z.quorum_size,
            z.consistency_mode.name,
        )
        for z in sorted(version.zones(), key=lambda z: z.name)
    )


DESCRIBE_COLUMNS = ("NAME", "TYPE", "NULLABLE", "DEFAULT", "PRIMARY_KEY", "ID", "COMMENT")


def describe_table(version: CatalogVersion, schema: str, name: str) -> Rows:
    """One row per column, in table order: ``TYPE`` and ``DEFAULT`` as SQL
    text the dialect reads back, ``PRIMARY_KEY`` the column's 1-based place
    in the key (``None`` outside it), ``COMMENT`` its doc."""
    return column_rows(require_table(version, schema, name))


def column_rows(table: Table) -> Rows:
    """``describe_table``'s rows of a table already in hand (by id or by name)."""
    return tuple(
        (
            c.name,
            type_sql(c),
            c.nullable,
            default_sql(c.default),
            _key_place(table, c.name),
            c.id,
            c.doc,
        )
        for c in table.columns
    )


def _key_place(table: Table, column: str) -> int | None:
    return table.primary_key.index(column) + 1 if column in table.primary_key else None


def _key_columns(index: Index) -> str:
    """``A, B DESC``: the columns as ``CREATE INDEX`` takes them, with the
    null order only where it is not the direction's default."""
    if index.kind is IndexKind.HASH or not index.collations:
        return ", ".join(index.columns)
    return ", ".join(
        _collated(c, collation)
        for c, collation in zip(index.columns, index.collations, strict=False)
    )


def _collated(column: str, collation: Collation) -> str:
    text = column if collation.ascending else f"{column} DESC"
    if collation.nulls_first != (not collation.ascending):
        text += " NULLS FIRST" if collation.nulls_first else " NULLS LAST"
    return text


def _schema_name(version: CatalogVersion, schema_id: int) -> str:
    schema = version.schemas_by_id.get(schema_id)
    return schema.name if schema is not None else f"#{schema_id}"


def _zone_name(version: CatalogVersion, zone_id: int) -> str | None:
    zone = version.zones_by_id.get(zone_id)
    return zone.name if zone is not None else None


_Answer = Callable[[CatalogVersion, ReadStatement], Rows]


def _tables_answer(version: CatalogVersion, s: ReadStatement) -> Rows:
    return show_tables(version, s.schema)


def _dropped_answer(version: CatalogVersion, s: ReadStatement) -> Rows:
    return show_dropped_tables(version, s.schema)


def _indexes_answer(version: CatalogVersion, s: ReadStatement) -> Rows:
    return show_indexes(
        version, None if s.schema is None or s.table is None else (s.schema, s.table)
    )


def _describe_answer(version: CatalogVersion, s: ReadStatement) -> Rows:
    return describe_table(version, s.schema or "", s.table or "")  # both set (__post_init__)


_ANSWERS: dict[str, tuple[tuple[str, ...], _Answer]] = {
    "SHOW SCHEMAS": (SCHEMA_COLUMNS, lambda cat, _: show_schemas(cat)),
    "SHOW TABLES": (TABLE_COLUMNS, _tables_answer),
    "SHOW DROPPED TABLES": (DROPPED_COLUMNS, _dropped_answer),
    "SHOW INDEXES": (INDEX_COLUMNS, _indexes_answer),
    "SHOW ZONES": (ZONE_COLUMNS, lambda cat, _: show_zones(cat)),
    "DESCRIBE TABLE": (DESCRIBE_COLUMNS, _describe_answer),
}


# -- history and diff -------------------------------------------------------------------

HISTORY_COLUMNS = ("VERSION", "ACTIVATED_AT", "NODE", "SUMMARY")


def history_rows(
    source: ReadSource, up_to: int, limit: int | None, table_id: int | None = None
) -> Rows:
    """The available versions up to ``up_to``, newest first, at most ``limit``
    of them (only those that changed table ``table_id``, when given);
    ``ACTIVATED_AT`` is ISO-8601 UTC text to the millisecond."""
    return tuple(
        (i.version, iso_utc(i.activation_time), i.node, version_summary(source, i))
        for i in history_infos(source, up_to, limit, table_id)
    )


def history_infos(
    source: ReadSource, up_to: int, limit: int | None, table_id: int | None = None
) -> Sequence[VersionInfo]:
    """The available versions up to ``up_to``, newest first, at most
    ``limit``; with ``table_id``, only those that changed that table or its
    indexes (see ``summary.touches_table``)."""
    if table_id is None:
        since = 1 if limit is None else max(up_to - limit + 1, 1)  # versions are contiguous
        newest = [i for i in source.history(since) if i.version <= up_to][::-1]
        return newest if limit is None else newest[:limit]
    found: list[VersionInfo] = []
    for info in reversed([i for i in source.history(1) if i.version <= up_to]):
        if limit is not None and len(found) >= limit:
            break
        after = source.catalog(info.version)
        earlier = info.version - 1 >= source.earliest_version
        before = source.catalog(info.version - 1) if earlier else after
        if touches_table(info.update, table_id, before, after):
            found.append(info)
    return found


def version_summary(source: ReadSource, info: VersionInfo) -> str:
    """The one line ``SHOW HISTORY`` says of what ``info``'s version changed."""
    after = source.catalog(info.version)
    before = (
        source.catalog(info.version - 1) if info.version - 1 >= source.earliest_version else after
    )
    return summarize_update(info.update, before, after)


def iso_utc(timestamp: int) -> str:
    """A hybrid timestamp as ``2026-11-23T01:02:03.456Z``."""
    return utc_text(to_datetime(timestamp))


def utc_text(moment: dt.datetime) -> str:
    """An aware instant as ``2026-11-23T01:02:03.456Z``."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


DIFF_COLUMNS = ("CHANGE", "KIND", "NAME", "FIELD", "BEFORE", "AFTER")


def diff_rows(diff: CatalogDiff) -> Rows:
    """One row per added or removed object, and one per changed field;
    ``BEFORE``/``AFTER`` as compact JSON text: a field's values, or the
    definition of an object on the side that holds it."""
    rows: list[tuple[Cell, ...]] = []
    rows += [("added", r.kind, r.name, None, None, _json(r.definition)) for r in diff.added]
    rows += [("removed", r.kind, r.name, None, _json(r.definition), None) for r in diff.removed]
    for c in diff.changed:
        rows += [
            ("changed", c.kind, c.name, f.field, _json(f.before), _json(f.after)) for f in c.fields
        ]
    return tuple(rows)


def _json(value: JsonValue) -> str:
    shown = list(value) if isinstance(value, tuple) else value
    return json.dumps(shown, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

"""The rows of the system tables: the catalog describes itself, Kudu-style.

=================  ================================================  =========
table              one row per                                       AS OF
=================  ================================================  =========
``SYSTEM.TABLES``  table (``SHOW TABLES``' columns, then more)       yes
``SYSTEM.COLUMNS`` column of every table (``DESCRIBE TABLE``'s)      yes
``SYSTEM.HISTORY`` available catalog version (``SHOW HISTORY``'s)    yes
``SYSTEM.TABLETS`` tablet of every table route (placement)           no
``SYSTEM.SERVERS`` tablet server, registered or named by a route     no
=================  ================================================  =========

The first three are pure functions of one catalog version (and the history
the node keeps), answered by the same code as the ``SHOW`` reads, so any
version reads the same way. The last two are runtime state, not catalog
versions: they read the placement keys as they are now, and refuse a
version.

Rows hold typed Python values (``tuple`` for a list, a ``tuple`` of pairs
for a map, an aware ``datetime``); :func:`to_arrow` makes them an Arrow
table with the explicit types of :data:`SYSTEM_COLUMNS`, and
:func:`sql_cells` flattens them into the JSON scalars of a SQL answer.
``SYSTEM`` is a reserved schema name: no user table can shadow these.

``almanac.system_tables.system_table`` is the front door (it opens a
target for one read); this module stands on the SQL reads (``SHOW``'s
rows) and the placement keys, and ``almanac.sql.answer`` answers
``SELECT`` from it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from almanac import _check as check
from almanac.errors import CorruptDataError, NotFoundError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import to_datetime
from almanac.model.descriptor_sql import partition_field_sql, sort_field_sql
from almanac.model.descriptors import Table
from almanac.model.read_point import ReadPoint
from almanac.placement.model import TabletState
from almanac.placement.state import (
    read_reports,
    read_routes,
    read_routes_with_reasons,
    read_server_indexes,
    read_servers,
)
from almanac.sql.reads import (
    TABLE_COLUMNS,
    ReadSource,
    column_rows,
    history_infos,
    show_tables,
    utc_text,
    version_summary,
)
from almanac.sql.results import Cell

if TYPE_CHECKING:
    import pyarrow as pa

    from almanac.metastore import Metastore

__all__ = [
    "SYSTEM_COLUMNS",
    "SYSTEM_SCHEMA",
    "SYSTEM_TABLES",
    "ColumnKind",
    "SystemRows",
    "arrow_schema",
    "sql_cells",
    "system_rows",
    "to_arrow",
]

SYSTEM_SCHEMA = "SYSTEM"

ColumnKind = Literal["int64", "int32", "string", "bool", "timestamp", "strings", "pairs"]
"""A column's type: ``timestamp`` is microseconds in UTC, ``strings`` a list
of text, ``pairs`` a map from text to text."""

Value = Cell | dt.datetime | tuple[str, ...] | tuple[tuple[str, str], ...]
Row = tuple[Value, ...]

_TABLE_EXTRA: tuple[tuple[str, ColumnKind], ...] = (
    ("SCHEMA_ID", "int64"),
    ("COLOCATION", "string"),
    ("STORAGE_PROFILE", "string"),
    ("CREATED_VERSION", "int64"),
    ("UPDATE_VERSION", "int64"),
    ("PARTITION_SPEC", "string"),
    ("SORT_ORDER", "string"),
)

SYSTEM_COLUMNS: dict[str, tuple[tuple[str, ColumnKind], ...]] = {
    "TABLES": (
        ("SCHEMA", "string"),
        ("NAME", "string"),
        ("ID", "int64"),
        ("TABLE_VERSION", "int64"),
        ("ZONE", "string"),
        ("COLUMNS", "int32"),
        ("PRIMARY_KEY", "string"),
        *_TABLE_EXTRA,
    ),
    "COLUMNS": (
        ("SCHEMA", "string"),
        ("TABLE", "string"),
        ("TABLE_ID", "int64"),
        ("POSITION", "int32"),
        ("NAME", "string"),
        ("TYPE", "string"),
        ("NULLABLE", "bool"),
        ("DEFAULT", "string"),
        ("PRIMARY_KEY", "int32"),
        ("ID", "int64"),
        ("COMMENT", "string"),
    ),
    "HISTORY": (
        ("VERSION", "int64"),
        ("ACTIVATED_AT", "timestamp"),
        ("NODE", "string"),
        ("REQUEST_ID", "string"),
        ("SUMMARY", "string"),
    ),
    "TABLETS": (
        ("TABLE_ID", "int64"),
        ("SCHEMA", "string"),
        ("TABLE", "string"),
        ("TABLET_ID", "int64"),
        ("PARTITION", "int32"),
        ("STATE", "string"),
        ("REPLICAS", "strings"),
        ("LEADER", "string"),
        ("REPORTED_TABLE_VERSION", "int64"),
        ("TABLE_VERSION", "int64"),
        ("ROUTE_VERSION", "int64"),
        ("ALTERING", "bool"),
        ("REASON", "string"),
    ),
    "SERVERS": (
        ("NAME", "string"),
        ("HOST", "string"),
        ("FLIGHT_PORT", "int32"),
        ("ATTRIBUTES", "pairs"),
        ("STORAGE_PROFILES", "strings"),
        ("STARTED_AT", "timestamp"),
        ("LIVE", "bool"),
        ("TABLETS", "int64"),
        ("LEADERS", "int64"),
        ("REPORTED_AT", "timestamp"),
    ),
}
"""Each system table's columns, in order, with their types."""

SYSTEM_TABLES = tuple(f"{SYSTEM_SCHEMA}.{name}" for name in SYSTEM_COLUMNS)
"""The system tables' full names."""

_VERSIONED = ("TABLES", "COLUMNS", "HISTORY")


@dataclass(frozen=True, slots=True)
class SystemRows:
    """One system table's answer: its short ``name`` (``TABLES``), the
    catalog ``version`` it read (the latest for placement tables) and its
    ``rows`` in the order of ``SYSTEM_COLUMNS[name]``."""

    name: str
    version: int
    rows: tuple[Row, ...]

    @property
    def columns(self) -> tuple[tuple[str, ColumnKind], ...]:
        return SYSTEM_COLUMNS[self.name]


def system_name(name: object) -> str:
    """The short name (``TABLES``) of ``SYSTEM.TABLES``, in any case;
    ``NotFoundError`` listing the system tables for any other name."""
    text = check.string(name, "Parameter 'name' of system_table")
    schema, dot, short = text.upper().partition(".")
    if dot and schema == SYSTEM_SCHEMA and short in SYSTEM_COLUMNS:
        return short
    raise NotFoundError(
        f"No system table {name!r}: the system tables are {', '.join(SYSTEM_TABLES)}",
        kind="system table",
        name=name,
    )


# -- rows of one catalog version ---------------------------------------------------------


def tables_rows(version: CatalogVersion) -> tuple[Row, ...]:
    """``SHOW TABLES``' rows of every schema, each followed by what it leaves out."""
    rows: list[Row] = []
    for shown in show_tables(version, None):
        table = _shown_table(version, shown)
        extra = (
            table.schema_id,
            ", ".join(table.colocation),
            table.storage_profile,
            table.created_version,
            table.update_version,
            ", ".join(partition_field_sql(table, f) for f in table.partition_spec.fields),
            ", ".join(sort_field_sql(table, f) for f in table.sort_order.fields),
        )
        rows.append((*shown, *extra))
    return tuple(rows)


def _shown_table(version: CatalogVersion, shown: tuple[Cell, ...]) -> Table:
    """The table of one ``SHOW TABLES`` row (its ``ID``)."""
    table_id = shown[TABLE_COLUMNS.index("ID")]
    assert isinstance(table_id, int)
    return version.tables_by_id[table_id]


def columns_rows(version: CatalogVersion) -> tuple[Row, ...]:
    """``DESCRIBE TABLE``'s rows of every table, tables in ``SYSTEM.TABLES``' order."""
    rows: list[Row] = []
    for shown in show_tables(version, None):
        table = _shown_table(version, shown)
        for position, column in enumerate(column_rows(table), start=1):
            rows.append((shown[0], table.name, table.id, position, *column))
    return tuple(rows)


def history_rows(source: ReadSource, up_to: int) -> tuple[Row, ...]:
    """``SHOW HISTORY``'s versions up to ``up_to``, newest first, with typed times."""
    return tuple(
        (
            info.version,
            to_datetime(info.activation_time),
            info.node,
            info.request_id,
            version_summary(source, info),
        )
        for info in history_infos(source, up_to, None)
    )


# -- rows of the placement state ---------------------------------------------------------

_GONE = (TabletState.DELETED, TabletState.REPLACED)
"""Tablet states that no longer occupy a server."""


def tablets_rows(
    store: Metastore, version: CatalogVersion, table_id: int | None = None
) -> tuple[Row, ...]:
    """One row per tablet of every route (of one table when ``table_id`` is
    given), by table id and tablet id; names from ``version`` (``None`` once the
    table is gone from it); ``REASON`` is why the placement leader cannot place
    the tablet (``None`` once it can)."""
    routes, reasons = read_routes_with_reasons(store, table_id)
    rows: list[Row] = []
    for tid in sorted(routes):
        route = routes[tid]
        table = version.tables_by_id.get(tid)
        schema = None if table is None else version.schemas_by_id.get(table.schema_id)
        altering = route.altering
        why = reasons.get(tid)
        for tablet in sorted(route.tablets, key=lambda t: t.id):
            rows.append(
                (
                    tid,
                    None if schema is None else schema.name,
                    None if table is None else table.name,
                    tablet.id,
                    tablet.partition,
                    tablet.state.value,
                    tuple(tablet.replicas),
                    tablet.leader,
                    tablet.table_version,
                    route.table_version,
                    route.version,
                    altering,
                    None if why is None else why.reason(tablet.id),
                )
            )
    return tuple(rows)


def servers_rows(store: Metastore) -> tuple[Row, ...]:
    """Registered servers (``LIVE``), and servers a route or a server index
    still names though their lease is gone (not ``LIVE``, no address), by
    name; ``TABLETS``/``LEADERS`` count the tablets routes place on them
    that are not DELETED or REPLACED."""
    servers = read_servers(store)
    reports = read_reports(store)
    tablets: dict[str, int] = {}
    leaders: dict[str, int] = {}
    for route in read_routes(store).values():
        for tablet in route.tablets:
            if tablet.state in _GONE:
                continue
            for replica in tablet.replicas:
                tablets[replica] = tablets.get(replica, 0) + 1
            if tablet.leader is not None:
                leaders[tablet.leader] = leaders.get(tablet.leader, 0) + 1
    indexed = read_server_indexes(store)
    rows: list[Row] = []
    for name in sorted(set(servers) | set(tablets) | set(leaders) | set(indexed)):
        info = servers.get(name)
        report = reports.get(name)
        reported = None if report is None else _instant(report.reported_at, f"{name}'s report time")
        counts = (tablets.get(name, 0), leaders.get(name, 0), reported)
        if info is None:
            rows.append((name, None, None, (), (), None, False, *counts))
            continue
        registered = (
            info.host,
            info.flight_port,
            tuple(info.attributes),
            tuple(info.storage_profiles),
            _instant(info.started_at, f"{name}'s start time"),
        )
        rows.append((name, *registered, True, *counts))
    return tuple(rows)


def _instant(seconds: float, what: str) -> dt.datetime:
    """Seconds since the epoch as an instant; stored seconds past year 9999
    are as damaged as unreadable bytes."""
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    except (OverflowError, ValueError, OSError):
        raise CorruptDataError(f"{what} is {seconds!r} seconds, past any date", key=what) from None


# -- answering ------------------------------------------------------------------------------


def system_rows(
    source: ReadSource, name: str, *, as_of: ReadPoint | None = None, table_id: int | None = None
) -> SystemRows:
    """The rows of system table ``name`` (``SYSTEM.TABLES`` or ``TABLES``) at
    ``as_of`` (the latest for ``None``); ``table_id`` keeps the tablets of one
    table. A version for a placement table is a ``ValidationError``."""
    if not callable(getattr(source, "catalog", None)):
        raise check.fail("Parameter 'source' of system_rows", "a Catalog", source)
    check.string(name, "Parameter 'name' of system_rows")
    check.optional_instance(as_of, ReadPoint, "Parameter 'as_of' of system_rows")
    check.optional_int(table_id, "Parameter 'table_id' of system_rows")
    short = name if name in SYSTEM_COLUMNS else system_name(name)
    if short not in _VERSIONED:
        if as_of is not None and not as_of.latest:
            raise ValidationError(
                f"{SYSTEM_SCHEMA}.{short} is the placement state as it is now, which catalog "
                "versions do not record: read it without a version or timestamp",
                name=f"{SYSTEM_SCHEMA}.{short}",
                rule="current-only",
            )
        version = source.catalog()
        if short == "TABLETS":
            rows = tablets_rows(source.metastore, version, table_id)
        else:
            rows = servers_rows(source.metastore)
        return SystemRows(short, version.version, rows)
    version = (as_of or ReadPoint()).resolve(source)
    answers: dict[str, Callable[[], tuple[Row, ...]]] = {
        "TABLES": lambda: tables_rows(version),
        "COLUMNS": lambda: columns_rows(version),
        "HISTORY": lambda: history_rows(source, version.version),
    }
    return SystemRows(short, version.version, answers[short]())


def sql_cells(rows: SystemRows) -> tuple[tuple[Cell, ...], ...]:
    """The rows as JSON scalars: a list as ``a, b``, a map as ``k=v, k2=v2``,
    an instant as ISO-8601 UTC text."""
    check.instance(rows, SystemRows, "Parameter 'rows' of sql_cells")
    return tuple(tuple(_cell(value) for value in row) for row in rows.rows)


def _cell(value: Value) -> Cell:
    if isinstance(value, dt.datetime):
        return utc_text(value)
    if isinstance(value, tuple):
        return ", ".join(v if isinstance(v, str) else f"{v[0]}={v[1]}" for v in value)
    return value


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of system table ``name`` (``SYSTEM.TABLES`` or ``TABLES``)."""
    import pyarrow as pa

    check.string(name, "Parameter 'name' of arrow_schema")
    short = name if name in SYSTEM_COLUMNS else system_name(name)
    types: dict[ColumnKind, pa.DataType] = {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "strings": pa.list_(pa.string()),
        "pairs": pa.map_(pa.string(), pa.string()),
    }
    return pa.schema([pa.field(n, types[k]) for n, k in SYSTEM_COLUMNS[short]])


def to_arrow(rows: SystemRows) -> pa.Table:
    """The rows as an Arrow table of ``arrow_schema(rows.name)``."""
    import pyarrow as pa

    check.instance(rows, SystemRows, "Parameter 'rows' of to_arrow")
    schema = arrow_schema(rows.name)
    columns = list(zip(*rows.rows, strict=True)) if rows.rows else [()] * len(schema)
    arrays = [
        pa.array([_arrow_value(v) for v in values], type=field.type)
        for values, field in zip(columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _arrow_value(value: Value) -> Any:
    return list(value) if isinstance(value, tuple) else value

"""Making a Spark session see a catalog: ``register`` the source and the
native read settings, ``attach`` every table so plain ``spark.sql`` reads it.

A natively attached table is a view over hidden session-catalog Parquet
tables (database ``almanac_files``), one per group of planned files (see
``native_read``): SELECT runs on Spark's own Parquet scan. Spark refuses to
INSERT into a view, and each hidden table names at least two root paths,
for which Spark refuses INSERT as well, so plain ``spark.sql`` can never
write files that no data snapshot references. ``attach(native=False)``
keeps the Python-source tables, which read the latest data at every query
and accept INSERT INTO / INSERT OVERWRITE through Almanac.

``attach`` also makes the system tables views of database ``system``
(``spark.table("system.tables")``): each over one Parquet file of its rows
as of the attach, through a table of database ``almanac_system_files``. ``SYSTEM`` is a
reserved schema name, so no catalog schema claims that database."""

from __future__ import annotations

import hashlib
import io
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from almanac import _check as check
from almanac.catalog_version import CatalogVersion
from almanac.data import TableData
from almanac.descriptors import Table
from almanac.errors import CatalogError, ValidationError
from almanac.read_point import ReadPoint
from almanac.spark.names import catalog_session
from almanac.spark.native_read import (
    DISCOVERY_CONF,
    DISCOVERY_THRESHOLD,
    FIELD_ID_CONF,
    NativePlan,
    file_location,
    fill_sql,
    plan_native,
    quote,
)
from almanac.spark.source import AlmanacDataSource, Binding, bound_source
from almanac.spark.types import spark_schema
from almanac.table_names import TableName

__all__ = [
    "HIDDEN_DATABASE",
    "SYSTEM_DATABASE",
    "SYSTEM_FILES_DATABASE",
    "PUSHDOWN_CONF",
    "AttachResult",
    "activate",
    "attach",
    "attach_system_tables",
    "attach_tables",
    "register",
    "spark_name",
]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""Without it Spark refuses a Python reader that implements ``pushFilters``."""

HIDDEN_DATABASE = "almanac_files"
"""The Spark database holding the Parquet tables behind native views."""

SYSTEM_DATABASE = "system"
"""The Spark database of the system tables' views (``SYSTEM`` folded)."""

SYSTEM_FILES_DATABASE = "almanac_system_files"
"""The Spark database of the Parquet tables behind the system views (apart
from ``HIDDEN_DATABASE``, which holds only catalog tables' file groups)."""


@dataclass(frozen=True, slots=True)
class _Bound:
    """What one Spark name is attached to: a target and a key (the bound
    source's name, or a digest of a native view and its files)."""

    target: str
    key: str
    view: bool
    hidden: tuple[str, ...] = ()


_lock = threading.Lock()
_attached: dict[str, dict[tuple[str, str], _Bound]] = {}
"""Per Spark application: (database, table) → what it is bound to. Spark
keeps neither options nor comments of a Python-source table, so this process
remembers what each attached table is bound to."""


def register(spark: Any) -> None:
    """Register the ``almanac`` source, turn on filter pushdown for Python
    sources and Parquet field-id reads, let the driver list planned files
    itself (all runtime SQL settings) and make ``spark`` the active session of
    the calling thread. Spark also finds the ``almanac`` format without this
    call through the ``pyspark_almanac`` module, but then the pushdown
    setting must be in the session's configuration."""
    check_session(spark, "Parameter 'spark' of register")
    activate(spark)
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.conf.set(FIELD_ID_CONF, "true")
    spark.conf.set(DISCOVERY_CONF, str(DISCOVERY_THRESHOLD))
    spark.dataSource.register(AlmanacDataSource)


def check_session(spark: Any, what: str) -> None:
    """A SparkSession, classic or Connect: checked by what the calls here
    use, so a wrong argument is a ValidationError rather than an
    AttributeError from inside Spark."""
    if not (callable(getattr(spark, "sql", None)) and hasattr(spark, "conf")):
        raise check.fail(what, "a SparkSession", spark)


def activate(spark: Any) -> None:
    """Make ``spark`` the active session of this thread's JVM thread.

    Spark looks sources registered at runtime (the per-table sources of
    ``attach``) up in the *thread's* active session only; a Python thread
    that never touched the session has none, and its INSERT or CTAS fails
    with DATA_SOURCE_NOT_FOUND. PySpark does the same in ``createDataFrame``.
    Call it (or ``register``) first in such a thread."""
    if getattr(spark, "_jsparkSession", None) is None:
        return  # not a classic (py4j) session: nothing to pin
    session_class = spark._get_j_spark_session_class(spark._jvm)
    session_class.setActiveSession(spark._jsparkSession)


def spark_name(schema: str, table: str) -> str:
    """The Spark name of a catalog table: Spark folds database and table
    names to lower case, so ``PUBLIC.ORDERS`` is ``public.orders``."""
    return f"{quote(schema.lower())}.{quote(table.lower())}"


@dataclass
class AttachResult:
    """Spark names attached (or kept, when unchanged), tables Spark cannot
    hold with the reason, Spark tables dropped because their catalog table
    is gone, and the views of the system tables."""

    attached: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    system: list[str] = field(default_factory=list)


def attach(
    spark: Any,
    target: str,
    version: int | None = None,
    *,
    warehouse: str | None = None,
    native: bool = True,
) -> AttachResult:
    """Create a Spark database per catalog schema and a Spark view (or,
    with ``native=False``, a Python-source table) per catalog table,
    replacing those whose definition or files changed, and the views of the
    system tables (see ``attach_system_tables``).

    Native views read the data as planned now (the latest, or ``version``)
    on Spark's Parquet scan and refuse INSERT: write through
    ``almanac.spark.sql``, ``format("almanac")``, or attach again after
    writing. Python-source tables read the latest data at each query and
    accept INSERT INTO / INSERT OVERWRITE unless ``version`` pins them. A
    table Spark cannot hold (a TIME column, names equal but for case) is
    skipped and reported, not fatal."""
    check_session(spark, "Parameter 'spark' of attach")
    check.optional_int(version, "Parameter 'version' of attach")
    check.optional_str(warehouse, "Parameter 'warehouse' of attach")
    check.boolean(native, "Parameter 'native' of attach")
    register(spark)
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog(version) if version is not None else cat.catalog()
    point = ReadPoint(version=version)
    result = attach_tables(
        spark, target, warehouse, snap, point, snap.tables(), prune=True, native=native
    )
    attach_system_tables(spark, target, warehouse, snap.version, result)
    return result


def attach_tables(
    spark: Any,
    target: str,
    warehouse: str | None,
    snap: CatalogVersion,
    point: ReadPoint,
    tables: list[Table],
    *,
    prune: bool,
    native: bool = True,
) -> AttachResult:
    """Attach ``tables`` of ``snap``; with ``prune``, also drop the Spark
    tables of this target whose catalog table is no longer among them."""
    if not native:
        return _attach(spark, target, warehouse, snap, point, tables, prune, None)
    guard = _guard_dir(spark)
    with catalog_session(target, warehouse) as cat:
        planner = _Planner(cat, TableData.for_catalog(cat), point, guard)
        return _attach(spark, target, warehouse, snap, point, tables, prune, planner)


@dataclass(frozen=True, slots=True)
class _Planner:
    cat: Any
    data: TableData
    point: ReadPoint
    guard: str


GUARD_DIR = "_no_files"


def _guard_dir(spark: Any) -> str:
    """An empty directory that every hidden table names besides its files.

    Spark refuses INSERT into a file table with more than one root path
    (UNSUPPORTED_INSERT.MULTI_PATH); with a single file it would write
    beside it, and INSERT OVERWRITE would replace the committed file with a
    directory (measured). The directory lives in the hidden database's own
    location, never in the warehouse, and holds no files, so reads are
    unchanged."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        raise ValidationError(
            "attach makes native views only in a classic Spark session (it creates their "
            "guard directory through the JVM); use attach(..., native=False) with Spark Connect",
            rule="spark-classic-session",
        )
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(HIDDEN_DATABASE)}")
    location = str(spark.catalog.getDatabase(HIDDEN_DATABASE).locationUri).rstrip("/")
    path = jvm.org.apache.hadoop.fs.Path(f"{location}/{GUARD_DIR}")
    path.getFileSystem(spark._jsc.hadoopConfiguration()).mkdirs(path)
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme == "file":
        location = urllib.parse.unquote(parsed.path)  # local data files have no scheme either
    return f"{location}/{GUARD_DIR}"


def _attach(
    spark: Any,
    target: str,
    warehouse: str | None,
    snap: CatalogVersion,
    point: ReadPoint,
    tables: list[Table],
    prune: bool,
    planner: _Planner | None,
) -> AttachResult:
    result = AttachResult()
    app = str(spark.sparkContext.applicationId)
    wanted: set[tuple[str, str]] = set()
    databases: dict[str, str] = {}
    with _lock:
        known = _attached.setdefault(app, {})
        for table in tables:
            schema = snap.schema_by_id(table.schema_id)
            assert schema is not None
            full = f"{schema.name}.{table.name}"
            db, name = schema.name.lower(), table.name.lower()
            if databases.setdefault(db, schema.name) != schema.name:
                result.skipped[full] = (
                    f"schemas '{databases[db]}' and '{schema.name}' are the same Spark database"
                )
                continue
            if (db, name) in wanted:
                result.skipped[full] = "another table of its schema differs from it only in case"
                continue
            try:
                if planner is None:
                    bound, create = _source_table(
                        spark, target, warehouse, schema.name, table, point
                    )
                else:
                    plan = plan_native(
                        planner.cat, planner.data, schema.name, table.name, planner.point, ()
                    )
                    bound, create = _native_view(target, plan, planner.guard)
            except CatalogError as exc:
                result.skipped[full] = str(exc)
                continue
            wanted.add((db, name))
            qualified = spark_name(schema.name, table.name)
            current = known.get((db, name))
            if current != bound or not spark.catalog.tableExists(qualified):
                spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(db)}")
                _drop(spark, qualified)
                create(spark, qualified)
                known[(db, name)] = bound
                if current is not None:
                    _drop_hidden(spark, set(current.hidden) - set(bound.hidden))
            result.attached.append(f"{db}.{name}")
        if prune:
            for (db, name), bound in list(known.items()):
                if bound.target == target and (db, name) not in wanted:
                    _drop(spark, f"{quote(db)}.{quote(name)}")
                    _drop_hidden(spark, set(bound.hidden))
                    del known[(db, name)]
                    result.dropped.append(f"{db}.{name}")
    return result


def _drop(spark: Any, qualified: str) -> None:
    """Drop whatever Spark holds under this name, view or table."""
    if not spark.catalog.tableExists(qualified):
        return
    kind = "VIEW" if spark.catalog.getTable(qualified).tableType == "VIEW" else "TABLE"
    spark.sql(f"DROP {kind} IF EXISTS {qualified}")


def _drop_hidden(spark: Any, names: set[str]) -> None:
    for hidden in sorted(names):
        spark.sql(f"DROP TABLE IF EXISTS {quote(HIDDEN_DATABASE)}.{quote(hidden)}")


def _source_table(
    spark: Any, target: str, warehouse: str | None, schema: str, table: Table, point: ReadPoint
) -> tuple[_Bound, Any]:
    """A Python-source table bound to the catalog table by id."""
    struct = spark_schema(table, f"{schema}.{table.name}")
    columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in struct.fields)
    binding = Binding(
        target,
        warehouse,
        TableName(schema, True, table.name, True),
        point,
        table.id,
        tuple(c.id for c in table.columns),
        tuple(c.name for c in table.columns),
        signature=columns,
    )
    source = bound_source(binding, f"almanac_t{table.id}")
    source_name = source.name()
    spark.dataSource.register(source)

    def create(spark: Any, qualified: str) -> None:
        spark.sql(f"CREATE TABLE {qualified} ({columns}) USING {source_name}")

    return _Bound(target, source_name, view=False), create


def _native_view(target: str, plan: NativePlan, guard: str) -> tuple[_Bound, Any]:
    """A view over one hidden Parquet table per file group."""
    types = {f.name: f.dataType for f in plan.output.fields}
    locations = [file_location(paths, guard) for paths in plan.spark_paths]
    fills = [[(c.id, v) for c, v in g.fills] for g in plan.groups]
    digest = hashlib.sha1(
        repr((target, plan.schema.json(), locations, fills)).encode(), usedforsecurity=False
    ).hexdigest()[:16]
    hidden = tuple(f"t{plan.table.id}_{digest}_{i}" for i in range(len(locations)))
    if not locations:
        columns = ", ".join(
            f"CAST(NULL AS {f.dataType.simpleString()}) AS {quote(f.name)}"
            for f in plan.output.fields
        )
        body = f"SELECT {columns} WHERE FALSE"
    else:
        selects = []
        for group, table_name in zip(plan.groups, hidden, strict=True):
            filled = {c.name: fill_sql(c, v, types[c.name], plan.full_name) for c, v in group.fills}
            columns = ", ".join(
                f"{filled.get(f.name) or plan.column_sql(f.name)} AS {quote(f.name)}"
                for f in plan.schema.fields
            )
            selects.append(f"SELECT {columns} FROM {quote(HIDDEN_DATABASE)}.{quote(table_name)}")
        body = "\nUNION ALL\n".join(selects)

    def create(spark: Any, qualified: str) -> None:
        for table_name, location in zip(hidden, locations, strict=True):
            full = f"{quote(HIDDEN_DATABASE)}.{quote(table_name)}"
            if not spark.catalog.tableExists(full):
                spark.catalog.createTable(full, path=location, source="parquet", schema=plan.schema)
        spark.sql(f"CREATE VIEW {qualified} AS {body}")

    return _Bound(target, digest, view=True, hidden=hidden), create


# -- system tables ------------------------------------------------------------------------

_system_attached: dict[str, dict[str, _Bound]] = {}
"""Per Spark application: system table view name → what it shows."""


def attach_system_tables(
    spark: Any, target: str, warehouse: str | None, version: int, result: AttachResult
) -> None:
    """Make ``system.tables`` … ``system.servers`` views over the rows of
    the system tables: TABLES, COLUMNS and HISTORY at catalog ``version``,
    TABLETS and SERVERS as the placement is now (they have no versions).
    Each view reads one Parquet file, written once per content; a view is
    replaced only when its rows changed. A table that cannot be read (damaged
    placement keys), or all of them in a session that cannot hold them
    (Spark Connect), are listed in ``result.skipped``."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from almanac.system_rows import SYSTEM_COLUMNS, SYSTEM_TABLES, system_rows, to_arrow

    try:
        guard = _guard_dir(spark)
    except CatalogError as exc:
        result.skipped.update(dict.fromkeys(SYSTEM_TABLES, str(exc)))
        return
    folder = guard.rsplit("/", 1)[0] + "/_system"
    app = str(spark.sparkContext.applicationId)
    answers = []
    with catalog_session(target, warehouse) as cat:
        for name in SYSTEM_COLUMNS:
            as_of = ReadPoint(version=version) if name in _AT_VERSION else None
            try:
                answers.append(system_rows(cat, name, as_of=as_of))
            except CatalogError as exc:  # damaged placement keys: the rest still attach
                result.skipped[f"SYSTEM.{name}"] = str(exc)
    with _lock:
        known = _system_attached.setdefault(app, {})
        for database in (SYSTEM_DATABASE, SYSTEM_FILES_DATABASE):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")
        for name in set(SYSTEM_COLUMNS) - {a.name for a in answers}:
            _drop(spark, f"{quote(SYSTEM_DATABASE)}.{quote(name.lower())}")  # never stale rows
            gone = known.pop(name, None)
            if gone is not None:
                _drop_system_files(spark, set(gone.hidden))
        for answer in answers:
            table = to_arrow(answer)
            data = _parquet_bytes(table)
            digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()[:16]
            view = f"{quote(SYSTEM_DATABASE)}.{quote(answer.name.lower())}"
            hidden = f"{answer.name.lower()}_{digest}"
            bound = _Bound(target, digest, view=True, hidden=(hidden,))
            current = known.get(answer.name)
            if current != bound or not spark.catalog.tableExists(view):
                path = f"{folder}/{digest}.parquet"
                _write_once(path, data)
                full = f"{quote(SYSTEM_FILES_DATABASE)}.{quote(hidden)}"
                if not spark.catalog.tableExists(full):
                    spark.catalog.createTable(
                        full,
                        path=file_location([path], guard),
                        source="parquet",
                        schema=from_arrow_schema(table.schema),
                    )
                _drop(spark, view)
                spark.sql(f"CREATE VIEW {view} AS SELECT * FROM {full}")
                known[answer.name] = bound
                if current is not None:
                    _drop_system_files(spark, set(current.hidden) - {hidden})
            result.system.append(f"{SYSTEM_DATABASE}.{answer.name.lower()}")


_AT_VERSION = ("TABLES", "COLUMNS", "HISTORY")


def _drop_system_files(spark: Any, names: set[str]) -> None:
    for name in sorted(names):
        spark.sql(f"DROP TABLE IF EXISTS {quote(SYSTEM_FILES_DATABASE)}.{quote(name)}")


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _write_once(path: str, data: bytes) -> None:
    """Write ``data`` at ``path`` (named by its digest) unless already there,
    through a temporary name so that no reader sees half a file."""
    import pyarrow.fs as pafs

    fs, where = pafs.FileSystem.from_uri(path) if "://" in path else (pafs.LocalFileSystem(), path)
    if fs.get_file_info(where).type != pafs.FileType.NotFound:
        return
    fs.create_dir(where.rsplit("/", 1)[0], recursive=True)
    staged = f"{where}.{threading.get_ident()}.tmp"
    with fs.open_output_stream(staged) as out:
        out.write(data)
    fs.move(staged, where)

"""Making a Spark session see a catalog: ``register`` the source, ``attach``
every table as a Spark table so plain ``spark.sql`` reads and writes it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from almanac import _check as check
from almanac.catalog_version import CatalogVersion
from almanac.descriptors import Table
from almanac.errors import CatalogError
from almanac.spark.names import ReadPoint, TableName, catalog_session
from almanac.spark.source import AlmanacDataSource, Binding, bound_source
from almanac.spark.types import spark_schema

__all__ = [
    "PUSHDOWN_CONF",
    "AttachResult",
    "activate",
    "attach",
    "attach_tables",
    "register",
    "spark_name",
]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""Without it Spark refuses a Python reader that implements ``pushFilters``."""

_lock = threading.Lock()
_attached: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}
"""Per Spark application: (database, table) → (catalog target, bound source
name). Spark keeps neither options nor comments of a Python-source table, so
this process remembers what each attached table is bound to."""


def register(spark: Any) -> None:
    """Register the ``almanac`` source, turn on filter pushdown for Python
    sources (a runtime SQL setting) and make ``spark`` the active session of
    the calling thread. Spark also finds the ``almanac`` format without this
    call through the ``pyspark_almanac`` module, but then the pushdown
    setting must be in the session's configuration."""
    check_session(spark, "Parameter 'spark' of register")
    activate(spark)
    spark.conf.set(PUSHDOWN_CONF, "true")
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


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_name(schema: str, table: str) -> str:
    """The Spark name of a catalog table: Spark folds database and table
    names to lower case, so ``PUBLIC.ORDERS`` is ``public.orders``."""
    return f"{_quote(schema.lower())}.{_quote(table.lower())}"


@dataclass
class AttachResult:
    """Spark names attached (or kept, when unchanged), tables Spark cannot
    hold with the reason, and Spark tables dropped because their catalog
    table is gone."""

    attached: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)


def attach(
    spark: Any, target: str, version: int | None = None, *, warehouse: str | None = None
) -> AttachResult:
    """Create a Spark database per catalog schema and a Spark table per
    catalog table (dropping and recreating those whose definition changed).

    Without ``version`` the tables read the latest data and accept INSERT
    INTO / INSERT OVERWRITE; with it they read that catalog version and are
    read-only. A table Spark cannot hold (a TIME column, names equal but for
    case) is skipped and reported, not fatal."""
    check_session(spark, "Parameter 'spark' of attach")
    check.optional_int(version, "Parameter 'version' of attach")
    check.optional_str(warehouse, "Parameter 'warehouse' of attach")
    register(spark)
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog(version) if version is not None else cat.catalog()
    point = ReadPoint(version=version)
    return attach_tables(spark, target, warehouse, snap, point, snap.tables(), prune=True)


def attach_tables(
    spark: Any,
    target: str,
    warehouse: str | None,
    snap: CatalogVersion,
    point: ReadPoint,
    tables: list[Table],
    *,
    prune: bool,
) -> AttachResult:
    """Attach ``tables`` of ``snap``; with ``prune``, also drop the Spark
    tables of this target whose catalog table is no longer among them."""
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
                struct = spark_schema(table, full)
            except CatalogError as exc:
                result.skipped[full] = str(exc)
                continue
            wanted.add((db, name))
            columns = ", ".join(
                f"{_quote(f.name)} {f.dataType.simpleString()}" for f in struct.fields
            )
            binding = Binding(
                target,
                warehouse,
                TableName(schema.name, True, table.name, True),
                point,
                table.id,
                tuple(c.id for c in table.columns),
                tuple(c.name for c in table.columns),
                signature=columns,
            )
            source = bound_source(binding, f"almanac_t{table.id}")
            source_name = source.name()
            qualified = spark_name(schema.name, table.name)
            spark.dataSource.register(source)
            current = known.get((db, name))
            if current != (target, source_name) or not spark.catalog.tableExists(f"{db}.{name}"):
                spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(db)}")
                spark.sql(f"DROP TABLE IF EXISTS {qualified}")
                spark.sql(f"CREATE TABLE {qualified} ({columns}) USING {source_name}")
                known[(db, name)] = (target, source_name)
            result.attached.append(f"{db}.{name}")
        if prune:
            for (db, name), (bound_target, _) in list(known.items()):
                if bound_target == target and (db, name) not in wanted:
                    spark.sql(f"DROP TABLE IF EXISTS {_quote(db)}.{_quote(name)}")
                    del known[(db, name)]
                    result.dropped.append(f"{db}.{name}")
    return result

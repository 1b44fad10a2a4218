"""Spark SQL through Apache Iceberg's own Spark runtime, with Almanac as an
Iceberg REST catalog: plain ``spark.sql`` for DDL, CTAS/RTAS, INSERT, MERGE
and time travel, at the speed of Iceberg's own readers and writers.

This module is the one place that names the runtime (its Maven coordinates,
pinned to the PySpark line of ``pyproject.toml``) and finds its jar: in the
environment's ``jars/`` folder (``make setup`` copies it there), else in the
local Maven repository, else Spark fetches it from Maven Central through
``spark.jars.packages`` when the session starts.

A local target (a directory, ``sqlite://``, ``etcd://``) is served to Spark
by a catalog server inside this process on a loopback port, with a token of
its own; it stops with the session (``spark.stop()``) or at exit. An
``http(s)://`` target is that server, with its token.

A catalog pinned at a version is the Iceberg REST pinned view (warehouse
``@v<V>``, see ``almanac.iceberg_rest.pinned``); for a local target this
process holds the version (``Catalog.pin``) until the session stops.
"""

from __future__ import annotations

import atexit
import contextlib
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from almanac import _check as check
from almanac.errors import CatalogError, ValidationError
from almanac.iceberg_rest import ICEBERG_PREFIX
from almanac.model.targets import parse_target

if TYPE_CHECKING:
    from almanac.node.catalog import Catalog
    from almanac.server.background import BackgroundServer

__all__ = [
    "ICEBERG_VERSION",
    "RUNTIME",
    "SPARK_LINE",
    "SparkRuntimeError",
    "add_catalog",
    "catalog_conf",
    "runtime_conf",
    "runtime_jar",
    "session",
]

SPARK_LINE = "4.1"
"""The Spark line the runtime is built for: PySpark must be a 4.1.x."""
SCALA = "2.13"
ICEBERG_VERSION = "1.12.0"
ARTIFACT = f"iceberg-spark-runtime-{SPARK_LINE}_{SCALA}"
RUNTIME = f"org.apache.iceberg:{ARTIFACT}:{ICEBERG_VERSION}"
"""The Maven coordinates of Apache Iceberg's Spark runtime."""
JAR_NAME = f"{ARTIFACT}-{ICEBERG_VERSION}.jar"

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"

_CATALOG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SparkRuntimeError(CatalogError):
    """Spark cannot use Iceberg's runtime as asked: another PySpark line, a
    session started without it, a catalog name already taken."""


def runtime_jar() -> Path | None:
    """The runtime jar on this machine: ``<environment>/jars/`` (where ``make
    setup`` copies it), else the local Maven repository; ``None`` if neither."""
    group = RUNTIME.split(":", 1)[0].replace(".", "/")
    for folder in (
        Path(sys.prefix) / "jars",
        Path.home() / ".m2" / "repository" / group / ARTIFACT / ICEBERG_VERSION,
    ):
        if (folder / JAR_NAME).is_file():
            return folder / JAR_NAME
    return None


def _check_pyspark() -> None:
    import pyspark

    if pyspark.__version__.split(".")[:2] != SPARK_LINE.split("."):
        raise SparkRuntimeError(
            f"Apache Iceberg's Spark runtime {RUNTIME} needs PySpark {SPARK_LINE}.x, "
            f"not {pyspark.__version__}: install the PySpark that pyproject.toml pins",
            pyspark=pyspark.__version__,
            rule="spark-runtime-version",
        )


def runtime_conf() -> dict[str, str]:
    """The settings a session needs at start for the runtime: its jar (or its
    coordinates, for Spark to fetch) and Iceberg's SQL extensions; refused
    under another PySpark line than the runtime's."""
    _check_pyspark()
    jar = runtime_jar()
    where = {"spark.jars": str(jar)} if jar is not None else {"spark.jars.packages": RUNTIME}
    return {**where, "spark.sql.extensions": EXTENSIONS}


def catalog_conf(
    name: str, uri: str, token: str | None, version: int | None = None
) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>.*`` settings of an Almanac catalog
    served at ``uri`` (the server's ``/iceberg`` address); with ``version``,
    read-only at that catalog version. Iceberg's table cache is off: with it
    a session reads a table as it first loaded it, up to 30 s after another
    writer changed it."""
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: SPARK_CATALOG,
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        f"{prefix}.cache-enabled": "false",
    }
    if token is not None:
        conf[f"{prefix}.token"] = token
    if version is not None:
        from almanac.iceberg_rest.pinned import pinned_warehouse

        conf[f"{prefix}.warehouse"] = pinned_warehouse(version)
    return conf


# -- sessions and their embedded servers --------------------------------------------------


@dataclass
class _Served:
    """The embedded servers of one Spark application, stopped with it."""

    servers: list[BackgroundServer] = field(default_factory=list)
    catalogs: list[Catalog] = field(default_factory=list)
    pins: contextlib.ExitStack[bool | None] = field(default_factory=contextlib.ExitStack)
    """The versions pinned catalogs read, held until the servers stop."""


_lock = threading.Lock()
_served: dict[str, _Served] = {}


def _stop_served(app: str) -> None:
    with _lock:
        served = _served.pop(app, None)
    if served is None:
        return
    for server in served.servers:
        server.stop()
    served.pins.close()
    for cat in served.catalogs:
        cat.close()


def _stop_all() -> None:
    for app in list(_served):
        _stop_served(app)


atexit.register(_stop_all)


def _hook_stop(spark: Any, app: str) -> None:
    """Make ``spark.stop()`` stop the application's embedded servers too,
    once Spark has stopped (no job may still be reaching them)."""
    if getattr(spark, "_almanac_stop_hooked", False):
        return
    stop = spark.stop

    def stop_with_servers() -> None:
        try:
            stop()
        finally:
            _stop_served(app)

    spark.stop = stop_with_servers
    spark._almanac_stop_hooked = True


def _endpoint(
    spark: Any,
    app: str,
    target: object,
    token: str | None,
    warehouse: str | None,
    what: str,
    version: int | None = None,
) -> tuple[str, str | None]:
    """The Iceberg REST address and token that reach ``target``: the server
    of an ``http(s)://`` target, else a new embedded one over the catalog,
    holding ``version`` (when given) until it stops."""
    parsed = parse_target(target)
    if parsed.kind == "http":
        if warehouse is not None:
            raise ValidationError(
                f"{what}: the server '{parsed}' serves its own warehouse; "
                "a warehouse is for a local catalog",
                target=str(parsed),
                rule="warehouse-for-local",
            )
        return parsed.url.rstrip("/") + ICEBERG_PREFIX, token
    if token is not None:
        raise ValidationError(
            f"{what}: a token is for a catalog server (http:// or https://), "
            f"not for the local catalog '{parsed}'",
            target=str(parsed),
            rule="token-for-server",
        )
    if not parsed.durable:
        raise ValidationError(
            f"{what}: Spark's executors write table files the catalog must find again; "
            f"'{parsed}' keeps them nowhere (give a directory, sqlite:// or etcd:// target)",
            target=str(parsed),
            rule="durable-target",
        )
    if warehouse is None and parsed.default_warehouse is None:
        raise ValidationError(
            f"{what}: the catalog '{parsed}' has no default warehouse for table files; "
            "pass warehouse=",
            target=str(parsed),
            rule="warehouse-required",
        )
    import almanac
    from almanac.server.background import BackgroundServer

    # A pinned catalog only reads: it never creates one at a mistyped path.
    cat = almanac.connect(parsed, warehouse=warehouse, create=version is None)
    pin = contextlib.ExitStack()
    try:
        if version is not None:
            pin.enter_context(cat.pin(version))
        server = BackgroundServer(cat).start()
    except BaseException:
        pin.close()
        cat.close()
        raise
    with _lock:
        served = _served.setdefault(app, _Served())
        served.servers.append(server)
        served.catalogs.append(cat)
        served.pins.enter_context(pin)
    _hook_stop(spark, app)
    return server.url + ICEBERG_PREFIX, server.token


def _check_name(name: object, what: str) -> str:
    text = check.string(name, what, nonblank=True)
    if not _CATALOG_NAME.fullmatch(text) or text.lower() == "spark_catalog":
        raise ValidationError(
            f"{what} '{text}' is not a Spark catalog name: letters, digits and '_', "
            "not starting with a digit, and not Spark's own 'spark_catalog'",
            name=text,
            rule="spark-catalog-name",
        )
    return text


def _check_session(spark: Any, what: str) -> None:
    """A SparkSession, classic or Connect: checked by what the calls here
    use, so a wrong argument is a ValidationError rather than an
    AttributeError from inside Spark."""
    if not (callable(getattr(spark, "sql", None)) and hasattr(spark, "conf")):
        raise check.fail(what, "a SparkSession", spark)


def _has_runtime(spark: Any) -> bool:
    extensions = spark.conf.get("spark.sql.extensions", None) or ""
    return EXTENSIONS in [e.strip() for e in extensions.split(",")]


def add_catalog(
    spark: Any,
    name: str,
    target: object,
    *,
    version: int | None = None,
    token: str | None = None,
    warehouse: str | None = None,
) -> None:
    """Add the Almanac catalog at ``target`` to a running session (started
    by ``session``, or with ``runtime_conf()``) as Spark catalog ``name``.
    ``warehouse`` is where a local catalog keeps table files (an etcd target
    has no default).

    With ``version``, the catalog is pinned at that catalog version: every
    table reads as of it, a consistent read across tables while writers go
    on, and every change is refused. A local catalog's version is held
    against checkpoints until the session stops; a server holds none for
    its clients (a truncated version is then refused on the next query)."""
    what = "add_catalog"
    _check_session(spark, f"Parameter 'spark' of {what}")
    name = _check_name(name, f"Parameter 'name' of {what}")
    check.optional_int(version, f"Parameter 'version' of {what}", lo=0)
    check.optional_str(token, f"Parameter 'token' of {what}", nonblank=True)
    check.optional_str(warehouse, f"Parameter 'warehouse' of {what}", nonblank=True)
    if not _has_runtime(spark):
        raise SparkRuntimeError(
            f"Catalog '{name}': this Spark session was started without Apache Iceberg's "
            f"runtime ({RUNTIME} and {EXTENSIONS}); start it with almanac.spark.session, "
            "or with almanac.spark.runtime_conf() in its configuration",
            name=name,
            rule="spark-runtime-missing",
        )
    if spark.conf.get(f"spark.sql.catalog.{name}", None) is not None:
        raise SparkRuntimeError(
            f"Spark catalog '{name}' already exists in this session: choose another name",
            name=name,
            rule="spark-catalog-exists",
        )
    app = str(spark.sparkContext.applicationId)
    uri, bearer = _endpoint(spark, app, target, token, warehouse, f"Catalog '{name}'", version)
    for key, value in catalog_conf(name, uri, bearer, version).items():
        spark.conf.set(key, value)


def session(
    target: object,
    *,
    catalog: str = "almanac",
    token: str | None = None,
    conf: dict[str, str] | None = None,
    warehouse: str | None = None,
) -> Any:
    """A local Spark session with Apache Iceberg's runtime and SQL
    extensions, and the Almanac catalog at ``target`` as Spark catalog
    ``catalog`` (``spark.sql("CREATE TABLE almanac.s.t ...")``). ``conf``
    adds settings; ``warehouse`` is as for ``add_catalog``. Bound to
    loopback like every local session of Almanac's (``almanac.spark.local``).
    A session already running in this process is reused when it has the
    runtime, and refused otherwise (Spark loads jars and extensions only at
    start)."""
    what = "session"
    _check_name(catalog, f"Parameter 'catalog' of {what}")
    check.optional_str(token, f"Parameter 'token' of {what}", nonblank=True)
    check.optional_str(warehouse, f"Parameter 'warehouse' of {what}", nonblank=True)
    settings: dict[str, str] = {}
    if conf is not None:
        check.instance(conf, dict, f"Parameter 'conf' of {what}", "a dict of str to str")
        for key, value in conf.items():
            settings[check.string(key, f"A key of parameter 'conf' of {what}")] = check.string(
                value, f"Setting '{key}' of parameter 'conf' of {what}"
            )
    parse_target(target)  # a bad target fails before a JVM starts
    from pyspark import SparkContext

    from almanac.spark.local import local_session

    if SparkContext._active_spark_context is None:
        spark = local_session("almanac", config={**runtime_conf(), **settings})
    else:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
        if not _has_runtime(spark):
            raise SparkRuntimeError(
                "A Spark session without Apache Iceberg's runtime is already running in this "
                "process: stop it first (Spark loads the runtime only when a session starts)",
                rule="spark-runtime-missing",
            )
        for key, value in settings.items():
            spark.conf.set(key, value)
    add_catalog(spark, catalog, target, token=token, warehouse=warehouse)
    return spark

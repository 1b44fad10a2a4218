"""Spark as Almanac's data plane.

* ``session(TARGET)`` - a Spark session with Apache Iceberg's Spark runtime
  and the catalog at TARGET as Spark catalog ``almanac``: plain ``spark.sql``
  for DDL, CTAS/RTAS, INSERT, MERGE, UPDATE, DELETE and time travel;
  ``add_catalog(spark, NAME, TARGET)`` adds another (see ``runtime``).

The older paths, a Python data source plus atomic CREATE/REPLACE TABLE AS
SELECT:

* ``register(spark)`` - the ``almanac`` format, filter pushdown and
  Parquet field-id reads;
* ``read_table(spark, TARGET, "S.T", version=, timestamp=, filters=)`` - a
  table on Spark's native Parquet scan (files planned by Almanac);
* ``spark.read.format("almanac").option("catalog", TARGET).load("S.T")``,
  options ``version`` / ``timestamp`` for time travel;
* ``write(df, TARGET, "S.T", mode="append" | "overwrite")`` - Spark's native
  Parquet writer, the fast path;
* ``df.write.format("almanac").option("catalog", TARGET).mode("append" |
  "overwrite").save("S.T")``;
* ``attach(spark, TARGET)`` - every catalog table as a Spark view on the
  native Parquet scan, for ``spark.sql`` SELECT (``native=False``: Python
  source tables that also take INSERT INTO / INSERT OVERWRITE);
* ``create_table_as_select`` / ``replace_table_as_select`` /
  ``create_or_replace_table_as_select`` and ``sql(spark, TARGET, text)`` -
  table and data in one catalog version.

Start sessions with ``spark.sql.python.filterPushdown.enabled=true`` (or call
``register``), and ``PYSPARK_PYTHON`` set to this interpreter.
"""

from almanac.spark import runtime as _runtime
from almanac.spark.ctas import (
    CtasResult,
    TableBeingCreatedError,
    create_or_replace_table_as_select,
    create_table_as_select,
    replace_table_as_select,
)
from almanac.spark.names import store_uri
from almanac.spark.native_read import read_table
from almanac.spark.native_write import WriteResult, write
from almanac.spark.runtime import SparkRuntimeError, add_catalog, runtime_conf
from almanac.spark.session import PUSHDOWN_CONF, AttachResult, attach, register
from almanac.spark.source import SOURCE_NAME, AlmanacDataSource
from almanac.spark.sql import sql
from almanac.spark.types import spark_schema

# The function, bound after every import: importing the submodule of the
# same name (``attach``, ``register``) rebinds the package's attribute to it.
session = _runtime.session

__all__ = [
    "PUSHDOWN_CONF",
    "SOURCE_NAME",
    "AlmanacDataSource",
    "AttachResult",
    "CtasResult",
    "SparkRuntimeError",
    "TableBeingCreatedError",
    "WriteResult",
    "add_catalog",
    "attach",
    "create_or_replace_table_as_select",
    "create_table_as_select",
    "read_table",
    "register",
    "replace_table_as_select",
    "runtime_conf",
    "session",
    "spark_schema",
    "sql",
    "store_uri",
    "write",
]

"""Spark as Almanac's data plane, through Apache Iceberg's own Spark runtime.

* ``session(TARGET)`` - a Spark session with the runtime and Iceberg's SQL
  extensions, and the catalog at TARGET as Spark catalog ``almanac``: plain
  ``spark.sql`` for DDL, CTAS/RTAS, INSERT, MERGE, UPDATE, DELETE, time
  travel, metadata tables and ``CALL`` procedures;
* ``add_catalog(spark, NAME, TARGET)`` - another Almanac catalog in a
  running session; with ``version=V`` read-only, every table as of
  catalog version V;
* ``runtime_conf()`` - the settings a session needs at start for the
  runtime, for sessions started otherwise (see ``runtime``).
"""

from almanac.spark.runtime import SparkRuntimeError, add_catalog, runtime_conf, session

__all__ = [
    "SparkRuntimeError",
    "add_catalog",
    "runtime_conf",
    "session",
]

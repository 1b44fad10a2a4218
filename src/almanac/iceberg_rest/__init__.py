"""The Iceberg REST catalog on ``almanac serve``, under ``/iceberg``: any
Iceberg client (pyiceberg, Spark, Trino, Flink, DuckDB) uses Almanac as its
catalog. Routes in ``routes``, the catalog mapping in ``mapping``, a
commit checked and applied in ``plan`` and published in ``commit``,
branches and tags in ``refs``, the spec's error model in ``errors``."""

from almanac.iceberg_rest.errors import iceberg_exception
from almanac.iceberg_rest.routes import iceberg_router

__all__ = ["iceberg_exception", "iceberg_router"]

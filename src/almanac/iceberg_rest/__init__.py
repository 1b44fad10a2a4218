"""The Iceberg REST catalog on ``almanac serve``, under ``/iceberg``: any
Iceberg client (pyiceberg, Spark, Trino, Flink, DuckDB) uses Almanac as its
catalog. Routes in ``routes``, the catalog mapping in ``mapping``, a
commit checked and applied in ``plan`` and published in ``commit``,
branches and tags in ``refs``, the spec's error model in ``errors``.

Only the mount point here: the HTTP server routes under it without
pyiceberg, and a client builds its address, without loading the routes.
"""

from typing import Final

__all__ = ["ICEBERG_PREFIX"]

ICEBERG_PREFIX: Final = "/iceberg"
"""Where ``almanac serve`` mounts the Iceberg REST catalog: a client's ``uri``
is the server's address followed by it."""

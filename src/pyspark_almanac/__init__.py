"""Lets Spark find the ``almanac`` format on its own: at the first data-source
call Spark imports every top-level ``pyspark_*`` module and registers its
``DefaultSource`` under ``DefaultSource.name()``."""

from almanac.spark.source import AlmanacDataSource as DefaultSource

__all__ = ["DefaultSource"]

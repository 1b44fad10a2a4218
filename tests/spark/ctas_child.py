"""A driver that runs a CREATE TABLE AS SELECT with short leases, to be killed
with SIGKILL by ``test_ctas``: ``python ctas_child.py TARGET MARKER``. One
task at a time; the first writes its files at once, the next one notes its
first row in MARKER and then blocks until it is killed."""

from __future__ import annotations

import sys
import threading


def main(target: str, marker: str) -> None:
    from pathlib import Path

    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType

    import almanac.spark
    from almanac.spark.local import local_session

    here = Path(marker).parent
    spark = local_session(
        "almanac-ctas-child",
        cores=1,
        scratch=here / "spark-local",
        config={
            "spark.sql.python.filterPushdown.enabled": "true",
            "spark.sql.warehouse.dir": str(here / "wh"),
        },
    )

    def slow(x):  # type: ignore[no-untyped-def]  # hints would make Spark guess an Arrow UDF
        if x >= 100:  # the first task (rows 0-99) finishes and writes its files
            with open(marker, "a") as out:
                out.write(f"{x}\n")
            threading.Event().wait(600)  # until the test kills this driver
        return x

    df = spark.range(0, 400, 1, 4).select(udf(slow, LongType())("id").alias("id"))
    almanac.spark.create_table_as_select(
        target, "PUBLIC.KILLED", df, ["id"], reservation_ttl_s=10.0, write_lease_seconds=10.0
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

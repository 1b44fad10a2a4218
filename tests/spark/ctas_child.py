"""A driver to be killed with SIGKILL mid-CTAS by ``test_runtime_atomic``:
``python ctas_child.py TARGET MARKER SCRATCH``. It starts
``almanac.spark.session(TARGET)`` and runs a CREATE TABLE AS SELECT whose
tasks past the first write MARKER and then wait until the driver is killed."""

from __future__ import annotations

import sys


def main(target: str, marker: str, scratch: str) -> None:
    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType

    import almanac.spark

    spark = almanac.spark.session(target, conf={"spark.local.dir": f"{scratch}/spark-local"})
    spark.sparkContext.setLogLevel("ERROR")

    def held(x):  # type: ignore[no-untyped-def]  # hints would make Spark guess an Arrow UDF
        import threading

        if x >= 100:  # the first task (rows 0-99) finishes and writes its file
            with open(marker, "a") as out:
                out.write(f"{x}\n")
            threading.Event().wait(600)  # until the test kills this driver
        return x

    spark.udf.register("held", udf(held, LongType()))
    spark.sql(
        "CREATE TABLE almanac.S.T USING iceberg AS SELECT held(id) AS id FROM range(0, 400, 1, 4)"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])

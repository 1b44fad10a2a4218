"""A Spark application of its own for ``test_runtime_more``: ``python
append_child.py ROLE TARGET SCRATCH SIGNALS COUNT``. It starts
``almanac.spark.session(TARGET)`` (its own JVM and its own in-process catalog
server over the shared catalog), then appends to ``almanac.s.t``.

Files in SIGNALS order the first INSERTs: role ``a`` starts its INSERT and
holds its write task until role ``b`` has committed one INSERT, so ``a``
commits on a table that moved on since it planned. Then each appends COUNT
more rows, one INSERT each, at the same time as the other. Ids are 1000+i
for ``a`` and 2000+i for ``b``. Prints one JSON line of what it did."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

PATIENCE = 600.0
"""How long a role waits for the other: a second JVM on a loaded machine."""


def _wait(path: Path) -> None:
    deadline = time.monotonic() + PATIENCE
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {path}")
        time.sleep(0.02)


def main(role: str, target: str, scratch: str, signals: str, count: int) -> None:
    import almanac.spark

    spark = almanac.spark.session(
        target,
        conf={"spark.local.dir": scratch, "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    # Iceberg logs each commit it retries (after a 409) at WARN
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.iceberg.util.Tasks", jvm.org.apache.logging.log4j.Level.WARN
    )
    table = "almanac.s.t"
    base = 1000 if role == "a" else 2000
    writing, committed = Path(signals, "a-writing"), Path(signals, "b-committed")
    if role == "a":
        from pyspark.sql.functions import udf
        from pyspark.sql.types import LongType

        def hold(x):  # type: ignore[no-untyped-def]  # hints would make Spark guess an Arrow UDF
            writing.touch()
            _wait(committed)
            return x

        spark.udf.register("hold", udf(hold, LongType()))
        spark.sql(f"INSERT INTO {table} SELECT hold({base}L) AS id, 'a' AS who")
    else:
        _wait(writing)
        spark.sql(f"INSERT INTO {table} VALUES ({base}, 'b')")
        committed.touch()
    for i in range(1, count + 1):
        spark.sql(f"INSERT INTO {table} VALUES ({base + i}, '{role}')")
    spark.stop()
    print(json.dumps({"role": role, "inserts": count + 1}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))

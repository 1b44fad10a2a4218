"""Spark data-plane figures, each against plain Parquet in the same run.

* write: TPC-H ``lineitem`` through ``df.write.format("almanac")`` (conform,
  tablets, statistics, one data commit) against ``df.write.parquet`` of the
  same cached DataFrame;
* native write: ``almanac.spark.write`` (Spark's own Parquet writer, one
  directory per Iceberg bucket) against ``df.write.parquet`` of the same
  cached DataFrame, with the floor of that layout (the same DataFrame
  ``partitionBy`` Spark's built-in hash, no checks, no commit) and a
  ``coalesce`` to one task per core (fewer, larger files);
* full scan: ``spark.read.format("almanac")`` against ``spark.read.parquet``
  of those files, both drained into Spark's ``noop`` sink (every column of
  every row crosses into the JVM);
* pruning: files a selective ``l_orderkey`` filter keeps out of the total,
  from ``plan_scan`` (the data was clustered by key, as a loader would);
* native scan: ``almanac.spark.read_table`` (planning included) against
  ``spark.read.parquet`` of the same files, both into the ``noop`` sink;
* TPC-H Q1, Q3, Q5, Q10, Q18, Q19 through ``attach`` + ``spark.sql`` against
  the same query on temp views of ``spark.read.parquet`` over the same files
  (the other tables loaded with ``create_table_as_select``).

Run: ``.venv/bin/python bench/bench_spark.py [--sf 0.1] [--partitions N]
[--native-only]`` (``--partitions``: tablets of the table's zone; the
catalog default is 25; ``--native-only``: load once, then only the native
figures).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import almanac
import almanac.spark
from almanac.data import Predicate, TableData, plan_scan
from almanac.spark.tpch import QUERIES, TABLES, generate

RUNS = 3
NATIVE_RUNS = 7
WRITE_TASKS = 8
BENCH_QUERIES = ("Q1", "Q3", "Q5", "Q10", "Q18", "Q19")


def floor_source() -> Any:
    """The cheapest Python data source: the plain Parquet files, one partition
    per file, batches passed straight through. It measures what Spark's Python
    data source API costs by itself, the floor under any such source."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.pandas.types import from_arrow_schema

    def nullable(schema: Any) -> Any:
        def plain(t: Any) -> Any:
            return pa.string() if t == pa.string_view() else t

        return pa.schema([pa.field(f.name, plain(f.type), True) for f in schema])

    class FloorReader(DataSourceReader):
        def __init__(self, files: list[str]) -> None:
            self.files = files

        def partitions(self) -> list[Any]:
            return [InputPartition(f) for f in self.files]

        def read(self, partition: Any) -> Any:
            table = pq.read_table(partition.value)
            yield from table.cast(nullable(table.schema)).to_batches()

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_floor"

        def _files(self) -> list[str]:
            return sorted(str(p) for p in Path(self.options["dir"]).glob("*.parquet"))

        def schema(self) -> Any:
            return from_arrow_schema(nullable(pq.read_schema(self._files()[0])))

        def reader(self, schema: Any) -> Any:
            return FloorReader(self._files())

    return FloorSource


def timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def best_and_median(samples: list[float]) -> str:
    return f"best {min(samples):6.2f} s, median {statistics.median(samples):6.2f} s"


def session() -> Any:
    from almanac.spark.local import local_session

    spark = local_session(
        "almanac-bench",
        config={"spark.sql.python.filterPushdown.enabled": "true", "spark.driver.memory": "4g"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def native_write_figures(
    spark: Any, df: Any, target: str, root: Path, partitions: int
) -> list[str]:
    """Native write against plain Parquet, interleaved in the same run, medians."""
    from pyspark.sql import functions as F

    almanac.spark.create_table_as_select(
        target, "TPCH.LINEITEM_NATIVE", df.limit(0), ["l_orderkey", "l_linenumber"], zone="BENCH"
    )
    cores = spark.sparkContext.defaultParallelism
    plain_dir, floor_dir = root / "native-plain", root / "native-floor"

    def plain() -> None:
        df.write.mode("overwrite").parquet(str(plain_dir))

    def floor() -> None:
        tablet = F.pmod(F.hash("l_orderkey"), F.lit(partitions))
        layout = df.withColumn("tablet", tablet).write.mode("overwrite").partitionBy("tablet")
        layout.parquet(str(floor_dir))

    def native() -> None:
        almanac.spark.write(df, target, "TPCH.LINEITEM_NATIVE", mode="overwrite")

    def native_coalesced() -> None:
        almanac.spark.write(df, target, "TPCH.LINEITEM_NATIVE", mode="overwrite", coalesce=cores)

    steps = {
        "parquet": plain,
        "native": native,
        "native coalesce": native_coalesced,
        "layout floor": floor,
    }
    native()  # compile and load the bucket UDFs outside the timings
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(RUNS):
        for name, step in steps.items():
            samples[name].append(timed(step))
    base = statistics.median(samples["parquet"])
    lines = []
    notes = {
        "parquet": "df.write.parquet",
        "native": "almanac.spark.write",
        "native coalesce": f"almanac.spark.write(coalesce={cores})",
        "layout floor": "partitionBy(pmod(hash(key), N)): same layout, no checks, no commit",
    }
    for name, values in samples.items():
        ratio = statistics.median(values) / base
        lines.append(f"write  {name:15}: {best_and_median(values)}  {ratio:.2f}x  ({notes[name]})")
    return lines


def main(argv: list[str]) -> int:
    root = Path(tempfile.mkdtemp(prefix="almanac-bench-spark-"))
    try:
        return run(argv, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(argv: list[str], root: Path) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor")
    parser.add_argument("--partitions", type=int, default=25, help="tablets of the zone")
    parser.add_argument(
        "--native-only",
        action="store_true",
        help="one load, then only the native scan and the attached TPC-H queries",
    )
    parser.add_argument("--runs", type=int, default=NATIVE_RUNS, help="runs of each native figure")
    args = parser.parse_args(argv)
    tpch = generate(args.sf, root / "tpch")
    source = tpch / "lineitem.parquet"
    spark = session()
    target = str(root / "catalog")
    with almanac.connect(target) as cat:
        cat.sql(f"CREATE ZONE BENCH WITH (PARTITIONS={args.partitions}); CREATE SCHEMA TPCH")
        df = spark.read.parquet(str(source)).repartitionByRange(WRITE_TASKS, "l_orderkey").cache()
        rows = df.count()
        print(
            f"TPC-H SF {args.sf}: lineitem {rows:,} rows, {WRITE_TASKS} write tasks, "
            f"{args.partitions} tablets, {os.cpu_count()} cores",
            flush=True,
        )
        almanac.spark.create_table_as_select(
            target, "TPCH.LINEITEM", df.limit(0), ["l_orderkey", "l_linenumber"], zone="BENCH"
        )
        if args.native_only:
            df.write.format("almanac").option("catalog", target).mode("append").save(
                "TPCH.LINEITEM"
            )
            report_scan(*native_scan(spark, target, cat, args.runs))
            tpch_queries(spark, target, cat, tpch, args.runs)
            spark.stop()
            return 0

        native_lines = native_write_figures(spark, df, target, root, args.partitions)

        plain_dir = root / "plain"
        plain_write, ours_write = [], []
        for run in range(RUNS):
            plain_write.append(timed(lambda: df.write.mode("overwrite").parquet(str(plain_dir))))
            mode = "append" if run == 0 else "overwrite"
            ours_write.append(
                timed(
                    lambda mode=mode: (
                        df.write.format("almanac")  # type: ignore[misc]
                        .option("catalog", target)
                        .mode(mode)
                        .save("TPCH.LINEITEM")
                    )
                )
            )

        def scan_plain() -> None:
            spark.read.parquet(str(plain_dir)).write.format("noop").mode("overwrite").save()

        def scan_ours() -> None:
            (
                spark.read.format("almanac")
                .option("catalog", target)
                .load("TPCH.LINEITEM")
                .write.format("noop")
                .mode("overwrite")
                .save()
            )

        spark.dataSource.register(floor_source())

        def scan_floor() -> None:
            (
                spark.read.format("bench_floor")
                .option("dir", str(plain_dir))
                .load()
                .write.format("noop")
                .mode("overwrite")
                .save()
            )

        plain_scan, ours_scan, floor_scan = [], [], []
        for _ in range(RUNS):
            plain_scan.append(timed(scan_plain))
            ours_scan.append(timed(scan_ours))
            floor_scan.append(timed(scan_floor))

        data = TableData.for_catalog(cat)
        full = plan_scan(cat, data, "LINEITEM", "TPCH")
        top = max(f.stats[0].max for f in full.files if isinstance(f.stats[0].max, int))
        bound = top // 50
        selective = plan_scan(
            cat, data, "LINEITEM", "TPCH", filters=[Predicate("L_ORDERKEY", "<=", bound)]
        )
        ours_rows = (
            spark.read.format("almanac")
            .option("catalog", target)
            .load("TPCH.LINEITEM")
            .where(f"l_orderkey <= {bound}")
            .count()
        )
        plain_rows = spark.read.parquet(str(plain_dir)).where(f"l_orderkey <= {bound}").count()
        assert ours_rows == plain_rows, (ours_rows, plain_rows)

        report_scan(*native_scan(spark, target, cat, args.runs))
        tpch_queries(spark, target, cat, tpch, args.runs)

    files = len(list(plain_dir.glob("*.parquet")))
    print(f"write  parquet : {best_and_median(plain_write)}  ({files} files)")
    print(f"write  almanac : {best_and_median(ours_write)}  ({full.files_total} files)")
    print(
        f"  ratio (median): {statistics.median(ours_write) / statistics.median(plain_write):.2f}x"
    )
    print("\n".join(native_lines))
    print(f"scan   parquet : {best_and_median(plain_scan)}")
    print(f"scan   almanac : {best_and_median(ours_scan)}")
    print(f"  ratio (median): {statistics.median(ours_scan) / statistics.median(plain_scan):.2f}x")
    print(f"scan   floor   : {best_and_median(floor_scan)}  (minimal Python source, same files)")
    print(
        f"  ratio (median): {statistics.median(floor_scan) / statistics.median(plain_scan):.2f}x"
        " - what the Python data source API costs by itself"
    )
    kept, total = len(selective.files), selective.files_total
    print(
        f"pruning: l_orderkey <= {bound} keeps {kept} of {total} files "
        f"({1 - kept / total:.0%} skipped), {ours_rows:,} rows"
    )
    spark.stop()
    return 0


def report_scan(native_plain: list[float], native_ours: list[float]) -> None:
    print(f"scan   parquet : {best_and_median(native_plain)}  (the table's own files)")
    print(f"scan   native  : {best_and_median(native_ours)}  (read_table, planning included)")
    ratio = statistics.median(native_ours) / statistics.median(native_plain)
    print(f"  ratio (median): {ratio:.2f}x", flush=True)


def table_paths(cat: almanac.Catalog, name: str) -> list[str]:
    """The files a read of ``TPCH.<name>`` plans."""
    return [f.path for f in plan_scan(cat, TableData.for_catalog(cat), name, "TPCH").files]


def native_scan(
    spark: Any, target: str, cat: almanac.Catalog, runs: int
) -> tuple[list[float], list[float]]:
    """Every row of ``TPCH.LINEITEM`` into the noop sink: ``read_table``
    against ``spark.read.parquet`` of the very files it plans, alternating."""
    paths = table_paths(cat, "LINEITEM")

    def plain() -> None:
        spark.read.parquet(*paths).write.format("noop").mode("overwrite").save()

    def ours() -> None:
        frame = almanac.spark.read_table(spark, target, "TPCH.LINEITEM")
        frame.write.format("noop").mode("overwrite").save()

    plain()  # warm both paths once
    ours()
    plain_s, ours_s = [], []
    for _ in range(runs):
        plain_s.append(timed(plain))
        ours_s.append(timed(ours))
    return plain_s, ours_s


def tpch_queries(spark: Any, target: str, cat: almanac.Catalog, tpch: Path, runs: int) -> None:
    """Each query through ``attach`` + ``spark.sql`` and on temp views of the
    same files read with ``spark.read.parquet``, alternating; row counts
    compared once; medians printed as each query finishes."""
    for table, key in TABLES.items():
        if table != "lineitem":
            almanac.spark.create_table_as_select(
                target,
                f"TPCH.{table}",
                spark.read.parquet(str(tpch / f"{table}.parquet")),
                key,
                zone="BENCH",
            )
    almanac.spark.attach(spark, target)
    for table in TABLES:
        spark.read.parquet(*table_paths(cat, table.upper())).createOrReplaceTempView(table)
    for name in BENCH_QUERIES:
        text = QUERIES[name]
        plain_sql, ours_sql = text.format(p=""), text.format(p="tpch.")
        expected = spark.sql(plain_sql).collect()
        got = spark.sql(ours_sql).collect()
        assert len(got) == len(expected), (name, len(got), len(expected))
        plain_s, ours_s = [], []
        for _ in range(runs):
            plain_s.append(timed(lambda q=plain_sql: spark.sql(q).collect()))  # type: ignore[misc]
            ours_s.append(timed(lambda q=ours_sql: spark.sql(q).collect()))  # type: ignore[misc]
        plain_m, ours_m = statistics.median(plain_s), statistics.median(ours_s)
        print(
            f"TPC-H {name:>3}: parquet median {plain_m:6.2f} s, attached median "
            f"{ours_m:6.2f} s, ratio {ours_m / plain_m:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Spark SQL through Apache Iceberg's runtime: Almanac as the Iceberg REST
catalog against Iceberg's own ``hadoop`` catalog, in one Spark session.

The floor is the fairest one there is: the same Spark, the same Iceberg
runtime, the same table format and writers, with Iceberg's ``hadoop``
catalog (``SparkCatalog``, ``type=hadoop``) over a local warehouse and
every other catalog setting Almanac's have (Iceberg's table cache off): no
catalog service at all. Almanac is ``almanac.spark.session(target)``: a
directory catalog served by the REST server inside this process. Both are
catalogs of the one session (the floor added through ``conf`` at start),
so they share the JVM, its warm-up and every setting. Plain Parquet
(``df.write.parquet`` / ``spark.read.parquet``) is beside them for the
record. Measured at TPC-H scale factor ``--sf``, each figure the median of
``--runs`` runs in which the contenders take turns (the order rotates every
run, so a load that drifts weighs on all alike):

* load: ``CREATE TABLE <catalog>.runN.<table> USING iceberg AS SELECT``
  from the generated table, cached in memory, each run into a namespace of
  its own; plain Parquet writes the same cached DataFrame;
* full scan: every column of every row of ``lineitem`` into Spark's
  ``noop`` sink;
* TPC-H Q1, Q3, Q5, Q10, Q18, Q19 through ``spark.sql`` (``collect``),
  their row counts checked equal once;
* a one-row ``INSERT INTO ... VALUES`` (a data file and a commit), the
  statement timed whole: the data file is the same, so the difference is
  what the catalog costs (the table load and the commit).

Ratios are Almanac over the floor; the goals are <= 1.05x for the load
and the reads and <= 1.2x for the one-row INSERT.

Run: ``.venv/bin/python bench/bench_spark.py [--sf 0.1] [--runs 5]
[--inserts 20]``; ``ALMANAC_BENCH_SF=1`` (or ``--sf 1``) for scale factor 1,
which takes a while.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import almanac.spark
import timing
from almanac.spark.runtime import catalog_conf
from almanac.spark.tpch import QUERIES, TABLES, generate

ALMANAC, FLOOR, PARQUET = "almanac", "floor", "parquet"
CATALOGS = (ALMANAC, FLOOR)
BENCH_QUERIES = ("Q1", "Q3", "Q5", "Q10", "Q18", "Q19")
READ_GOAL, LOAD_GOAL, INSERT_GOAL = 1.05, 1.05, 1.2

Samples = dict[str, list[float]]


def floor_conf(warehouse: Path) -> dict[str, str]:
    """Iceberg's own ``hadoop`` catalog over a local warehouse, with every
    other setting Almanac's catalogs get (its table cache off among them)."""
    prefix = f"spark.sql.catalog.{FLOOR}"
    ours = catalog_conf(FLOOR, "http://127.0.0.1/unused", None)
    same = {k: v for k, v in ours.items() if k not in (f"{prefix}.type", f"{prefix}.uri")}
    return {**same, f"{prefix}.type": "hadoop", f"{prefix}.warehouse": str(warehouse)}


def rotated(names: tuple[str, ...], run: int) -> tuple[str, ...]:
    """The contenders in the order they take in run ``run``."""
    k = run % len(names)
    return names[k:] + names[:k]


def take_turns(steps: dict[str, Callable[[int], object]], runs: int) -> Samples:
    """Seconds of each step (called with the run's number), ``runs`` runs,
    the steps' order rotating every run."""
    samples: Samples = {name: [] for name in steps}
    for run in range(runs):
        for name in rotated(tuple(steps), run):
            samples[name].append(timing.median_seconds(lambda: steps[name](run), 1))  # noqa: B023
    return samples


def ratio(samples: Samples, name: str) -> float:
    return statistics.median(samples[name]) / statistics.median(samples[FLOOR])


def report(label: str, samples: Samples, goal: float | None, unit: str = "s") -> float:
    """One line: each contender's median, Almanac / floor (against the goal)
    and plain Parquet / floor when measured."""
    scale = 1000.0 if unit == "ms" else 1.0
    medians = "  ".join(
        f"{name} {statistics.median(values) * scale:7.{0 if unit == 'ms' else 2}f} {unit}"
        for name, values in samples.items()
    )
    ours = ratio(samples, ALMANAC)
    verdict = "" if goal is None else (" ok" if ours <= goal else f" MISSES {goal:.2f}x")
    plain = f"  parquet/floor {ratio(samples, PARQUET):.2f}x" if PARQUET in samples else ""
    print(f"{label:16} {medians}  almanac/floor {ours:.2f}x{verdict}{plain}", flush=True)
    return ours


def cached_sources(spark: Any, tpch: Path) -> dict[str, int]:
    """Each generated table cached in memory as temp view ``src_<table>``,
    so a load times the write and the commit, not the read; its rows."""
    rows = {}
    for table in TABLES:
        frame = spark.read.parquet(str(tpch / f"{table}.parquet")).cache()
        rows[table] = frame.count()
        frame.createOrReplaceTempView(f"src_{table}")
    return rows


def load(spark: Any, parquet: Path, runs: int) -> Samples:
    """CTAS of every table into each catalog and ``df.write.parquet`` of the
    same cached DataFrame; per table, then the whole load (sum per run)."""
    for catalog in CATALOGS:
        for run in range(-1, runs):
            spark.sql(f"CREATE NAMESPACE {catalog}.{namespace(run)}")

    def ctas(catalog: str, table: str) -> Callable[[int], object]:
        return lambda run: spark.sql(
            f"CREATE TABLE {catalog}.{namespace(run)}.{table} USING iceberg "
            f"AS SELECT * FROM src_{table}"
        )

    def write(table: str) -> Callable[[int], object]:
        return lambda run: spark.table(f"src_{table}").write.parquet(
            str(parquet / namespace(run) / table)
        )

    def steps(table: str) -> dict[str, Callable[[int], object]]:
        return {ALMANAC: ctas(ALMANAC, table), FLOOR: ctas(FLOOR, table), PARQUET: write(table)}

    for step in steps("nation").values():  # warm every path once, untimed
        step(-1)
    total: Samples = {ALMANAC: [0.0] * runs, FLOOR: [0.0] * runs, PARQUET: [0.0] * runs}
    for table in TABLES:
        samples = take_turns(steps(table), runs)
        report(f"load {table}", samples, None)
        for name, values in samples.items():
            total[name] = [a + b for a, b in zip(total[name], values, strict=True)]
    return total


def namespace(run: int) -> str:
    return "warm" if run < 0 else f"run{run}"


def scan(spark: Any, parquet: Path, runs: int) -> Samples:
    """Every row of ``lineitem`` into the ``noop`` sink."""

    def drain(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    steps: dict[str, Callable[[int], object]] = {
        ALMANAC: lambda _: drain(spark.table(f"{ALMANAC}.run0.lineitem")),
        FLOOR: lambda _: drain(spark.table(f"{FLOOR}.run0.lineitem")),
        PARQUET: lambda _: drain(spark.read.parquet(str(parquet / "run0" / "lineitem"))),
    }
    for step in steps.values():
        step(0)
    return take_turns(steps, runs)


def queries(spark: Any, parquet: Path, runs: int) -> dict[str, Samples]:
    """Each query on both catalogs' ``run0`` tables and on temp views of the
    plain Parquet; row counts compared once (which also warms every path)."""
    for table in TABLES:
        spark.read.parquet(str(parquet / "run0" / table)).createOrReplaceTempView(table)
    prefixes = {ALMANAC: f"{ALMANAC}.run0.", FLOOR: f"{FLOOR}.run0.", PARQUET: ""}
    figures = {}
    for query in BENCH_QUERIES:
        texts = {name: QUERIES[query].format(p=p) for name, p in prefixes.items()}
        counts = {name: len(spark.sql(text).collect()) for name, text in texts.items()}
        assert len(set(counts.values())) == 1, (query, counts)

        def run_query(text: str) -> Callable[[int], object]:
            return lambda _: spark.sql(text).collect()

        samples = take_turns({name: run_query(text) for name, text in texts.items()}, runs)
        report(f"TPC-H {query}", samples, READ_GOAL)
        figures[query] = samples
    return figures


def insert(spark: Any, inserts: int) -> Samples:
    """One-row INSERTs into a small table of each catalog, taking turns."""
    for catalog in CATALOGS:
        spark.sql(f"CREATE TABLE {catalog}.run0.one (id BIGINT, v STRING) USING iceberg")
        spark.sql(f"INSERT INTO {catalog}.run0.one VALUES (-1, 'warm')")

    def one_row(catalog: str) -> Callable[[int], object]:
        return lambda run: spark.sql(f"INSERT INTO {catalog}.run0.one VALUES ({run}, 'x')")

    samples = take_turns({name: one_row(name) for name in CATALOGS}, inserts)
    for catalog in CATALOGS:
        rows = spark.table(f"{catalog}.run0.one").count()
        assert rows == inserts + 1, (catalog, rows)
    return samples


def data_files(spark: Any, table: str) -> list[str]:
    """The data files of an Iceberg table, from its ``files`` metadata table."""
    return [row[0] for row in spark.sql(f"SELECT file_path FROM {table}.files").collect()]


def codec(path: str) -> str:
    """The compression of a Parquet file's first column chunk."""
    import pyarrow.parquet as pq

    return str(
        pq.ParquetFile(path.removeprefix("file:")).metadata.row_group(0).column(0).compression
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sf",
        type=float,
        default=float(os.environ.get("ALMANAC_BENCH_SF", "0.1")),
        help="TPC-H scale factor (default: $ALMANAC_BENCH_SF, else 0.1)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each load, scan and query")
    parser.add_argument("--inserts", type=int, default=20, help="one-row INSERTs per catalog")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="almanac-bench-spark-"))
    try:
        run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def run(args: argparse.Namespace, root: Path) -> None:
    tpch = generate(args.sf, root / "tpch")
    conf = {**floor_conf(root / "floor-warehouse"), "spark.driver.memory": "4g"}
    spark = almanac.spark.session(str(root / "catalog"), catalog=ALMANAC, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = cached_sources(spark, tpch)
        print(
            f"TPC-H SF {args.sf:g}: lineitem {rows['lineitem']:,} rows; "
            f"{spark.sparkContext.defaultParallelism} Spark cores; load average "
            f"{os.getloadavg()[0]:.1f}; medians of {args.runs} runs taking turns "
            f"({args.inserts} for INSERT); floor = Iceberg's hadoop catalog, same session",
            flush=True,
        )
        parquet = root / "parquet"
        total = load(spark, parquet, args.runs)
        load_ratio = report("load, all tables", total, LOAD_GOAL)
        scan_ratio = report("full scan", scan(spark, parquet, args.runs), READ_GOAL)
        query_ratios = [ratio(s, ALMANAC) for s in queries(spark, parquet, args.runs).values()]
        insert_ratio = report("one-row INSERT", insert(spark, args.inserts), INSERT_GOAL, "ms")
        paths = {name: data_files(spark, f"{name}.run0.lineitem") for name in CATALOGS}
        paths[PARQUET] = [str(p) for p in (parquet / "run0" / "lineitem").glob("*.parquet")]
        written = ", ".join(f"{name} {len(p)} ({codec(p[0])})" for name, p in paths.items())
        print(
            f"lineitem files (codec): {written}; load average at the end {os.getloadavg()[0]:.1f}"
        )
        print(
            f"summary (almanac/floor): load {load_ratio:.2f}x, scan {scan_ratio:.2f}x, "
            f"queries {min(query_ratios):.2f}-{max(query_ratios):.2f}x, "
            f"one-row INSERT {insert_ratio:.2f}x",
            flush=True,
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``make demo``: the catalog and its Spark data plane, end to end, on the
embedded default (a catalog directory with its SQLite metastore and its
warehouse).

1. DDL: build a small catalog through SQL, evolve it, show two versions side
   by side;
2. data: generate TPC-H (SF 0.1, ``--sf``), load every table with CREATE
   TABLE AS SELECT (table and data in one version each), run a report, evolve
   a table (add a column, backfill it with INSERT OVERWRITE), read the report
   as it was before the backfill and as it is now;
3. the history of every version.

``python -m almanac.demo [DIR] [--sf 0.1] [--ddl-only]``
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import almanac
from almanac.catalog_version import CatalogVersion
from almanac.clock import to_datetime
from almanac.entries import ObjectIdsReserved
from almanac.serialization import encode_catalog

SETUP = """
CREATE ZONE SALES_ZONE WITH (PARTITIONS=16, REPLICAS=3, STORAGE_PROFILES='fast,default');
CREATE SCHEMA SALES;
CREATE TABLE SALES.CUSTOMERS (
    ID INT64 PRIMARY KEY,
    NAME VARCHAR(100) NOT NULL,
    COUNTRY VARCHAR(2)
) ZONE SALES_ZONE;
CREATE TABLE SALES.ORDERS (
    ID INT64,
    CUSTOMER_ID INT64,
    AMOUNT DECIMAL(10, 2),
    PLACED TIMESTAMP(3),
    PRIMARY KEY USING SORTED (CUSTOMER_ID, ID)
) COLOCATE BY (CUSTOMER_ID) ZONE SALES_ZONE STORAGE PROFILE 'fast';
"""

EVOLUTION = [
    "CREATE INDEX ORDERS_BY_PLACED ON SALES.ORDERS USING SORTED (PLACED DESC)",
    "ALTER TABLE SALES.ORDERS ADD COLUMN STATUS VARCHAR(16) NOT NULL DEFAULT 'NEW'",
    "ALTER TABLE SALES.ORDERS ALTER COLUMN AMOUNT SET DATA TYPE DECIMAL(18, 2)",
    "ALTER TABLE SALES.CUSTOMERS RENAME TO CLIENTS; ALTER TABLE SALES.CLIENTS DROP COLUMN COUNTRY",
    "ALTER ZONE SALES_ZONE SET (REPLICAS=5)",
]


def describe(snap: CatalogVersion) -> list[str]:
    """A plain-text listing of one catalog version."""
    lines = [f"version {snap.version} (active {to_datetime(snap.activation_time):%H:%M:%S.%f})"]
    for zone in snap.zones():
        default = " [default]" if zone.id == snap.default_zone_id else ""
        lines.append(
            f"zone {zone.name}{default}: {zone.partitions} partitions, "
            f"{zone.replicas} replicas, quorum {zone.quorum_size}"
        )
    for schema in snap.schemas():
        lines.append(f"schema {schema.name}")
        for table in snap.tables(schema.name):
            lines.append(f"  table {table.name} (v{table.table_version}, id {table.id})")
            for col in table.columns:
                params = [p for p in (col.precision, col.scale, col.length) if p is not None]
                ptext = f"({', '.join(map(str, params))})" if params else ""
                null = "" if col.nullable else " NOT NULL"
                key = " PK" if col.name in table.primary_key else ""
                lines.append(f"    {col.name} {col.type.sql_name}{ptext}{null}{key}")
            for index in snap.indexes(table.id):
                cols = [
                    name
                    if not index.collations or index.collations[i].ascending
                    else f"{name} DESC"
                    for i, name in enumerate(index.columns)
                ]
                lines.append(
                    f"    index {index.name} {index.kind.name} ({', '.join(cols)}) "
                    f"{index.status.name}"
                )
    return lines


def side_by_side(left: list[str], right: list[str], width: int = 58) -> str:
    rows = itertools.zip_longest(left, right, fillvalue="")
    return "\n".join(f"{a[:width]:<{width}} | {b}" for a, b in rows)


REPORT = """
    SELECT n_name AS nation, round(sum(l_extendedprice * (1 - l_discount)), 2) AS revenue
    FROM tpch.customer, tpch.orders, tpch.lineitem, tpch.supplier, tpch.nation, tpch.region
    WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
      AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey
      AND n_regionkey = r_regionkey AND r_name = 'ASIA'
      AND o_orderdate >= date '1994-01-01' AND o_orderdate < date '1995-01-01'
    GROUP BY n_name ORDER BY revenue DESC
"""
"""TPC-H Q5: revenue of local suppliers per Asian nation in 1994."""

TIERS = """
    SELECT c_tier AS tier, count(*) AS customers, round(sum(c_acctbal), 2) AS balance
    FROM {customer} GROUP BY c_tier ORDER BY tier
"""


def show(title: str, rows: Sequence[Any], columns: Sequence[str]) -> None:
    """A small text table."""
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    print(title)
    print("  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def ddl_part(root: Path) -> None:
    """Build and evolve a catalog through SQL; two versions side by side."""
    with almanac.connect(str(root)) as cat:
        first = cat.sql(SETUP).version
        print(f"Setup script committed as one version: {first}")
        for statement in EVOLUTION:
            version = cat.sql(statement).version
            print(f"  v{version}: {statement}")
        latest = encode_catalog(cat.catalog())
    with almanac.connect(str(root)) as cat:
        same = encode_catalog(cat.catalog()) == latest
        print(f"Reopened: version {cat.latest_version}, byte-identical catalog: {same}")
        print()
        print(side_by_side(describe(cat.catalog(first)), describe(cat.catalog())))


def spark_session(root: Path, app: str = "almanac-demo") -> Any:
    """One local session for a demo, on loopback, its scratch files under ``root``."""
    from almanac.spark.local import local_session

    spark = local_session(
        app,
        scratch=root / "spark-local",
        config={
            "spark.sql.python.filterPushdown.enabled": "true",
            "spark.sql.warehouse.dir": str(root / "spark-warehouse"),
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def pipeline(root: Path, scale: float) -> None:
    """TPC-H into the catalog through Spark, a report, an evolution, time travel."""
    import almanac.spark
    from almanac.spark.tpch import TABLES, generate

    target = str(root)
    started = time.perf_counter()
    data = generate(scale, root / "tpch-source")
    print(f"Generated TPC-H SF {scale} in {time.perf_counter() - started:.1f} s: {data}")
    spark = spark_session(root)
    try:
        with almanac.connect(target) as cat:
            cat.sql("CREATE ZONE TPCH_ZONE WITH (PARTITIONS=4); CREATE SCHEMA TPCH")
            print("CREATE TABLE ... AS SELECT, one version per table (table and data together):")
            for table, key in TABLES.items():
                df = spark.read.parquet(str(data / f"{table}.parquet"))
                result = almanac.spark.create_table_as_select(
                    target, f"TPCH.{table}", df, key, zone="TPCH_ZONE"
                )
                print(
                    f"  v{result.version}: {result.table} {result.rows:,} rows "
                    f"in {result.files} files"
                )
            almanac.spark.attach(spark, target)
            report = spark.sql(REPORT)
            show(
                "Report (TPC-H Q5, revenue per Asian nation, 1994):",
                report.collect(),
                report.columns,
            )

            before = cat.latest_version
            added = cat.sql("ALTER TABLE TPCH.CUSTOMER ADD COLUMN C_TIER VARCHAR(8)").version
            print(f"  v{added}: ALTER TABLE TPCH.CUSTOMER ADD COLUMN C_TIER VARCHAR(8)")
            before_backfill = cat.clock.now()
            almanac.spark.attach(spark, target)  # the view gains C_TIER
            columns = spark.table("tpch.customer").columns[:-1]
            # Through almanac.spark.sql, INSERT runs Spark's native writer and
            # commits once; plain spark.sql refuses to write into a view.
            almanac.spark.sql(
                spark,
                target,
                f"INSERT OVERWRITE TPCH.CUSTOMER SELECT {', '.join(columns)}, "
                "CASE WHEN c_acctbal >= 7000 THEN 'gold' WHEN c_acctbal >= 2000 "
                "THEN 'silver' ELSE 'standard' END FROM tpch.customer",
            )
            print("  INSERT OVERWRITE TPCH.CUSTOMER backfilled C_TIER (one native data commit)")
            almanac.spark.attach(spark, target)  # native views over the new files

            then = almanac.spark.read_table(
                spark, target, "TPCH.CUSTOMER", timestamp=before_backfill
            )
            then.createOrReplaceTempView("customer_before_backfill")
            old = spark.sql(TIERS.format(customer="customer_before_backfill"))
            new = spark.sql(TIERS.format(customer="tpch.customer"))
            print()
            show("Time travel: customers by tier before the backfill:", old.collect(), old.columns)
            show("... and now:", new.collect(), new.columns)
            at_before = almanac.spark.read_table(spark, target, "TPCH.CUSTOMER", version=before)
            print(f"TPCH.CUSTOMER at v{before}: {', '.join(at_before.columns)}")
            now = spark.table("tpch.customer").columns
            print(f"TPCH.CUSTOMER at v{cat.latest_version}: {', '.join(now)}")
    finally:
        spark.stop()


def iceberg_tables(root: Path) -> None:
    """Where any Iceberg reader (pyiceberg, Trino, DuckDB...) finds each table."""
    if importlib.util.find_spec("pyarrow") is None:
        return
    from almanac.data import TableData

    with almanac.connect(str(root)) as cat:
        data = TableData.for_catalog(cat)
        snap = cat.catalog()
        lines = []
        for table in snap.tables():
            location = data.metadata_location(table.id)
            if location is not None:
                schema = snap.schema_by_id(table.schema_id)
                assert schema is not None
                lines.append(f"  {schema.name}.{table.name}: {location}")
    if lines:
        print("Iceberg tables (open with pyiceberg's StaticTable.from_metadata):")
        print("\n".join(lines))


def history(root: Path) -> None:
    """Every catalog version, with the data commits made against it."""
    with almanac.connect(str(root)) as cat:
        commits: dict[int, list[str]] = {}
        if importlib.util.find_spec("pyarrow") is not None:
            from almanac.data import TableData

            data = TableData.for_catalog(cat)
            for table in cat.catalog().tables():
                for snap in data.history(table.id):
                    rows = sum(f.rows for f in snap.files)
                    commits.setdefault(snap.catalog_version, []).append(
                        f"data {snap.operation} {table.name}: {rows:,} rows"
                    )
        print("History:")
        for info in cat.history():
            kinds = ", ".join(
                type(e).__name__
                for e in info.update.entries
                if not isinstance(e, ObjectIdsReserved)
            )
            print(f"  v{info.version} at {to_datetime(info.activation_time):%H:%M:%S.%f}: {kinds}")
            for line in commits.get(info.version, []):
                print(f"      {line}")


@contextlib.contextmanager
def workspace(given: str | None, prefix: str) -> Iterator[Path]:
    """Where a demo writes everything it makes, said first and last: the
    directory ``given`` (made if missing) is kept, with its size; without
    one, a temporary directory is removed at the end, whatever happens."""
    root = Path(given) if given else Path(tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    print(f"This demo writes everything it makes in {root}")
    try:
        yield root
    finally:
        size = f"{tree_bytes(root) / 2**20:.0f} MB"
        if given:
            print(f"Kept {root} ({size}); delete it when done")
        else:
            shutil.rmtree(root, ignore_errors=True)
            print(f"Removed {root} ({size}); give a directory to keep what a demo makes")


def tree_bytes(root: Path) -> int:
    """The bytes of the files under ``root``."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m almanac.demo", description=__doc__)
    parser.add_argument(
        "dir", nargs="?", help="catalog directory, kept (default: a temp dir, removed at the end)"
    )
    parser.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor")
    parser.add_argument("--ddl-only", action="store_true", help="skip the Spark pipeline")
    args = parser.parse_args(argv)
    with workspace(args.dir, "almanac-demo-") as root:
        print("The catalog is that directory: its SQLite metastore, its warehouse below it")
        ddl_part(root)
        if not args.ddl_only:
            print()
            pipeline(root, args.sf)
        print()
        history(root)
        print()
        iceberg_tables(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

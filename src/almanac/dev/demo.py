"""``make demo``: the catalog and its Spark data plane, end to end, on the
embedded default (a catalog directory with its SQLite metastore and its
warehouse).

1. DDL: build a small catalog through SQL, evolve it, show two versions side
   by side;
2. data, through plain ``spark.sql`` on ``almanac.spark.session`` (Apache
   Iceberg's Spark runtime, the catalog served from inside this process):
   generate TPC-H (SF 0.1, ``--sf``), load every table with CREATE TABLE AS
   SELECT (one catalog version each), run a report, add a column and
   backfill it with UPDATE, read the table by Iceberg snapshot (``VERSION
   AS OF``, ``TIMESTAMP AS OF``), MERGE, and show the catalog's own history;
3. the history of every version.

``python -m almanac.dev.demo [DIR] [--sf 0.1] [--ddl-only]``
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
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import to_datetime
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


def describe(version: CatalogVersion) -> list[str]:
    """A plain-text listing of one catalog version."""
    lines = [
        f"version {version.version} (active {to_datetime(version.activation_time):%H:%M:%S.%f})"
    ]
    for zone in version.zones():
        default = " [default]" if zone.id == version.default_zone_id else ""
        lines.append(
            f"zone {zone.name}{default}: {zone.partitions} partitions, "
            f"{zone.replicas} replicas, quorum {zone.quorum_size}"
        )
    for schema in version.schemas():
        lines.append(f"schema {schema.name}")
        for table in version.tables(schema.name):
            lines.append(f"  table {table.name} (v{table.table_version}, id {table.id})")
            for col in table.columns:
                params = [p for p in (col.precision, col.scale, col.length) if p is not None]
                ptext = f"({', '.join(map(str, params))})" if params else ""
                null = "" if col.nullable else " NOT NULL"
                key = " PK" if col.name in table.primary_key else ""
                lines.append(f"    {col.name} {col.type.sql_name}{ptext}{null}{key}")
            for index in version.indexes(table.id):
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


CTAS = """
    CREATE TABLE almanac.tpch.{table} USING iceberg AS SELECT * FROM parquet.`{source}`
"""

ALTER = "ALTER TABLE almanac.tpch.customer ADD COLUMN c_tier STRING"

TIERS = """
    SELECT c_tier AS tier, count(*) AS customers, round(sum(c_acctbal), 2) AS balance
    FROM {catalog}.tpch.customer {as_of} GROUP BY c_tier ORDER BY tier
"""

BACKFILL = """
    UPDATE almanac.tpch.customer SET c_tier = CASE
        WHEN c_acctbal >= 7000 THEN 'gold' WHEN c_acctbal >= 2000 THEN 'silver'
        ELSE 'standard' END
"""

MERGE = """
    MERGE INTO almanac.tpch.customer t
    USING (
        SELECT c_custkey, c_name, c_address, c_nationkey, c_phone,
               c_acctbal + 5000 AS c_acctbal, c_mktsegment, c_comment
        FROM almanac.tpch.customer WHERE c_custkey % 1000 = 0
        UNION ALL
        SELECT max(c_custkey) + 1, 'Customer#new', 'nowhere', 0, '10-000-000-0000',
               9000.00, 'BUILDING', 'joined in the demo'
        FROM almanac.tpch.customer
    ) s
    ON t.c_custkey = s.c_custkey
    WHEN MATCHED THEN UPDATE SET c_acctbal = s.c_acctbal, c_tier = 'gold'
    WHEN NOT MATCHED THEN INSERT (c_custkey, c_name, c_address, c_nationkey, c_phone,
        c_acctbal, c_mktsegment, c_comment, c_tier)
      VALUES (s.c_custkey, s.c_name, s.c_address, s.c_nationkey, s.c_phone, s.c_acctbal,
        s.c_mktsegment, s.c_comment, 'gold')
"""
"""Raise every thousandth customer's balance and add one customer: one commit."""

COLUMNS = ("nation", "revenue")
TIER_COLUMNS = ("tier", "customers", "balance")


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


def spark_session(root: Path) -> Any:
    """``almanac.spark.session`` on the catalog at ``root`` (Spark catalog
    ``almanac``, served from inside this process), with Spark's scratch
    files under ``root`` and times read and written in UTC."""
    import almanac.spark

    scratch = root / "spark-local"
    scratch.mkdir(parents=True, exist_ok=True)
    spark = almanac.spark.session(
        str(root),
        conf={
            "spark.local.dir": str(scratch),
            "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={scratch}",
            "spark.sql.warehouse.dir": str(root / "spark-warehouse"),
            "spark.sql.session.timeZone": "UTC",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def pipeline(root: Path, scale: float) -> None:
    """TPC-H into the catalog through plain ``spark.sql`` on Apache Iceberg's
    Spark runtime: CTAS, a report, ALTER plus a backfill, time travel by
    snapshot, MERGE, and the catalog's own history."""
    from almanac.spark.tpch import QUERIES, TABLES, generate

    started = time.perf_counter()
    data = generate(scale, root / "tpch-source")
    print(f"Generated TPC-H SF {scale} in {time.perf_counter() - started:.1f} s: {data}")
    spark = spark_session(root)
    try:
        with almanac.connect(str(root)) as cat:

            def sql(text: str) -> Any:
                return spark.sql(text).collect()

            def snapshot() -> tuple[int, str]:
                """The customer table's current snapshot and its commit time (UTC)."""
                [row] = sql(
                    "SELECT snapshot_id, date_format(committed_at, 'yyyy-MM-dd HH:mm:ss.SSS') "
                    "FROM almanac.tpch.customer.snapshots ORDER BY committed_at DESC LIMIT 1"
                )
                return int(row[0]), str(row[1])

            sql("CREATE NAMESPACE almanac.tpch")
            print("CREATE TABLE ... AS SELECT, one catalog version per table:")
            for table in TABLES:
                sql(CTAS.format(table=table, source=data / f"{table}.parquet"))
                [[rows]] = sql(f"SELECT count(*) FROM almanac.tpch.{table}")
                print(f"  v{cat.catalog().version}: almanac.tpch.{table} {rows:,} rows")
            report = spark.sql(QUERIES["Q5"].format(p="almanac.tpch."))
            show("Report (TPC-H Q5, revenue per Asian nation, 1994):", report.collect(), COLUMNS)
            print()

            loaded, loaded_at = snapshot()
            sql(ALTER)
            print(f"v{cat.catalog().version}: {ALTER}")
            sql(BACKFILL)
            backfilled, _ = snapshot()
            cat.catch_up()  # the Spark session's commits reach this node through the log
            before_merge = cat.latest_version
            print(f"UPDATE backfilled c_tier: snapshot {backfilled}")
            show("Customers by tier:", sql(TIERS.format(catalog="almanac", as_of="")), TIER_COLUMNS)
            sql(MERGE)
            merged, _ = snapshot()
            print(f"MERGE: every 1000th customer richer and gold, one new: snapshot {merged}")
            show("Customers by tier:", sql(TIERS.format(catalog="almanac", as_of="")), TIER_COLUMNS)
            print()

            as_of = f"VERSION AS OF {backfilled}"
            show(
                f"Time travel, {as_of} (before the MERGE):",
                sql(TIERS.format(catalog="almanac", as_of=as_of)),
                TIER_COLUMNS,
            )
            as_of = f"TIMESTAMP AS OF '{loaded_at}'"
            then = spark.sql(f"SELECT * FROM almanac.tpch.customer {as_of}")
            print(
                f"Time travel, {as_of} (the load, snapshot {loaded}): "
                f"{then.count():,} rows of {', '.join(then.columns)}"
            )
            print("(a snapshot is read with the table's schema as of that snapshot)")
            almanac.spark.add_catalog(spark, "then", str(root), version=before_merge)
            show(
                f"Every table as of catalog version {before_merge} (before the MERGE), "
                f"through add_catalog(spark, 'then', dir, version={before_merge}):",
                sql(TIERS.format(catalog="then", as_of="")),
                TIER_COLUMNS,
            )
    finally:
        spark.stop()


def iceberg_tables(root: Path) -> None:
    """Where any Iceberg reader (pyiceberg, Trino, DuckDB...) finds each table."""
    if importlib.util.find_spec("pyarrow") is None:
        return
    from almanac.data import TableData

    with almanac.connect(str(root)) as cat:
        data = TableData.for_catalog(cat)
        version = cat.catalog()
        lines = []
        for table in version.tables():
            location = data.metadata_location(table.id)
            if location is not None:
                schema = version.schema_by_id(table.schema_id)
                assert schema is not None
                lines.append(f"  {schema.name}.{table.name}: {location}")
    if lines:
        print("Iceberg tables (open with pyiceberg's StaticTable.from_metadata):")
        print("\n".join(lines))


def history(root: Path) -> None:
    """Every catalog version in words, oldest first (``SHOW HISTORY``): DDL
    and data commits alike, each a version a pinned read can name."""
    with almanac.connect(str(root)) as cat:
        result = cat.sql("SHOW HISTORY")
    print("History (SHOW HISTORY), oldest first:")
    for version, activated, _node, summary in reversed(result.rows):
        text = str(summary)
        shown = text if len(text) <= 90 else text[:87] + "..."
        print(f"  v{version} at {activated}: {shown}")


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
    parser = argparse.ArgumentParser(prog="python -m almanac.dev.demo", description=__doc__)
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

"""TPC-H SF 0.01 loaded through CREATE TABLE AS SELECT, queried through
attach + spark.sql (native views and Python-source tables) and read_table,
checked against duckdb on the generated Parquet files."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

import almanac.spark
from almanac.catalog import Catalog
from almanac.data import Predicate
from almanac.spark.tpch import QUERIES, TABLES, generate


def _normal(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(round(float(v), 2) if isinstance(v, float | decimal.Decimal) else v for v in row)


def _sorted(result: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((_normal(r) for r in result), key=lambda r: tuple((v is None, str(v)) for v in r))


def _same(ours: list[tuple[Any, ...]], oracle: list[tuple[Any, ...]]) -> bool:
    """Equal after rounding to 2 decimals (a value on a .005 boundary may round
    apart when one engine averages in decimal and the other in double)."""
    if len(ours) != len(oracle):
        return False
    for a, b in zip(_sorted(ours), _sorted(oracle), strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if abs(x - y) > 0.0101:
                    return False
            elif x != y:
                return False
    return True


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(0.01, tmp_path_factory.mktemp("tpch"))


def test_tpch_queries_match_duckdb(spark: Any, cat: Catalog, target: str, tpch_data: Path) -> None:
    cat.sql("CREATE ZONE TPCH_ZONE WITH (PARTITIONS=4); CREATE SCHEMA TPCH")
    for table, key in TABLES.items():
        df = spark.read.parquet(str(tpch_data / f"{table}.parquet"))
        result = almanac.spark.create_table_as_select(
            target, f"TPCH.{table}", df, key, zone="TPCH_ZONE"
        )
        assert result.rows == df.count()
    oracle = duckdb.connect()
    for table in TABLES:
        oracle.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{tpch_data / table}.parquet')"
        )
    # The native views (Spark's Parquet scan), then the Python-source tables.
    for native in (True, False):
        almanac.spark.attach(spark, target, native=native)
        plan = spark.sql("SELECT * FROM tpch.lineitem")._jdf.queryExecution().executedPlan()
        assert ("FileScan parquet" in str(plan.toString())) is native
        for name, text in QUERIES.items():
            ours = [tuple(r) for r in spark.sql(text.format(p="tpch.")).collect()]
            expected = oracle.execute(text.format(p="")).fetchall()
            assert ours, name
            assert _same(ours, expected), (name, native)

    # read_table: every column of every row, and a filtered read.
    summary = (
        "SELECT count(*), sum(l_quantity), sum(l_extendedprice * (1 - l_discount)), "
        "count(DISTINCT l_orderkey), min(l_shipdate), max(l_comment) FROM {t}{w}"
    )
    spark_view = "tpch_lineitem_native"
    lineitem = almanac.spark.read_table(spark, target, "tpch.lineitem")
    lineitem.createOrReplaceTempView(spark_view)
    ours = [tuple(r) for r in spark.sql(summary.format(t=spark_view, w="")).collect()]
    assert _same(ours, oracle.execute(summary.format(t="lineitem", w="")).fetchall())
    orderkey = next(c for c in lineitem.columns if c.lower() == "l_orderkey")
    filtered = almanac.spark.read_table(
        spark, target, "TPCH.LINEITEM", filters=[Predicate(orderkey, "<=", 1000)]
    )
    filtered.createOrReplaceTempView(spark_view)
    ours = [tuple(r) for r in spark.sql(summary.format(t=spark_view, w="")).collect()]
    expected = oracle.execute(
        summary.format(t="lineitem", w=" WHERE l_orderkey <= 1000")
    ).fetchall()
    assert _same(ours, expected)

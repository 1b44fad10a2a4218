"""TPC-H SF 0.01 loaded by CREATE TABLE AS SELECT through plain
``spark.sql`` on Apache Iceberg's runtime, queried the same way, and checked
against duckdb on the generated Parquet files."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

import almanac
import almanac.spark
from almanac.spark.tpch import QUERIES, TABLES, generate

CAT = "tpch_rt"
"""The Spark catalog name: the run's session may hold other tests' catalogs."""


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


def test_tpch_loaded_by_ctas_answers_as_duckdb(spark: Any, tmp_path: Path, tpch_data: Path) -> None:
    target = str(tmp_path / "catalog")
    rt = almanac.spark.session(target, catalog=CAT)
    rt.sql(f"CREATE NAMESPACE {CAT}.tpch")
    with almanac.connect(target) as cat:
        for table in TABLES:
            before = cat.latest_version
            rt.sql(
                f"CREATE TABLE {CAT}.tpch.{table} USING iceberg AS "
                f"SELECT * FROM parquet.`{tpch_data / table}.parquet`"
            )
            cat.catch_up()
            assert cat.latest_version == before + 1, table  # table and data in one version
    oracle = duckdb.connect()
    for table in TABLES:
        oracle.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{tpch_data / table}.parquet')"
        )
    for name, text in QUERIES.items():
        ours = [tuple(r) for r in rt.sql(text.format(p=f"{CAT}.tpch.")).collect()]
        expected = oracle.execute(text.format(p="")).fetchall()
        assert ours, name
        assert _same(ours, expected), name
    # Every column of every row.
    summary = (
        "SELECT count(*), sum(l_quantity), sum(l_extendedprice * (1 - l_discount)), "
        "count(DISTINCT l_orderkey), min(l_shipdate), max(l_comment) FROM {t}"
    )
    ours = [tuple(r) for r in rt.sql(summary.format(t=f"{CAT}.tpch.lineitem")).collect()]
    assert _same(ours, oracle.execute(summary.format(t="lineitem")).fetchall())

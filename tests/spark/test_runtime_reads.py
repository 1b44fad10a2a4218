"""Tables written by Almanac's own data layer (``almanac.data.write_table``,
what tablet servers and the Python API write) read through plain
``spark.sql`` on Apache Iceberg's runtime as Almanac's reader reads them:
Iceberg's nested and fixed types, and columns added with a default,
widened and renamed after files were written."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from almanac.data import arrow_schema, read_table, write_table
from almanac.node.catalog import Catalog

CAT = "reads"
"""The Spark catalog name: the run's session may hold other tests' catalogs."""


def _write(cat: Catalog, schema: str, table: str, rows: list[dict[str, Any]]) -> None:
    found = cat.catalog().table(table, schema)
    assert found is not None
    write_table(cat, table, pa.Table.from_pylist(rows, arrow_schema(found)), schema)


def _spark_rows(spark: Any, name: str) -> list[dict[str, Any]]:
    frame = spark.sql(f"SELECT * FROM {CAT}.{name}")
    return sorted((r.asDict(recursive=True) for r in frame.collect()), key=lambda r: r["K"])


def _almanac_rows(cat: Catalog, schema: str, table: str) -> list[dict[str, Any]]:
    rows = read_table(cat, table, schema).to_pylist()
    return sorted(rows, key=lambda r: r["K"])


def test_nested_and_fixed_types(rt: Any, node: Catalog) -> None:
    node.sql(
        "CREATE SCHEMA TYPES; CREATE TABLE TYPES.T (K BIGINT, F FIXED(2), "
        "S STRUCT<A: INT, B: ARRAY<STRING>>, M MAP<STRING, DOUBLE>, L ARRAY<BIGINT>)"
    )
    row = {"K": 1, "F": b"ab", "S": {"A": 1, "B": ["x", None]}, "M": [("pi", 3.5)], "L": [1, 2]}
    _write(node, "TYPES", "T", [row, {"K": 2}])
    frame = rt.sql(f"SELECT * FROM {CAT}.TYPES.T")
    assert frame.schema.simpleString() == (
        "struct<K:bigint,F:binary,S:struct<A:int,B:array<string>>,"
        "M:map<string,double>,L:array<bigint>>"
    )
    expected = _almanac_rows(node, "TYPES", "T")
    for got in expected:  # Arrow reads a map as a list of pairs
        got["M"] = None if got["M"] is None else dict(got["M"])
    assert _spark_rows(rt, "TYPES.T") == expected
    assert expected[0] == dict(row, M={"pi": 3.5})


def test_added_widened_and_renamed_columns_read_as_almanac_reads_them(
    rt: Any, node: Catalog
) -> None:
    """A file written before ``ADD COLUMN … DEFAULT 7`` reads 7 (Iceberg's
    initial default); a widened column reads in its new type, a renamed one
    by its new name (columns resolve by field id)."""
    node.sql("CREATE SCHEMA EVO; CREATE TABLE EVO.T (K INT64 PRIMARY KEY, A INT8, F FLOAT)")
    _write(node, "EVO", "T", [{"K": 1, "A": -128, "F": 1.5}])
    node.sql(
        "ALTER TABLE EVO.T ADD COLUMN C INT32 DEFAULT 7; "
        "ALTER TABLE EVO.T ALTER COLUMN A SET DATA TYPE INT64; "
        "ALTER TABLE EVO.T ALTER COLUMN F SET DATA TYPE DOUBLE; "
        "ALTER TABLE EVO.T RENAME COLUMN A TO AA"
    )
    _write(node, "EVO", "T", [{"K": 2, "AA": 2**40, "F": -0.25, "C": 8}])
    frame = rt.sql(f"SELECT * FROM {CAT}.EVO.T")
    assert frame.dtypes == [("K", "bigint"), ("AA", "bigint"), ("F", "double"), ("C", "int")]
    expected = [
        {"K": 1, "AA": -128, "F": 1.5, "C": 7},
        {"K": 2, "AA": 2**40, "F": -0.25, "C": 8},
    ]
    assert _almanac_rows(node, "EVO", "T") == expected
    assert _spark_rows(rt, "EVO.T") == expected


def test_nanosecond_timestamps_are_beyond_spark(rt: Any, node: Catalog) -> None:
    """Spark has no nanosecond timestamp: Iceberg's runtime refuses such a
    table whole (Almanac's own readers, pyiceberg and DuckDB read it)."""
    node.sql("CREATE SCHEMA NANOS; CREATE TABLE NANOS.T (K BIGINT, NS TIMESTAMP_NS)")
    _write(node, "NANOS", "T", [{"K": 1, "NS": dt.datetime(2024, 5, 6, 7, 8, 9, 123456)}])
    assert len(_almanac_rows(node, "NANOS", "T")) == 1
    with pytest.raises(Exception, match="timestamp_ns"):
        rt.sql(f"SELECT * FROM {CAT}.NANOS.T").collect()


def test_a_change_made_outside_spark_shows_in_the_next_query(rt: Any, node: Catalog) -> None:
    """Another writer's ALTER and append (here Almanac's own) are in the
    next query of the session, not after Iceberg's table cache expires."""
    node.sql("CREATE SCHEMA FRESH; CREATE TABLE FRESH.T (K BIGINT)")
    _write(node, "FRESH", "T", [{"K": 1}])
    assert _spark_rows(rt, "FRESH.T") == [{"K": 1}]
    node.sql("ALTER TABLE FRESH.T ADD COLUMN C INT32")
    assert _spark_rows(rt, "FRESH.T") == [{"K": 1, "C": None}]
    _write(node, "FRESH", "T", [{"K": 2, "C": 3}])
    assert _spark_rows(rt, "FRESH.T") == [{"K": 1, "C": None}, {"K": 2, "C": 3}]

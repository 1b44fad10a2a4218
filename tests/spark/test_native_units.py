"""Native-write planning that needs no Spark session: INSERT parsing and the
lossless-cast rules."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import types as st

import almanac
from almanac.data import DataError
from almanac.data.tablets import bucket_column
from almanac.descriptors import Table
from almanac.spark.sql import InsertStatement, parse_insert
from almanac.spark.write_types import check_type


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "INSERT INTO TABLE `public`.orders (a, b) SELECT 1, 2",
            InsertStatement(False, "public.orders", ("a", "b"), False, "SELECT 1, 2"),
        ),
        (
            "insert overwrite s.t by name select * from x;",
            InsertStatement(True, "s.t", (), True, "select * from x"),
        ),
        (
            "INSERT INTO t VALUES (1, 'a')",
            InsertStatement(False, "t", (), False, "VALUES (1, 'a')"),
        ),
        ("INSERT INTO `a.b`.c SELECT 1", InsertStatement(False, '"a.b".c', (), False, "SELECT 1")),
        ("INSERT OVERWRITE TABLE t PARTITION (x=1) SELECT 1", None),
        ("SELECT 1", None),
    ],
)
def test_parse_insert(text: str, expected: InsertStatement | None) -> None:
    assert parse_insert(text) == expected


def _table() -> Table:
    with almanac.connect("memory://") as cat:
        cat.sql(
            "CREATE TABLE T (I8 INT8, I32 INT32, I64 INT64 PRIMARY KEY, F FLOAT, D DOUBLE, "
            "DEC DECIMAL(10, 2), S VARCHAR(5), TSZ TIMESTAMP WITH LOCAL TIME ZONE, "
            "TS TIMESTAMP, BO BOOLEAN) COLOCATE BY (I64)"
        )
        table = cat.catalog().table("T")
        assert table is not None
        return table


ACCEPTED: list[tuple[str, Any]] = [
    ("I8", st.ByteType()),
    ("I32", st.ShortType()),
    ("I64", st.IntegerType()),
    ("I64", st.DecimalType(18, 0)),
    ("F", st.ShortType()),
    ("D", st.IntegerType()),
    ("D", st.FloatType()),
    ("DEC", st.ShortType()),
    ("DEC", st.DecimalType(9, 1)),
    ("S", st.VarcharType(20)),
    ("TS", st.TimestampNTZType()),
    ("BO", st.NullType()),
]
REFUSED: list[tuple[str, Any]] = [
    ("I8", st.ShortType()),
    ("I32", st.LongType()),
    ("I64", st.DecimalType(19, 0)),
    ("I64", st.DoubleType()),
    ("F", st.IntegerType()),
    ("F", st.DoubleType()),
    ("D", st.LongType()),
    ("DEC", st.DoubleType()),
    ("DEC", st.IntegerType()),
    ("DEC", st.DecimalType(10, 3)),
    ("S", st.IntegerType()),
    ("TSZ", st.TimestampNTZType()),
    ("TS", st.TimestampType()),
    ("BO", st.IntegerType()),
]


def test_lossless_casts() -> None:
    table = _table()
    for name, source in ACCEPTED:
        column = table.column(name)
        assert column is not None
        check_type(source, column, "PUBLIC.T")
    for name, source in REFUSED:
        column = table.column(name)
        assert column is not None
        with pytest.raises(DataError, match=f"Column '{name}' of table 'PUBLIC.T'") as info:
            check_type(source, column, "PUBLIC.T")
        assert info.value.context["rule"] == "lossless-cast", (name, source)


def test_partition_column_is_the_first_bucketable_colocation_column() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql(
            "CREATE TABLE A (F DOUBLE, K VARCHAR(3), PRIMARY KEY (F, K)) COLOCATE BY (F, K);"
            "CREATE TABLE B (F DOUBLE PRIMARY KEY)"
        )
        a, b = cat.catalog().table("A"), cat.catalog().table("B")
        assert a is not None and b is not None
        assert bucket_column(a).name == "K"
        assert bucket_column(b).name == "F"

"""Filters Spark pushes down skip whole files by their statistics."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThanOrEqual,
    StringStartsWith,
)

from almanac.catalog import Catalog
from almanac.data import Predicate, TableData, plan_scan
from almanac.datatypes import ColumnType
from almanac.spark.reader import to_predicate
from tests.spark.helpers import load, rows, save

COLUMNS = {
    "id": ("ID", ColumnType.INT64),
    "name": ("NAME", ColumnType.STRING),
    "day": ("DAY", ColumnType.DATE),
    "at": ("AT", ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
    "wall": ("WALL", ColumnType.TIMESTAMP),
}


def test_filters_become_predicates() -> None:
    assert to_predicate(EqualTo(("ID",), 3), COLUMNS) == Predicate("ID", "=", 3)
    assert to_predicate(GreaterThan(("id",), 3), COLUMNS) == Predicate("ID", ">", 3)
    assert to_predicate(LessThanOrEqual(("name",), "b"), COLUMNS) == Predicate("NAME", "<=", "b")
    assert to_predicate(In(("id",), (1, 2)), COLUMNS) == Predicate("ID", "in", [1, 2])
    assert to_predicate(IsNull(("day",)), COLUMNS) == Predicate("DAY", "is_null")
    assert to_predicate(IsNotNull(("day",)), COLUMNS) == Predicate("DAY", "is_not_null")
    day = dt.date(2020, 1, 2)
    assert to_predicate(EqualTo(("day",), day), COLUMNS) == Predicate("DAY", "=", day)


def test_filters_not_pushed() -> None:
    aware = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    naive = dt.datetime(2020, 1, 1)
    assert to_predicate(StringStartsWith(("name",), "a"), COLUMNS) is None
    assert to_predicate(EqualNullSafe(("id",), 3), COLUMNS) is None
    assert to_predicate(EqualTo(("nope",), 3), COLUMNS) is None
    assert to_predicate(EqualTo(("id",), "3"), COLUMNS) is None
    assert to_predicate(EqualTo(("id",), True), COLUMNS) is None
    assert to_predicate(In(("id",), (1, None)), COLUMNS) is None
    assert to_predicate(EqualTo(("a", "b"), 3), COLUMNS) is None
    # A zone-less instant against an instant column (and the reverse) is ambiguous.
    assert to_predicate(EqualTo(("at",), naive), COLUMNS) is None
    assert to_predicate(EqualTo(("wall",), aware), COLUMNS) is None
    assert to_predicate(EqualTo(("at",), aware), COLUMNS) == Predicate("AT", "=", aware)
    assert to_predicate(EqualTo(("day",), naive), COLUMNS) is None


def _setup(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE ZONE SMALL WITH (PARTITIONS=2);"
        "CREATE SCHEMA S;"
        "CREATE TABLE S.EVENTS (ID INT64 PRIMARY KEY, NAME VARCHAR(10), DAY DATE,"
        " AT TIMESTAMP WITH LOCAL TIME ZONE, SCORE DOUBLE) COLOCATE BY (ID) ZONE SMALL"
    )
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    for chunk in range(4):
        data = [
            (
                chunk * 100 + i,
                f"n{chunk}",
                (base + dt.timedelta(days=chunk * 10 + i % 3)).date(),
                base + dt.timedelta(days=chunk * 10, hours=i),
                None if i % 4 == 0 else float(i),
            )
            for i in range(20)
        ]
        df = spark.createDataFrame(
            data, "ID long, NAME string, DAY date, AT timestamp, SCORE double"
        ).coalesce(1)
        save(df, target, "S.EVENTS")


def test_selective_filter_skips_files_and_keeps_results(
    spark: Any, cat: Catalog, target: str
) -> None:
    _setup(spark, cat, target)
    data = TableData.for_catalog(cat)
    plan = plan_scan(cat, data, "EVENTS", "S", filters=[Predicate("ID", ">=", 300)])
    assert plan.files_total == 8
    assert len(plan.files) == 2
    everything = load(spark, target, "S.EVENTS")
    expected = [r for r in rows(everything) if r[0] >= 300]
    assert rows(load(spark, target, "S.EVENTS").where("ID >= 300")) == expected

    # Proof that Spark's read skipped the pruned files: remove them from disk.
    full = plan_scan(cat, data, "EVENTS", "S")
    kept = {f.path for f in plan.files}
    for f in full.files:
        if f.path not in kept:
            os.remove(f.path)
    assert rows(load(spark, target, "S.EVENTS").where("ID >= 300")) == expected
    with pytest.raises(Exception, match=r"missing from the warehouse"):
        load(spark, target, "S.EVENTS").collect()


CONDITIONS = [
    "ID >= 300",
    "NAME = 'n2'",
    "NAME IN ('n1', 'n3')",
    "DAY < DATE'2024-01-15'",
    "AT >= TIMESTAMP'2024-01-21 05:00:00'",
    "AT < TIMESTAMP'2024-01-01 03:00:00'",
    "SCORE IS NULL",
    "SCORE > 10 AND ID < 150",
]


def test_pushed_filters_never_lose_rows(spark: Any, cat: Catalog, target: str) -> None:
    _setup(spark, cat, target)
    df = load(spark, target, "S.EVENTS")
    baseline = spark.createDataFrame(df.collect(), df.schema)  # not read through the source
    for condition in CONDITIONS:
        expected = rows(baseline.where(condition))
        assert expected, condition
        assert rows(df.where(condition)) == expected, condition

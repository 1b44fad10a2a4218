"""The system tables as Spark views after ``attach``: the same rows as
``system_table``, at the attached version, refreshed by the next attach."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

import almanac.spark
from almanac.catalog import Catalog
from almanac.placement import TableRoute, Tablet, TabletState, route_key
from almanac.system_tables import SYSTEM_TABLES, system_table


def _spark_rows(spark: Any, name: str) -> list[dict[str, Any]]:
    return [dict(r.asDict(recursive=True)) for r in spark.table(name).collect()]


def _arrow_rows(cat: Catalog, name: str, version: int | None = None) -> list[dict[str, Any]]:
    """The rows as Spark hands them back: a map as a dict, an instant naive
    in UTC (the session's time zone)."""
    table = system_table(cat, name, version=version)
    maps = {f.name for f in table.schema if pa.types.is_map(f.type)}
    rows: list[dict[str, Any]] = table.to_pylist()
    for row in rows:
        for key, value in row.items():
            if key in maps:
                row[key] = None if value is None else dict(value)
            elif isinstance(value, dt.datetime):
                row[key] = value.replace(tzinfo=None)
    return rows


def test_system_tables_read_in_spark_at_the_attached_version(
    spark: Any, cat: Catalog, target: str
) -> None:
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY, NAME VARCHAR(10))")
    first = cat.latest_version
    table = cat.catalog().table("T", "S")
    assert table is not None
    route = TableRoute(
        table.id,
        1,
        1,
        (Tablet(0, 0, TabletState.RUNNING, ("ts1", "ts2"), "ts1", 1, 2.0),),
        1,
        TabletState.RUNNING,
    )
    cat.metastore.put(route_key(table.id), route.encode())

    result = almanac.spark.attach(spark, target)
    assert result.system == [f"system.{n.split('.')[1].lower()}" for n in SYSTEM_TABLES]
    assert "s.t" in result.attached
    for name in SYSTEM_TABLES:
        assert _spark_rows(spark, name.lower()) == _arrow_rows(cat, name), name
    tablets = spark.sql("SELECT REPLICAS, LEADER FROM system.tablets").collect()
    assert [(r.REPLICAS, r.LEADER) for r in tablets] == [(["ts1", "ts2"], "ts1")]

    # the next attach shows the version it attaches
    cat.sql("ALTER TABLE S.T ADD COLUMN EXTRA INT64")
    old = almanac.spark.attach(spark, target, version=first)
    assert old.system == result.system
    columns = spark.sql("SELECT NAME FROM system.columns WHERE `TABLE` = 'T' ORDER BY POSITION")
    assert [r.NAME for r in columns.collect()] == ["ID", "NAME"]
    assert spark.table("system.history").count() == first < cat.latest_version
    with pytest.raises(Exception, match="view"):
        spark.sql("INSERT INTO system.tables SELECT * FROM system.tables")

    # damaged placement keys: those tables are skipped and their views dropped
    cat.metastore.put(route_key(table.id), b"{not json")
    damaged = almanac.spark.attach(spark, target)
    assert sorted(damaged.skipped) == ["SYSTEM.SERVERS", "SYSTEM.TABLETS"]
    assert damaged.system == ["system.tables", "system.columns", "system.history"]
    assert not spark.catalog.tableExists("system.tablets")
    assert spark.table("system.columns").count() == 3

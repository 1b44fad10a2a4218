"""CREATE / REPLACE TABLE AS SELECT: table and data in one catalog version."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.functions import udf
from pyspark.sql.types import LongType

import almanac
import almanac.spark
from almanac.catalog import Catalog
from almanac.data import TableData, run_janitor
from almanac.data.snapshots import STAGING_PREFIX
from almanac.datatypes import ColumnType
from almanac.entries import TableCreated
from almanac.errors import AlreadyExistsError, NotFoundError
from almanac.spark import TableBeingCreatedError
from almanac.spark.ctas import reservation_key
from tests.spark.helpers import load, parquet_files, rows, write_dirs

HERE = Path(__file__).parent


def _people(spark: Any, start: int = 0, count: int = 5) -> Any:
    return spark.createDataFrame(
        [
            (
                i,
                f"p{i}",
                decimal.Decimal(f"{i}.25"),
                dt.date(2024, 1, 1 + i),
                dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC),
                dt.datetime(2024, 2, 1, i),
                bytes([i]),
            )
            for i in range(start, start + count)
        ],
        "id long, name string, score decimal(12,2), born date, seen timestamp, "
        "local timestamp_ntz, raw binary",
    ).coalesce(1)


def test_create_table_as_select(spark: Any, cat: Catalog, target: str) -> None:
    before = cat.latest_version
    result = almanac.spark.create_table_as_select(target, "PUBLIC.PEOPLE", _people(spark), ["ID"])
    assert (result.created, result.table, result.rows) == (True, "PUBLIC.PEOPLE", 5)
    cat.catalog_ready(result.version)
    assert result.version == before + 1
    table = cat.catalog().table("PEOPLE")
    assert table is not None
    kinds = [(c.name, c.type, c.nullable, c.precision, c.scale) for c in table.columns]
    assert kinds == [
        ("ID", ColumnType.INT64, False, None, None),
        ("NAME", ColumnType.STRING, True, None, None),
        ("SCORE", ColumnType.DECIMAL, True, 12, 2),
        ("BORN", ColumnType.DATE, True, None, None),
        ("SEEN", ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE, True, 6, None),
        ("LOCAL", ColumnType.TIMESTAMP, True, 6, None),
        ("RAW", ColumnType.BYTES, True, None, None),
    ]
    assert table.primary_key == ("ID",)
    assert cat.catalog().index("PEOPLE_PK") is not None
    # One version made the table and published its data.
    update = cat.history()[-1].update
    assert any(isinstance(e, TableCreated) for e in update.entries)
    snapshot = TableData.for_catalog(cat).current(table.id)
    assert snapshot is not None and snapshot.catalog_version == result.version
    assert rows(load(spark, target, "PEOPLE")) == rows(_people(spark))
    with pytest.raises(Exception, match=r"does not exist"):
        load(spark, target, "PEOPLE", version=before).collect()
    assert cat.metastore.get(reservation_key("PUBLIC", "PEOPLE")) is None


def test_create_existing(spark: Any, cat: Catalog, target: str) -> None:
    almanac.spark.create_table_as_select(target, "PEOPLE", _people(spark), ["id"])
    again = almanac.spark.create_table_as_select(
        target, "people", _people(spark, 10), ["id"], if_not_exists=True
    )
    assert not again.created
    with pytest.raises(AlreadyExistsError, match=r"PUBLIC.PEOPLE"):
        almanac.spark.create_table_as_select(target, "people", _people(spark, 10), ["id"])
    with pytest.raises(NotFoundError, match=r"PUBLIC.OTHER"):
        almanac.spark.replace_table_as_select(target, "other", _people(spark), ["id"])
    with pytest.raises(almanac.CatalogError, match=r"column .nope. of table .PUBLIC.X"):
        almanac.spark.create_table_as_select(target, "X", _people(spark), ["nope"])


def test_replace_swaps_in_one_version(spark: Any, cat: Catalog, target: str) -> None:
    first = almanac.spark.create_table_as_select(target, "PEOPLE", _people(spark), ["id"])
    assert cat.catalog_ready(first.version)
    old = cat.catalog().table("PEOPLE")
    narrow = spark.createDataFrame([(7, "z")], "key int, label string")
    second = almanac.spark.replace_table_as_select(target, "people", narrow, ["key"])
    assert second.replaced and second.version == first.version + 1
    cat.catalog_ready(second.version)
    new = cat.catalog().table("PEOPLE")
    assert old is not None and new is not None and new.id != old.id
    assert [c.name for c in new.columns] == ["KEY", "LABEL"]
    assert rows(load(spark, target, "PEOPLE")) == [(7, "z")]
    assert rows(load(spark, target, "PEOPLE", version=first.version)) == rows(_people(spark))

    third = almanac.spark.create_or_replace_table_as_select(
        target, "PEOPLE", _people(spark, 3, 2), ["id"]
    )
    assert third.replaced
    created = almanac.spark.create_or_replace_table_as_select(target, "FRESH", narrow, ["key"])
    assert created.created and not created.replaced
    assert rows(load(spark, target, "FRESH")) == [(7, "z")]


def _explode(column: str) -> Any:
    """A column whose UDF raises at row 3 (defined inside, so Spark pickles it by value)."""

    def explode(x):  # type: ignore[no-untyped-def]  # hints would make Spark guess an Arrow UDF
        if x == 3:
            raise ValueError("boom at row 3")
        return x

    return udf(explode, LongType())(column)


def test_failing_task_leaves_nothing(spark: Any, cat: Catalog, target: str) -> None:
    df = spark.range(0, 8, 1, 2).select(_explode("id").alias("id"))
    with pytest.raises(Exception, match=r"boom at row 3"):
        almanac.spark.create_table_as_select(target, "PUBLIC.BROKEN", df, ["id"])
    cat.catalog_ready(cat.log.latest_version())
    assert cat.catalog().table("BROKEN") is None
    assert cat.metastore.get(reservation_key("PUBLIC", "BROKEN")) is None
    run_janitor(cat, grace_s=0)
    assert parquet_files(cat) == []
    assert write_dirs(cat, "PUBLIC", "BROKEN") == []


def test_failed_replace_keeps_the_old_table(spark: Any, cat: Catalog, target: str) -> None:
    version = almanac.spark.create_table_as_select(target, "PEOPLE", _people(spark), ["id"]).version
    assert cat.catalog_ready(version)
    df = spark.range(0, 8, 1, 2).select(_explode("id").alias("id"))
    with pytest.raises(Exception, match=r"boom"):
        almanac.spark.replace_table_as_select(target, "PEOPLE", df, ["id"])
    assert cat.latest_version == version
    assert rows(load(spark, target, "PEOPLE")) == rows(_people(spark))


def _gated(column: str, gate: Path) -> Any:
    """The column, each row held back until the file ``gate`` exists."""
    gate_path = str(gate)

    def gated(x):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 120  # a failure guard for a stuck test
        while not os.path.exists(gate_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        return x

    return udf(gated, LongType())(column)


def test_concurrent_create_of_the_same_name_fails_fast(
    spark: Any, cat: Catalog, target: str, tmp_path: Path
) -> None:
    gate = tmp_path / "open"
    df = spark.range(0, 10, 1, 1).select(_gated("id", gate).alias("id"))
    outcome: list[object] = []

    def first() -> None:
        try:
            outcome.append(almanac.spark.create_table_as_select(target, "RACE", df, ["id"]))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        key = reservation_key("PUBLIC", "RACE")
        deadline = time.monotonic() + 60
        while cat.metastore.get(key) is None and thread.is_alive():
            assert time.monotonic() < deadline, "the first create never reserved the name"
            time.sleep(0.05)
        assert thread.is_alive(), outcome
        # The first create cannot finish before the gate opens: failing now
        # is failing fast, without waiting for it.
        with pytest.raises(TableBeingCreatedError, match=r"PUBLIC.RACE.*being created"):
            almanac.spark.create_table_as_select(target, "RACE", spark.range(3), ["id"])
        assert not gate.exists() and cat.metastore.get(key) is not None
    finally:
        gate.touch()
        thread.join()
    assert isinstance(outcome[0], almanac.spark.CtasResult), str(outcome[0])[:3000]
    assert [r[0] for r in rows(load(spark, target, "RACE"))] == list(range(10))


def test_sql_front(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE SCHEMA SHOP")
    spark.createDataFrame(
        [(1, "a", 2.0), (2, "b", 3.5)], "id int, label string, price double"
    ).createOrReplaceTempView("staging_items")
    created = almanac.spark.sql(
        spark, target, "CREATE TABLE shop.items (PRIMARY KEY (id)) AS SELECT * FROM staging_items"
    )
    assert created.table == "SHOP.ITEMS"
    assert rows(spark.sql("SELECT id, label FROM shop.items")) == [(1, "a"), (2, "b")]
    almanac.spark.sql(
        spark,
        target,
        "CREATE OR REPLACE TABLE shop.items (PRIMARY KEY (id)) AS "
        "SELECT id, price * 2 AS price FROM staging_items WHERE id = 2",
    )
    assert rows(spark.sql("SELECT * FROM shop.items")) == [(2, 7.0)]
    almanac.spark.sql(
        spark, target, "REPLACE TABLE shop.items (PRIMARY KEY (id)) AS SELECT 5 AS id"
    )
    assert rows(spark.sql("SELECT * FROM shop.items")) == [(5,)]
    same = almanac.spark.sql(
        spark,
        target,
        "CREATE TABLE IF NOT EXISTS shop.items (PRIMARY KEY (id)) AS SELECT 6 AS id",
    )
    assert not same.created
    passthrough = almanac.spark.sql(spark, target, "SELECT count(*) FROM shop.items")
    assert passthrough.collect()[0][0] == 1


def test_killed_driver_leaves_nothing(tmp_path: Path, target: str) -> None:
    with almanac.connect(target):
        pass
    marker = tmp_path / "started"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), str(HERE.parents[1])]),
    }
    child = subprocess.Popen(
        [sys.executable, str(HERE / "ctas_child.py"), target, str(marker)],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The child starts a Spark session of its own: on a loaded machine,
        # beside the test run's own sessions, that alone can take minutes.
        deadline = time.monotonic() + 600
        while not (marker.exists() and marker.read_text().count("\n") >= 1):
            assert child.poll() is None, "the child driver ended before it was killed"
            assert time.monotonic() < deadline, "the child driver never started writing"
            time.sleep(0.1)
        with almanac.connect(target) as cat:
            assert cat.metastore.get(reservation_key("PUBLIC", "KILLED")) is not None
            assert parquet_files(cat), "the first task's files are on disk"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    with almanac.connect(target) as cat:
        key = reservation_key("PUBLIC", "KILLED")
        # Leases of 10 s: a loaded machine can starve the child's renewals of a
        # shorter one before the test looks, and they must outlive the look.
        deadline = time.monotonic() + 120
        while cat.metastore.get(key) is not None:
            assert time.monotonic() < deadline, "the reservation never expired"
            time.sleep(0.2)
        while cat.metastore.range(STAGING_PREFIX).kvs:  # the staging lease (10 s) runs out too
            assert time.monotonic() < deadline, "the staging lease never expired"
            time.sleep(0.2)
        assert cat.catalog().table("KILLED") is None
        report = run_janitor(cat, grace_s=0)
        assert report.staging_removed
        assert parquet_files(cat) == []
        assert write_dirs(cat, "PUBLIC", "KILLED") == []

"""DataFrame reads and writes through the ``almanac`` format."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

from almanac.catalog import Catalog
from almanac.clock import from_datetime
from almanac.data import TableData
from almanac.spark.writer import AlmanacCommitMessage, AlmanacWriter
from tests.spark.helpers import load, rows, save

SETUP = """
CREATE SCHEMA SALES;
CREATE TABLE SALES.ORDERS (
    ID INT64 PRIMARY KEY,
    CUSTOMER VARCHAR(20) NOT NULL,
    AMOUNT DECIMAL(10, 2),
    QTY INT32
)
"""


def orders(spark: Any, start: int, count: int) -> Any:
    return spark.createDataFrame(
        [(i, f"c{i % 7}", i * 3, i % 5) for i in range(start, start + count)],
        "id long, customer string, amount int, qty int",
    ).selectExpr("id", "customer", "cast(amount as decimal(10, 2)) as amount", "qty")


def test_append_then_read(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    save(orders(spark, 0, 20).coalesce(1), target, "sales.orders")
    save(orders(spark, 20, 5).coalesce(1), target, "SALES.ORDERS")
    df = load(spark, target, "sales.orders")
    assert df.columns == ["ID", "CUSTOMER", "AMOUNT", "QTY"]
    got = rows(df)
    assert [r[0] for r in got] == list(range(25))
    assert got[3] == (3, "c3", 9, 3)
    table = cat.catalog().table("ORDERS", "SALES")
    assert table is not None
    assert len(TableData.for_catalog(cat).history(table.id)) == 2


def test_overwrite_replaces_rows(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    save(orders(spark, 0, 10).coalesce(1), target, "sales.orders")
    save(orders(spark, 100, 3).coalesce(1), target, "sales.orders", mode="overwrite")
    assert [r[0] for r in rows(load(spark, target, "sales.orders"))] == [100, 101, 102]


def test_missing_nullable_column_reads_null(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    df = spark.createDataFrame([(1, "a")], "ID long, CUSTOMER string")
    save(df, target, "sales.orders")
    assert rows(load(spark, target, "sales.orders")) == [(1, "a", None, None)]


def test_concurrent_appends_both_land(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    errors: list[BaseException] = []

    def job(start: int) -> None:
        try:
            save(orders(spark, start, 10).coalesce(1), target, "sales.orders")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(s,)) for s in (0, 1000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    ids = [r[0] for r in rows(load(spark, target, "sales.orders"))]
    assert ids == list(range(10)) + list(range(1000, 1010))


def test_reads_at_older_versions_follow_schema_changes(
    spark: Any, cat: Catalog, target: str
) -> None:
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY, A INT32, B VARCHAR(5))")
    save(spark.createDataFrame([(1, 10, "x")], "ID long, A int, B string"), target, "S.T")
    v_base = cat.latest_version
    v_add = cat.sql("ALTER TABLE S.T ADD COLUMN C DOUBLE").version
    save(
        spark.createDataFrame([(2, 20, "y", 2.5)], "ID long, A int, B string, C double"),
        target,
        "S.T",
    )
    v_drop = cat.sql("ALTER TABLE S.T DROP COLUMN B").version
    v_widen = cat.sql("ALTER TABLE S.T ALTER COLUMN A SET DATA TYPE INT64").version
    save(spark.createDataFrame([(3, 2**40, 3.5)], "ID long, A long, C double"), target, "S.T")
    v_rename = cat.sql("ALTER TABLE S.T RENAME TO U").version

    # A read at version v sees the data committed while v was the latest version.
    assert load(spark, target, "S.T", version=v_base).columns == ["ID", "A", "B"]
    assert rows(load(spark, target, "S.T", version=v_base)) == [(1, 10, "x")]
    assert rows(load(spark, target, "S.T", version=v_add)) == [
        (1, 10, "x", None),
        (2, 20, "y", 2.5),
    ]
    assert rows(load(spark, target, "S.T", version=v_drop)) == [(1, 10, None), (2, 20, 2.5)]
    widened = load(spark, target, "S.T", version=v_widen)
    assert dict(widened.dtypes)["A"] == "bigint"
    everything = [(1, 10, None), (2, 20, 2.5), (3, 2**40, 3.5)]
    assert rows(widened) == everything
    assert rows(load(spark, target, "S.U", version=v_rename)) == everything
    assert rows(load(spark, target, "S.U")) == everything
    with pytest.raises(Exception, match=r"does not exist"):
        load(spark, target, "S.T").collect()


def test_read_at_timestamp(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    save(orders(spark, 0, 3).coalesce(1), target, "sales.orders")
    moment = dt.datetime.now(dt.UTC)
    hlc = cat.clock.now()
    # The second write must commit after both reading points: wait on the clock.
    cat.clock.wait_until(max(from_datetime(moment), hlc))
    save(orders(spark, 3, 3).coalesce(1), target, "sales.orders")
    at_iso = load(spark, target, "sales.orders", timestamp=moment.isoformat())
    at_hlc = load(spark, target, "sales.orders", timestamp=hlc)
    assert [r[0] for r in rows(at_iso)] == [0, 1, 2]
    assert [r[0] for r in rows(at_hlc)] == [0, 1, 2]
    assert len(rows(load(spark, target, "sales.orders"))) == 6


def _committed_files(cat: Catalog) -> int:
    table = cat.catalog().table("ORDERS", "SALES")
    assert table is not None
    current = TableData.for_catalog(cat).current(table.id)
    return 0 if current is None else len(current.files)


def test_type_mismatch_fails_naming_the_column(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    bad = spark.createDataFrame(
        [(1, "c", "1.5", 1)], "id long, customer string, amount string, qty int"
    )
    with pytest.raises(Exception, match=r"AMOUNT") as info:
        save(bad, target, "sales.orders")
    assert "DataError" in str(info.value) or "cannot be stored" in str(info.value)
    assert _committed_files(cat) == 0


def test_null_in_not_null_fails_and_commits_nothing(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    save(orders(spark, 0, 3).coalesce(1), target, "sales.orders")
    bad = spark.createDataFrame(
        [(10, "ok", None, 1), (11, None, None, 2)],
        "id long, customer string, amount decimal(10,2), qty int",
    )
    with pytest.raises(Exception, match=r"Column 'CUSTOMER'.*NOT NULL"):
        save(bad.coalesce(1), target, "sales.orders")
    assert [r[0] for r in rows(load(spark, target, "sales.orders"))] == [0, 1, 2]
    assert _committed_files(cat) > 0


def test_unknown_column_fails(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    bad = spark.createDataFrame([(1, "c", 5)], "id long, customer string, extra int")
    with pytest.raises(Exception, match=r"EXTRA|extra"):
        save(bad, target, "sales.orders")


def test_commit_retried_after_a_crash_applies_once(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    source_cls = spark._jvm is not None  # the session is up; planning runs in this process below
    assert source_cls
    from almanac.spark.source import AlmanacDataSource
    from almanac.spark.types import spark_arrow_schema

    df = orders(spark, 0, 4)
    source = AlmanacDataSource({"catalog": target, "path": "SALES.ORDERS"})
    writer = source.writer(df.schema, False)
    assert isinstance(writer, AlmanacWriter)
    batches = df.toArrow().to_batches()
    arrow = spark_arrow_schema(df.schema)
    message = writer.write(iter(b.cast(arrow) for b in batches))
    assert isinstance(message, AlmanacCommitMessage)
    writer.commit([message])
    writer.commit([message])  # a commit worker that crashed after committing, retried
    table = cat.catalog().table("ORDERS", "SALES")
    assert table is not None
    history = TableData.for_catalog(cat).history(table.id)
    assert len(history) == 1
    assert [r[0] for r in rows(load(spark, target, "sales.orders"))] == [0, 1, 2, 3]


def test_abort_removes_the_write(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    from almanac.spark.source import AlmanacDataSource

    df = orders(spark, 0, 4)
    writer = AlmanacDataSource({"catalog": target, "path": "SALES.ORDERS"}).writer(df.schema, False)
    message = writer.write(iter(df.toArrow().to_batches()))
    assert message.files
    writer.abort([message, None])
    assert not TableData.for_catalog(cat).is_committed(writer.plan.write_id)
    assert all(not __import__("os").path.exists(f.path) for f in message.files)
    with pytest.raises(Exception, match=r"abort"):
        writer.commit([message])


def test_memory_target_is_refused(spark: Any) -> None:
    with pytest.raises(Exception, match=r"durable"):
        load(spark, "memory://", "S.T").collect()


def test_missing_catalog_is_not_created(spark: Any, tmp_path: Any) -> None:
    missing = tmp_path / "typo"
    with pytest.raises(Exception, match=r"No catalog at"):
        load(spark, str(missing), "S.T").collect()
    assert not missing.exists()


def test_missing_table_is_named(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    with pytest.raises(Exception, match=r"Table .SALES.nope. does not exist"):
        load(spark, target, "sales.nope").collect()


def test_source_found_without_register(spark: Any) -> None:
    import pyspark_almanac

    assert pyspark_almanac.DefaultSource.name() == "almanac"

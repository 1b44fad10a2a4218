"""CREATE / REPLACE TABLE AS SELECT through Spark's native Parquet writer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import LongType

import almanac.spark
from almanac.catalog import Catalog
from almanac.data import DataError, TableData, read_table
from almanac.data.arrow import FIELD_ID
from tests.spark.helpers import save, write_dirs


def _orders(spark: Any, start: int, count: int) -> Any:
    return spark.createDataFrame(
        [(i, f"c{i % 7}", i * 2) for i in range(start, start + count)],
        "id long, customer string, qty int",
    ).repartition(3)


def test_ctas_writes_bucketed_files_with_field_ids(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE ZONE Z5 WITH (PARTITIONS = 5)")
    result = almanac.spark.sql(
        spark,
        target,
        "CREATE TABLE PUBLIC.ORDERS (PRIMARY KEY (id)) COLOCATE BY (id) ZONE Z5 AS "
        "SELECT * FROM VALUES (1, 'a'), (2, 'b'), (3, 'c'), (40, 'd') AS v(id, customer)",
    )
    assert (result.rows, result.created) == (4, True)
    cat.catalog_ready(result.version)
    table = cat.catalog().table("ORDERS")
    assert table is not None
    snapshot = TableData.for_catalog(cat).current(table.id)
    assert snapshot is not None and snapshot.catalog_version == result.version
    bucket = BucketTransform(5).transform(LongType())
    for f in snapshot.files:
        data = pq.read_table(f.path)
        assert {bucket(v) for v in data.column("ID").to_pylist()} == {f.tablet}
        assert [int(x.metadata[FIELD_ID]) for x in data.schema] == [c.id for c in table.columns]
    assert sorted(read_table(cat, "ORDERS").column("ID").to_pylist()) == [1, 2, 3, 40]
    assert sum(f.rows for f in snapshot.files) == 4
    assert all(f.stats[table.columns[0].id].null_count == 0 for f in snapshot.files)


def test_a_ctas_without_key_writes_at_most_one_file_per_task(
    spark: Any, cat: Catalog, target: str
) -> None:
    df = _orders(spark, 0, 200)  # three tasks
    result = almanac.spark.create_table_as_select(target, "PUBLIC.PLAIN", df)
    assert (result.rows, result.created) == (200, True)
    cat.catalog_ready(result.version)
    table = cat.catalog().table("PLAIN")
    assert table is not None and table.primary_key == () and not table.bucketed
    snapshot = TableData.for_catalog(cat).current(table.id)
    assert snapshot is not None
    assert 1 <= len(snapshot.files) <= df.rdd.getNumPartitions() == 3
    assert sorted(read_table(cat, "PLAIN").column("ID").to_pylist()) == list(range(200))


def test_a_five_row_insert_into_a_new_table_writes_at_most_one_file_per_task(
    spark: Any, cat: Catalog, target: str
) -> None:
    """Every Spark write path: the native writer, an INSERT through
    ``almanac.spark.sql`` and the Python source."""
    cat.sql("CREATE TABLE PUBLIC.FIVE (ID BIGINT, CUSTOMER STRING, QTY INT)")
    table = cat.catalog().table("FIVE")
    assert table is not None and not table.bucketed
    df = _orders(spark, 0, 5).repartition(2)
    tasks = df.rdd.getNumPartitions()
    df.createOrReplaceTempView("five_rows")

    def files() -> set[str]:
        current = TableData.for_catalog(cat).current(table.id)
        return set() if current is None else {f.path for f in current.files}

    writes: list[Callable[[], object]] = [
        lambda: almanac.spark.write(df, target, "PUBLIC.FIVE"),
        lambda: almanac.spark.sql(spark, target, "INSERT INTO PUBLIC.FIVE SELECT * FROM five_rows"),
        lambda: save(df, target, "PUBLIC.FIVE"),
    ]
    for i, run in enumerate(writes, start=1):
        before = files()
        run()
        written = files() - before
        assert 1 <= len(written) <= tasks == 2, (i, written)
        assert len(read_table(cat, "FIVE")) == 5 * i


def test_rtas_replaces_through_the_native_writer(spark: Any, cat: Catalog, target: str) -> None:
    almanac.spark.create_table_as_select(target, "PUBLIC.ORDERS", _orders(spark, 0, 30), ["id"])
    result = almanac.spark.replace_table_as_select(
        target, "PUBLIC.ORDERS", _orders(spark, 100, 4), ["id"]
    )
    assert (result.replaced, result.rows) == (True, 4)
    cat.catalog_ready(result.version)
    assert sorted(read_table(cat, "ORDERS").column("ID").to_pylist()) == [100, 101, 102, 103]


def test_ctas_null_key_creates_nothing(spark: Any, cat: Catalog, target: str) -> None:
    before = cat.latest_version
    df = _orders(spark, 0, 10).union(
        spark.createDataFrame([(None, "x", 1)], "id long, customer string, qty int")
    )
    with pytest.raises(DataError, match=r"Column 'ID' of table 'PUBLIC\.ORDERS' is NOT NULL"):
        almanac.spark.create_table_as_select(target, "PUBLIC.ORDERS", df, ["id"])
    assert cat.latest_version == before
    assert cat.catalog().table("ORDERS") is None
    assert write_dirs(cat, "PUBLIC", "ORDERS") == []


def test_sql_insert_uses_the_native_writer(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE TABLE PUBLIC.T (ID INT64 PRIMARY KEY, NAME VARCHAR(8), QTY INT32 DEFAULT 7)")
    result = almanac.spark.sql(
        spark, target, "INSERT INTO public.t VALUES (1, 'a', 10), (2, 'b', 20)"
    )
    assert isinstance(result, almanac.spark.WriteResult) and result.rows == 2
    almanac.spark.sql(spark, target, "INSERT INTO TABLE `PUBLIC`.`T` (name, id) SELECT 'c', 3L")
    almanac.spark.sql(spark, target, "INSERT INTO t BY NAME SELECT 4L AS id, 'd' AS name")
    got = sorted(tuple(r.values()) for r in read_table(cat, "T").to_pylist())
    assert got == [(1, "a", 10), (2, "b", 20), (3, "c", 7), (4, "d", 7)]
    table = cat.catalog().table("T")
    assert table is not None
    files = TableData.for_catalog(cat).history(table.id)[-1].files
    assert all(".c000" in f.path for f in files)  # Spark's own file names
    almanac.spark.sql(spark, target, "INSERT OVERWRITE public.t SELECT 9L, 'z', 1")
    assert [tuple(r.values()) for r in read_table(cat, "T").to_pylist()] == [(9, "z", 1)]


def test_sql_insert_checks_like_write(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE TABLE PUBLIC.T (ID INT32 PRIMARY KEY, NAME VARCHAR(8))")
    with pytest.raises(DataError, match=r"Column 'ID' of table 'PUBLIC\.T'.*without loss"):
        almanac.spark.sql(spark, target, "INSERT INTO public.t SELECT 1L, 'a'")
    with pytest.raises(DataError, match=r"Column 'ID' of table 'PUBLIC\.T' is NOT NULL"):
        almanac.spark.sql(spark, target, "INSERT INTO public.t SELECT CAST(NULL AS INT), 'a'")
    assert read_table(cat, "T").num_rows == 0

"""``almanac.spark.write``: Spark's native Parquet writer, one commit or nothing."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import StringType
from pyspark.sql import functions as F

import almanac.spark
from almanac.catalog import Catalog
from almanac.data import DataError, TableData, read_table
from almanac.data.arrow import FIELD_ID
from almanac.data.files import column_stats
from almanac.data.tablets import tablets_of
from tests.spark.helpers import write_dirs

SETUP = """
CREATE ZONE Z8 WITH (PARTITIONS = 8);
CREATE SCHEMA S;
CREATE TABLE S.T (
    ID INT64,
    NAME VARCHAR(12) NOT NULL,
    K UUID,
    AMT DECIMAL(12, 2) DEFAULT 1.50,
    TS TIMESTAMP WITH LOCAL TIME ZONE,
    D DATE,
    B BYTES,
    F DOUBLE,
    I8 INT8,
    PRIMARY KEY (ID, NAME)
) COLOCATE BY (NAME) ZONE Z8
"""

SCHEMA = (
    "ID long, NAME string, K string, AMT decimal(12,2), TS timestamp, D date, B binary, "
    "F double, I8 byte"
)
EPOCH = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def row(i: int) -> tuple[Any, ...]:
    return (
        i,
        f"n{i}é",
        str(uuid.UUID(int=i * 7919 + 1)),
        decimal.Decimal(i * 3) / 4,
        EPOCH + dt.timedelta(seconds=i * 37),
        dt.date(2020, 1, 1) + dt.timedelta(days=i),
        bytes([i % 256, 1]),
        i / 3,
        i % 100 - 50,
    )


def frame(spark: Any, start: int, count: int, parts: int = 3) -> Any:
    return spark.createDataFrame([row(i) for i in range(start, start + count)], SCHEMA).repartition(
        parts
    )


def expected(start: int, count: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(start, start + count):
        values = list(row(i))
        values[2] = values[2]
        values[3] = values[3].quantize(decimal.Decimal("0.01"))
        out.append(tuple(values))
    return out


def table_rows(cat: Catalog) -> list[tuple[Any, ...]]:
    data = read_table(cat, "T", "S")
    return sorted(tuple(r.values()) for r in data.to_pylist())


def history(cat: Catalog) -> list[Any]:
    table = cat.catalog().table("T", "S")
    assert table is not None
    return TableData.for_catalog(cat).history(table.id)


def test_append_and_overwrite_round_trip(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    result = almanac.spark.write(frame(spark, 0, 40), target, "s.t")
    assert (result.table, result.rows) == ("S.T", 40)
    almanac.spark.write(frame(spark, 40, 10, parts=1), target, "S.T", mode="append")
    assert table_rows(cat) == expected(0, 50)
    almanac.spark.write(frame(spark, 100, 5, parts=2), target, "S.T", mode="overwrite")
    assert table_rows(cat) == expected(100, 5)
    assert [s.operation for s in history(cat)] == ["append", "append", "overwrite"]


def test_files_land_in_their_iceberg_bucket(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.write(frame(spark, 0, 200, parts=2), target, "S.T")
    files = history(cat)[-1].files
    bucket = BucketTransform(8).transform(StringType())
    table = cat.catalog().table("T", "S")
    assert table is not None
    seen = set()
    per_task: dict[tuple[int, str], int] = {}
    for f in files:
        assert f.path.endswith(".parquet") and f"/tablet={f.tablet}/" in f.path
        names = pq.read_table(f.path).column("NAME").to_pylist()
        assert {bucket(n) for n in names} == {f.tablet}
        assert set(tablets_of(pq.read_table(f.path), table, 8).tolist()) == {f.tablet}
        assert f.rows == len(names)
        seen.update(names)
        task = os.path.basename(f.path).split("-")[1]
        per_task[(f.tablet, task)] = per_task.get((f.tablet, task), 0) + 1
    assert len(seen) == 200
    assert len({f.tablet for f in files}) == 8
    assert set(per_task.values()) == {1}  # at most one file per bucket per task


def test_files_carry_field_ids_and_footer_stats(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    df = frame(spark, 0, 30).union(
        spark.createDataFrame([(999, "nul", None, None, None, None, None, None, None)], SCHEMA)
    )
    almanac.spark.write(df, target, "S.T")
    table = cat.catalog().table("T", "S")
    assert table is not None
    files = history(cat)[-1].files
    for f in files:
        data = pq.read_table(f.path)
        ids = {field.name: int(field.metadata[FIELD_ID]) for field in data.schema}
        assert ids == {c.name: c.id for c in table.columns}
        for column in table.columns:
            got = f.stats[column.id]
            want = column_stats(data.column(column.name).cast(_arrow(column.name, data)))
            assert got.null_count == want.null_count, column.name
            if column.name != "F":
                assert (got.min, got.max) == (want.min, want.max), column.name
    names = {os.path.basename(f.path) for f in files}
    assert not any(n.startswith(("_", ".")) for n in names)


def _arrow(name: str, data: pa.Table) -> pa.DataType:
    kind = data.schema.field(name).type
    return pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(kind) else kind


def test_missing_columns_take_their_default(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.write(spark.createDataFrame([(1, "a")], "id long, name string"), target, "S.T")
    assert table_rows(cat) == [
        (1, "a", None, decimal.Decimal("1.50"), None, None, None, None, None)
    ]


def test_null_in_not_null_column_fails_and_commits_nothing(
    spark: Any, cat: Catalog, target: str
) -> None:
    cat.sql(SETUP)
    df = frame(spark, 0, 20).union(
        spark.createDataFrame([(5000, None, None, None, None, None, None, None, None)], SCHEMA)
    )
    with pytest.raises(DataError, match=r"Column 'NAME' of table 'S\.T' is NOT NULL") as info:
        almanac.spark.write(df, target, "S.T")
    assert info.value.context["column"] == "NAME"
    assert history(cat) == []
    assert write_dirs(cat, "S", "T") == []


def test_too_long_value_fails_naming_the_column(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    df = spark.createDataFrame([(1, "x" * 13)], "ID long, NAME string")
    with pytest.raises(DataError, match=r"Column 'NAME' of table 'S\.T' allows at most 12"):
        almanac.spark.write(df, target, "S.T")
    assert history(cat) == []


@pytest.mark.parametrize(
    ("column", "spark_type"),
    [("AMT", "double"), ("I8", "int"), ("ID", "decimal(20, 0)"), ("AMT", "decimal(12, 3)")],
)
def test_lossy_cast_is_refused_before_the_job(
    spark: Any, cat: Catalog, target: str, column: str, spark_type: str
) -> None:
    cat.sql(SETUP)
    df = spark.createDataFrame([(1, "a")], "ID long, NAME string").withColumn(
        column, F.lit(1).cast(spark_type)
    )
    with pytest.raises(DataError, match=f"Column '{column}' of table 'S.T'.*without loss"):
        almanac.spark.write(df, target, "S.T")
    assert history(cat) == []
    assert write_dirs(cat, "S", "T") == []


def test_widening_casts_are_accepted(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    df = spark.createDataFrame(
        [(1, "a", 3, 7, 2.5)], "ID int, NAME string, AMT int, I8 byte, F float"
    )
    almanac.spark.write(df, target, "S.T")
    assert table_rows(cat) == [(1, "a", None, decimal.Decimal("3.00"), None, None, None, 2.5, 7)]


def test_unknown_column_is_refused(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    df = spark.createDataFrame([(1, "a", 2)], "ID long, NAME string, EXTRA int")
    with pytest.raises(DataError, match="Column 'EXTRA' of the data is not a column of table"):
        almanac.spark.write(df, target, "S.T")


def test_task_failure_mid_job_leaves_no_snapshot(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.write(frame(spark, 0, 10), target, "S.T")
    before = history(cat)
    df = frame(spark, 10, 60, parts=4).withColumn(
        "ID", F.when(F.col("ID") == 55, F.raise_error(F.lit("task blew up"))).otherwise(F.col("ID"))
    )
    with pytest.raises(Exception, match="task blew up"):
        almanac.spark.write(df, target, "S.T")
    assert [s.snapshot_id for s in history(cat)] == [s.snapshot_id for s in before]
    assert table_rows(cat) == expected(0, 10)
    assert len(write_dirs(cat, "S", "T")) == 1  # only the committed write's directory


def test_coalesce_and_cluster_make_fewer_files(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.write(frame(spark, 0, 100, parts=4), target, "S.T", cluster=True)
    files = history(cat)[-1].files
    assert sorted(f.tablet for f in files) == list(range(8))
    almanac.spark.write(frame(spark, 100, 100, parts=4), target, "S.T", coalesce=1)
    new = [f for f in history(cat)[-1].files if f not in set(files)]
    assert len(new) == 8
    assert len(table_rows(cat)) == 200


def test_bad_arguments(spark: Any, target: str, tmp_path: Path) -> None:
    from almanac.errors import ValidationError

    df = spark.createDataFrame([(1,)], "a int")
    with pytest.raises(ValidationError, match="mode"):
        almanac.spark.write(df, target, "S.T", mode="upsert")
    with pytest.raises(ValidationError, match="df"):
        almanac.spark.write("not a frame", target, "S.T")


def test_names_that_need_encoding_in_paths(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql('CREATE SCHEMA "my s%20"; CREATE TABLE "my s%20"."T:1" (ID INT64 PRIMARY KEY)')
    almanac.spark.write(spark.range(5).toDF("ID"), target, '"my s%20"."T:1"')
    assert sorted(read_table(cat, "T:1", "my s%20").column("ID").to_pylist()) == list(range(5))


def test_session_settings_are_restored(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        almanac.spark.write(frame(spark, 0, 3), target, "S.T")
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    assert table_rows(cat) == expected(0, 3)


def test_temporal_and_boolean_defaults(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE TABLE PUBLIC.D (ID INT64 PRIMARY KEY, "
        "TSZ TIMESTAMP WITH LOCAL TIME ZONE DEFAULT '2021-03-04 05:06:07+02:00', "
        "TS TIMESTAMP DEFAULT TIMESTAMP '2020-01-01 10:00:00', "
        "DT DATE DEFAULT '2020-01-02', OK BOOLEAN DEFAULT TRUE)"
    )
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        almanac.spark.write(spark.range(1).toDF("ID"), target, "PUBLIC.D")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert read_table(cat, "D").to_pylist() == [
        {
            "ID": 0,
            "TSZ": dt.datetime(2021, 3, 4, 3, 6, 7, tzinfo=dt.UTC),
            "TS": dt.datetime(2020, 1, 1, 10, 0),
            "DT": dt.date(2020, 1, 2),
            "OK": True,
        }
    ]

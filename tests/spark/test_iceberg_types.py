"""FIXED, nanosecond timestamps and STRUCT / ARRAY / MAP through almanac.spark:
every read path; every write path, Spark's own Parquet writer for STRUCT
and the data layer in Spark's tasks for what that writer cannot write."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row

import almanac.spark
from almanac.catalog import Catalog
from almanac.data import DataError, TableData, arrow_schema, read_table, write_table
from almanac.data.arrow import FIELD_ID
from almanac.nested import walk
from tests.data.support import field_ids
from tests.spark.helpers import load, save

SETUP = """CREATE TABLE T (K BIGINT, F FIXED(2), NS TIMESTAMP_NS, TZNS TIMESTAMPTZ_NS,
    S STRUCT<A: INT, B: ARRAY<STRING>>, M MAP<STRING, DOUBLE>, L ARRAY<BIGINT>)"""

WHEN = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
ROW = {
    "K": 1,
    "F": b"ab",
    "NS": WHEN,
    "TZNS": WHEN.replace(tzinfo=dt.UTC),
    "S": {"A": 1, "B": ["x", None]},
    "M": [("pi", 3.5)],
    "L": [1, 2],
}
NULLS = {"K": 2, "F": None, "NS": None, "TZNS": None, "S": None, "M": None, "L": None}


def _spark_rows(df: Any) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.orderBy("K").collect()]


def _expected() -> list[dict[str, Any]]:
    first = dict(ROW, F=bytearray(b"ab"), S={"A": 1, "B": ["x", None]}, M={"pi": 3.5})
    first["TZNS"] = WHEN.replace(tzinfo=dt.UTC).astimezone().replace(tzinfo=None)
    return [first, NULLS]


def test_every_read_path_reads_the_iceberg_types(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    table = cat.catalog().table("T")
    assert table is not None
    write_table(cat, "T", pa.Table.from_pylist([ROW, NULLS], arrow_schema(table)))
    expected = _expected()
    native = almanac.spark.read_table(spark, target, "PUBLIC.T")
    assert native.schema.simpleString() == (
        "struct<K:bigint,F:binary,NS:timestamp_ntz,TZNS:timestamp,"
        "S:struct<A:int,B:array<string>>,M:map<string,double>,L:array<bigint>>"
    )
    assert _spark_rows(native) == expected
    assert _spark_rows(native.where("S.A = 1")) == expected[:1]
    assert _spark_rows(load(spark, target, "PUBLIC.T")) == expected
    almanac.spark.attach(spark, target)
    assert _spark_rows(spark.table("public.t")) == expected

    # A nanosecond Spark cannot hold fails the read, naming the column.
    odd = pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns"))
    nanos = pa.Table.from_pylist([dict(NULLS, K=3)], arrow_schema(table))
    nanos = nanos.set_column(2, "NS", pa.array([odd.value], pa.timestamp("ns")))
    write_table(cat, "T", nanos)
    with pytest.raises(Exception, match=r"Column 'NS' of table 'PUBLIC\.T' has type TIMESTAMP_NS"):
        almanac.spark.read_table(spark, target, "PUBLIC.T").collect()
    with pytest.raises(Exception, match=r"Column 'NS' of table 'PUBLIC\.T'.*cannot represent"):
        load(spark, target, "PUBLIC.T").collect()
    # Rows without such a value still read.
    assert _spark_rows(almanac.spark.read_table(spark, target, "PUBLIC.T", filters=["K < 3"])) == (
        expected
    )


def test_writes_of_the_iceberg_types(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    table = cat.catalog().table("T")
    assert table is not None
    df = spark.createDataFrame(
        [
            Row(
                K=1,
                F=bytearray(b"ab"),
                NS=WHEN,
                TZNS=WHEN.replace(tzinfo=dt.UTC),
                S=Row(A=1, B=["x", None]),
                M={"pi": 3.5},
                L=[1, 2],
            )
        ],
        "K bigint, F binary, NS timestamp_ntz, TZNS timestamp, "
        "S struct<A:int,B:array<string>>, M map<string,double>, L array<bigint>",
    )
    # Spark's own Parquet writer has no FIXED, nanoseconds or list ids: the
    # tasks write through the data layer; so does the Python source.
    stored = dict(ROW, TZNS=WHEN.replace(tzinfo=dt.UTC))
    wrote = almanac.spark.write(df, target, "PUBLIC.T")
    assert (wrote.rows, wrote.files) == (1, 1)
    assert read_table(cat, "T").to_pylist() == [stored]
    save(df, target, "PUBLIC.T")
    assert read_table(cat, "T").to_pylist() == [stored, stored]
    ids = [c.id for _, c in walk(table.columns)]
    snapshot = TableData.for_catalog(cat).current(table.id)
    assert snapshot is not None
    for f in snapshot.files:  # every field id at every depth, FIXED as fixed
        written = pq.read_schema(f.path)
        assert sorted(i for field in written for i in field_ids(field)) == sorted(ids)
        assert written.field("F").type == pa.binary(2)
        assert written.field("NS").type == pa.timestamp("ns")

    # A task's refusal names the column; nothing is written.
    cat.sql("CREATE TABLE V (K BIGINT NOT NULL, L ARRAY<BIGINT>)")
    holes = spark.createDataFrame([(None, [1])], "k bigint, l array<bigint>")
    with pytest.raises(
        DataError, match=r"Column 'K' of table 'V' is NOT NULL.*nothing was written"
    ):
        almanac.spark.write(holes, target, "PUBLIC.V")
    assert read_table(cat, "V").num_rows == 0

    # CTAS of an ARRAY: created and written in one version, through the data layer.
    tags = spark.createDataFrame([(1, ["a", None]), (2, None)], "id bigint, tags array<string>")
    made = almanac.spark.create_table_as_select(target, "PUBLIC.Q", tags)
    cat.catalog_ready(made.version)
    assert made.rows == 2
    assert sorted(read_table(cat, "Q").to_pylist(), key=lambda r: r["ID"]) == [
        {"ID": 1, "TAGS": ["a", None]},
        {"ID": 2, "TAGS": None},
    ]

    # CTAS of a struct through the native writer: nested fields keep their ids.
    nested = spark.createDataFrame(
        [Row(id=1, p=Row(x=1.5, tag="a")), Row(id=2, p=None)],
        "id bigint, p struct<x:double, tag:string>",
    )
    result = almanac.spark.create_table_as_select(target, "PUBLIC.P", nested)
    cat.catalog_ready(result.version)
    created = cat.catalog().table("P")
    assert created is not None
    (p,) = [c for c in created.columns if c.name == "P"]
    assert [(f.name, f.type.sql_name) for f in p.fields] == [("X", "DOUBLE"), ("TAG", "STRING")]
    assert sorted(read_table(cat, "P").to_pylist(), key=lambda r: r["ID"]) == [
        {"ID": 1, "P": {"X": 1.5, "TAG": "a"}},
        {"ID": 2, "P": None},
    ]
    snapshot = TableData.for_catalog(cat).current(created.id)
    assert snapshot is not None
    for f in snapshot.files:
        struct = pq.read_schema(f.path).field("P")
        assert [int(x.metadata[FIELD_ID]) for x in struct.type] == [c.id for c in p.fields]
    # A struct whose fields differ from the column's is refused before the job.
    swapped = spark.createDataFrame(
        [Row(id=3, p=Row(tag="b", x=2.0))], "id bigint, p struct<tag:string, x:double>"
    )
    with pytest.raises(
        Exception, match=r"Column 'P' of table 'PUBLIC\.P'.*not the column's fields"
    ):
        almanac.spark.write(swapped, target, "PUBLIC.P")
    # A NOT NULL struct field is checked inside the job; a NULL struct is fine.
    cat.sql("CREATE TABLE R (ID BIGINT, P STRUCT<X: DOUBLE NOT NULL, TAG: STRING>)")
    shape = "id bigint, p struct<x:double, tag:string>"
    hole = spark.createDataFrame([Row(id=1, p=Row(x=None, tag="a"))], shape)
    with pytest.raises(DataError, match=r"Field 'P\.X' of table 'PUBLIC\.R' is NOT NULL"):
        almanac.spark.write(hole, target, "PUBLIC.R")
    almanac.spark.write(spark.createDataFrame([Row(id=2, p=None)], shape), target, "PUBLIC.R")
    assert read_table(cat, "R").to_pylist() == [{"ID": 2, "P": None}]

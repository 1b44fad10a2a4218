"""The pure parts of the Spark integration: names, SQL headers, type mapping,
file packing. No Spark session needed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pyspark.sql import types as st

import almanac
import almanac.spark
from almanac.commands import ColumnDef, CreateTable
from almanac.data import DataFile
from almanac.datatypes import ColumnType
from almanac.descriptors import Table
from almanac.errors import SqlParseError, ValidationError, VersionNotFoundError
from almanac.spark.names import read_point, store_uri
from almanac.spark.reader import OPEN_COST, pack_files
from almanac.spark.sql import parse_ctas
from almanac.spark.types import column_defs, spark_schema
from almanac.spark.writer import column_renames
from almanac.table_names import TableName, parse_name


def test_parse_name() -> None:
    assert parse_name("T") == TableName(None, False, "T", False)
    assert parse_name("s.t") == TableName("s", False, "t", False)
    assert parse_name('"my.s"."Mixed"') == TableName("my.s", True, "Mixed", True)
    for bad in ["", "a.b.c", "a.", ".b", '"open', '"a"x']:
        with pytest.raises(ValidationError):
            parse_name(bad)


def test_read_point() -> None:
    assert read_point({}).version is None
    assert read_point({"version": "4"}).version == 4
    assert read_point({"timestamp": "123"}).timestamp == 123
    assert read_point({"timestamp": "2024-01-02T03:04:05+00:00"}).timestamp is not None
    for bad in [
        {"version": "x"},
        {"version": "-1"},
        {"timestamp": "soon"},
        {"timestamp": "2024-01-02T03:04:05"},
        {"version": "1", "timestamp": "2"},
    ]:
        with pytest.raises(ValidationError):
            read_point(bad)
    # Version 0 parses, as in SQL, and no read finds it: versions start at 1.
    with almanac.connect("memory://") as cat, pytest.raises(VersionNotFoundError):
        read_point({"version": "0"}).resolve(cat)


def test_store_uri(tmp_path: object) -> None:
    assert store_uri("/data/cat") == "sqlite:///data/cat/catalog.db"
    assert store_uri("/data/my cat") == "sqlite:///data/my%20cat/catalog.db"
    assert store_uri("sqlite:///x/y.db") == "sqlite:///x/y.db"
    with pytest.raises(ValidationError, match=r"durable"):
        store_uri("memory://")
    with pytest.raises(ValidationError, match=r"Unsupported"):
        store_uri("etcd://host")


def test_parse_ctas() -> None:
    s = parse_ctas("CREATE TABLE s.t2 (PRIMARY KEY (id, `Code`)) AS SELECT * FROM x; ")
    assert s is not None
    assert (s.mode, s.name, s.primary_key, s.zone, s.if_not_exists) == (
        "create",
        "s.t2",
        ("id", "Code"),
        None,
        False,
    )
    assert s.query == "SELECT * FROM x"
    s = parse_ctas(
        "create or replace table `Odd Name` (primary key (a)) zone z1 as\n"
        "with q as (select 1 a) select * from q"
    )
    assert s is not None and (s.mode, s.name, s.zone) == ("create_or_replace", '"Odd Name"', "z1")
    assert s.query.startswith("with q")
    s = parse_ctas("REPLACE TABLE t (PRIMARY KEY (a)) AS SELECT 1 AS a")
    assert s is not None and s.mode == "replace"
    s = parse_ctas("CREATE TABLE IF NOT EXISTS t (PRIMARY KEY (a)) AS SELECT 1 AS a")
    assert s is not None and s.if_not_exists
    for other in [
        "SELECT 1",
        "CREATE TABLE t (a INT) USING parquet",
        "CREATE TABLE t USING parquet AS SELECT 1",
        "INSERT INTO t SELECT 1",
        "CREATE VIEW v AS SELECT 1",
    ]:
        assert parse_ctas(other) is None, other
    s = parse_ctas('CREATE TABLE t COLOCATE BY (a, "b") ZONE z AS SELECT 1 AS a')
    assert s is not None
    assert (s.primary_key, s.colocation, s.zone, s.query) == ((), ("a", "b"), "z", "SELECT 1 AS a")
    with pytest.raises(SqlParseError, match=r"BY"):
        parse_ctas("CREATE TABLE t COLOCATE (a) AS SELECT 1")
    with pytest.raises(SqlParseError, match=r"\)"):
        parse_ctas("CREATE TABLE t (PRIMARY KEY (a) AS SELECT 1")
    with pytest.raises(SqlParseError, match=r"IF NOT EXISTS"):
        parse_ctas("CREATE OR REPLACE TABLE IF NOT EXISTS t (PRIMARY KEY (a)) AS SELECT 1")


SPARK = st.StructType(
    [
        st.StructField("id", st.LongType()),
        st.StructField("name", st.StringType()),
        st.StructField("code", st.VarcharType(3)),
        st.StructField("price", st.DecimalType(12, 3)),
        st.StructField("flag", st.BooleanType()),
        st.StructField("tiny", st.ByteType()),
        st.StructField("small", st.ShortType()),
        st.StructField("f", st.FloatType()),
        st.StructField("day", st.DateType()),
        st.StructField("at", st.TimestampType()),
        st.StructField("wall", st.TimestampNTZType()),
        st.StructField("raw", st.BinaryType()),
    ]
)


def test_dataframe_schema_round_trips_through_the_catalog() -> None:
    defs, pk = column_defs(SPARK, ["ID"], "S.T", upper=True)
    assert pk == ("ID",)
    assert [d.name for d in defs][:3] == ["ID", "NAME", "CODE"]
    assert defs[0].nullable is False and defs[1].nullable is True
    assert defs[2].length == 3 and defs[1].length is None
    assert (defs[3].type, defs[3].precision, defs[3].scale) == (ColumnType.DECIMAL, 12, 3)
    assert defs[9].type is ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE
    assert defs[10].type is ColumnType.TIMESTAMP
    table = _table(defs, pk)
    back = spark_schema(table, "S.T")
    assert [f.dataType for f in back.fields] == [
        st.LongType(),
        st.StringType(),
        st.StringType(),
        st.DecimalType(12, 3),
        st.BooleanType(),
        st.ByteType(),
        st.ShortType(),
        st.FloatType(),
        st.DateType(),
        st.TimestampType(),
        st.TimestampNTZType(),
        st.BinaryType(),
    ]
    assert all(f.nullable for f in back.fields)


def _table(defs: Sequence[ColumnDef], pk: tuple[str, ...]) -> Table:
    """The table a CREATE of these columns makes, in a scratch catalog."""
    with almanac.connect("memory://") as cat:
        cat.execute([CreateTable(name="T", columns=tuple(defs), primary_key=pk)])
        table = cat.catalog().table("T")
        assert table is not None
        return table


def test_unsupported_types_name_the_column() -> None:
    nested = st.StructType(
        [
            st.StructField("id", st.LongType()),
            st.StructField("tags", st.ArrayType(st.DayTimeIntervalType())),
        ]
    )
    with pytest.raises(ValidationError, match=r"Column 'tags.element' of table 'S.T'"):
        column_defs(nested, ["id"], "S.T", upper=False)
    with pytest.raises(ValidationError, match=r"Primary key column 'nope'"):
        column_defs(SPARK, ["nope"], "S.T", upper=False)


def test_wide_decimal_and_time_columns() -> None:
    table = _table(
        (
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="BIG", type=ColumnType.DECIMAL),
            ColumnDef(name="AT", type=ColumnType.TIME),
        ),
        ("ID",),
    )
    with pytest.raises(ValidationError, match=r"Column 'AT' of table 'P.T' has type TIME"):
        spark_schema(table, "P.T")


def test_an_iceberg_uuid_column_is_refused_naming_it() -> None:
    """Spark has no uuid type: Almanac's data source would read its 16 bytes
    as BINARY and write BINARY back, which is no Iceberg uuid."""
    table = _table(
        (
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="U", type=ColumnType.ICEBERG_UUID),
        ),
        ("ID",),
    )
    with pytest.raises(ValidationError, match=r"Column 'U' of table 'P.T' has type ICEBERG_UUID"):
        spark_schema(table, "P.T")


def test_column_renames_ignore_case() -> None:
    defs, pk = column_defs(SPARK, ["id"], "S.T", upper=True)
    table = _table(defs, pk)
    renames = column_renames(["id", "NAME", "Code", "unknown"], table)
    assert renames == (("id", "ID"), ("Code", "CODE"))


def _file(tablet: int, size: int, name: str) -> DataFile:
    return DataFile(path=name, rows=1, size=size, tablet=tablet)


def test_pack_files_keeps_tablet_order_and_packs_small_files() -> None:
    files = [_file(t, 1000, f"f{t}-{i}") for t in (3, 1, 2) for i in range(2)]
    runs = pack_files(files, 128 * 2**20, 2)
    assert [f.path for run in runs for f in run] == ["f1-0", "f1-1", "f2-0", "f2-1", "f3-0", "f3-1"]
    assert len(runs) == 2
    assert [len(r) for r in pack_files(files, 0, 2)] == [1] * 6
    big = [_file(0, 100 * 2**20, f"b{i}") for i in range(3)]
    assert len(pack_files(big, 128 * 2**20, 1)) == 3
    assert len(pack_files([_file(0, OPEN_COST, "x")], 128 * 2**20, 8)) == 1
    assert pack_files([], 128 * 2**20, 2) == []


def test_entry_points_refuse_what_is_not_a_session_before_using_it(tmp_path: object) -> None:
    """No Spark needed: a wrong argument is a ValidationError naming it, not
    an AttributeError from inside Spark."""
    target = f"{tmp_path}/d"
    cases: list[tuple[Any, str]] = [
        (lambda: almanac.spark.register("spark"), "'spark' of register"),
        (lambda: almanac.spark.attach(None, target), "'spark' of attach"),
        (lambda: almanac.spark.sql({}, target, "SELECT 1"), "'spark' of sql"),
        (lambda: almanac.spark.read_table(1, target, "S.T"), "'spark' of read_table"),
        (lambda: almanac.spark.spark_schema(bad("T"), "S.T"), "'table' of spark_schema"),
        (lambda: almanac.spark.add_catalog("s", "c", target), "'spark' of add_catalog"),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError, match=r"SparkSession|a Table") as info:
            call()
        assert fragment in str(info.value)


def test_session_refuses_bad_arguments_before_starting_spark(tmp_path: object) -> None:
    target = f"{tmp_path}/d"
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: almanac.spark.session(target, catalog="a b"), "not a Spark catalog name"),
        (lambda: almanac.spark.session(target, catalog=bad(1)), "'catalog' of session"),
        (lambda: almanac.spark.session(target, conf=bad([])), "'conf' of session"),
        (lambda: almanac.spark.session(target, conf=bad({"k": 1})), "Setting 'k'"),
        (lambda: almanac.spark.session(target, token=bad(2)), "'token' of session"),
        (lambda: almanac.spark.session("foo://x"), "unsupported scheme"),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value)


def bad(value: object) -> Any:
    return value

"""read_table: Spark's own Parquet scan over the files Almanac planned,
checked against the data layer's reader (the Python path) on the same data."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import pyarrow as pa
import pytest

import almanac.spark
from almanac.catalog import Catalog
from almanac.commands import AddColumns, ColumnDef
from almanac.data import Predicate, read_table, write_table
from almanac.datatypes import ColumnType
from almanac.descriptors import ConstantDefault
from almanac.errors import CatalogError, ValidationError
from almanac.spark.filter_text import text_predicates
from almanac.spark.native_read import file_location, group_files, native_schema, spark_path
from tests.spark.helpers import rows


def _write(cat: Catalog, name: str, **columns: list[Any]) -> None:
    schema, table = name.split(".")
    write_table(cat, table, pa.table(columns), schema)


def _oracle(cat: Catalog, name: str, **kwargs: Any) -> list[tuple[Any, ...]]:
    schema, table = name.split(".")
    data = read_table(cat, table, schema, **kwargs)
    return sorted(
        (tuple(r.values()) for r in data.to_pylist()),
        key=lambda row: tuple((v is not None, v) for v in row),
    )


def _files(df: Any) -> int:
    return len(df.inputFiles())


def test_time_travel_through_add_drop_widen_rename(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE ZONE SMALL WITH (PARTITIONS=2); CREATE SCHEMA S; "
        "CREATE TABLE S.T (ID INT64 PRIMARY KEY, A INT32, B VARCHAR(5)) ZONE SMALL"
    )
    _write(cat, "S.T", ID=[1, 2], A=[10, 20], B=["x", "y"])
    v_base = cat.latest_version
    v_add = cat.sql("ALTER TABLE S.T ADD COLUMN C INT32 DEFAULT 7").version
    _write(cat, "S.T", ID=[3], A=[30], B=["z"], C=[9])
    v_drop = cat.sql("ALTER TABLE S.T DROP COLUMN A").version
    v_widen = cat.sql("ALTER TABLE S.T ALTER COLUMN C SET DATA TYPE INT64").version
    _write(cat, "S.T", ID=[4], B=["w"], C=[2**40])
    v_late = cat.sql("ALTER TABLE S.T ADD COLUMN D VARCHAR(3)").version
    v_rename = cat.sql("ALTER TABLE S.T RENAME TO U").version

    four = [(1, "x", 7), (2, "y", 7), (3, "z", 9), (4, "w", 2**40)]
    expected = {
        v_base: ("S.T", ["ID", "A", "B"], [(1, 10, "x"), (2, 20, "y")]),
        v_add: ("S.T", ["ID", "A", "B", "C"], [(1, 10, "x", 7), (2, 20, "y", 7), (3, 30, "z", 9)]),
        v_drop: ("S.T", ["ID", "B", "C"], [(1, "x", 7), (2, "y", 7), (3, "z", 9)]),
        v_widen: ("S.T", ["ID", "B", "C"], four),
        v_late: ("S.T", ["ID", "B", "C", "D"], [(*r, None) for r in four]),
        v_rename: ("S.U", ["ID", "B", "C", "D"], [(*r, None) for r in four]),
    }
    for version, (name, columns, content) in expected.items():
        df = almanac.spark.read_table(spark, target, name, version=version)
        assert df.columns == columns, version
        assert rows(df) == content, version
        assert rows(df) == _oracle(cat, name, version=version), version
    assert dict(almanac.spark.read_table(spark, target, "s.u").dtypes)["C"] == "bigint"
    assert dict(almanac.spark.read_table(spark, target, "S.T", version=v_add).dtypes)["C"] == "int"
    with pytest.raises(CatalogError, match=r"Table 'S.T' does not exist"):
        almanac.spark.read_table(spark, target, "S.T")
    # The old rows' default is a constant over the old files' native scan.
    plan = almanac.spark.read_table(spark, target, "S.U")._jdf.queryExecution().toString()
    assert "FileScan parquet" in plan and "PythonDataSource" not in plan
    assert "7 AS C" in plan or "7L AS C" in plan


def test_timestamp_reads_the_data_of_that_moment(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY)")
    _write(cat, "S.T", ID=[1])
    moment = cat.clock.now()
    cat.clock.wait_until(moment)
    _write(cat, "S.T", ID=[2])
    assert rows(almanac.spark.read_table(spark, target, "S.T", timestamp=moment)) == [(1,)]
    assert rows(almanac.spark.read_table(spark, target, "S.T")) == [(1,), (2,)]


def test_filters_prune_files_and_are_exact(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE ZONE ONE WITH (PARTITIONS=1); CREATE SCHEMA S; "
        "CREATE TABLE S.T (ID INT64 PRIMARY KEY, NAME VARCHAR(10), PRICE DECIMAL(8, 2), "
        "DAY DATE, AT TIMESTAMP) ZONE ONE"
    )
    day = dt.date(2024, 1, 1)
    for start in range(0, 50, 10):  # five files of disjoint key ranges
        ids = list(range(start, start + 10))
        _write(
            cat,
            "S.T",
            ID=ids,
            NAME=[None if i % 7 == 0 else f"n{i}" for i in ids],
            PRICE=[decimal.Decimal(i) / 4 for i in ids],
            DAY=[day + dt.timedelta(days=i) for i in ids],
            AT=[dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in ids],
        )
    cases = [
        ([Predicate("ID", "<=", 12)], 2),
        ([Predicate("ID", ">", 12), Predicate("ID", "<", 25)], 2),
        ([Predicate("ID", "in", [1, 41, None])], 2),
        ([Predicate("ID", "=", 1000)], 0),
        ([Predicate("NAME", "=", "n33")], 2),  # text order: "n1" <= "n33" <= "n9"
        ([Predicate("NAME", "is_null")], 5),
        ([Predicate("PRICE", ">=", decimal.Decimal("11.5"))], 1),
        ([Predicate("DAY", "<", day + dt.timedelta(days=5))], 1),
        ([Predicate("AT", ">=", dt.datetime(2024, 1, 2, 22))], 1),
        ([Predicate("ID", "is_not_null"), Predicate("NAME", "=", None)], 0),
    ]
    for filters, files in cases:
        df = almanac.spark.read_table(spark, target, "S.T", filters=filters)
        assert _files(df) == files, filters
        assert rows(df) == _oracle(cat, "S.T", filters=filters), filters
    assert _files(almanac.spark.read_table(spark, target, "S.T")) == 5
    # Spark filter text: applied verbatim, its simple terms prune.
    texts = [
        ("id <= 12", [Predicate("ID", "<=", 12)], 2),
        ("12 < ID AND (id < 25)", [Predicate("ID", ">", 12), Predicate("ID", "<", 25)], 2),
        ("ID IN (1, 41)", [Predicate("ID", "in", [1, 41])], 2),
        ("price BETWEEN 11.5 AND 100", [Predicate("PRICE", ">=", decimal.Decimal("11.5"))], 1),
        ("DAY < DATE '2024-01-06'", [Predicate("DAY", "<", day + dt.timedelta(days=5))], 1),
        ("name = 'n33' OR id = 1", [], 5),  # an OR prunes nothing, yet filters exactly
    ]
    for text, same, files in texts:
        df = almanac.spark.read_table(spark, target, "S.T", filters=[text])
        assert _files(df) == files, text
        if same:
            assert rows(df) == _oracle(cat, "S.T", filters=same), text
    either = almanac.spark.read_table(spark, target, "S.T", filters=["name = 'n33' OR id = 1"])
    assert [r[0] for r in rows(either)] == [1, 33]
    assert len(rows(almanac.spark.read_table(spark, target, "S.T", filters=cases[0][0]))) == 13


def test_empty_table_and_refusals(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE SCHEMA S; CREATE TABLE S.E (ID INT64 PRIMARY KEY, P DECIMAL(5, 1)); "
        "CREATE TABLE S.CLOCK (ID INT64 PRIMARY KEY, T TIME); "
        "CREATE TABLE S.WIDE (ID INT64 PRIMARY KEY, D DECIMAL(50, 2))"
    )
    empty = almanac.spark.read_table(spark, target, "S.E")
    assert empty.dtypes == [("ID", "bigint"), ("P", "decimal(5,1)")]
    assert empty.collect() == []
    with pytest.raises(ValidationError, match=r"Column 'T' of table 'S.CLOCK' has type TIME"):
        almanac.spark.read_table(spark, target, "S.CLOCK")
    with pytest.raises(ValidationError, match=r"Column 'D' of table 'S.WIDE' is a DECIMAL wider"):
        almanac.spark.read_table(spark, target, "S.WIDE")
    with pytest.raises(CatalogError, match=r"Table 'S.NOPE' does not exist"):
        almanac.spark.read_table(spark, target, "S.NOPE")
    with pytest.raises(ValidationError, match=r"not both"):
        almanac.spark.read_table(spark, target, "S.E", version=1, timestamp=1)
    with pytest.raises(ValidationError, match=r"Item 0 of parameter 'filters'"):
        almanac.spark.read_table(spark, target, "S.E", filters=[1])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match=r"Filter 'NOPE > 1' on table 'S.E' is not a valid"):
        almanac.spark.read_table(spark, target, "S.E", filters=["NOPE > 1"])
    with pytest.raises(CatalogError, match=r"Column 'X' of a filter does not exist"):
        almanac.spark.read_table(spark, target, "S.E", filters=[Predicate("X", "=", 1)])


def test_paths_with_glob_characters(spark: Any, tmp_path: Any) -> None:
    """A warehouse under a directory whose name Hadoop would read as a glob."""
    target = str(tmp_path / "we{i}rd,[dir]*?")
    with almanac.connect(target) as cat:
        cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY)")
        _write(cat, "S.T", ID=[1, 2, 3])
        _write(cat, "S.T", ID=[4])
        df = almanac.spark.read_table(spark, target, "S.T")
        assert rows(df) == [(1,), (2,), (3,), (4,)]


def test_file_location_and_groups() -> None:
    assert spark_path("/w", "/w/a.parquet") == "/w/a.parquet"
    assert spark_path("file:///w", "/w/a.parquet") == "/w/a.parquet"
    assert spark_path("/w", "file:///w/a.parquet") == "/w/a.parquet"
    assert spark_path("s3://b/w", "b/w/a.parquet") == "s3://b/w/a.parquet"
    assert spark_path("s3://b/w", "s3://b/w/a.parquet") == "s3://b/w/a.parquet"
    assert file_location(["/w/a/x.parquet", "/w/b/y.parquet"]) == "/w/{a/x.parquet,b/y.parquet}"
    assert file_location(["/w/a/x.parquet"]) == "/w/a/x.parquet"
    assert file_location(["/w/a/x.parquet"], "/s/g") == "/{w/a/x.parquet,s/g}"
    with pytest.raises(CatalogError, match=r"share no directory"):
        file_location(["/w/a/x.parquet"], "s3://b/g")
    assert file_location(["/w,1/a.parquet", "/w,1/b.parquet"]) == ("/w\\,1/{a.parquet,b.parquet}")


def test_text_filters_prune_only_what_they_surely_mean(cat: Catalog) -> None:
    cat.sql(
        "CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY, F DOUBLE, D DECIMAL(9, 2), "
        'N VARCHAR(5), DAY DATE, B BOOLEAN, "Mixed" INT32)'
    )
    table = cat.catalog().table("T", "S")
    assert table is not None
    cases = {
        "id = 3": [Predicate("ID", "=", 3)],
        "3 >= id": [Predicate("ID", "<=", 3)],
        "id > -2": [Predicate("ID", ">", -2)],
        "f < 1.5e3 AND d >= 2.25": [
            Predicate("F", "<", 1500.0),
            Predicate("D", ">=", decimal.Decimal("2.25")),
        ],
        "n IS NULL AND day IS NOT NULL": [
            Predicate("N", "is_null"),
            Predicate("DAY", "is_not_null"),
        ],
        "day = '2024-02-03'": [Predicate("DAY", "=", dt.date(2024, 2, 3))],
        "b = true": [Predicate("B", "=", True)],
        "mixed = 4": [Predicate("Mixed", "=", 4)],
        "id = 2.5": [],  # Spark compares as decimal: an int prune would differ
        "n = 5": [],  # Spark casts: text bounds do not order numbers
        "day = '2024-2-3'": [],
        "id + 1 = 3 OR id = 1": [],
        "id = (SELECT 1)": [],
        "nope = 1": [],
        "not ( valid": [],
    }
    for text, expected in cases.items():
        assert text_predicates(text, table) == expected, text


def test_groups_follow_missing_defaults(cat: Catalog) -> None:
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY)")
    _write(cat, "S.T", ID=[1])
    cat.sql("ALTER TABLE S.T ADD COLUMN N VARCHAR(3)")  # NULL fill: no group of its own
    _write(cat, "S.T", ID=[2])
    cat.sql("ALTER TABLE S.T ADD COLUMN K INT32 DEFAULT 5")
    _write(cat, "S.T", ID=[3])
    snap = cat.catalog()
    table = snap.table("T", "S")
    assert table is not None
    from almanac.data import TableData

    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None
    groups = group_files(table, current.files)
    assert sorted(len(g.files) for g in groups) == [1, 2]
    assert [[(c.name, v) for c, v in g.fills] for g in groups if g.fills] == [[("K", 5)]]
    schema = native_schema(table, "S.T")
    assert [f.metadata["parquet.field.id"] for f in schema.fields] == [c.id for c in table.columns]


def test_defaults_of_every_kind_fill_old_files(spark: Any, cat: Catalog, target: str) -> None:
    """Each constant default becomes a typed Spark literal equal to what the
    Python path reads, through read_table and through an attached view."""
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY)")
    _write(cat, "S.T", ID=[1, 2])
    moment = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    defaults = [
        ColumnDef(name="B", type=ColumnType.BOOLEAN, default=ConstantDefault(True)),
        ColumnDef(name="I8", type=ColumnType.INT8, default=ConstantDefault(-128)),
        ColumnDef(name="BIG", type=ColumnType.INT64, default=ConstantDefault(-(2**63))),
        ColumnDef(name="F", type=ColumnType.FLOAT, default=ConstantDefault(1.5)),
        ColumnDef(name="X", type=ColumnType.DOUBLE, default=ConstantDefault(float("-inf"))),
        ColumnDef(
            name="D",
            type=ColumnType.DECIMAL,
            precision=20,
            scale=4,
            default=ConstantDefault(decimal.Decimal("-12345.6789")),
        ),
        ColumnDef(name="S", type=ColumnType.STRING, default=ConstantDefault("it's \\ `x` \u00e9")),
        ColumnDef(name="BY", type=ColumnType.BYTES, default=ConstantDefault(b"\x00'\xff")),
        ColumnDef(name="DAY", type=ColumnType.DATE, default=ConstantDefault(dt.date(1, 1, 1))),
        ColumnDef(name="TS", type=ColumnType.TIMESTAMP, default=ConstantDefault(moment)),
        ColumnDef(
            name="TZ",
            type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
            default=ConstantDefault(moment.replace(tzinfo=dt.timezone(dt.timedelta(hours=5)))),
        ),
        ColumnDef(
            name="U",
            type=ColumnType.UUID,
            default=ConstantDefault(uuid.UUID("12345678-1234-5678-1234-567812345678")),
        ),
    ]
    cat.execute([AddColumns(table="T", columns=tuple(defaults), schema="S")])
    # TZ is compared as text in the session's zone (UTC): Spark hands Python
    # naive local datetimes for it, Arrow aware ones.
    expected = [r[:-2] + r[-1:] for r in _oracle(cat, "S.T")]
    assert expected[0][1:4] == (True, -128, -(2**63))
    instant = "2024-05-06 02:08:09.123456"
    attached = almanac.spark.attach(spark, target)
    assert attached.attached == ["s.t"]
    for frame in (almanac.spark.read_table(spark, target, "S.T"), spark.table("s.t")):
        assert rows(frame.drop("TZ")) == expected
        assert [r[0] for r in frame.selectExpr("CAST(TZ AS STRING)").collect()] == [instant] * 2


def test_every_widening_reads_natively(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.W (ID INT64 PRIMARY KEY, A INT8, B INT16, F FLOAT)")
    _write(
        cat,
        "S.W",
        ID=[1, 2],
        A=pa.array([-128, 127], pa.int8()),
        B=pa.array([-32768, 7], pa.int16()),
        F=pa.array([1.5, -0.25], pa.float32()),
    )
    cat.sql(
        "ALTER TABLE S.W ALTER COLUMN A SET DATA TYPE INT64; "
        "ALTER TABLE S.W ALTER COLUMN B SET DATA TYPE INT32; "
        "ALTER TABLE S.W ALTER COLUMN F SET DATA TYPE DOUBLE"
    )
    df = almanac.spark.read_table(spark, target, "S.W")
    assert df.dtypes == [("ID", "bigint"), ("A", "bigint"), ("B", "int"), ("F", "double")]
    assert rows(df) == [(1, -128, -32768, 1.5), (2, 127, 7, -0.25)] == _oracle(cat, "S.W")


def test_old_rows_keep_the_default_of_the_add(spark: Any, cat: Catalog, target: str) -> None:
    """A later SET or DROP DEFAULT changes what writes store, never what a
    file written before the column existed reads."""
    cat.sql("CREATE SCHEMA S; CREATE TABLE S.T (ID INT64 PRIMARY KEY)")
    _write(cat, "S.T", ID=[1])
    cat.sql("ALTER TABLE S.T ADD COLUMN C INT32 DEFAULT 7")
    cat.sql("ALTER TABLE S.T ALTER COLUMN C SET DEFAULT 8")
    _write(cat, "S.T", ID=[2])
    cat.sql("ALTER TABLE S.T ALTER COLUMN C DROP DEFAULT")
    _write(cat, "S.T", ID=[3])
    expected = [(1, 7), (2, 8), (3, None)]
    assert _oracle(cat, "S.T") == expected
    assert rows(almanac.spark.read_table(spark, target, "S.T")) == expected
    almanac.spark.attach(spark, target)
    assert rows(spark.table("s.t")) == expected

"""PARTITIONED BY, ADD/DROP/REPLACE PARTITION FIELD and WRITE [UN]ORDERED:
the commands they make, and what they do to a real catalog."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import almanac
from almanac.commands import (
    Command,
    EvolvePartitionSpec,
    PartitionFieldDef,
    SetSortOrder,
    SortFieldDef,
)
from almanac.errors import SqlParseError, ValidationError
from almanac.sql.parsing import parse_script


def one(sql: str) -> Command:
    (command,) = parse_script(sql)
    return command


def test_partitioned_by_takes_sparks_spellings() -> None:
    create = one(
        "CREATE TABLE s.t (id BIGINT, ts TIMESTAMP, s STRING, d DATE, a STRUCT<c: INT>) "
        "PARTITIONED BY (bucket(16, id), days(ts), truncate(4, s), id, years(d), months(d), "
        'hours(ts), year(d), month(d), day(ts), hour(ts), a.c, "a".c)'
    )
    assert isinstance(create, almanac.CreateTable)
    assert create.partitioned_by == (
        PartitionFieldDef("ID", "bucket[16]"),
        PartitionFieldDef("TS", "days"),
        PartitionFieldDef("S", "truncate[4]"),
        PartitionFieldDef("ID"),
        PartitionFieldDef("D", "years"),
        PartitionFieldDef("D", "months"),
        PartitionFieldDef("TS", "hours"),
        PartitionFieldDef("D", "year"),
        PartitionFieldDef("D", "month"),
        PartitionFieldDef("TS", "day"),
        PartitionFieldDef("TS", "hour"),
        PartitionFieldDef("A.C"),
        PartitionFieldDef("a.C"),
    )


def test_partition_field_statements() -> None:
    assert one("ALTER TABLE t ADD PARTITION FIELD bucket(8, id) AS b") == EvolvePartitionSpec(
        name="T", schema="PUBLIC", add=(PartitionFieldDef("ID", "bucket[8]", "B"),)
    )
    assert one("ALTER TABLE IF EXISTS s.t DROP PARTITION FIELD days(ts)") == EvolvePartitionSpec(
        name="T", schema="S", drop=(PartitionFieldDef("TS", "days"),), if_exists=True
    )
    assert one("ALTER TABLE t DROP PARTITION FIELD b") == EvolvePartitionSpec(name="T", drop=("B",))
    assert one(
        "ALTER TABLE t REPLACE PARTITION FIELD ts_day WITH hours(ts) AS h"
    ) == EvolvePartitionSpec(
        name="T", drop=("TS_DAY",), add=(PartitionFieldDef("TS", "hours", "H"),)
    )


def test_write_order_statements() -> None:
    assert one("ALTER TABLE t WRITE ORDERED BY a, b DESC, truncate(2, c) NULLS LAST") == (
        SetSortOrder(
            name="T",
            fields=(
                SortFieldDef("A"),
                SortFieldDef("B", descending=True),
                SortFieldDef("C", "truncate[2]", nulls_first=False),
            ),
        )
    )
    assert one("ALTER TABLE t WRITE LOCALLY ORDERED BY a ASC NULLS FIRST") == SetSortOrder(
        name="T", fields=(SortFieldDef("A", nulls_first=True),)
    )
    assert one("ALTER TABLE t WRITE UNORDERED") == SetSortOrder(name="T", fields=())


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("CREATE TABLE t (a INT) PARTITIONED BY (squash(a))", "Unknown partition transform"),
        ("CREATE TABLE t (a INT) PARTITIONED BY (bucket(a))", "takes a width and a column"),
        ("CREATE TABLE t (a INT) PARTITIONED BY (bucket(x, a))", "must be an integer"),
        ("CREATE TABLE t (a INT) PARTITIONED BY (days(a, a))", "takes one column"),
        ("ALTER TABLE t REPLACE PARTITION FIELD a", "Expecting WITH"),
        ("ALTER TABLE t WRITE SORTED", "Expecting ORDERED BY or UNORDERED"),
        ("ALTER TABLE t ADD PARTITION FIELD a AS", "partition field name"),
    ],
)
def test_malformed_statements_are_parse_errors(sql: str, fragment: str) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_script(sql)
    assert fragment in str(info.value)


def test_sql_partitioning_round_trip_on_a_catalog(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "catalog"), delay_ms=0) as cat:
        cat.sql(
            "CREATE TABLE t (id BIGINT NOT NULL, ts TIMESTAMP, s STRING) "
            "PARTITIONED BY (bucket(16, id), days(ts))"
        )
        cat.sql("ALTER TABLE t REPLACE PARTITION FIELD days(ts) WITH hours(ts) AS h")
        cat.sql("ALTER TABLE t ADD PARTITION FIELD truncate(4, s)")
        cat.sql("ALTER TABLE t WRITE ORDERED BY ts DESC, id")
        table = cat.catalog().table("T")
        assert table is not None
        assert [(f.name, f.transform, f.field_id) for f in table.partition_spec.fields] == [
            ("ID_bucket", "bucket[16]", 1000),
            ("H", "hour", 1002),
            ("S_trunc", "truncate[4]", 1003),
        ]
        assert [s.spec_id for s in table.partition_specs] == [0, 1, 2]
        (row,) = cat.sql("SELECT * FROM SYSTEM.TABLES").rows
        columns = cat.sql("SELECT * FROM SYSTEM.TABLES").columns
        shown = dict(zip(columns, row, strict=True))
        assert shown["PARTITION_SPEC"] == "bucket(16, ID), hour(TS) AS H, truncate(4, S)"
        assert shown["SORT_ORDER"] == "TS DESC NULLS LAST, ID ASC NULLS FIRST"
        with pytest.raises(ValidationError, match="partition field 'H'"):
            cat.sql("ALTER TABLE t DROP COLUMN ts")
        cat.sql("ALTER TABLE t DROP PARTITION FIELD h")
        cat.sql("ALTER TABLE t WRITE UNORDERED")
        cat.sql("ALTER TABLE t DROP COLUMN ts")
    with almanac.connect(str(tmp_path / "catalog")) as reopened:
        table = reopened.catalog().table("T")
        assert table is not None and len(table.partition_specs) == 4
        assert table.sort_order.order_id == 0 and len(table.sort_orders) == 2


def test_almanac_writes_into_a_table_partitioned_in_sql_file_rows_by_partition(
    tmp_path: Path,
) -> None:
    """A table partitioned in SQL and written by Almanac's own writer: one
    file per year (NULL its own partition), each file's partition value its
    rows' year, and every row read back."""
    from almanac.data import TableData, plan_scan, read_table, write_table

    with almanac.connect(
        str(tmp_path / "catalog"), warehouse=str(tmp_path / "wh"), delay_ms=0
    ) as cat:
        cat.sql("CREATE TABLE t (id BIGINT NOT NULL, d DATE) PARTITIONED BY (years(d))")
        days = [dt.date(2020, 1, 5), dt.date(2020, 12, 31), dt.date(2023, 6, 1), None]
        rows = pa.table(
            {"ID": pa.array([1, 2, 3, 4], pa.int64()), "D": pa.array(days, pa.date32())}
        )
        write_table(cat, "T", rows)
        back = read_table(cat, "T").sort_by("ID")
        assert back.column("ID").to_pylist() == [1, 2, 3, 4]
        assert back.column("D").to_pylist() == days
        files = plan_scan(cat, TableData.for_catalog(cat), "T").files
        years = sorted((f.partition_values[0] for f in files), key=lambda y: (y is None, y))
        assert years == [50, 53, None]  # Iceberg's year transform: years since 1970

"""The read statements through ``Catalog.sql``: rows of each SHOW, DESCRIBE,
history and diff, ``AS OF`` a version or a timestamp, and their errors."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import almanac
from almanac import (
    Catalog,
    CatalogError,
    NotFoundError,
    SqlParseError,
    SqlResult,
    ValidationError,
    VersionNotFoundError,
)
from almanac.model.clock import to_datetime
from almanac.model.read_point import ReadPoint
from almanac.model.summary import CHECKPOINT_SUMMARY
from almanac.sql.parsing import parse_script, parse_sql
from almanac.sql.reads import ReadStatement

SETUP = [
    "CREATE SCHEMA S; CREATE ZONE Z WITH (PARTITIONS=4, REPLICAS=3, STORAGE_PROFILES='a,b')",
    "CREATE TABLE S.T (ID INT64 PRIMARY KEY, A VARCHAR(3) DEFAULT 'x', "
    "B DECIMAL(10, 2) NOT NULL) ZONE Z",
    "CREATE INDEX I ON S.T USING SORTED (A DESC, B NULLS FIRST);CREATE TABLE P (K INT PRIMARY KEY)",
    "ALTER TABLE S.T RENAME TO U; ALTER TABLE S.U ADD COLUMN C BOOLEAN DEFAULT TRUE",
]


@pytest.fixture(scope="module")
def cat() -> Iterator[Catalog]:
    """Versions 2..5 made by SETUP, in order (version 1 holds PUBLIC)."""
    with almanac.connect("memory://") as catalog:
        for script in SETUP:
            catalog.sql(script)
        assert catalog.latest_version == 5
        yield catalog


def rows(cat: Catalog, text: str) -> list[tuple[object, ...]]:
    result = cat.sql(text)
    assert result.is_query and result.version == cat.latest_version
    return list(result.rows)


def test_show_schemas_tables_and_zones(cat: Catalog) -> None:
    version = cat.catalog()
    u, p = version.table("U", "S"), version.table("P")
    z, default = version.zone("Z"), version.zone("Default")
    s = version.schema("S")
    assert u and p and z and default and s
    assert cat.sql("SHOW SCHEMAS").columns == ("NAME", "ID", "TABLES")
    assert rows(cat, "SHOW SCHEMAS") == [("PUBLIC", 0, 1), ("S", s.id, 1)]
    assert cat.sql("SHOW TABLES").columns == (
        "SCHEMA",
        "NAME",
        "ID",
        "TABLE_VERSION",
        "ZONE",
        "COLUMNS",
        "PRIMARY_KEY",
    )
    assert rows(cat, "show tables") == [
        ("PUBLIC", "P", p.id, 1, "Default", 1, "K"),
        ("S", "U", u.id, 2, "Z", 4, "ID"),
    ]
    assert rows(cat, "SHOW TABLES IN s") == [("S", "U", u.id, 2, "Z", 4, "ID")]
    assert rows(cat, 'SHOW TABLES IN "S"') == rows(cat, "SHOW TABLES IN S")
    assert rows(cat, "SHOW ZONES") == [
        ("Default", default.id, 25, 1, "default", "$..*", True, 1, "STRONG"),
        ("Z", z.id, 4, 3, "a,b", "$..*", False, 2, "STRONG"),
    ]


def test_show_indexes_spells_key_columns_as_create_index_takes_them(cat: Catalog) -> None:
    version = cat.catalog()
    u, p, i = version.table("U", "S"), version.table("P"), version.index("I", "S")
    assert u and p and i
    every = rows(cat, "SHOW INDEXES")
    assert every == [
        ("PUBLIC", "P", "P_PK", p.primary_key_index_id, "HASH", True, "K", "AVAILABLE"),
        ("S", "U", "I", i.id, "SORTED", False, "A DESC, B NULLS FIRST", "REGISTERED"),
        ("S", "U", "U_PK", u.primary_key_index_id, "HASH", True, "ID", "AVAILABLE"),
    ]
    assert rows(cat, "SHOW INDEXES ON S.U") == every[1:]
    assert rows(cat, "SHOW INDEXES ON P") == every[:1]


def test_describe_spells_types_and_defaults_that_read_back(cat: Catalog) -> None:
    described = cat.sql("DESCRIBE TABLE S.U")
    assert described.columns == (
        "NAME",
        "TYPE",
        "NULLABLE",
        "DEFAULT",
        "PRIMARY_KEY",
        "ID",
        "COMMENT",
    )
    assert list(described.rows) == [
        ("ID", "INT64", False, None, 1, 0, None),
        ("A", "STRING(3)", True, "'x'", None, 1, None),
        ("B", "DECIMAL(10, 2)", False, None, None, 2, None),
        ("C", "BOOLEAN", True, "TRUE", None, 3, None),
    ]
    assert rows(cat, "describe s.u") == list(described.rows)


DEFAULTS = [
    ("INT8", "-7"),
    ("INT16", "300"),
    ("INT32", "NULL"),
    ("FLOAT", "1.5"),
    ("DOUBLE", "1e+300"),
    ("DECIMAL(20, 4)", "-12.3400"),
    ("STRING(10)", "'it''s'"),
    ("BYTES(4)", "X'00ff'"),
    ("DATE", "'2024-01-31'"),
    ("TIME(3)", "'12:30:00.250000'"),
    ("TIMESTAMP(6)", "'2024-01-31T12:30:00'"),
    ("TIMESTAMP WITH LOCAL TIME ZONE(6)", "'2024-01-31T12:30:00+02:00'"),
    ("UUID", "'12345678-1234-5678-1234-567812345678'"),
]


def test_a_table_made_from_its_description_has_the_same_columns() -> None:
    with almanac.connect("memory://") as cat:
        columns = ", ".join(f"C{n} {t} DEFAULT {d}" for n, (t, d) in enumerate(DEFAULTS))
        cat.sql(
            f"CREATE TABLE T (ID UUID PRIMARY KEY DEFAULT RAND_UUID(), {columns}, N INT32 NOT NULL)"
        )
        described = cat.sql("DESCRIBE TABLE T").rows
        remade = ", ".join(
            f"{name} {ctype}" + ("" if nullable else " NOT NULL") + (f" DEFAULT {d}" if d else "")
            for name, ctype, nullable, d, *_ in described
        )
        cat.sql(f"CREATE TABLE T2 ({remade}, PRIMARY KEY (ID))")
        first, second = cat.catalog().table("T"), cat.catalog().table("T2")
        assert first is not None and second is not None
        assert second.columns == first.columns
        assert cat.sql("DESCRIBE T2").rows == described


def test_as_of_version_reads_that_version(cat: Catalog) -> None:
    old = cat.sql("SHOW TABLES IN S AS OF VERSION 3")
    assert old.version == 3
    table = cat.catalog(3).table("T", "S")
    assert table is not None
    assert list(old.rows) == [("S", "T", table.id, 1, "Z", 3, "ID")]
    assert cat.sql("DESCRIBE S.T AS OF VERSION 3").rows[1] == (
        "A",
        "STRING(3)",
        True,
        "'x'",
        None,
        1,
        None,
    )
    with pytest.raises(NotFoundError, match=r"Table 'S\.T' does not exist"):
        cat.sql("DESCRIBE S.T")
    assert cat.sql("SHOW SCHEMAS AS OF VERSION 1").rows == (("PUBLIC", 0, 0),)


def test_as_of_timestamp_reads_the_version_active_then(cat: Catalog) -> None:
    for version in range(1, cat.latest_version + 1):
        moment = to_datetime(cat.catalog(version).activation_time)
        expected = cat.catalog_at(moment).version
        assert expected >= version  # others may have activated within the millisecond
        zulu = moment.isoformat().replace("+00:00", "Z")
        shifted = moment.astimezone(dt.timezone(dt.timedelta(hours=-5))).isoformat()
        for text in (zulu, shifted):
            result = cat.sql(f"SHOW TABLES AS OF TIMESTAMP '{text}'")
            assert result.version == expected
            assert result.rows == cat.sql(f"SHOW TABLES AS OF VERSION {expected}").rows
    future = cat.sql("SHOW ZONES AS OF TIMESTAMP '6000-01-01T00:00:00+00:00'")
    assert future.version == cat.latest_version


def test_show_history_lists_versions_newest_first(cat: Catalog) -> None:
    result = cat.sql("SHOW HISTORY")
    assert result.columns == ("VERSION", "ACTIVATED_AT", "NODE", "SUMMARY")
    assert [r[0] for r in result.rows] == [5, 4, 3, 2, 1]
    for version, activated, node, _ in result.rows:
        assert isinstance(version, int) and isinstance(activated, str)
        assert activated.endswith("Z")
        moment = dt.datetime.fromisoformat(activated)
        assert moment == to_datetime(cat.catalog(version).activation_time)
        assert node == cat.node_name
    summaries = {r[0]: r[3] for r in result.rows}
    assert summaries[1] == "created schema PUBLIC"
    assert summaries[5] == "renamed table S.T to U, added column C BOOLEAN DEFAULT TRUE to S.U"
    assert summaries[5] == cat.describe(5).removeprefix("version 5: ")
    assert cat.sql("SHOW HISTORY LIMIT 2").rows == result.rows[:2]
    assert cat.sql("SHOW HISTORY LIMIT 0").rows == ()
    old = cat.sql("SHOW HISTORY LIMIT 2 AS OF VERSION 3")
    assert old.version == 3 and [r[0] for r in old.rows] == [3, 2]


def test_show_history_on_a_table_lists_the_versions_that_changed_it(cat: Catalog) -> None:
    # S.T: created in 3, its index in 4, renamed to U and a column added in 5.
    rows = cat.sql("SHOW HISTORY ON S.U").rows
    assert [r[0] for r in rows] == [5, 4, 3]
    assert str(rows[1][3]).startswith("created SORTED index I on S.T (A DESC, B ASC), ")
    assert [r[0] for r in cat.sql("SHOW HISTORY ON s.u LIMIT 2").rows] == [5, 4]
    assert [r[0] for r in cat.sql("SHOW HISTORY ON P").rows] == [4]
    assert [r[0] for r in cat.sql("SHOW HISTORY ON S.T AS OF VERSION 4").rows] == [4, 3]
    with pytest.raises(NotFoundError, match=r"S\.T"):
        cat.sql("SHOW HISTORY ON S.T")


def test_show_diff_lists_one_row_per_object_or_field(cat: Catalog) -> None:
    result = cat.sql("SHOW DIFF 3 5")
    assert result.columns == ("CHANGE", "KIND", "NAME", "FIELD", "BEFORE", "AFTER")
    assert result.version == 5
    d = cat.diff(3, 5)
    assert len(result.rows) == len(d.added) + len(d.removed) + sum(len(c.fields) for c in d.changed)
    assert ("added", "column", "S.U.C", None, None, '"BOOLEAN DEFAULT TRUE"') in result.rows
    table = ("added", "table", "PUBLIC.P", None, None)
    assert (*table, '"1 column, primary key (K) HASH, zone Default"') in result.rows
    index = ("added", "index", "S.I", None, None, '"SORTED on S.U (A DESC, B ASC), REGISTERED"')
    assert index in result.rows
    assert ("changed", "table", "S.U", "name", '"T"', '"U"') in result.rows
    assert ("changed", "table", "S.U", "table_version", "1", "2") in result.rows
    back = cat.sql("SHOW DIFF 5 3")
    assert ("removed", "column", "S.U.C", None, '"BOOLEAN DEFAULT TRUE"', None) in back.rows
    assert ("changed", "table", "S.T", "name", '"U"', '"T"') in back.rows
    assert cat.sql("SHOW DIFF 4 4").rows == ()
    zone = cat.sql("SHOW DIFF 1 2").rows
    shape = "4 partitions, 3 replicas (quorum 2), STRONG consistency, storage profiles a, b"
    assert ("added", "zone", "Z", None, None, f'"{shape}"') in zone


def test_every_read_answers_in_json_scalars(cat: Catalog) -> None:
    for text in (
        "SHOW SCHEMAS",
        "SHOW TABLES",
        "SHOW INDEXES",
        "SHOW ZONES",
        "DESCRIBE S.U",
        "SHOW HISTORY",
        "SHOW DIFF 1 5",
    ):
        result = cat.sql(text)
        assert all(len(row) == len(result.columns) for row in result.rows), text
        assert json.loads(json.dumps([list(r) for r in result.rows])) == [
            list(r) for r in result.rows
        ]


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("SHOW TABLES IN NOPE", NotFoundError, "Schema 'NOPE' does not exist"),
        ("SHOW INDEXES ON S.NOPE", NotFoundError, "Table 'S.NOPE' does not exist"),
        ("DESCRIBE TABLE NOPE.T", NotFoundError, "Table 'NOPE.T' does not exist"),
        ("SHOW TABLES AS OF VERSION 0", VersionNotFoundError, "Catalog version 0 does not exist"),
        ("SHOW DIFF 0 1", VersionNotFoundError, "Catalog version 0 does not exist"),
        ("SHOW TABLES AS OF VERSION 99", VersionNotFoundError, "Catalog version 99 does not"),
        ("SHOW DIFF 2 99", VersionNotFoundError, "Catalog version 99 does not exist"),
        (
            "SHOW TABLES AS OF TIMESTAMP '1971-01-01T00:00:00Z'",
            VersionNotFoundError,
            "No catalog version was active at 1971-01-01T00:00:00+00:00",
        ),
    ],
)
def test_reads_of_what_does_not_exist(
    cat: Catalog, text: str, error: type[CatalogError], message: str
) -> None:
    with pytest.raises(error) as caught:
        cat.sql(text)
    assert caught.value.message.startswith(message), caught.value.message


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        (
            "SHOW TABLES AS OF TIMESTAMP '2026-11-23T01:02:03'",
            "Timestamp '2026-11-23T01:02:03' has no UTC offset: end it with Z or +HH:MM",
            (1, 29),
        ),
        (
            "SHOW TABLES AS OF TIMESTAMP '2026-11-23'",
            "Timestamp '2026-11-23' has no UTC offset",
            (1, 29),
        ),
        (
            "SHOW TABLES\n  AS OF TIMESTAMP 'yesterday'",
            "Timestamp must be an ISO-8601 instant such as '2026-11-23T01:02:03Z', got 'yesterday'",
            (2, 19),
        ),
        (
            "SHOW TABLES AS OF TIMESTAMP '1960-01-01T00:00:00Z'",
            "Timestamp '1960-01-01T00:00:00Z' is outside the hybrid clock's range",
            (1, 29),
        ),
        ("SHOW TABLES AS OF TIMESTAMP 5", "Expecting a quoted timestamp", (1, 29)),
        ("SHOW TABLES AS OF VERSION -1", "AS OF VERSION takes a version", (1, 27)),
        ("SHOW TABLES AS OF VERSION 1.5", "AS OF VERSION takes a version", (1, 27)),
        ("SHOW TABLES AS OF VERSION", "Expecting a version number after AS OF VERSION", (1, 19)),
        ("SHOW TABLES AS OF NOW", "Expecting VERSION or TIMESTAMP after AS OF", (1, 19)),
        ("SHOW TABLES AS OF VERSION 2 x", "Unexpected 'x'", (1, 29)),
        ("SHOW HISTORY LIMIT -1", "LIMIT takes a count of versions", (1, 20)),
        ("SHOW HISTORY LIMIT x", "Expecting the number of versions after LIMIT", (1, 20)),
        (
            "SHOW GRANTS",
            "Expecting SCHEMAS, TABLES, DROPPED, INDEXES, ZONES, HISTORY, TABLETS, SERVERS or DIFF",
            (1, 6),
        ),
        ("SHOW DIFF 1 x", "Expecting the second version of SHOW DIFF", (1, 13)),
        ("SHOW DIFF 1 2 AS OF VERSION 2", "SHOW DIFF names both of its versions", (1, 29)),
        ("SHOW TABLES IN", "Expecting a schema name", (1, 13)),
        ("SHOW INDEXES ON a.b.c", "A table name does not support CATALOG", (1, 17)),
        ("DESCRIBE TABLE", "Expecting a table name", (1, 10)),
        (
            "CREATE SCHEMA Q;\nSHOW TABLES",
            "SHOW TABLES must be the only statement of its script",
            (2, 1),
        ),
        ("SHOW SCHEMAS; SHOW ZONES", "SHOW SCHEMAS must be the only statement", (1, 1)),
    ],
)
def test_read_syntax_errors_point_at_the_text(
    cat: Catalog, text: str, message: str, where: tuple[int, int]
) -> None:
    before = cat.latest_version
    with pytest.raises(SqlParseError) as caught:
        cat.sql(text)
    error = caught.value
    assert error.message.startswith(message), error.message
    assert (error.line, error.column) == where, error.message
    assert cat.latest_version == before


def test_a_read_makes_no_version_and_checks_its_arguments(cat: Catalog) -> None:
    before = cat.latest_version
    assert cat.sql("SHOW SCHEMAS", request_id="read-1").version == before
    assert cat.latest_version == before
    with pytest.raises(ValidationError, match="request_id"):
        cat.sql("SHOW SCHEMAS", request_id="")
    assert SqlResult(3).is_query is False


def test_parse_sql_returns_the_read_and_parse_script_refuses_it() -> None:
    assert parse_sql("SHOW TABLES IN s AS OF VERSION 3") == ReadStatement(
        "SHOW TABLES", schema="S", as_of=ReadPoint(version=3)
    )
    assert parse_sql("SHOW INDEXES ON t", default_schema="X") == ReadStatement(
        "SHOW INDEXES", schema="X", table="T"
    )
    with pytest.raises(SqlParseError, match="SHOW ZONES reads the catalog"):
        parse_script("SHOW ZONES")


def test_reads_of_a_closed_catalog_are_refused() -> None:
    cat = almanac.connect("memory://")
    cat.close()
    with pytest.raises(CatalogError, match="closed"):
        cat.sql("SHOW SCHEMAS")


def test_history_after_a_checkpoint_and_from_two_nodes(tmp_path: Path) -> None:
    target = str(tmp_path / "cat")
    with (
        almanac.connect(target, delay_ms=0, node_name="left") as left,
        almanac.connect(target, delay_ms=0, node_name="right") as right,
    ):
        left.sql("CREATE SCHEMA A")
        right.sql("CREATE SCHEMA B")
        right.sql("CREATE SCHEMA C")
        left.catch_up()
        history = left.sql("SHOW HISTORY LIMIT 3").rows
        assert [(r[0], r[2], r[3]) for r in history] == [
            (4, "right", "created schema C"),
            (3, "right", "created schema B"),
            (2, "left", "created schema A"),
        ]
        left.checkpoint_log(3)
        assert [r[0] for r in left.sql("SHOW HISTORY").rows] == [4, 3], "3 is the checkpoint"
        assert left.sql("SHOW HISTORY").rows[1][3] == CHECKPOINT_SUMMARY
        assert [r[0] for r in left.sql("SHOW HISTORY LIMIT 1").rows] == [4]
        with pytest.raises(VersionNotFoundError, match="no longer available"):
            left.sql("SHOW SCHEMAS AS OF VERSION 2")
        with pytest.raises(VersionNotFoundError, match="no longer available"):
            left.sql("SHOW DIFF 2 4")
        assert left.sql("SHOW DIFF 3 4").rows == (
            ("added", "schema", "C", None, None, '"schema C"'),
        )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ReadStatement("SHOW VIEWS"), "Unknown read statement 'SHOW VIEWS'"),
        (lambda: ReadStatement("SHOW DIFF"), "SHOW DIFF, and only it, names two versions"),
        (lambda: ReadStatement("SHOW ZONES", versions=(1, 2)), "SHOW DIFF, and only it"),
        (lambda: ReadStatement("DESCRIBE TABLE", table="T"), "DESCRIBE TABLE names a schema"),
        (
            lambda: ReadPoint(version=1, timestamp=5),
            "A read names a version or a timestamp, not both",
        ),
    ],
)
def test_read_statement_values_refuse_what_no_statement_says(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        build()


def test_the_summary_of_a_big_script_stays_one_short_line() -> None:
    from almanac.model.summary import SUMMARY_ENTRIES

    count = SUMMARY_ENTRIES + 30
    with almanac.connect("memory://") as catalog:
        catalog.sql(";".join(f"CREATE SCHEMA S{i}" for i in range(count)))
        [(version, _, _, summary)] = catalog.sql("SHOW HISTORY LIMIT 1").rows
        named = [f"created schema S{i}" for i in range(SUMMARY_ENTRIES)]
        assert summary == ", ".join(named) + ", and 30 more"
        assert catalog.describe(2) == f"version {version}: {summary}"
        catalog.sql(";".join(f"CREATE SCHEMA T{i}" for i in range(SUMMARY_ENTRIES)))
        [(_, _, _, exact)] = catalog.sql("SHOW HISTORY LIMIT 1").rows
        assert isinstance(exact, str) and exact.endswith(f"T{SUMMARY_ENTRIES - 1}")
        assert "more" not in exact

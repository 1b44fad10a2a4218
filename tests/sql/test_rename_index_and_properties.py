"""ALTER INDEX … RENAME TO and ALTER TABLE … SET (table properties)."""

from __future__ import annotations

import pytest

import almanac
from almanac import RenameIndex, SetTableProperties, SqlParseError
from almanac.sql.parsing import parse_script


def test_alter_index_rename() -> None:
    assert parse_script("ALTER INDEX I RENAME TO J") == [RenameIndex("I", "J", "PUBLIC")]
    assert parse_script('alter index if exists s.i rename to "j"') == [
        RenameIndex("I", "j", "S", if_exists=True)
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ALTER INDEX I DROP", "Expecting RENAME TO"),
        ("ALTER INDEX I RENAME TO", "Expecting an index name"),
    ],
)
def test_alter_index_errors(text: str, message: str) -> None:
    with pytest.raises(SqlParseError, match=message):
        parse_script(text)


def test_alter_table_set_properties() -> None:
    assert parse_script("ALTER TABLE T SET (MIN_STALE_ROWS=5, STALE_ROWS_FRACTION=0.5)") == [
        SetTableProperties(name="T", min_stale_rows=5, stale_rows_fraction=0.5)
    ]
    assert parse_script("ALTER TABLE IF EXISTS S.T SET (stale_rows_fraction=1)") == [
        SetTableProperties(name="T", schema="S", stale_rows_fraction=1.0, if_exists=True)
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ALTER TABLE T SET (FOO=1)", "Unknown table property FOO"),
        ("ALTER TABLE T SET (MIN_STALE_ROWS=1.5)", "must be an integer"),
        ("ALTER TABLE T SET (MIN_STALE_ROWS=1, MIN_STALE_ROWS=2)", "given twice"),
        ("ALTER TABLE T SET (MIN_STALE_ROWS='x')", "takes a number"),
    ],
)
def test_alter_table_set_errors(text: str, message: str) -> None:
    with pytest.raises(SqlParseError, match=message):
        parse_script(text)


def test_both_end_to_end() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY, V INT); CREATE INDEX I ON T (V)")
        cat.sql("ALTER INDEX I RENAME TO J; ALTER TABLE T SET (MIN_STALE_ROWS=7)")
        version = cat.catalog()
        table = version.table("T")
        assert version.index("I") is None and version.index("J") is not None
        assert table is not None and table.properties.min_stale_rows == 7
        with pytest.raises(almanac.ValidationError, match="non-negative"):
            cat.sql("ALTER TABLE T SET (MIN_STALE_ROWS=-1)")

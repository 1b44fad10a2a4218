"""The SQL of soft delete: DROP TABLE … WITH (RESERVE = …), RECOVER TABLE,
PURGE TABLE; what they parse to, and errors that point at the token."""

from __future__ import annotations

import pytest

from almanac.commands import DropTable, PurgeTable, RecoverTable
from almanac.errors import SqlParseError
from almanac.sql.parsing import parse_script

from .test_errors import error_of, marked


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("15m", 900.0), ("1h", 3600.0), ("2d", 172_800.0), ("1.5H", 5400.0)],
)
def test_a_reserve_is_a_duration(text: str, seconds: float) -> None:
    assert parse_script(f"DROP TABLE t WITH (RESERVE = '{text}')") == [
        DropTable("T", reserve_s=seconds)
    ]


def test_drop_without_reserve_leaves_it_to_the_node() -> None:
    assert parse_script("DROP TABLE t") == [DropTable("T", reserve_s=None)]


def test_a_reserve_applies_to_every_table_of_the_statement() -> None:
    assert parse_script("DROP TABLE IF EXISTS a, s.\"b\" WITH (RESERVE = '0s')") == [
        DropTable("A", if_exists=True, reserve_s=0.0),
        DropTable("b", "S", if_exists=True, reserve_s=0.0),
    ]


def test_recover_and_purge() -> None:
    assert parse_script("RECOVER TABLE t; recover table s.t as u; PURGE TABLE IF EXISTS s.t") == [
        RecoverTable("T"),
        RecoverTable("T", "S", new_name="U"),
        PurgeTable("T", "S", if_exists=True),
    ]
    # RECOVER and PURGE stay ordinary names elsewhere.
    assert parse_script("DROP TABLE recover, purge") == [DropTable("RECOVER"), DropTable("PURGE")]


@pytest.mark.parametrize(
    ("sql", "message", "text"),
    [
        ("DROP TABLE t\n  WITH (RESERVE = §'1 week')", "is not a duration", "'1 week'"),
        ("DROP TABLE t WITH (RESERVE = §3600)", "takes a quoted duration", "3600"),
        ("DROP TABLE t WITH (§KEEP = '1h')", "Unknown DROP TABLE option KEEP", "KEEP"),
        ("DROP TABLE t WITH (RESERVE = '1h', §RESERVE = '2h')", "given twice", "RESERVE"),
        ("DROP TABLE t WITH (RESERVE §'1h')", "Expecting =", "'1h'"),
        ("DROP TABLE t WITH (§)", "Expecting a DROP option name", ")"),
        ("§DROP INDEX i WITH (RESERVE = '1h')", "DROP INDEX does not support OPTIONS", "DROP"),
        ("RECOVER TABLE t AS u §v", "Unexpected 'v'", "v"),
        ("RECOVER TABLE t §AS", "Expecting a table name after AS", "AS"),
        ("RECOVER §TABLE", "Expecting a table name", "TABLE"),
        ("PURGE TABLE t §WITH (RESERVE = '1h')", "Unexpected 'WITH'", "WITH"),
        ("CREATE TABLE t (a INT PRIMARY KEY);\nRECOVER TABLE t §,", "Unexpected ','", ","),
    ],
)
def test_errors_point_at_the_token(sql: str, message: str, text: str) -> None:
    plain, line, column = marked(sql)
    error = error_of(plain)
    assert isinstance(error, SqlParseError)
    assert message in error.message, error.message
    assert (error.line, error.column, error.text) == (line, column, text)

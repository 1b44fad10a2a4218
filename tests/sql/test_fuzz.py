"""Whatever the text, ``parse_sql`` returns commands or one read statement, or
raises ``SqlParseError`` with a position inside the text: no sqlglot
exception, KeyError, … escapes."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from almanac.commands import Command
from almanac.errors import SqlParseError
from almanac.sql.parsing import parse_script, parse_sql
from almanac.sql.reads import ReadStatement

EXAMPLES = int(os.environ.get("ALMANAC_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID = [
    "CREATE SCHEMA IF NOT EXISTS s",
    "DROP SCHEMA IF EXISTS s CASCADE",
    "CREATE TABLE IF NOT EXISTS s.t (id UUID DEFAULT RAND_UUID(), a INT NOT NULL DEFAULT -1, "
    "b DECIMAL(10, 2) DEFAULT 1.50, c VARCHAR(8) DEFAULT 'x', d BYTES DEFAULT X'00ff', "
    "e TIMESTAMP(3) WITH LOCAL TIME ZONE, f DATE DEFAULT DATE '2020-01-01', "
    "PRIMARY KEY USING SORTED (id DESC NULLS LAST, a)) "
    "COLOCATE BY (a) ZONE \"Default\" STORAGE PROFILE 'p'",
    "CREATE TABLE t (id INT PRIMARY KEY, v DOUBLE PRECISION NULL)",
    "DROP TABLE IF EXISTS s.t",
    "ALTER TABLE IF EXISTS t ADD COLUMN IF NOT EXISTS (c INT, d BOOLEAN DEFAULT TRUE)",
    "ALTER TABLE t DROP COLUMN IF EXISTS (c, d)",
    "ALTER TABLE t ALTER COLUMN c SET DATA TYPE BIGINT",
    "ALTER TABLE t ALTER COLUMN c SET DEFAULT TIME '10:00:00'",
    "ALTER TABLE t ALTER COLUMN c DROP NOT NULL",
    "ALTER TABLE t RENAME TO u",
    "CREATE UNIQUE INDEX IF NOT EXISTS i ON s.t USING HASH (a, b)",
    "CREATE INDEX i ON t USING SORTED (a DESC, b NULLS FIRST)",
    "DROP INDEX IF EXISTS s.i",
    "CREATE ZONE IF NOT EXISTS z WITH (PARTITIONS=1, REPLICAS=3, STORAGE_PROFILES='a,b', "
    "DATA_NODES_FILTER='$..*', CONSISTENCY_MODE='HA')",
    "ALTER ZONE z SET (REPLICAS=2, QUORUM_SIZE=2)",
    "ALTER ZONE z RENAME TO y",
    'ALTER ZONE "Default" SET DEFAULT',
    "DROP ZONE IF EXISTS z",
]

READS = [
    "SHOW SCHEMAS AS OF VERSION 3",
    "SHOW TABLES IN s AS OF TIMESTAMP '2026-11-23T01:02:03Z'",
    "SHOW INDEXES ON s.t",
    "SHOW ZONES",
    "DESCRIBE TABLE s.t AS OF VERSION 2",
    "SHOW HISTORY LIMIT 5",
    "SHOW DIFF 1 2",
]

ODD_TOKENS = [
    *["(", ")", ",", ";", ".", "=", "-", "+", "*", "'", '"', "X'", "--", "/*", "*/"],
    *["[", "]", "{", "}", "::", "$", "?", "@", "#", "\n", "''", "1e999", "1\u00b2", "\u0663"],
    *["SELECT", "FROM", "AS", "CAST", "CHECK", "UNIQUE", "PRIMARY KEY", "NULLS FIRST"],
    "9" * 5000,
]
VOCABULARY = sorted({word for sql in VALID + READS for word in sql.split()} | set(ODD_TOKENS))
"""Words of the valid statements plus punctuation, stray keywords and odd literals."""


def check(text: str) -> None:
    try:
        parsed = parse_sql(text)
    except SqlParseError as exc:
        assert 1 <= exc.line <= text.count("\n") + 1
        assert exc.column >= 1
        assert isinstance(exc.text, str)
        return
    if isinstance(parsed, ReadStatement):
        return
    assert isinstance(parsed, list)
    assert all(isinstance(c, Command) for c in parsed)


@FUZZ
@given(st.text())
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(VOCABULARY), max_size=40))
def test_random_token_soup(words: list[str]) -> None:
    check(" ".join(words))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A valid script with a few random edits: deletions, insertions of SQL
    words or characters, duplicated slices, truncation."""
    text = ";\n".join(draw(st.lists(st.sampled_from(VALID + READS), min_size=1, max_size=3)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["delete", "word", "char", "duplicate", "truncate"]))
        if edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        elif edit == "word":
            text = f"{text[:at]} {draw(st.sampled_from(VOCABULARY))} {text[at:]}"
        elif edit == "char":
            text = text[:at] + draw(st.characters()) + text[at:]
        elif edit == "duplicate":
            text = text[:at] + text[max(0, at - draw(st.integers(1, 20))) :]
        else:
            text = text[:at]
    return text


@FUZZ
@given(mutated())
def test_mutated_valid_scripts(text: str) -> None:
    check(text)


def test_every_valid_statement_parses() -> None:
    for sql in VALID:
        assert len(parse_script(sql)) == 1, sql
    for sql in READS:
        assert isinstance(parse_sql(sql), ReadStatement), sql

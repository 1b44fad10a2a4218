"""Errors: syntax errors point at the offending token; unsupported statements
and clauses are refused by name; nothing but ``SqlParseError`` comes out."""

from __future__ import annotations

import decimal

import pytest

from almanac.commands import AlterColumn
from almanac.errors import CatalogError, SqlParseError
from almanac.model.descriptors import ConstantDefault
from almanac.sql.parsing import parse_script


def error_of(sql: str) -> SqlParseError:
    with pytest.raises(SqlParseError) as info:
        parse_script(sql)
    return info.value


def marked(sql: str) -> tuple[str, int, int]:
    """``sql`` with its ``§`` marker removed, and the marker's 1-based line and column:
    tests mark the token an error must point at."""
    offset = sql.index("§")
    line = sql.count("\n", 0, offset) + 1
    return sql.replace("§", ""), line, offset - (sql.rfind("\n", 0, offset) + 1) + 1


@pytest.mark.parametrize(
    ("sql", "message", "text"),
    [
        ("CREATE TABLE t (a INT,\n  b INT §BOGUS)", "Expecting )", "BOGUS"),
        ("CREATE TABLE t (a INT) §BOGUS", "Unexpected 'BOGUS'", "BOGUS"),
        ("CREATE TABLE t (a INT PRIMARY KEY)\n\n  §junk", "Unexpected 'junk'", "junk"),
        ("CREATE INDEX i ON t USING §BTREE (a)", "Expecting HASH or SORTED", "BTREE"),
        ("CREATE TABLE t (a INT, PRIMARY KEY USING §LIST (a))", "Expecting HASH or SORTED", "LIST"),
        ("CREATE TABLE t (a INT, PRIMARY KEY USING SORTED §a)", "Expecting ( after", "a"),
        ("CREATE TABLE t (a INT) STORAGE PROFILE §p", "Expecting a quoted storage", "p"),
        ("CREATE TABLE t (a INT) STORAGE §'p'", "Expecting PROFILE after STORAGE", "'p'"),
        ("CREATE TABLE t (a INT) COLOCATE (§)", "Expecting at least one colocation", ")"),
        ("CREATE ZONE z WITH (REPLICAS §3)", "Expecting =", "3"),
        ("CREATE ZONE z WITH (§)", "Expecting a zone option name", ")"),
        ("ALTER ZONE z §SET", "Expecting a zone option name", "SET"),
        ("ALTER ZONE z §DROP", "Expecting SET or RENAME TO", "DROP"),
        ("CREATE INDEX i ON t (§1)", "Expecting a column name", "1"),
        ("CREATE TABLE t (a STRING DEFAULT §'x)\n", "Unterminated quoted text", "'x)"),
        ('CREATE TABLE §"t (a INT)', "Unterminated quoted text", '"t (a INT)'),
        ("CREATE TABLE t (a INT) §/* no end", "Unterminated comment", "/* no end"),
        ("CREATE TABLE t (a BYTES DEFAULT §X'0G')", "Invalid or unterminated byte", "X'0G')"),
    ],
)
def test_syntax_errors_point_at_the_offending_token(sql: str, message: str, text: str) -> None:
    sql, line, column = marked(sql)
    error = error_of(sql)
    assert message in error.message
    assert (error.line, error.column, error.text) == (line, column, text)
    assert error.context == {"line": line, "column": column, "text": text}
    assert f"at line {line}, column {column}: {text!r}" in str(error)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("§t AS x", "Expecting a statement such as CREATE, ALTER or DROP"),
        ("§42", "Expecting a statement such as CREATE, ALTER or DROP"),
        ("DROP TABLE §NOT", "Expecting a table name"),
        ("CREATE INDEX i ON §(a)", "Expecting a table name"),
        ("CREATE §SCHEMA", "Expecting a schema name (at the end of the statement)"),
        ("DROP TABLE t §junk", "Unexpected 'junk'"),
    ],
)
def test_sqlglot_messages_are_made_plain(sql: str, message: str) -> None:
    sql, line, column = marked(sql)
    error = error_of(sql)
    assert error.message.startswith(f"{message} at line ")
    assert (error.line, error.column) == (line, column)


@pytest.mark.parametrize(
    ("sql", "message", "last"),
    [
        ("CREATE TABLE t (a INT,", "Expecting ) (at the end of the statement)", ","),
        ("ALTER TABLE t ADD ", "Unexpected end of statement", "ADD"),
    ],
)
def test_end_of_statement_is_reported_at_the_last_token(sql: str, message: str, last: str) -> None:
    error = error_of(sql)
    assert error.message.startswith(f"{message} at line ")
    assert (error.line, error.column, error.text) == (1, sql.rindex(last) + 1, last)


def test_error_in_a_later_statement_points_into_the_script() -> None:
    sql = "CREATE SCHEMA s;\nCREATE TABLE s.t (a INT PRIMARY KEY);\nDROP TABLE s.t oops;"
    error = error_of(sql)
    assert (error.line, error.column, error.text) == (3, len("DROP TABLE s.t ") + 1, "oops")
    assert "at line 3, column 16: 'oops'" in str(error)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT 1", "SELECT"),
        ("select * from t where a = 1", "SELECT"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "SELECT"),
        ("SELECT 1 UNION SELECT 2", "UNION"),
        ("INSERT INTO t VALUES (1)", "INSERT"),
        ("UPDATE t SET a = 1", "UPDATE"),
        ("DELETE FROM t", "DELETE"),
        ("TRUNCATE TABLE t", "TRUNCATE TABLE"),
        ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
        ("DROP VIEW v", "DROP VIEW"),
        ("ALTER VIEW v RENAME TO w", "ALTER VIEW"),
        ("CREATE FUNCTION f() RETURNS INT AS 'x'", "CREATE FUNCTION"),
        ("GRANT SELECT ON t TO u", "GRANT"),
        ("COMMIT", "COMMIT"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
        ("USE s", "USE"),
        ("SET x = 1", "SET"),
    ],
)
def test_unsupported_statements_are_named(sql: str, kind: str) -> None:
    error = error_of(f"CREATE SCHEMA ok;\n  {sql}")
    assert error.message.startswith(f"Unsupported statement {kind} ")
    assert (error.line, error.column) == (2, 3)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TABLE t AS SELECT §1", "CREATE TABLE does not support AS"),
        ("§CREATE OR REPLACE TABLE t (a INT)", "CREATE TABLE does not support OR REPLACE"),
        ("CREATE §TEMPORARY TABLE t (a INT)", "Unsupported TEMPORARY PROPERTY in CREATE TABLE"),
        ("CREATE TABLE t (a INT) §ENGINE=InnoDB", "Unsupported ENGINE PROPERTY"),
        ("CREATE TABLE t (a INT §CHECK (a > 0))", "Unsupported CHECK COLUMN CONSTRAINT"),
        ("CREATE TABLE t (a INT §UNIQUE)", "Unsupported UNIQUE COLUMN CONSTRAINT on column 'A'"),
        ("CREATE TABLE t (a INT, UNIQUE (§a))", "Unsupported UNIQUE COLUMN CONSTRAINT in"),
        ("CREATE TABLE t (a INT, CONSTRAINT §pk PRIMARY KEY (a))", "Unsupported CONSTRAINT"),
        ("CREATE TABLE t (a INT §PRIMARY KEY DESC)", "Unsupported PRIMARY KEY COLUMN"),
        ("CREATE TABLE §c.s.t (a INT)", "A table name does not support CATALOG"),
        ("CREATE TABLE §t", "CREATE TABLE needs a column list"),
        ("CREATE TABLE t (§a)", "Column 'A' needs a type"),
        ("CREATE TABLE t (§a INT NOT NULL NULL)", "Column 'A' is declared both NULL and NOT NULL"),
        ("CREATE TABLE t (a INT DEFAULT 1 §DEFAULT 2)", "Column 'A' has more than one DEFAULT"),
        ("CREATE TABLE t (§a INT NULL PRIMARY KEY)", "Primary key column 'A' of table 'T' cannot"),
        ("CREATE TABLE t (§a INT NULL, PRIMARY KEY (a))", "Primary key column 'A' of table 'T'"),
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT §PRIMARY KEY)", "more than one PRIMARY KEY"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a), §PRIMARY KEY (a))", "PRIMARY KEY twice"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (§a DESC))", "A HASH primary key takes no ASC/DESC"),
        ("CREATE TABLE t (a INT) ZONE z §ZONE y", "CREATE TABLE gives zone twice"),
        ("CREATE TABLE t (a INT) DEFAULT §ZONE z", "Unexpected DEFAULT before ZONE"),
        ("CREATE INDEX ON §t (a)", "CREATE INDEX needs an index name"),
        ("CREATE INDEX §i ON t", "CREATE INDEX needs a column list"),
        ("CREATE INDEX i ON t (a) WHERE §a > 1", "CREATE INDEX does not support WHERE"),
        ("§DROP TABLE t CASCADE", "DROP TABLE does not support CASCADE"),
        ("DROP INDEX i ON §t", "DROP INDEX does not support CLUSTER"),
        ("ALTER TABLE t ADD COLUMN c INT §PRIMARY KEY", "ALTER TABLE cannot add a PRIMARY KEY"),
        ("ALTER TABLE t ADD §PRIMARY KEY (a)", "Unsupported ALTER TABLE action ADD CONSTRAINT"),
        ("ALTER TABLE t DROP CONSTRAINT §x", "Unsupported ALTER TABLE action DROP CONSTRAINT"),
        ("ALTER TABLE t RENAME COLUMN s.a TO §c.b", "Expecting a column name"),
        ("§ALTER TABLE t ALTER COLUMN IF EXISTS c DROP NOT NULL", "does not support EXISTS"),
        ("ALTER TABLE t ALTER COLUMN c SET DEFAULT §1 + 1", "DEFAULT of column 'C' must be a"),
        ("CREATE ZONE z WITH (§BOGUS=1)", "Unknown zone option BOGUS"),
        ("CREATE ZONE z WITH (REPLICAS=§'3')", "Zone option REPLICAS takes an integer"),
        ("CREATE ZONE z WITH (REPLICAS=§1.5)", "Zone option REPLICAS takes an integer"),
        ("CREATE ZONE z WITH (DATA_NODES_FILTER=§1)", "DATA_NODES_FILTER takes a quoted string"),
        ("CREATE ZONE z WITH (STORAGE_PROFILES=§a)", "STORAGE_PROFILES takes a quoted string"),
        ("CREATE ZONE z WITH (PARTITIONS=1, §PARTITIONS=2)", "PARTITIONS is given twice"),
        ("CREATE ZONE z WITH (CONSISTENCY_MODE=§'EVENTUAL')", "got 'EVENTUAL'"),
    ],
)
def test_clauses_without_a_command_are_refused(sql: str, message: str) -> None:
    sql, line, column = marked(sql)
    error = error_of(sql)
    assert message in error.message
    assert (error.line, error.column) == (line, column)


def test_unknown_zone_option_lists_the_known_ones() -> None:
    error = error_of("ALTER ZONE z SET (replicas=2, Foo='x')")
    assert error.message.startswith("Unknown zone option FOO; expecting one of PARTITIONS, ")
    assert "CONSISTENCY_MODE" in error.message


def test_parse_errors_are_catalog_errors() -> None:
    with pytest.raises(CatalogError):
        parse_script("CREATE TABLE (")


def test_non_string_input_is_refused() -> None:
    with pytest.raises(SqlParseError, match="must be a string"):
        parse_script(b"CREATE SCHEMA s")  # type: ignore[arg-type]


HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (f"CREATE ZONE z WITH (REPLICAS={HUGE})", "REPLICAS takes an integer"),
        (f"CREATE ZONE z WITH (REPLICAS=-{HUGE})", "REPLICAS takes an integer"),
        (f"CREATE TABLE t (a VARCHAR({HUGE}))", "Type parameter of column 'A' must be an integer"),
        ("CREATE TABLE t (a VARCHAR(10 CHAR))", "Type parameter of column 'A' must be an integer"),
        ("CREATE TABLE t (a VARCHAR(1\u00b2))", "Type parameter of column 'A' must be an integer"),
        (f"CREATE TABLE t (a INT DEFAULT {HUGE})", "Number out of range for column 'A'"),
        (f"CREATE TABLE t (a DOUBLE DEFAULT -{HUGE})", "Number out of range for column 'A'"),
        ("CREATE TABLE t (a REAL DEFAULT 1e999)", "Number out of range for column 'A'"),
        (f"ALTER TABLE t ALTER COLUMN a SET DEFAULT {HUGE}", "Number out of range"),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT 1e999", "Number out of range"),
    ],
)
def test_numbers_beyond_any_range_are_parse_errors(sql: str, message: str) -> None:
    error = error_of(sql)
    assert message in error.message
    assert len(error.text) <= 60


def test_long_exact_decimals_stay_exact() -> None:
    digits = "1" + "0" * 400 + ".5"
    (command,) = parse_script(f"ALTER TABLE t ALTER COLUMN a SET DEFAULT {digits}")
    assert command == AlterColumn(
        table="T", column="A", default=ConstantDefault(decimal.Decimal(digits))
    )


def test_deeply_nested_input_is_a_parse_error() -> None:
    depth = 5000
    with pytest.raises(SqlParseError):
        parse_script("ALTER TABLE t ALTER COLUMN c SET DEFAULT " + "(" * depth + "1" + ")" * depth)

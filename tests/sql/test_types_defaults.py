"""Column types with their aliases and parameters, and DEFAULT literals of every type."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest

from almanac.commands import AlterColumn, ColumnDef, CreateTable
from almanac.errors import SqlParseError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import ConstantDefault, DefaultValue, FunctionDefault
from almanac.sql.parsing import parse_script

T = ColumnType


def column_of(sql_type: str, default: str | None = None) -> ColumnDef:
    suffix = "" if default is None else f" DEFAULT {default}"
    (command,) = parse_script(f"CREATE TABLE t (k INT PRIMARY KEY, c {sql_type}{suffix})")
    assert isinstance(command, CreateTable)
    return command.columns[1]


def default_of(sql_type: str, default: str) -> DefaultValue | None:
    return column_of(sql_type, default).default


@pytest.mark.parametrize(
    ("sql_type", "ctype", "precision", "scale", "length"),
    [
        ("BOOLEAN", T.BOOLEAN, None, None, None),
        ("TINYINT", T.INT8, None, None, None),
        ("INT8", T.INT8, None, None, None),
        ("SMALLINT", T.INT16, None, None, None),
        ("INT16", T.INT16, None, None, None),
        ("INT", T.INT32, None, None, None),
        ("INTEGER", T.INT32, None, None, None),
        ("INT32", T.INT32, None, None, None),
        ("BIGINT", T.INT64, None, None, None),
        ("INT64", T.INT64, None, None, None),
        ("REAL", T.FLOAT, None, None, None),
        ("FLOAT", T.FLOAT, None, None, None),
        ("DOUBLE", T.DOUBLE, None, None, None),
        ("DOUBLE PRECISION", T.DOUBLE, None, None, None),
        ("DECIMAL", T.DECIMAL, None, None, None),
        ("DECIMAL(10)", T.DECIMAL, 10, None, None),
        ("DECIMAL(10, 2)", T.DECIMAL, 10, 2, None),
        ("NUMERIC", T.DECIMAL, None, None, None),
        ("NUMERIC(5,1)", T.DECIMAL, 5, 1, None),
        ("VARCHAR", T.STRING, None, None, None),
        ("VARCHAR(10)", T.STRING, None, None, 10),
        ("STRING", T.STRING, None, None, None),
        ("STRING(7)", T.STRING, None, None, 7),
        ("VARBINARY", T.BYTES, None, None, None),
        ("VARBINARY(4)", T.BYTES, None, None, 4),
        ("BYTES", T.BYTES, None, None, None),
        ("BYTES(3)", T.BYTES, None, None, 3),
        ("BINARY VARYING", T.BYTES, None, None, None),
        ("BINARY VARYING(2)", T.BYTES, None, None, 2),
        ("DATE", T.DATE, None, None, None),
        ("TIME", T.TIME, None, None, None),
        ("TIME(3)", T.TIME, 3, None, None),
        ("TIMESTAMP", T.TIMESTAMP, None, None, None),
        ("TIMESTAMP(9)", T.TIMESTAMP, 9, None, None),
        ("TIMESTAMP WITH LOCAL TIME ZONE", T.TIMESTAMP_WITH_LOCAL_TIME_ZONE, None, None, None),
        ("TIMESTAMP WITH LOCAL TIME ZONE(3)", T.TIMESTAMP_WITH_LOCAL_TIME_ZONE, 3, None, None),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", T.TIMESTAMP_WITH_LOCAL_TIME_ZONE, 3, None, None),
        ("UUID", T.UUID, None, None, None),
        ("varchar(3)", T.STRING, None, None, 3),
        ("CHARACTER VARYING(3)", T.STRING, None, None, 3),
        ("DEC(4, 1)", T.DECIMAL, 4, 1, None),
        ("timestamp with local time zone", T.TIMESTAMP_WITH_LOCAL_TIME_ZONE, None, None, None),
    ],
)
def test_type_names(
    sql_type: str,
    ctype: ColumnType,
    precision: int | None,
    scale: int | None,
    length: int | None,
) -> None:
    assert column_of(sql_type) == ColumnDef(
        name="C", type=ctype, precision=precision, scale=scale, length=length
    )


@pytest.mark.parametrize(
    ("sql_type", "message"),
    [
        ("FOO", "Unknown type FOO of column 'C'"),
        ("CHAR(3)", "Unknown type CHAR of column 'C'"),
        ("JSON", "Unknown type JSON of column 'C'"),
        ("TIMESTAMP WITH TIME ZONE", "Unknown type TIMESTAMPTZ of column 'C'"),
        ("INT4", "Unknown type INT4 of column 'C'"),
        ("FLOAT8", "Unknown type FLOAT8 of column 'C'"),
        ("BYTE", "Unknown type BYTE of column 'C'"),
        ("LONG", "Unknown type LONG of column 'C'"),
        ("TEXT", "Unknown type TEXT of column 'C'"),
        ("BLOB", "Unknown type BLOB of column 'C'"),
        ("TIMESTAMPLTZ", "Unknown type TIMESTAMPLTZ of column 'C'"),
        ("INT(3)", "Type INT32 of column 'C' takes no parameters"),
        ("VARCHAR(1, 2)", "Type STRING of column 'C' takes at most 1 parameter"),
        ("DECIMAL(1, 2, 3)", "Type DECIMAL of column 'C' takes at most 2 parameter"),
    ],
)
def test_unknown_types_and_bad_parameters(sql_type: str, message: str) -> None:
    sql = f"CREATE TABLE t (k INT PRIMARY KEY, c {sql_type})"
    with pytest.raises(SqlParseError, match=message.replace("[", r"\[")) as info:
        parse_script(sql)
    assert info.value.column == sql.index(sql_type) + 1


def test_foreign_type_names_are_plain_names() -> None:
    (command,) = parse_script("CREATE TABLE t (text INT PRIMARY KEY, long BIGINT, byte TINYINT)")
    assert isinstance(command, CreateTable)
    assert [(c.name, c.type) for c in command.columns] == [
        ("TEXT", T.INT32),
        ("LONG", T.INT64),
        ("BYTE", T.INT8),
    ]


@pytest.mark.parametrize(
    ("sql_type", "literal", "value"),
    [
        ("INT", "5", 5),
        ("INT", "-5", -5),
        ("INT", "+5", 5),
        ("TINYINT", "-128", -128),
        ("BIGINT", "9223372036854775807", 2**63 - 1),
        ("REAL", "1.5", 1.5),
        ("FLOAT", "2", 2.0),
        ("DOUBLE", "-2.5e3", -2500.0),
        ("DOUBLE", ".5", 0.5),
        ("DECIMAL(5, 2)", "1.50", decimal.Decimal("1.50")),
        ("DECIMAL", "-7", decimal.Decimal(-7)),
        ("VARCHAR(10)", "'it''s'", "it's"),
        ("VARCHAR", "''", ""),
        ("BYTES", "X'0aFF'", b"\x0a\xff"),
        ("VARBINARY", "x''", b""),
        ("BOOLEAN", "TRUE", True),
        ("BOOLEAN", "false", False),
        ("DATE", "DATE '2020-01-31'", dt.date(2020, 1, 31)),
        ("DATE", "'2020-01-31'", dt.date(2020, 1, 31)),
        ("TIME(3)", "TIME '10:11:12.5'", dt.time(10, 11, 12, 500000)),
        ("TIME", "'23:59:59'", dt.time(23, 59, 59)),
        ("TIMESTAMP", "TIMESTAMP '2020-01-01 10:00:00'", dt.datetime(2020, 1, 1, 10)),
        ("TIMESTAMP", "'2020-01-01T10:00:00.25'", dt.datetime(2020, 1, 1, 10, 0, 0, 250000)),
        (
            "TIMESTAMP WITH LOCAL TIME ZONE",
            "TIMESTAMP '2020-01-01 10:00:00'",
            dt.datetime(2020, 1, 1, 10),
        ),
        (
            "TIMESTAMP WITH LOCAL TIME ZONE",
            "TIMESTAMP WITH LOCAL TIME ZONE '2020-01-01 10:00:00'",
            dt.datetime(2020, 1, 1, 10),
        ),
        (
            "UUID",
            "'c4a0327c-44be-416d-ae90-75c05079789f'",
            uuid.UUID("c4a0327c-44be-416d-ae90-75c05079789f"),
        ),
        (
            "UUID",
            "UUID 'c4a0327c-44be-416d-ae90-75c05079789f'",
            uuid.UUID("c4a0327c-44be-416d-ae90-75c05079789f"),
        ),
        ("BIGINT", "CAST(7 AS BIGINT)", 7),
    ],
)
def test_default_literals(sql_type: str, literal: str, value: object) -> None:
    default = default_of(sql_type, literal)
    assert default == ConstantDefault(value)
    assert isinstance(default, ConstantDefault)
    assert type(default.value) is type(value)
    assert str(default.value) == str(value)  # Decimal keeps its written scale


@pytest.mark.parametrize(
    "sql_type",
    [
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "REAL",
        "DOUBLE",
        "DECIMAL",
        "VARCHAR",
        "BYTES",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP WITH LOCAL TIME ZONE",
        "UUID",
    ],
)
def test_null_default_of_every_type(sql_type: str) -> None:
    assert default_of(sql_type, "NULL") == ConstantDefault(None)


@pytest.mark.parametrize("literal", ["RAND_UUID", "RAND_UUID()", "rand_uuid()", "Rand_Uuid"])
def test_function_default(literal: str) -> None:
    (command,) = parse_script(f"CREATE TABLE t (id UUID DEFAULT {literal} PRIMARY KEY)")
    assert isinstance(command, CreateTable)
    assert command.columns == (
        ColumnDef(name="ID", type=T.UUID, nullable=False, default=FunctionDefault("RAND_UUID")),
    )


@pytest.mark.parametrize(
    ("sql_type", "literal", "message"),
    [
        ("INT", "'abc'", "A string is not a valid INT32 default"),
        ("INT", "1.5", "1.5 is not a valid INT32 default of 'C'"),
        ("BOOLEAN", "1", "1 is not a valid BOOLEAN default"),
        ("VARCHAR", "5", "5 is not a valid STRING default"),
        ("BYTES", "'ab'", "A string is not a valid BYTES default"),
        ("INT", "TRUE", "Not a valid INT32 default"),
        ("INT", "X'00'", "Not a valid INT32 default"),
        ("BYTES", "X'abc'", "Odd number of hex digits"),
        ("DATE", "'2020-13-45'", "'2020-13-45' is not a valid DATE value"),
        ("DATE", "TIMESTAMP '2020-01-01 00:00:00'", "TIMESTAMP literal is not a valid default"),
        ("UUID", "'not-a-uuid'", "'not-a-uuid' is not a valid UUID value"),
        ("INT", "foo()", "Unknown default function FOO"),
        ("INT", '"RAND_UUID"', "DEFAULT of column 'C' must be a literal"),
        ("TIMESTAMP", "CURRENT_TIMESTAMP", "DEFAULT of column 'C' must be a literal"),
        ("INT", "1 + 2", "DEFAULT of column 'C' must be a literal"),
        ("INT", "(1 + 2)", "DEFAULT of column 'C' must be a literal"),
        ("INT", "-'1'", "Only a number can be negated in the DEFAULT of column 'C'"),
        ("INT", "-(TRUE)", "Only a number can be negated in the DEFAULT of column 'C'"),
    ],
)
def test_bad_defaults(sql_type: str, literal: str, message: str) -> None:
    with pytest.raises(SqlParseError, match=message):
        column_of(sql_type, literal)


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("5", 5),
        ("-5", -5),
        ("1.50", decimal.Decimal("1.50")),
        ("1e3", 1000.0),
        ("'x'", "x"),
        ("TRUE", True),
        ("X'00'", b"\x00"),
        ("DATE '2020-01-01'", dt.date(2020, 1, 1)),
        ("TIMESTAMP '2020-01-01 00:00:00'", dt.datetime(2020, 1, 1)),
        ("UUID '00000000-0000-0000-0000-000000000001'", uuid.UUID(int=1)),
        ("NULL", None),
    ],
)
def test_set_default_without_a_known_type_follows_the_literal(literal: str, value: object) -> None:
    (command,) = parse_script(f"ALTER TABLE t ALTER COLUMN c SET DEFAULT {literal}")
    assert isinstance(command, AlterColumn)
    assert command.default == ConstantDefault(value)
    assert isinstance(command.default, ConstantDefault)
    assert type(command.default.value) is type(value)


def test_set_default_of_a_function() -> None:
    (command,) = parse_script("ALTER TABLE t ALTER COLUMN id SET DEFAULT RAND_UUID")
    assert command == AlterColumn(table="T", column="ID", default=FunctionDefault("RAND_UUID"))

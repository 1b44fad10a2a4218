"""Bad input through ``cat.sql`` (and the same names and numbers through the
commands) is always a ``CatalogError`` raised before anything is committed:
no sqlglot exception, no ``SerializationError`` at commit time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlglot import parser as sqlglot_parser
from sqlglot.errors import TokenError

import almanac
from almanac import Catalog
from almanac.commands import (
    AddColumns,
    AlterZone,
    ColumnDef,
    Command,
    CreateSchema,
    CreateTable,
    CreateZone,
    RenameTable,
    SetTableProperties,
)
from almanac.errors import CatalogError, SqlParseError, ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import ConstantDefault
from almanac.sql.dialect import AlmanacParser
from almanac.sql.parsing import parse_script

BEYOND_64_BITS = 2**63
"""One more than the largest signed 64-bit integer."""


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        catalog.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT); CREATE ZONE z")
        yield catalog


def refused(cat: Catalog, sql: str, error: type[CatalogError], *needles: str) -> CatalogError:
    """``sql`` raises ``error`` whose message holds every needle, and changes nothing."""
    before = cat.latest_version
    with pytest.raises(error) as info:
        cat.sql(sql)
    for needle in needles:
        assert needle in info.value.message
    assert cat.latest_version == before
    return info.value


# -- quoted type names -----------------------------------------------------------


@pytest.mark.parametrize("quoted", ['"a""b"', '"a\'b"', '"INT PRIMARY KEY"', "\"x\".'y''z'"])
@pytest.mark.parametrize(
    "template",
    [
        "CREATE TABLE u (id INT PRIMARY KEY, w {})",
        "ALTER TABLE t ADD COLUMN w {}",
        "ALTER TABLE t ADD COLUMN (w {})",
        "ALTER TABLE t ALTER COLUMN v SET DATA TYPE {}",
        "ALTER TABLE t ALTER COLUMN v TYPE {}",
    ],
)
def test_a_quoted_type_name_is_an_unknown_type(cat: Catalog, template: str, quoted: str) -> None:
    sql = template.format(quoted)
    error = refused(cat, sql, SqlParseError, "Unknown type", "column 'W'" if "w" in sql else "'V'")
    assert isinstance(error, SqlParseError)
    assert error.column == sql.index(quoted) + 1


# -- integers beyond 64 bits -------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "needles"),
    [
        ("CREATE ZONE y WITH (REPLICAS={n})", ["Replicas of zone 'Y'", "[1, 2147483647]"]),
        ("ALTER ZONE z SET (REPLICAS={n})", ["Replicas of zone 'Z'", "[1, 2147483647]"]),
        ("CREATE ZONE y WITH (PARTITIONS={n})", ["Partitions of zone 'Y'", "[1, 65000]"]),
        ("CREATE ZONE y WITH (QUORUM_SIZE={n})", ["Quorum size of zone 'Y'", "[1, 1]"]),
        (
            "CREATE ZONE y WITH (DATA_NODES_AUTO_ADJUST_SCALE_UP={n})",
            ["Scale-up delay of zone 'Y'", "[0, 2147483647]"],
        ),
        (
            "ALTER ZONE z SET (DATA_NODES_AUTO_ADJUST_SCALE_DOWN={n})",
            ["Scale-down delay of zone 'Z'", "[0, 2147483647]"],
        ),
        (
            "ALTER TABLE t SET (MIN_STALE_ROWS={n})",
            ["Minimum stale rows of table 'PUBLIC.T'", "[0, 9223372036854775807]"],
        ),
        ("CREATE TABLE u (id INT PRIMARY KEY, w VARCHAR({n}))", ["Length of column 'W'", "["]),
        ("CREATE TABLE u (id INT PRIMARY KEY, w DECIMAL({n}, 2))", ["Precision of column 'W'"]),
        ("CREATE TABLE u (id INT PRIMARY KEY, w DECIMAL(10, {n}))", ["Scale of column 'W'"]),
        ("CREATE TABLE u (id INT PRIMARY KEY, w TIME({n}))", ["Precision of column 'W'"]),
        ("CREATE TABLE u (id BIGINT PRIMARY KEY DEFAULT {n})", ["INT64", "column 'ID'"]),
        ("CREATE TABLE u (id BIGINT PRIMARY KEY DEFAULT -{n}1)", ["INT64", "column 'ID'"]),
        ("ALTER TABLE t ADD COLUMN w BIGINT DEFAULT ({n})", ["INT64", "column 'W'"]),
    ],
)
def test_integers_beyond_64_bits_are_validation_errors(
    cat: Catalog, sql: str, needles: list[str]
) -> None:
    error = refused(cat, sql.format(n=BEYOND_64_BITS), ValidationError, str(BEYOND_64_BITS)[:5])
    # The option's own rule, or (caught as the command is built) the 64-bit
    # range of the parameter behind it.
    assert all(n in error.message for n in needles) or (
        "must be an int in the signed 64-bit range" in error.message
        and error.message.startswith("Parameter '")
    ), error.message


@pytest.mark.parametrize(
    "make",
    [
        lambda: CreateZone(name="Y", replicas=BEYOND_64_BITS),
        lambda: CreateZone(name="Y", scale_up_seconds=BEYOND_64_BITS),
        lambda: CreateZone(name="Y", scale_down_seconds=2**31),
        lambda: AlterZone(name="Z", replicas=2**31),
        lambda: AlterZone(name="Z", scale_down_seconds=BEYOND_64_BITS),
        lambda: SetTableProperties(name="T", min_stale_rows=BEYOND_64_BITS),
    ],
)
def test_commands_refuse_what_cannot_be_stored(cat: Catalog, make: Callable[[], Command]) -> None:
    # Refused when the command is built (beyond 64 bits) or validated (beyond
    # the option's own range); either way nothing is committed.
    before = cat.latest_version
    with pytest.raises(ValidationError, match=r"must be .*(\[\d+, \d+\]|64-bit range)"):
        cat.execute([make()])
    assert cat.latest_version == before


def test_the_largest_values_commands_accept_are_stored(cat: Catalog) -> None:
    cat.sql(
        "CREATE ZONE y WITH (REPLICAS=2147483647, DATA_NODES_AUTO_ADJUST_SCALE_UP=2147483647);"
        "ALTER TABLE t SET (MIN_STALE_ROWS=9223372036854775807);"
        "ALTER TABLE t ADD COLUMN w BIGINT DEFAULT -9223372036854775808"
    )
    version = cat.catalog()
    zone = version.zone("Y")
    table = version.table("T")
    assert zone is not None and zone.replicas == 2**31 - 1
    assert table is not None and table.properties.min_stale_rows == 2**63 - 1
    assert table.columns[-1].default == ConstantDefault(-(2**63))


# -- parenthesised defaults ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql_type", "literal", "value"),
    [
        ("INT", "(1)", 1),
        ("INT", "-(1)", -1),
        ("INT", "((2))", 2),
        ("INT", "(-3)", -3),
        ("INT", "-(-4)", 4),
        ("INT", "- -5", 5),
        ("DOUBLE", "-(1.5e0)", -1.5),
        ("VARCHAR", "('x')", "x"),
        ("VARCHAR", "(('it''s'))", "it's"),
        ("BOOLEAN", "(TRUE)", True),
        ("INT", "(NULL)", None),
        ("INT", "CAST((7) AS INT)", 7),
    ],
)
def test_parenthesised_constant_defaults(
    cat: Catalog, sql_type: str, literal: str, value: object
) -> None:
    cat.sql(f"ALTER TABLE t ADD COLUMN w {sql_type} DEFAULT {literal}")
    table = cat.catalog().table("T")
    assert table is not None
    assert table.columns[-1].default == ConstantDefault(value)


def test_a_parenthesised_function_default(cat: Catalog) -> None:
    cat.sql("CREATE TABLE u (id UUID PRIMARY KEY DEFAULT (RAND_UUID()))")
    table = cat.catalog().table("U")
    assert table is not None
    assert table.columns[0].default is not None


# -- characters in names ---------------------------------------------------------


CONTROL = ["\x00", "\x01", "\t", "\n", "\x1f", "\x7f", "\x80", "\x9f"]


@pytest.mark.parametrize("char", CONTROL)
@pytest.mark.parametrize(
    "template",
    [
        'CREATE SCHEMA "s{}"',
        'CREATE TABLE "t{}" (id INT PRIMARY KEY)',
        'CREATE TABLE u ("id{}" INT PRIMARY KEY)',
        'ALTER TABLE t ADD COLUMN "w{}" INT',
        'ALTER TABLE t RENAME TO "u{}"',
        'CREATE INDEX "i{}" ON t (v)',
        'CREATE ZONE "z{}"',
        'ALTER ZONE z RENAME TO "y{}"',
    ],
)
def test_control_characters_in_quoted_names_are_refused(
    cat: Catalog, template: str, char: str
) -> None:
    if char == "\x00":  # refused as the command is built, like any str with NUL
        refused(cat, template.format(char), ValidationError, "without NUL characters")
        return
    error = refused(cat, template.format(char), ValidationError, "must not contain control")
    assert f"U+{ord(char):04X}" in error.message
    assert error.context["rule"] == "name-characters"


@pytest.mark.parametrize(
    "make",
    [
        lambda: CreateSchema("S\x00"),
        lambda: CreateTable(
            name="U\x85",
            columns=(ColumnDef(name="ID", type=ColumnType.INT32),),
            primary_key=("ID",),
        ),
        lambda: AddColumns(table="T", columns=(ColumnDef(name="W\x1b", type=ColumnType.INT32),)),
        lambda: RenameTable("T", "U\x7f"),
        lambda: CreateZone(name="Y", storage_profiles=("a\nb",)),
    ],
)
def test_control_characters_in_command_names_are_refused(
    cat: Catalog, make: Callable[[], Command]
) -> None:
    # NUL is refused when the command is built; other control characters
    # when it is validated. Either way nothing is committed.
    before = cat.latest_version
    with pytest.raises(ValidationError, match=r"must not contain control characters|without NUL"):
        cat.execute([make()])
    assert cat.latest_version == before


@pytest.mark.parametrize(
    "sql",
    [
        'CREATE TABLE "\ud800" (id INT PRIMARY KEY)',
        'CREATE TABLE u ("a\udfff" INT PRIMARY KEY)',
        "ALTER TABLE t ADD COLUMN w VARCHAR DEFAULT 'x\ud83d'",
        "CREATE ZONE y WITH (DATA_NODES_FILTER='\udc00')",
        "CREATE ZONE y WITH (STORAGE_PROFILES='a,\ud800')",
        "ALTER ZONE z SET (DATA_NODES_FILTER='\udc00')",
    ],
)
def test_lone_surrogates_are_refused(cat: Catalog, sql: str) -> None:
    # The statement text itself is not valid Unicode: refused before parsing.
    refused(cat, sql, ValidationError, "Parameter 'text' of Catalog.sql must be valid Unicode")


@pytest.mark.parametrize(
    "name", ["..", ".", "_manifests", " x", "a.b", "\u00e9", "a\u200bb", "\U0001f600"]
)
def test_odd_but_printable_quoted_names_stay_legal(cat: Catalog, name: str) -> None:
    quoted = name.replace('"', '""')
    cat.sql(
        f'CREATE SCHEMA "{quoted}"; CREATE TABLE "{quoted}"."{quoted}" ("{quoted}" INT PRIMARY KEY)'
    )
    table = cat.catalog().table(name, name)
    assert table is not None and table.columns[0].name == name


# -- found by the fuzzer (tests/sql/sqlfuzz.py) ----------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        'CREATE TABLE u (id INT PRIMARY KEY, w CHAR(""))',
        'CREATE TABLE u (id INT PRIMARY KEY, w CHAR(""-129))',
        'CREATE TABLE u (id INT PRIMARY KEY, w DECIMAL(1, ""))',
        'ALTER TABLE t ALTER COLUMN v SET DATA TYPE VARBINARY("")',
    ],
)
def test_an_empty_quoted_type_parameter_is_a_parse_error(cat: Catalog, sql: str) -> None:
    error = refused(cat, sql, SqlParseError, "Expecting a type parameter")
    assert isinstance(error, SqlParseError) and error.text == '""'


@pytest.mark.parametrize("digits", [400, 1000, 1001, 5000])
def test_a_huge_integer_stale_rows_fraction_is_out_of_range(cat: Catalog, digits: int) -> None:
    refused(
        cat,
        f"ALTER TABLE t SET (STALE_ROWS_FRACTION={'9' * digits})",
        ValidationError,
        "stale_rows_fraction",
        "must be a finite number",
    )


@pytest.mark.parametrize(
    "failure",
    [TokenError("Error tokenizing 'x'"), ValueError("Cannot convert empty name into var.")],
)
def test_other_sqlglot_failures_are_parse_errors(
    monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    def fail(self: AlmanacParser) -> None:
        raise failure

    monkeypatch.setattr(AlmanacParser, "_parse_create_statement", fail)
    with pytest.raises(SqlParseError, match=r"Invalid statement .* at line 2, column 2"):
        parse_script("DROP TABLE t;\n CREATE TABLE u (id INT PRIMARY KEY)")


# -- floating-point defaults -------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE t ADD COLUMN f REAL DEFAULT 1e300",
        "ALTER TABLE t ADD COLUMN f FLOAT DEFAULT -1e39",
        "ALTER TABLE t ADD COLUMN f REAL DEFAULT 340282366920938463463374607431768211456",
        "ALTER TABLE t ADD COLUMN f REAL; ALTER TABLE t ALTER COLUMN f SET DEFAULT 1e39",
        "ALTER TABLE t ADD COLUMN f DOUBLE; ALTER TABLE t ALTER COLUMN f SET DEFAULT 1"
        + "0" * 400
        + ".5",
        "ALTER TABLE t ADD COLUMN f DOUBLE; ALTER TABLE t ALTER COLUMN f SET DEFAULT " + "9" * 400,
    ],
)
def test_a_default_that_overflows_its_float_type_is_refused(cat: Catalog, sql: str) -> None:
    refused(cat, sql, ValidationError, "is not a valid", "column 'F' of table 'PUBLIC.T'")


def test_the_largest_float_defaults_are_kept(cat: Catalog) -> None:
    cat.sql(
        "ALTER TABLE t ADD COLUMN "
        "(f REAL DEFAULT -3.4028235e38, d DOUBLE DEFAULT 1.7976931348623157e308)"
    )
    table = cat.catalog().table("T")
    assert table is not None
    assert [c.default for c in table.columns[-2:]] == [
        ConstantDefault(-3.4028235e38),
        ConstantDefault(1.7976931348623157e308),
    ]


def test_commands_refuse_an_integer_default_beyond_double(cat: Catalog) -> None:
    column = ColumnDef(name="F", type=ColumnType.DOUBLE, default=ConstantDefault(10**400))
    with pytest.raises(ValidationError, match="is not a valid DOUBLE value"):
        cat.execute([AddColumns(table="T", columns=(column,))])


@pytest.mark.parametrize("keyword", sorted(AlmanacParser.PROPERTY_PARSERS))
def test_default_before_any_property_is_a_parse_error(keyword: str) -> None:
    for sql in (
        f"CREATE DEFAULT {keyword}",
        f"CREATE TABLE u (id INT PRIMARY KEY) DEFAULT {keyword}",
    ):
        with pytest.raises(SqlParseError, match=f"Unexpected DEFAULT before {keyword}"):
            parse_script(sql)


OTHER_DIALECTS_FUNCTIONS = sorted(set(sqlglot_parser.Parser.FUNCTIONS) | {"VAR_MAP", "MAP"})


def test_function_calls_of_any_name_and_arity_are_parse_errors() -> None:
    """sqlglot builds other dialects' functions from their arguments, and some
    builders fail on a wrong count (``VAR_MAP(1)``: IndexError)."""
    for name in OTHER_DIALECTS_FUNCTIONS:
        for call in (f"{name}()", f"{name}(1)", f"{name}(1, 2, 3)"):
            with pytest.raises(SqlParseError):
                parse_script(f"CREATE TABLE t (id INT PRIMARY KEY DEFAULT {call})")


HUGE = 10**5000
"""More digits than Python prints (4300)."""


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (
            lambda: CreateZone(name="Y", replicas=HUGE),
            "Replicas of zone 'Y' must be in [1, 2147483647]",
        ),
        (
            lambda: CreateZone(name="Y", partitions=-HUGE),
            "Partitions of zone 'Y' must be in [1, 65000]",
        ),
        (lambda: CreateZone(name="Y", quorum_size=HUGE), "Quorum size of zone 'Y'"),
        (lambda: AlterZone(name="Z", scale_up_seconds=HUGE), "Scale-up delay of zone 'Z'"),
        (lambda: SetTableProperties(name="T", min_stale_rows=HUGE), "Minimum stale rows of table"),
        (
            lambda: AddColumns(
                table="T", columns=(ColumnDef(name="W", type=ColumnType.STRING, length=HUGE),)
            ),
            "Length of column 'W'",
        ),
        (
            lambda: AddColumns(
                table="T",
                columns=(
                    ColumnDef(name="W", type=ColumnType.INT64, default=ConstantDefault(HUGE)),
                ),
            ),
            "is not a valid INT64 value for column 'W'",
        ),
    ],
)
def test_integers_too_long_to_print_are_validation_errors(
    cat: Catalog, make: Callable[[], Command], needle: str
) -> None:
    # Refused by the option's own rule, or as the command is built (beyond
    # 64 bits), with the size of the integer rather than its digits.
    with pytest.raises(ValidationError) as info:
        cat.execute([make()])
    if "64-bit range" in info.value.message:
        assert "<an integer of" in info.value.message
        return
    assert needle in info.value.message
    assert "an integer of 16610 bits" in info.value.message

"""The catalog's limits: schema-sync settings in range before anything is
written, columns per table, and the length and visibility of names."""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import almanac
from almanac import (
    AddColumns,
    Catalog,
    CreateIndex,
    CreateSchema,
    CreateZone,
    RenameColumn,
    ValidationError,
)
from almanac.commands.base import MAX_COLUMNS, MAX_NAME_BYTES
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import LOGICAL_BITS
from almanac.model.entries import VersionedUpdate
from almanac.model.schema_sync import MAX_CLOCK_SKEW_MS, MAX_DELAY_MS, SchemaSync
from tests.core.support import apply, col, rejected, table

# -- schema sync settings ----------------------------------------------------------

OUT_OF_RANGE = [
    ("delay_ms", 10**12),
    ("delay_ms", 2**62),
    ("delay_ms", MAX_DELAY_MS + 1),
    ("delay_ms", -1),
    ("max_clock_skew_ms", MAX_CLOCK_SKEW_MS + 1),
    ("max_clock_skew_ms", 2**62),
]


@pytest.mark.parametrize(("setting", "value"), OUT_OF_RANGE)
def test_a_sync_setting_out_of_range_is_refused_before_anything_is_written(
    tmp_path: Path, setting: str, value: int
) -> None:
    """A huge delay used to commit the first DDL and then wait for ever (or
    overflow the clock): now connect refuses it, naming the range, and
    neither creates a catalog nor touches an existing one."""
    options: dict[str, Any] = {setting: value}
    fresh = tmp_path / "fresh"
    with pytest.raises(ValidationError) as info:
        almanac.connect(str(fresh), **options)
    message = str(info.value)
    assert f"Parameter '{setting}' of connect" in message
    assert "[0, 60000]" in message
    assert not fresh.exists()

    existing = tmp_path / "existing"
    with almanac.connect(str(existing), delay_ms=0) as cat:
        cat.execute([table()])
        version = cat.latest_version
    stored = {p: p.read_bytes() for p in existing.rglob("*") if p.is_file()}
    with pytest.raises(ValidationError, match=setting):
        almanac.connect(str(existing), **options)
    with pytest.raises(ValidationError, match=setting):
        almanac.connect("memory://", **options)
    assert {p: p.read_bytes() for p in existing.rglob("*") if p.is_file()} == stored
    with almanac.connect(str(existing), delay_ms=0) as cat:
        assert cat.latest_version == version


def test_the_largest_sync_settings_are_accepted() -> None:
    with almanac.connect(
        "memory://", delay_ms=MAX_DELAY_MS, max_clock_skew_ms=MAX_CLOCK_SKEW_MS
    ) as cat:
        assert (cat.delay_ms, cat.max_clock_skew_ms) == (MAX_DELAY_MS, MAX_CLOCK_SKEW_MS)
    with pytest.raises(ValidationError, match=r"'delay_ms' of SchemaSync must be an int in"):
        SchemaSync(delay_ms=MAX_DELAY_MS + 1, max_clock_skew_ms=0)


def test_a_stored_delay_past_the_bound_does_not_stall_later_versions(tmp_path: Path) -> None:
    """A release before the bound committed a version with the delay it was
    given (10**12 ms) and hung; the catalog it left, opened a while later,
    must still take DDL: the stored delay counts as ``MAX_DELAY_MS`` when
    the version's activation time is computed, on every node that reads it."""
    target = str(tmp_path / "c")
    with almanac.connect(target, delay_ms=0) as cat:
        cat.execute([table("A")])
        old = VersionedUpdate(
            version=cat.latest_version + 1,
            commit_time=cat.clock.now() - (2 * MAX_DELAY_MS << LOGICAL_BITS),
            delay_ms=10**12,
            entries=(),
        )
        assert cat.log.append(old) is not None
    with almanac.connect(target, delay_ms=0) as cat:
        assert cat.latest_version == old.version
        assert cat.catalog().activation_time <= cat.clock.now()  # active already
        cat.execute([table("B")], timeout=30.0)  # waited ~31 years before


# -- columns per table ---------------------------------------------------------------


def _table(cat: Catalog, name: str) -> almanac.Table:
    found = cat.catalog().table(name)
    assert found is not None
    return found


def _columns(count: int, prefix: str = "C") -> list[almanac.ColumnDef]:
    return [col(f"{prefix}{i}") for i in range(count)]


def test_a_table_of_more_than_the_column_limit_is_refused(cat: Catalog) -> None:
    """The key column plus ``MAX_COLUMNS`` others is one too many."""
    error = rejected(
        cat,
        table("WIDE", *_columns(MAX_COLUMNS)),
        ValidationError,
        "Table 'PUBLIC.WIDE'",
        f"{MAX_COLUMNS + 1} columns",
        f"at most {MAX_COLUMNS}",
    )
    assert error.context["rule"] == "max-columns"
    apply(cat, table("WIDE", *_columns(MAX_COLUMNS - 1)))
    assert len(_table(cat, "WIDE").columns) == MAX_COLUMNS


def test_adding_columns_past_the_limit_is_refused_and_changes_nothing(cat: Catalog) -> None:
    apply(cat, table("T", *_columns(MAX_COLUMNS - 3)))
    rejected(
        cat,
        AddColumns(table="T", columns=tuple(_columns(3, "N"))),
        ValidationError,
        "Table 'PUBLIC.T'",
        f"{MAX_COLUMNS + 1} columns",
        f"at most {MAX_COLUMNS}",
    )
    with pytest.raises(ValidationError, match=f"at most {MAX_COLUMNS}"):
        cat.sql("ALTER TABLE T ADD COLUMN (N0 INT, N1 INT, N2 INT)")
    assert len(_table(cat, "T").columns) == MAX_COLUMNS - 2
    cat.sql("ALTER TABLE T ADD COLUMN (N0 INT, N1 INT)")
    assert len(_table(cat, "T").columns) == MAX_COLUMNS
    # Columns that already exist and are skipped do not count.
    noop_add = AddColumns(table="T", columns=(col("N0"),), if_column_not_exists=True)
    assert not cat.execute([noop_add]).created


def test_one_alter_of_many_column_actions_becomes_one_command() -> None:
    """Neighbouring ADD (and DROP) actions still merge, in order, now in one pass."""
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID INT PRIMARY KEY, A INT, B INT)")
        cat.sql("ALTER TABLE T ADD COLUMN X INT, ADD COLUMN Y INT, DROP COLUMN A, DROP COLUMN B")
        assert [c.name for c in _table(cat, "T").columns] == ["ID", "X", "Y"]
        assert cat.latest_version == 3


# -- names ---------------------------------------------------------------------------------

INVISIBLE = [
    *("\u200b", "\ufeff", "\u2060", "\u00ad", "\u200e", " ", "\u3000", "\u00a0"),
    *("\u3164", "\uffa0", "\ufe0f", "\u034f", "\u17b4", "\U000e0101"),  # letters and marks
]
IGNORABLE = set("\u3164\uffa0\ufe0f\u034f\u17b4\U000e0101")
"""Default-ignorable characters the alphabet uses that are not format characters."""


def _name_allowed(name: str) -> bool:
    """The name rule, written out on its own."""
    if not name.strip():
        return False
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF for c in name):
        return False
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return False
    return any(
        not c.isspace() and unicodedata.category(c) != "Cf" and c not in IGNORABLE for c in name
    )


NAMES = st.one_of(
    st.text(max_size=100),
    st.text(alphabet=st.sampled_from([*INVISIBLE, "a", "é", "\u4e2d", "😀"]), max_size=300),
    st.integers(min_value=MAX_NAME_BYTES - 4, max_value=MAX_NAME_BYTES + 4).map(lambda n: "x" * n),
)


@functools.cache
def _fresh() -> CatalogVersion:
    """A catalog's first version (the PUBLIC schema), to validate against."""
    with almanac.connect("memory://") as cat:
        return cat.catalog()


@settings(max_examples=300, deadline=None)
@given(name=NAMES)
def test_the_name_rule(name: str) -> None:
    """Every object name: at most ``MAX_NAME_BYTES`` UTF-8 bytes, no control
    characters, and something left once whitespace and format characters
    (category Cf) are removed."""
    if _name_allowed(name):
        assert table(name).validate(_fresh())
        return
    with pytest.raises(ValidationError) as info:
        table(name).validate(_fresh())
    # NUL characters and lone surrogates are refused as the command is built.
    assert str(info.value).startswith(("Table name", "Parameter 'name' of CreateTable"))


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\ufeff", "\u200b\ufeff", " \u2060 ", "\u00ad", "\u3164", "\ufe0f", "\u034f\uffa0"],
)
def test_an_invisible_name_is_refused_for_every_object(cat: Catalog, invisible: str) -> None:
    apply(cat, table("T", col("C")))
    commands: list[tuple[almanac.Command, str]] = [
        (CreateSchema(invisible), "Schema name"),
        (table(invisible), "Table name"),
        (table("U", col(invisible)), "Column name"),
        (AddColumns(table="T", columns=(col(invisible),)), "Column name"),
        (RenameColumn(table="T", column="C", new_name=invisible), "Column name"),
        (CreateIndex(name=invisible, table="T", columns=("C",)), "Index name"),
        (CreateZone(name=invisible), "Zone name"),
    ]
    for command, what in commands:
        error = rejected(cat, command, ValidationError, what, "no visible character")
        assert error.context["rule"] == "name-visible"


def test_a_name_over_the_length_limit_is_refused_through_sql_and_the_api(cat: Catalog) -> None:
    longest = "\u00e9" * (MAX_NAME_BYTES // 2) + "x"  # 2 bytes each: 255 bytes
    too_long = "\u00e9" * (MAX_NAME_BYTES // 2 + 1)  # 256 bytes, 128 characters
    assert len(longest.encode()) == MAX_NAME_BYTES
    apply(cat, table(longest, col(longest)))
    cat.sql(f'CREATE SCHEMA "{"S" * MAX_NAME_BYTES}"')
    for command, what in [
        (CreateSchema(too_long), "Schema name"),
        (table(too_long), "Table name"),
        (AddColumns(table=longest, columns=(col(too_long),)), "Column name"),
        (CreateIndex(name=too_long, table=longest, columns=(longest,)), "Index name"),
        (CreateZone(name=too_long), "Zone name"),
    ]:
        error = rejected(cat, command, ValidationError, what, f"{MAX_NAME_BYTES + 1} UTF-8 bytes")
        assert error.context["rule"] == "name-length"
    huge = "T" * 100_000
    version = cat.latest_version
    with pytest.raises(ValidationError, match="100000 UTF-8 bytes") as info:
        cat.sql(f'CREATE TABLE "{huge}" (ID INT PRIMARY KEY)')
    assert len(str(info.value)) < 300  # the message shows the start of the name
    with pytest.raises(ValidationError, match="no visible character"):
        cat.sql('CREATE TABLE "\u200b\ufeff" (ID INT PRIMARY KEY)')
    assert cat.latest_version == version

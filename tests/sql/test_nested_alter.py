"""SQL's nested evolution and column docs: ``ALTER TABLE`` on a dotted path
(``s.x``) adds, drops, renames, widens and makes optional a nested field,
and ``COMMENT`` sets a column's or field's doc, all through the same
``EvolveColumn`` rules and id counter an Iceberg client's update uses;
``DESCRIBE`` and ``SYSTEM.COLUMNS`` show the docs."""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from typing import Any

import pytest

import almanac
from almanac import AlterField, Catalog
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    NotFoundError,
    SqlParseError,
    ValidationError,
)
from almanac.model.datatypes import ColumnType
from almanac.model.descriptor_sql import type_sql
from almanac.model.descriptors import Column, ConstantDefault
from almanac.model.nested import walk


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        catalog.sql(
            "CREATE TABLE t (k BIGINT PRIMARY KEY, s STRUCT<a: INT NOT NULL, b: FLOAT>, "
            "l ARRAY<STRUCT<x: INT>>, m MAP<STRING, INT>)"
        )
        yield catalog


def _shape(cat: Catalog) -> list[tuple[str, int, str, bool, str | None]]:
    table = cat.catalog().table("T")
    assert table is not None
    return [(p, c.id, type_sql(c), c.nullable, c.doc) for p, c in walk(table.columns)]


def test_nested_paths_evolve_fields_keeping_ids(cat: Catalog) -> None:
    before = {p: i for p, i, *_ in _shape(cat)}
    cat.sql("ALTER TABLE t ADD COLUMN s.c STRING COMMENT 'new'")
    cat.sql("ALTER TABLE t RENAME COLUMN s.a TO a2")
    cat.sql("ALTER TABLE t ALTER COLUMN s.a2 DROP NOT NULL")
    cat.sql("ALTER TABLE t ALTER COLUMN s.b TYPE DOUBLE")
    cat.sql("ALTER TABLE t ALTER COLUMN l.element.x SET DATA TYPE BIGINT")
    cat.sql("ALTER TABLE t ALTER COLUMN m.value TYPE BIGINT")
    cat.sql("ALTER TABLE t ADD COLUMN l.element.y STRUCT<p: INT, q: ARRAY<INT>>")
    cat.sql("ALTER TABLE t DROP COLUMN s.b")
    table = cat.catalog().table("T")
    assert table is not None
    n = max(before.values()) + 1
    assert _shape(cat) == [
        ("K", 0, "INT64", False, None),
        ("S", before["S"], 'STRUCT<"A2": INT32, "C": STRING(65536) COMMENT \'new\'>', True, None),
        ("S.A2", before["S.A"], "INT32", True, None),
        ("S.C", n, "STRING(65536)", True, "new"),
        ("L", before["L"], _shape(cat)[4][2], True, None),
        ("L.element", before["L.element"], _shape(cat)[5][2], True, None),
        ("L.element.X", before["L.element.X"], "INT64", True, None),
        ("L.element.Y", n + 1, 'STRUCT<"P": INT32, "Q": ARRAY<INT32>>', True, None),
        ("L.element.Y.P", n + 2, "INT32", True, None),
        ("L.element.Y.Q", n + 3, "ARRAY<INT32>", True, None),
        ("L.element.Y.Q.element", n + 4, "INT32", True, None),
        ("M", before["M"], "MAP<STRING(65536), INT64>", True, None),
        ("M.key", before["M.key"], "STRING(65536)", False, None),
        ("M.value", before["M.value"], "INT64", True, None),
    ]
    assert table.next_column_id == n + 5


def test_comments_on_columns_and_fields_show_in_describe_and_system_columns(
    cat: Catalog,
) -> None:
    cat.sql("CREATE TABLE d (k INT PRIMARY KEY COMMENT 'the key', v STRING)")
    cat.sql("ALTER TABLE d ALTER COLUMN v COMMENT 'it''s a value'")
    cat.sql("ALTER TABLE t ALTER COLUMN s.b COMMENT 'inner'")
    cat.sql("ALTER TABLE t ALTER COLUMN k COMMENT 'key'")
    described = cat.sql("DESCRIBE TABLE d")
    assert "COMMENT" in described.columns
    at = described.columns.index("COMMENT")
    assert [r[at] for r in described.rows] == ["the key", "it's a value"]
    rows = cat.sql("SELECT * FROM SYSTEM.COLUMNS")
    name, comment = rows.columns.index("NAME"), rows.columns.index("COMMENT")
    table = rows.columns.index("TABLE")
    docs = {(r[table], r[name]): r[comment] for r in rows.rows}
    assert docs[("D", "K")] == "the key"
    assert docs[("D", "V")] == "it's a value"
    assert docs[("T", "K")] == "key"
    assert docs[("T", "S")] is None
    assert _shape(cat)[3][4] == "inner"
    cat.sql("ALTER TABLE d ALTER COLUMN v COMMENT ''")
    d = cat.catalog().table("D")
    assert d is not None and d.columns[1].doc is None


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("ALTER TABLE t ADD COLUMN s.A INT", AlreadyExistsError, r"Column 'S\.A' already exists"),
        (
            "ALTER TABLE t ADD COLUMN s.z INT NOT NULL",
            ValidationError,
            r"Field 'S\.Z' of table "
            r"'PUBLIC\.T' is added as required without a default",
        ),
        ("ALTER TABLE t ADD COLUMN m.z INT", ValidationError, r"'M' is MAP, and only a STRUCT"),
        (
            "ALTER TABLE t DROP COLUMN s.nope",
            NotFoundError,
            r"Field 'S\.NOPE' does not exist in "
            r"table 'PUBLIC\.T'",
        ),
        ("ALTER TABLE t DROP COLUMN nope.x", NotFoundError, r"Column 'NOPE' does not exist"),
        (
            "ALTER TABLE t DROP COLUMN m.value",
            ValidationError,
            r"Field 'M' of table 'PUBLIC\.T' "
            r"is a MAP; it has fields 'key' and 'value'",
        ),
        (
            "ALTER TABLE t ALTER COLUMN s.a TYPE SMALLINT",
            ValidationError,
            r"Field 'S\.A' of "
            r"table 'PUBLIC\.T' cannot change from INT32 to INT16",
        ),
        (
            "ALTER TABLE t ALTER COLUMN s.b SET NOT NULL",
            ValidationError,
            r"Field 'S\.B' of table "
            r"'PUBLIC\.T' cannot become required",
        ),
        ("ALTER TABLE t RENAME COLUMN s.a TO b", AlreadyExistsError, r"Column 'S\.B' already"),
        (
            "ALTER TABLE t RENAME COLUMN l.element TO e",
            ValidationError,
            r"Field 'L' of table "
            r"'PUBLIC\.T' is an ARRAY; it has one field 'element'",
        ),
    ],
)
def test_nested_changes_iceberg_forbids_are_refused_naming_the_field(
    cat: Catalog, sql: str, error: type[CatalogError], message: str
) -> None:
    before = cat.latest_version
    with pytest.raises(error, match=message):
        cat.sql(sql)
    assert cat.latest_version == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"path": ("S", "A"), "drop": True, "comment": "x"}, r"give exactly one change"),
        ({"path": ("S", "A")}, r"give exactly one change"),
        ({"path": ("S",), "drop": True}, r"Field 'S' of table 'PUBLIC\.T' is no nested field"),
        ({"path": ("S", "A"), "new_name": ""}, r"Field name"),
        ({"path": ("S", "A"), "type": ColumnType.STRUCT}, r"cannot change from INT32 to STRUCT"),
    ],
)
def test_alter_field_refuses_what_it_cannot_do_naming_the_field(
    cat: Catalog, change: dict[str, Any], message: str
) -> None:
    before = cat.latest_version
    with pytest.raises(ValidationError, match=message):
        cat.execute([AlterField(table="T", **change)])
    assert cat.latest_version == before


def _paths(cat: Catalog) -> dict[str, Column]:
    table = cat.catalog().table("T")
    assert table is not None
    return dict(walk(table.columns))


def test_quoted_paths_and_a_drop_of_a_column_and_a_field_together(cat: Catalog) -> None:
    cat.sql('ALTER TABLE t ADD COLUMN "S"."x y" DECIMAL(9, 2) NOT NULL DEFAULT 1.5')
    cat.sql('ALTER TABLE t ALTER COLUMN s."x y" TYPE DECIMAL(12, 2)')
    field = _paths(cat)["S.x y"]
    assert (field.precision, field.scale, field.nullable) == (12, 2, False)
    assert field.initial_default == ConstantDefault(decimal.Decimal("1.5"))
    cat.sql('ALTER TABLE t DROP COLUMN (m, s."x y")')
    assert list(_paths(cat))[:4] == ["K", "S", "S.A", "S.B"]
    assert "M" not in _paths(cat)
    with pytest.raises(SqlParseError, match=r"Field 'S\.A' takes TYPE, DROP NOT NULL or COMMENT"):
        cat.sql("ALTER TABLE t ALTER COLUMN s.a DROP DEFAULT")
    with pytest.raises(SqlParseError, match=r"ALTER COLUMN does not support DEFAULT"):
        cat.sql("ALTER TABLE t ALTER COLUMN s.a SET DEFAULT 1")

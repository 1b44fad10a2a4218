"""Iceberg's types in SQL DDL: the new primitive names, STRUCT<…>, ARRAY<…>
and MAP<…> with a field id for every nested field, and COMMENT on any field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import almanac
from almanac import Catalog, EvolveColumn
from almanac.errors import SqlParseError, ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptor_sql import type_sql
from almanac.model.nested import walk

T = ColumnType


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        yield catalog


@pytest.mark.parametrize(
    ("sql_type", "ctype", "length"),
    [
        ("TIMESTAMPTZ", T.TIMESTAMP_WITH_LOCAL_TIME_ZONE, None),
        ("TIMESTAMP_NS", T.TIMESTAMP_NS, None),
        ("timestamptz_ns", T.TIMESTAMPTZ_NS, None),
        ("FIXED(16)", T.FIXED, 16),
        ("BINARY", T.BYTES, 65536),
        ("iceberg_uuid", T.ICEBERG_UUID, None),
    ],
)
def test_iceberg_primitive_names(
    cat: Catalog, sql_type: str, ctype: ColumnType, length: int | None
) -> None:
    cat.sql(f"CREATE TABLE t (k INT PRIMARY KEY, c {sql_type})")
    table = cat.catalog().table("T")
    assert table is not None
    column = table.columns[1]
    assert (column.type, column.length) == (ctype, length)


def test_nested_columns_get_ids_from_the_table_counter_never_reused(cat: Catalog) -> None:
    cat.sql(
        """CREATE TABLE t (
            k BIGINT PRIMARY KEY COMMENT 'the key',
            s STRUCT<a: INT NOT NULL COMMENT 'inner', b: ARRAY<MAP<STRING, STRUCT<z: DOUBLE>>>>
                COMMENT 'outer',
            l INT[],
            m MAP<STRING, BIGINT>
        )"""
    )
    table = cat.catalog().table("T")
    assert table is not None
    shape = [(p, c.id, c.type, c.nullable, c.doc) for p, c in walk(table.columns)]
    assert shape == [
        ("K", 0, T.INT64, False, "the key"),
        ("S", 1, T.STRUCT, True, "outer"),
        ("S.A", 4, T.INT32, False, "inner"),
        ("S.B", 5, T.LIST, True, None),
        ("S.B.element", 6, T.MAP, True, None),
        ("S.B.element.key", 7, T.STRING, False, None),
        ("S.B.element.value", 8, T.STRUCT, True, None),
        ("S.B.element.value.Z", 9, T.DOUBLE, True, None),
        ("L", 2, T.LIST, True, None),
        ("L.element", 10, T.INT32, True, None),
        ("M", 3, T.MAP, True, None),
        ("M.key", 11, T.STRING, False, None),
        ("M.value", 12, T.INT64, True, None),
    ]
    assert table.next_column_id == 13
    cat.sql("ALTER TABLE t DROP COLUMN s")
    cat.sql("ALTER TABLE t ADD COLUMN s2 STRUCT<x: FIXED(4)>")
    table = cat.catalog().table("T")
    assert table is not None
    assert [(p, c.id) for p, c in walk(table.columns)][-2:] == [("S2", 13), ("S2.X", 14)]
    assert table.next_column_id == 15


def test_struct_fields_take_iceberg_type_names_sqlglot_lacks(cat: Catalog) -> None:
    cat.sql(
        "CREATE TABLE t (k INT PRIMARY KEY, s STRUCT<a: TIMESTAMP_NS NOT NULL, "
        "\"b\": ICEBERG_UUID COMMENT 'id', c TIMESTAMPTZ_NS>)"
    )
    table = cat.catalog().table("T")
    assert table is not None
    fields = [(f.name, f.type, f.nullable, f.doc) for f in table.columns[1].fields]
    assert fields == [
        ("A", T.TIMESTAMP_NS, False, None),
        ("b", T.ICEBERG_UUID, True, "id"),
        ("C", T.TIMESTAMPTZ_NS, True, None),
    ]


def test_describe_spells_nested_types_that_read_back(cat: Catalog) -> None:
    ddl = (
        """STRUCT<"a b": INT32 NOT NULL COMMENT 'it''s', """
        """"c": ARRAY<MAP<STRING(65536), FIXED(3) NOT NULL> NOT NULL>>"""
    )
    cat.sql(f"CREATE TABLE t (k INT PRIMARY KEY, s {ddl})")
    table = cat.catalog().table("T")
    assert table is not None
    spelled = type_sql(table.columns[1])
    assert spelled == ddl
    cat.sql(f"CREATE TABLE u (k INT PRIMARY KEY, s {spelled})")
    again = cat.catalog().table("U")
    assert again is not None and type_sql(again.columns[1]) == spelled
    assert table.columns[1].fields[0].doc == "it's"
    element = table.columns[1].fields[1].fields[0]
    assert (element.nullable, element.fields[1].nullable) == (False, False)


@pytest.mark.parametrize(
    ("column", "error", "message"),
    [
        (
            "s STRUCT<a: INT, a: INT>",
            ValidationError,
            "Field 'S.A' of table 'PUBLIC.T' is given more",
        ),
        ("f FIXED", ValidationError, "FIXED of column 'F' of table 'PUBLIC.T' needs its length"),
        ("s STRUCT<a: INT DEFAULT 1>", SqlParseError, "takes no PRIMARY KEY or DEFAULT"),
        ("m MAP<INT>", SqlParseError, "Type MAP of column 'M' takes 2 type"),
        ("s STRUCT<a: INT> DEFAULT 1", SqlParseError, "not a valid STRUCT default of .S."),
        ("s STRUCT<a: FIXED>", ValidationError, "FIXED of column 'A' of table 'PUBLIC.T' needs"),
    ],
)
def test_malformed_nested_types_are_refused_naming_the_field(
    cat: Catalog, column: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        cat.sql(f"CREATE TABLE t (k INT PRIMARY KEY, {column})")
    assert cat.catalog().table("T") is None


def test_sql_does_not_retype_a_column_to_a_nested_type(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (k INT PRIMARY KEY, s STRUCT<a: INT>)")
    with pytest.raises(SqlParseError, match="EvolveColumn"):
        cat.sql("ALTER TABLE t ALTER COLUMN s SET DATA TYPE STRUCT<a: BIGINT>")


def test_diff_shows_a_change_inside_a_nested_column_and_a_doc(cat: Catalog) -> None:
    cat.sql("CREATE TABLE t (k INT PRIMARY KEY, s STRUCT<a: INT>)")
    before = cat.latest_version
    table = cat.catalog().table("T")
    assert table is not None
    s = table.columns[1]
    widened = replace(s, doc="d", fields=(replace(s.fields[0], type=T.INT64),))
    cat.execute([EvolveColumn(table="T", column="S", new=widened)])
    (change,) = [c for c in cat.diff(before, cat.latest_version).changed if c.kind == "column"]
    fields = {f.field: (f.before, f.after) for f in change.fields}
    assert fields == {
        "type": ('STRUCT<"A": INT32>', 'STRUCT<"A": INT64>'),
        "doc": (None, "d"),
    }


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "CREATE TABLE u (k STRUCT<a: INT> NOT NULL PRIMARY KEY)",
            r"Field 'K' of table 'PUBLIC.U' is STRUCT; a primary key holds only",
        ),
        (
            "CREATE INDEX i ON t (s)",
            r"Field 'S' of table 'PUBLIC.T' is STRUCT; index 'PUBLIC.I' holds only",
        ),
    ],
)
def test_a_nested_column_is_no_key(cat: Catalog, sql: str, message: str) -> None:
    cat.sql("CREATE TABLE t (k INT PRIMARY KEY, s STRUCT<a: INT>)")
    before = cat.latest_version
    with pytest.raises(ValidationError, match=message):
        cat.sql(sql)
    assert cat.latest_version == before

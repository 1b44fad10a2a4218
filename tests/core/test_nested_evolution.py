"""Nested schema evolution by Iceberg's rules (``EvolveColumn``): what it
allows keeps every field id and takes new ones from the table's counter;
what it refuses names the table and the field path and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import almanac
from almanac import AlterColumn, Catalog, EvolveColumn
from almanac.errors import ValidationError
from almanac.model.datatypes import ColumnType
from almanac.model.descriptor_sql import type_sql
from almanac.model.descriptors import Column, ConstantDefault
from almanac.model.nested import walk


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        catalog.sql(
            "CREATE TABLE t (k INT PRIMARY KEY, "
            "s STRUCT<a: INT NOT NULL, b: FLOAT, c: DECIMAL(5, 2), d: STRING>, l ARRAY<INT>)"
        )
        yield catalog


def _column(cat: Catalog, name: str) -> Column:
    table = cat.catalog().table("T")
    assert table is not None
    column = table.column(name)
    assert column is not None
    return column


def _evolve(cat: Catalog, new: Column) -> None:
    cat.execute([EvolveColumn(table="T", column=new.name, new=new)])


def test_allowed_changes_keep_ids_and_new_fields_take_fresh_ones(cat: Catalog) -> None:
    s = _column(cat, "S")
    a, b, c, d = s.fields
    # Drop D; then add E: E gets a new id, never D's.
    _evolve(cat, replace(s, fields=(a, b, c)))
    e = Column(id=-1, name="E", type=ColumnType.INT64, doc="new")
    widened = (
        replace(c, precision=9),
        replace(a, name="A2", nullable=True, type=ColumnType.INT64),
        replace(b, type=ColumnType.DOUBLE),
        e,
    )
    _evolve(cat, replace(s, doc="the struct", fields=widened))
    table = cat.catalog().table("T")
    assert table is not None
    shape = [
        (p, col.id, type_sql(col), col.nullable, col.doc) for p, col in walk((table.columns[1],))
    ]
    next_id = 7  # K, S, L, S.A, S.B, S.C, S.D were 0..6, L.element 7
    assert shape[1:] == [
        ("S.C", c.id, "DECIMAL(9, 2)", True, None),
        ("S.A2", a.id, "INT64", True, None),
        ("S.B", b.id, "DOUBLE", True, None),
        ("S.E", next_id + 1, "INT64", True, "new"),
    ]
    assert shape[0][4] == "the struct"
    assert d.id not in [i for _, i, *_ in shape]
    assert table.next_column_id == next_id + 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: replace(
                s, fields=(replace(s.fields[1], type=ColumnType.INT32), *s.fields[2:])
            ),
            r"Field 'S\.B' of table 'PUBLIC\.T' cannot change from FLOAT to INT32",
        ),
        (
            lambda s: replace(s, fields=(*s.fields[:2], replace(s.fields[2], scale=3))),
            r"Field 'S\.C' of table 'PUBLIC\.T' cannot change from DECIMAL\(5, 2\)",
        ),
        (
            lambda s: replace(s, fields=(*s.fields[:1], replace(s.fields[1], nullable=False))),
            r"Field 'S\.B' of table 'PUBLIC\.T' cannot become required",
        ),
        (
            lambda s: replace(
                s,
                fields=(*s.fields, Column(id=-1, name="N", type=ColumnType.INT32, nullable=False)),
            ),
            r"Field 'S\.N' of table 'PUBLIC\.T' is added as required without a default",
        ),
        (
            lambda s: replace(
                s, fields=(*s.fields, Column(id=-1, name="A", type=ColumnType.INT32))
            ),
            r"Field 'S\.A' of table 'PUBLIC\.T' is given more than once",
        ),
        (
            lambda s: replace(s, type=ColumnType.LIST),
            r"Field 'S' of table 'PUBLIC\.T' is an ARRAY",
        ),
        (
            lambda s: replace(s, name="S2"),
            r"Column 'S' \(id 1\) of table 'PUBLIC\.T' cannot become 'S2'",
        ),
    ],
)
def test_changes_iceberg_forbids_are_refused_naming_the_field(
    cat: Catalog, change: object, message: str
) -> None:
    s = _column(cat, "S")
    before = cat.latest_version
    assert callable(change)
    with pytest.raises(ValidationError, match=message):
        cat.execute([EvolveColumn(table="T", column="S", new=change(s))])
    assert cat.latest_version == before


def test_a_list_element_cannot_be_replaced_only_widened(cat: Catalog) -> None:
    lst = _column(cat, "L")
    (element,) = lst.fields
    with pytest.raises(ValidationError, match=r"Field 'L\.element' of table 'PUBLIC\.T'"):
        _evolve(cat, replace(lst, fields=(replace(element, id=-1),)))
    _evolve(cat, replace(lst, fields=(replace(element, type=ColumnType.INT64),)))
    assert type_sql(_column(cat, "L")) == "ARRAY<INT64>"


def test_an_added_required_field_with_an_initial_default_is_allowed(cat: Catalog) -> None:
    s = _column(cat, "S")
    added = Column(
        id=-1,
        name="R",
        type=ColumnType.INT32,
        nullable=False,
        default=ConstantDefault(5),
        initial_default=ConstantDefault(5),
    )
    _evolve(cat, replace(s, fields=(*s.fields, added)))
    assert _column(cat, "S").fields[-1].initial_default == ConstantDefault(5)


def test_a_nested_default_must_fit_its_field(cat: Catalog) -> None:
    s = _column(cat, "S")
    added = Column(id=-1, name="R", type=ColumnType.INT32, initial_default=ConstantDefault("x"))
    with pytest.raises(
        ValidationError, match=r"Default 'x' is not a valid INT32 value for column 'S\.R'"
    ):
        _evolve(cat, replace(s, fields=(*s.fields, added)))


def test_a_field_cannot_move_to_another_struct(cat: Catalog) -> None:
    cat.sql("CREATE TABLE u (k INT PRIMARY KEY, s STRUCT<a: INT, t: STRUCT<b: INT>>)")
    table = cat.catalog().table("U")
    assert table is not None
    s = table.columns[1]
    a, t = s.fields
    moved = replace(s, fields=(replace(t, fields=(*t.fields, a)),))
    with pytest.raises(ValidationError, match=r"Field 'S\.T\.A' of table 'PUBLIC\.U' has the id"):
        cat.execute([EvolveColumn(table="U", column="S", new=moved)])


def test_a_fixed_column_alters_without_restating_its_length(cat: Catalog) -> None:
    cat.sql("CREATE TABLE f (k INT PRIMARY KEY, x FIXED(3) NOT NULL)")
    cat.execute([AlterColumn(table="F", column="X", not_null=False)])
    table = cat.catalog().table("F")
    assert table is not None
    assert (table.columns[1].nullable, table.columns[1].length) == (True, 3)


def test_a_new_field_keeps_an_unused_id_and_never_takes_a_dropped_one(cat: Catalog) -> None:
    s = _column(cat, "S")
    a, b, c, d = s.fields
    _evolve(cat, replace(s, fields=(a, b, c)))  # D (id 6) dropped
    table = cat.catalog().table("T")
    assert table is not None
    unused = table.next_column_id + 5  # as an Iceberg client numbering from its own counter
    reuse = Column(id=d.id, name="E", type=ColumnType.INT32)
    client = Column(id=unused, name="F", type=ColumnType.INT32)
    _evolve(cat, replace(s, fields=(a, b, c, reuse, client)))
    e, f = _column(cat, "S").fields[3:]
    assert f.id == unused
    assert e.id == unused + 1 and e.id != d.id
    after = cat.catalog().table("T")
    assert after is not None and after.next_column_id == unused + 2

"""ALTER TABLE … ADD / DROP / ALTER / RENAME COLUMN rules."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from almanac import (
    AddColumns,
    AlreadyExistsError,
    AlterColumn,
    Catalog,
    ColumnType,
    ConstantDefault,
    CreateIndex,
    CreateTable,
    DropColumns,
    DropIndex,
    FunctionDefault,
    IndexStatus,
    MakeIndexAvailable,
    NotFoundError,
    RenameColumn,
    RenameTable,
    SetTableProperties,
    StartBuildingIndex,
    Table,
    ValidationError,
)
from almanac.model.descriptors import Column

from .support import apply, col, noop, rejected, table


def _table(cat: Catalog, name: str = "T") -> Table:
    t = cat.catalog().table(name)
    assert t is not None
    return t


def _column(cat: Catalog, name: str, table_name: str = "T") -> Column:
    c = _table(cat, table_name).column(name)
    assert c is not None
    return c


# -- add ---------------------------------------------------------------------------


def test_add_columns_continues_column_ids_and_bumps_table_version(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    result = apply(cat, AddColumns(table="T", columns=(col("B"), col("C", ColumnType.STRING))))
    t = _table(cat)
    assert [(c.id, c.name) for c in t.columns] == [(0, "ID"), (1, "A"), (2, "B"), (3, "C")]
    assert t.table_version == 2, "several columns in one command bump table_version once"
    assert t.update_version == result.version


def test_add_not_null_column_needs_a_non_null_default(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(
        cat,
        AddColumns(table="T", columns=(col("B", nullable=False),)),
        ValidationError,
        "'B'",
        "PUBLIC.T",
        "default",
    )
    rejected(
        cat,
        AddColumns(table="T", columns=(col("B", nullable=False, default=ConstantDefault(None)),)),
        ValidationError,
        "'B'",
    )
    apply(
        cat, AddColumns(table="T", columns=(col("B", nullable=False, default=ConstantDefault(7)),))
    )
    b = _column(cat, "B")
    assert not b.nullable and b.default == ConstantDefault(7)


def test_add_existing_column_fails(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    rejected(cat, AddColumns(table="T", columns=(col("A"),)), AlreadyExistsError, "'A'", "PUBLIC.T")


def test_add_columns_if_not_exists_skips_only_the_existing_one(cat: Catalog) -> None:
    apply(cat, table("T", col("A", ColumnType.STRING)))
    apply(
        cat,
        AddColumns(
            table="T",
            columns=(col("B"), col("A", ColumnType.INT8), col("C")),
            if_column_not_exists=True,
        ),
    )
    t = _table(cat)
    assert [c.name for c in t.columns] == ["ID", "A", "B", "C"]
    assert _column(cat, "A").type is ColumnType.STRING, "the existing column is untouched"
    assert [c.id for c in t.columns] == [0, 1, 2, 3]


def test_add_columns_if_not_exists_with_only_existing_ones_is_a_noop(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    noop(cat, AddColumns(table="T", columns=(col("A"),), if_column_not_exists=True))


def test_add_columns_is_atomic(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    rejected(
        cat,
        AddColumns(table="T", columns=(col("B"), col("C", nullable=False), col("D"))),
        ValidationError,
        "'C'",
    )
    rejected(cat, AddColumns(table="T", columns=(col("B"), col("A"))), AlreadyExistsError, "'A'")
    rejected(cat, AddColumns(table="T", columns=(col("B"), col("B"))), ValidationError, "'B'")
    assert [c.name for c in _table(cat).columns] == ["ID", "A"]


def test_add_columns_to_a_missing_table(cat: Catalog) -> None:
    rejected(cat, AddColumns(table="NOPE", columns=(col("B"),)), NotFoundError, "PUBLIC.NOPE")
    noop(cat, AddColumns(table="NOPE", columns=(col("B"),), if_table_exists=True))


def test_added_column_cannot_have_a_function_default(cat: Catalog) -> None:
    apply(cat, table("T"))
    added = col("U", ColumnType.UUID, default=FunctionDefault("RAND_UUID"))
    rejected(cat, AddColumns(table="T", columns=(added,)), ValidationError, "'U'", "primary key")


def test_column_ids_are_never_reused(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    apply(cat, DropColumns(table="T", columns=("B",)))
    apply(cat, AddColumns(table="T", columns=(col("B"),)))
    assert _column(cat, "B").id == 3
    apply(cat, DropColumns(table="T", columns=("A", "B")))
    apply(cat, AddColumns(table="T", columns=(col("A"), col("B"))))
    assert [(c.id, c.name) for c in _table(cat).columns] == [(0, "ID"), (4, "A"), (5, "B")]


def test_column_ids_stay_unique_within_one_batch(cat: Catalog) -> None:
    apply(
        cat,
        table("T", col("A")),
        DropColumns(table="T", columns=("A",)),
        AddColumns(table="T", columns=(col("A"),)),
        AddColumns(table="T", columns=(col("B"),)),
    )
    assert [(c.id, c.name) for c in _table(cat).columns] == [(0, "ID"), (2, "A"), (3, "B")]


# -- drop ---------------------------------------------------------------------------


def test_drop_columns_bumps_table_version(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B"), col("C")))
    result = apply(cat, DropColumns(table="T", columns=("A", "C")))
    t = _table(cat)
    assert [(c.id, c.name) for c in t.columns] == [(0, "ID"), (2, "B")]
    assert t.table_version == 2
    assert t.update_version == result.version


def test_drop_primary_key_column_fails_with_a_clear_message(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    error = rejected(cat, DropColumns(table="T", columns=("ID",)), ValidationError)
    assert str(error) == (
        "Column 'ID' is part of the primary key of table 'PUBLIC.T' and cannot be dropped"
    )


@pytest.mark.parametrize("status", [IndexStatus.REGISTERED, IndexStatus.BUILDING, "AVAILABLE"])
def test_drop_column_used_by_an_alive_index_fails(cat: Catalog, status: object) -> None:
    apply(cat, table("T", col("A"), col("B")))
    apply(cat, CreateIndex(name="I", table="T", columns=("B", "A")))
    index = cat.catalog().index("I")
    assert index is not None
    if status is not IndexStatus.REGISTERED:
        apply(cat, StartBuildingIndex(index.id))
    if status == "AVAILABLE":
        apply(cat, MakeIndexAvailable(index.id))
    rejected(cat, DropColumns(table="T", columns=("A",)), ValidationError, "'A'", "'I'", "PUBLIC.T")


def test_drop_column_used_only_by_a_stopping_index(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    apply(cat, DropIndex("I"))
    assert cat.catalog().indexes()[-1].status is IndexStatus.STOPPING
    apply(cat, DropColumns(table="T", columns=("A",)))
    assert _table(cat).column("A") is None


def test_drop_missing_column(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    rejected(
        cat, DropColumns(table="T", columns=("A", "NOPE")), NotFoundError, "'NOPE'", "PUBLIC.T"
    )
    apply(cat, DropColumns(table="T", columns=("A", "NOPE"), if_column_exists=True))
    assert [c.name for c in _table(cat).columns] == ["ID"]
    noop(cat, DropColumns(table="T", columns=("NOPE",), if_column_exists=True))


def test_drop_columns_is_atomic(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    rejected(cat, DropColumns(table="T", columns=("A", "ID")), ValidationError, "'ID'")
    assert [c.name for c in _table(cat).columns] == ["ID", "A", "B"]


def test_drop_columns_from_a_missing_table(cat: Catalog) -> None:
    rejected(cat, DropColumns(table="NOPE", columns=("A",)), NotFoundError, "PUBLIC.NOPE")
    noop(cat, DropColumns(table="NOPE", columns=("A",), if_table_exists=True))


# -- alter: type changes ---------------------------------------------------------------

WIDENINGS = {
    (ColumnType.INT8, ColumnType.INT16),
    (ColumnType.INT8, ColumnType.INT32),
    (ColumnType.INT8, ColumnType.INT64),
    (ColumnType.INT16, ColumnType.INT32),
    (ColumnType.INT16, ColumnType.INT64),
    (ColumnType.INT32, ColumnType.INT64),
    (ColumnType.FLOAT, ColumnType.DOUBLE),
}


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s, t in itertools.product(ColumnType, ColumnType) if s is not t],
    ids=lambda t: t.name,
)
def test_only_listed_type_changes_are_allowed(
    cat: Catalog, source: ColumnType, target: ColumnType
) -> None:
    apply(cat, table("T", col("C", source)))
    change = AlterColumn(table="T", column="C", type=target)
    if (source, target) in WIDENINGS:
        apply(cat, change)
        c = _column(cat, "C")
        assert c.type is target and c.id == 1
        assert _table(cat).table_version == 2
    else:
        rejected(cat, change, ValidationError, "'C'", "PUBLIC.T")


def test_widening_keeps_a_fitting_default(cat: Catalog) -> None:
    apply(cat, table("T", col("C", ColumnType.INT8, nullable=False, default=ConstantDefault(5))))
    apply(cat, AlterColumn(table="T", column="C", type=ColumnType.INT64))
    c = _column(cat, "C")
    assert c.type is ColumnType.INT64 and c.default == ConstantDefault(5) and not c.nullable


def test_primary_key_column_never_changes_type(cat: Catalog) -> None:
    apply(cat, CreateTable(name="K", columns=(col("K", nullable=False),), primary_key=("K",)))
    rejected(
        cat,
        AlterColumn(table="K", column="K", type=ColumnType.INT64),
        ValidationError,
        "'K'",
        "PUBLIC.K",
        "primary key",
    )


def test_same_type_is_a_noop(cat: Catalog) -> None:
    apply(cat, table("T", col("C", ColumnType.INT32)))
    noop(cat, AlterColumn(table="T", column="C", type=ColumnType.INT32))
    noop(cat, AlterColumn(table="T", column="ID", type=ColumnType.INT64))
    noop(cat, AlterColumn(table="T", column="C"))
    assert _table(cat).table_version == 1


# -- alter: DECIMAL, STRING and BYTES parameters ----------------------------------------


def test_decimal_precision_may_grow(cat: Catalog) -> None:
    apply(cat, table("T", col("D", ColumnType.DECIMAL, precision=10, scale=2)))
    apply(cat, AlterColumn(table="T", column="D", precision=12))
    d = _column(cat, "D")
    assert (d.precision, d.scale) == (12, 2)
    assert _table(cat).table_version == 2


def test_decimal_precision_may_not_shrink(cat: Catalog) -> None:
    apply(cat, table("T", col("D", ColumnType.DECIMAL, precision=10, scale=2)))
    rejected(
        cat, AlterColumn(table="T", column="D", precision=9), ValidationError, "'D'", "PUBLIC.T"
    )


@pytest.mark.parametrize("scale", [1, 3, 0])
def test_decimal_scale_never_changes(cat: Catalog, scale: int) -> None:
    apply(cat, table("T", col("D", ColumnType.DECIMAL, precision=10, scale=2)))
    rejected(
        cat,
        AlterColumn(table="T", column="D", precision=12, scale=scale),
        ValidationError,
        "'D'",
        "PUBLIC.T",
    )
    noop(cat, AlterColumn(table="T", column="D", scale=2))


@pytest.mark.parametrize("ctype", [ColumnType.STRING, ColumnType.BYTES])
def test_length_may_only_grow(cat: Catalog, ctype: ColumnType) -> None:
    apply(cat, table("T", col("S", ctype, length=10)))
    apply(cat, AlterColumn(table="T", column="S", length=20))
    assert _column(cat, "S").length == 20
    rejected(cat, AlterColumn(table="T", column="S", length=19), ValidationError, "'S'", "PUBLIC.T")
    noop(cat, AlterColumn(table="T", column="S", length=20))


# -- alter: nullability ---------------------------------------------------------------


def test_set_not_null_is_forbidden(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    rejected(
        cat, AlterColumn(table="T", column="A", not_null=True), ValidationError, "'A'", "PUBLIC.T"
    )


def test_drop_not_null(cat: Catalog) -> None:
    apply(cat, table("T", col("A", nullable=False, default=ConstantDefault(1))))
    apply(cat, AlterColumn(table="T", column="A", not_null=False))
    assert _column(cat, "A").nullable
    noop(cat, AlterColumn(table="T", column="A", not_null=False))


def test_drop_not_null_on_a_primary_key_column_fails(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(
        cat,
        AlterColumn(table="T", column="ID", not_null=False),
        ValidationError,
        "'ID'",
        "PUBLIC.T",
        "primary key",
    )


def test_alter_missing_column_or_table(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, AlterColumn(table="T", column="NOPE", not_null=False), NotFoundError, "'NOPE'")
    rejected(cat, AlterColumn(table="NOPE", column="A"), NotFoundError, "PUBLIC.NOPE")
    noop(cat, AlterColumn(table="NOPE", column="A", not_null=False, if_table_exists=True))


def test_alter_column_keeps_id_and_position(cat: Catalog) -> None:
    apply(cat, table("T", col("A", ColumnType.INT8), col("B")))
    apply(cat, AlterColumn(table="T", column="A", type=ColumnType.INT16))
    assert [(c.id, c.name) for c in _table(cat).columns] == [(0, "ID"), (1, "A"), (2, "B")]


# -- what bumps table_version -----------------------------------------------------------


def test_only_column_changes_bump_table_version(cat: Catalog) -> None:
    apply(cat, table("T", col("A", ColumnType.INT8)))
    assert _table(cat).table_version == 1
    apply(cat, AddColumns(table="T", columns=(col("B"),)))
    assert _table(cat).table_version == 2
    apply(cat, DropColumns(table="T", columns=("B",)))
    assert _table(cat).table_version == 3
    apply(cat, AlterColumn(table="T", column="A", type=ColumnType.INT16))
    assert _table(cat).table_version == 4
    apply(cat, RenameTable("T", "U"))
    assert _table(cat, "U").table_version == 4
    apply(cat, SetTableProperties(name="U", min_stale_rows=3))
    assert _table(cat, "U").table_version == 4


def test_alter_column_keeps_the_function_default_rules(cat: Catalog) -> None:
    apply(cat, table("T", col("U", ColumnType.UUID)))
    rejected(
        cat,
        AlterColumn(table="T", column="U", default=FunctionDefault("RAND_UUID")),
        ValidationError,
        "'U'",
        "primary key",
    )
    rejected(
        cat,
        AlterColumn(table="T", column="ID", default=FunctionDefault("RAND_UUID")),
        ValidationError,
        "'ID'",
        "UUID",
    )


def test_alter_column_default(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    apply(cat, AlterColumn(table="T", column="A", default=ConstantDefault(3)))
    assert _column(cat, "A").default == ConstantDefault(3)
    rejected(
        cat,
        AlterColumn(table="T", column="A", default=ConstantDefault("x")),
        ValidationError,
        "'A'",
    )
    apply(cat, AlterColumn(table="T", column="A", drop_default=True))
    assert _column(cat, "A").default is None


# -- rename ------------------------------------------------------------------------


def test_rename_column_keeps_id_type_and_bumps_table_version(cat: Catalog) -> None:
    apply(cat, table("T", col("A", ColumnType.STRING), col("B")))
    before = _column(cat, "A")
    result = apply(cat, RenameColumn(table="T", column="A", new_name="..", schema="PUBLIC"))
    t = _table(cat)
    assert [(c.id, c.name) for c in t.columns] == [(0, "ID"), (1, ".."), (2, "B")]
    assert _column(cat, "..") == dataclasses.replace(before, name="..")
    assert t.table_version == 2
    assert t.update_version == result.version
    noop(cat, RenameColumn(table="T", column="..", new_name=".."))


def test_rename_column_refuses_taken_and_missing_names(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    error = rejected(cat, RenameColumn(table="T", column="A", new_name="B"), AlreadyExistsError)
    assert str(error) == "Column 'B' already exists in table 'PUBLIC.T'"
    rejected(cat, RenameColumn(table="T", column="NOPE", new_name="C"), NotFoundError, "'NOPE'")
    noop(cat, RenameColumn(table="T", column="NOPE", new_name="C", if_column_exists=True))
    rejected(cat, RenameColumn(table="U", column="A", new_name="C"), NotFoundError, "'PUBLIC.U'")
    noop(cat, RenameColumn(table="U", column="A", new_name="C", if_table_exists=True))
    rejected(cat, RenameColumn(table="T", column="A", new_name=" "), ValidationError, "blank")
    rejected(cat, RenameColumn(table="T", column="A", new_name="a\x01"), ValidationError, "control")


def test_rename_column_used_by_a_key_or_an_index_fails(cat: Catalog) -> None:
    apply(
        cat,
        CreateTable(
            name="T",
            columns=(col("K", nullable=False), col("C", nullable=False), col("A"), col("B")),
            primary_key=("K", "C"),
            colocation=("C",),
        ),
        CreateIndex(name="I", table="T", columns=("B",)),
    )
    error = rejected(cat, RenameColumn(table="T", column="K", new_name="K2"), ValidationError)
    assert str(error) == (
        "Column 'K' is part of the primary key of table 'PUBLIC.T' and cannot be renamed"
    )
    rejected(cat, RenameColumn(table="T", column="C", new_name="C2"), ValidationError, "'C'")
    rejected(cat, RenameColumn(table="T", column="B", new_name="B2"), ValidationError, "'I'")
    apply(cat, RenameColumn(table="T", column="A", new_name="A2"))
    apply(cat, DropIndex("I"))
    apply(cat, RenameColumn(table="T", column="B", new_name="B2"))
    assert [c.name for c in _table(cat).columns] == ["K", "C", "A2", "B2"]


def test_rename_column_in_sql(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID INT PRIMARY KEY, A INT)")
    version = cat.sql('ALTER TABLE T RENAME COLUMN A TO "a b"').version
    assert _table(cat).column("a b") is not None
    assert cat.sql("ALTER TABLE T RENAME COLUMN IF EXISTS NOPE TO X").version == version
    assert cat.sql("ALTER TABLE IF EXISTS NOPE RENAME COLUMN A TO X").version == version

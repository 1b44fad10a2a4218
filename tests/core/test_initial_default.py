"""A column's initial default: fixed by ADD COLUMN, never moved by ALTER COLUMN."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import almanac
from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    ColumnType,
    ConstantDefault,
    FunctionDefault,
    Table,
    ValidationError,
)
from almanac.model.descriptors import Column
from almanac.model.entries import ColumnAltered

from .support import apply, col, rejected, table


def _column(cat: Catalog, name: str) -> Column:
    t = cat.catalog().table("T")
    assert t is not None
    c = t.column(name)
    assert c is not None
    return c


def _column_names(cat: Catalog) -> list[str]:
    t = cat.catalog().table("T")
    assert t is not None
    return [c.name for c in t.columns]


def test_add_column_fixes_the_initial_default(cat: Catalog) -> None:
    apply(cat, table("T", col("A", default=ConstantDefault(3))))
    assert _column(cat, "A").initial_default is None, "no row predates a CREATE TABLE column"
    apply(
        cat,
        AddColumns(
            table="T",
            columns=(
                col("C", default=ConstantDefault(7)),
                col("N"),
                col("Z", default=ConstantDefault(None)),
                col("R", nullable=False, default=ConstantDefault(1)),
            ),
        ),
    )
    assert _column(cat, "C").initial_default == ConstantDefault(7)
    assert _column(cat, "N").initial_default is None
    assert _column(cat, "Z").initial_default is None, "DEFAULT NULL: old rows read NULL"
    assert _column(cat, "R").initial_default == ConstantDefault(1)


def test_set_and_drop_default_change_only_the_write_default(cat: Catalog) -> None:
    apply(cat, table("T"))
    cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    added = _column(cat, "C")
    assert (added.default, added.initial_default) == (ConstantDefault(7), ConstantDefault(7))
    cat.sql("ALTER TABLE T ALTER COLUMN C SET DEFAULT 8")
    assert _column(cat, "C").default == ConstantDefault(8)
    assert _column(cat, "C").initial_default == ConstantDefault(7)
    cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    assert _column(cat, "C").default is None
    assert _column(cat, "C").initial_default == ConstantDefault(7)
    cat.sql("ALTER TABLE T ALTER COLUMN C SET DATA TYPE BIGINT")
    widened = _column(cat, "C")
    assert widened.type is ColumnType.INT64
    assert widened.initial_default == ConstantDefault(7)
    # A column that gets a default only later has none for its old rows.
    cat.sql("ALTER TABLE T ADD COLUMN D INT")
    cat.sql("ALTER TABLE T ALTER COLUMN D SET DEFAULT 9")
    assert _column(cat, "D").initial_default is None


def test_a_not_null_column_keeps_its_initial_default_without_a_write_default(
    cat: Catalog,
) -> None:
    apply(cat, table("T"))
    cat.sql("ALTER TABLE T ADD COLUMN C INT NOT NULL DEFAULT 7")
    cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    column = _column(cat, "C")
    assert (column.nullable, column.default, column.initial_default) == (
        False,
        None,
        ConstantDefault(7),
    )


def test_an_added_column_cannot_take_a_function_as_its_initial_default(cat: Catalog) -> None:
    apply(cat, table("T"))
    for nullable in (True, False):
        added = col("U", ColumnType.UUID, nullable=nullable, default=FunctionDefault("RAND_UUID"))
        error = rejected(
            cat,
            AddColumns(table="T", columns=(added,)),
            ValidationError,
            "'U'",
            "'PUBLIC.T'",
            "RAND_UUID",
            "constant initial default",
        )
        assert error.context["rule"] == "initial-default"
    for sql in (
        "ALTER TABLE T ADD COLUMN U UUID NOT NULL DEFAULT RAND_UUID()",
        "ALTER TABLE T ADD COLUMN U UUID DEFAULT RAND_UUID()",
    ):
        with pytest.raises(ValidationError, match=r"'U' added to table 'PUBLIC\.T' cannot default"):
            cat.sql(sql)
    assert _column_names(cat) == ["ID"]


def test_an_alter_entry_never_replaces_the_initial_default(cat: Catalog) -> None:
    """An entry from a Column v1 serializer guesses the initial default from
    the column's default; applying it keeps the one the catalog holds."""
    apply(cat, table("T"))
    cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    working = cat.catalog()
    t = working.table("T")
    assert t is not None
    guessed = replace(
        _column(cat, "C"), default=ConstantDefault(8), initial_default=ConstantDefault(8)
    )
    after = ColumnAltered(t.id, guessed).apply(working.evolve(version=working.version + 1))
    altered = after.tables_by_id[t.id].column("C")
    assert altered is not None
    assert (altered.default, altered.initial_default) == (ConstantDefault(8), ConstantDefault(7))


def test_the_initial_default_survives_replay_and_checkpoint(tmp_path: Path) -> None:
    target = str(tmp_path / "catalog")
    with almanac.connect(target, delay_ms=0) as cat:
        apply(cat, table("T"))
        cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
        cat.sql("ALTER TABLE T ALTER COLUMN C SET DEFAULT 8")
        expected = cat.catalog().table("T")
    with almanac.connect(target, delay_ms=0) as replayed:
        assert replayed.catalog().table("T") == expected
        assert replayed.checkpoint_log() == replayed.latest_version
        replayed.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    with almanac.connect(target, delay_ms=0) as restored:
        t = restored.catalog().table("T")
        assert isinstance(t, Table)
        c = t.column("C")
        assert c is not None
        assert (c.default, c.initial_default) == (None, ConstantDefault(7))


_alters = st.lists(st.none() | st.integers(-1000, 1000), max_size=8)
"""A sequence of ALTER COLUMN C: ``None`` is DROP DEFAULT, an int is SET DEFAULT."""


@settings(max_examples=40, deadline=None)
@given(initial=st.none() | st.integers(-1000, 1000), alters=_alters)
def test_no_sequence_of_alters_moves_the_initial_default(
    initial: int | None, alters: list[int | None]
) -> None:
    with almanac.connect("memory://") as cat:
        apply(cat, table("T"))
        added = col("C", default=None if initial is None else ConstantDefault(initial))
        apply(cat, AddColumns(table="T", columns=(added,)))
        expected = None if initial is None else ConstantDefault(initial)
        for value in alters:
            if value is None:
                cat.execute([AlterColumn(table="T", column="C", drop_default=True)])
            else:
                cat.execute([AlterColumn(table="T", column="C", default=ConstantDefault(value))])
            column = _column(cat, "C")
            assert column.initial_default == expected
            assert column.default == (None if value is None else ConstantDefault(value))

"""Optional primary keys: tables without one, and SET / DROP PRIMARY KEY."""

from __future__ import annotations

from almanac import (
    Catalog,
    CreateIndex,
    CreateTable,
    DropColumns,
    IndexKind,
    RenameTable,
    SetPrimaryKey,
    ValidationError,
)

from .support import ID, apply, col, noop, rejected


def _keyless(name: str = "T", **kwargs: object) -> CreateTable:
    return CreateTable(
        name=name,
        columns=(ID, col("A"), col("K", nullable=False)),
        **kwargs,  # type: ignore[arg-type]
    )


def test_keyless_table_renames_and_takes_indexes(cat: Catalog) -> None:
    apply(cat, _keyless())
    apply(cat, RenameTable("T", "U"))
    apply(cat, CreateIndex(name="U_A", table="U", columns=("A",)))
    t = cat.catalog().table("U")
    assert t is not None and t.primary_key == () and t.primary_key_index_id is None


def test_a_new_table_is_unpartitioned_unless_colocated(cat: Catalog) -> None:
    apply(cat, CreateTable(name="P", columns=(ID, col("A")), primary_key=("ID",)))
    apply(cat, _keyless("C", colocation=("A",)))
    version = cat.catalog()
    plain, colocated = version.table("P"), version.table("C")
    assert plain is not None and colocated is not None
    assert not plain.bucketed and plain.colocation == ("ID",)
    assert colocated.bucketed and colocated.colocation == ("A",)


def test_set_change_and_drop_the_primary_key(cat: Catalog) -> None:
    apply(cat, _keyless())
    apply(cat, SetPrimaryKey(name="T", primary_key=("ID",)))
    version = cat.catalog()
    t = version.table("T")
    assert t is not None and t.primary_key == ("ID",)
    pk = version.index("T_PK")
    assert pk is not None and pk.id == t.primary_key_index_id and pk.columns == ("ID",)
    assert pk.primary_key and pk.unique

    apply(cat, SetPrimaryKey(name="T", primary_key=("K", "ID"), primary_key_kind=IndexKind.SORTED))
    version = cat.catalog()
    t = version.table("T")
    changed = version.index("T_PK")
    assert t is not None and changed is not None
    assert t.primary_key == ("K", "ID") and changed.columns == ("K", "ID")
    assert changed.id == t.primary_key_index_id != pk.id
    assert version.indexes_by_id.get(pk.id) is None

    noop(cat, SetPrimaryKey(name="T", primary_key=("K", "ID"), primary_key_kind=IndexKind.SORTED))
    apply(cat, SetPrimaryKey(name="T", primary_key=()))
    version = cat.catalog()
    t = version.table("T")
    assert t is not None and t.primary_key == () and t.primary_key_index_id is None
    assert version.index("T_PK") is None
    noop(cat, SetPrimaryKey(name="T", primary_key=()))


def test_a_key_column_must_be_not_null(cat: Catalog) -> None:
    apply(cat, _keyless())
    rejected(cat, SetPrimaryKey(name="T", primary_key=("A",)), ValidationError, "'A'", "nullable")
    rejected(cat, SetPrimaryKey(name="T", primary_key=("NOPE",)), ValidationError, "'NOPE'")


def test_a_key_the_colocation_depends_on_cannot_go(cat: Catalog) -> None:
    apply(
        cat,
        CreateTable(
            name="T",
            columns=(ID, col("K", nullable=False)),
            primary_key=("ID", "K"),
            colocation=("K",),
        ),
    )
    rejected(
        cat,
        SetPrimaryKey(name="T", primary_key=()),
        ValidationError,
        "PUBLIC.T",
        "cannot be dropped",
        "colocation columns (K)",
    )
    rejected(
        cat,
        SetPrimaryKey(name="T", primary_key=("ID",)),
        ValidationError,
        "colocation columns (K)",
        "'K' would not be",
    )
    apply(cat, SetPrimaryKey(name="T", primary_key=("K",)))
    t = cat.catalog().table("T")
    assert t is not None and t.colocation == ("K",) and t.bucketed


def test_an_unbucketed_tables_colocation_follows_its_key(cat: Catalog) -> None:
    apply(cat, CreateTable(name="T", columns=(ID, col("K", nullable=False)), primary_key=("ID",)))
    apply(cat, SetPrimaryKey(name="T", primary_key=("K",)))
    t = cat.catalog().table("T")
    assert t is not None and t.colocation == ("K",)
    apply(cat, SetPrimaryKey(name="T", primary_key=()))
    t = cat.catalog().table("T")
    assert t is not None and t.colocation == () and not t.bucketed


def test_sql_create_without_key_and_alter_the_key(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL, A INT)")
    t = cat.catalog().table("T")
    assert t is not None and t.primary_key == () and not t.bucketed
    cat.sql("ALTER TABLE T SET PRIMARY KEY (ID)")
    t = cat.catalog().table("T")
    assert t is not None and t.primary_key == ("ID",)
    cat.sql("ALTER TABLE T SET PRIMARY KEY USING SORTED (ID DESC)")
    t = cat.catalog().table("T")
    assert t is not None and t.primary_key_kind is IndexKind.SORTED
    cat.sql("ALTER TABLE T DROP PRIMARY KEY")
    t = cat.catalog().table("T")
    assert t is not None and t.primary_key == ()
    assert cat.catalog().index("T_PK") is None


def test_a_colocation_column_of_a_keyless_table_stays(cat: Catalog) -> None:
    apply(cat, _keyless(colocation=("A",)))
    rejected(cat, DropColumns(table="T", columns=("A",)), ValidationError, "'A'", "colocation")


def test_a_unique_index_that_needs_the_key_keeps_it(cat: Catalog) -> None:
    apply(cat, CreateTable(name="T", columns=(ID, col("K", nullable=False)), primary_key=("ID",)))
    apply(cat, CreateIndex(name="BY_ID_K", table="T", columns=("ID", "K"), unique=True))
    apply(cat, SetPrimaryKey(name="T", primary_key=("K",)))
    apply(cat, CreateIndex(name="BY_K", table="T", columns=("K",), unique=True))
    rejected(
        cat,
        SetPrimaryKey(name="T", primary_key=("ID",)),
        ValidationError,
        "unique index 'BY_K'",
        "'ID'",
    )

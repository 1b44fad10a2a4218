"""CREATE / DROP / RENAME INDEX and the index status lifecycle."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from almanac import (
    AlreadyExistsError,
    Catalog,
    Collation,
    Command,
    CreateIndex,
    CreateTable,
    DropIndex,
    Index,
    IndexKind,
    IndexStatus,
    MakeIndexAvailable,
    NotFoundError,
    RemoveIndex,
    RenameIndex,
    RenameTable,
    StartBuildingIndex,
    ValidationError,
)

from .support import ID, apply, col, noop, rejected, table


def _index(cat: Catalog, name: str) -> Index:
    index = cat.catalog().index(name)
    assert index is not None
    return index


def _with_index(cat: Catalog, status: IndexStatus, name: str = "I") -> Index:
    """Table T(ID, A, B) created in its own version, then index ``name`` on A in ``status``."""
    if cat.catalog().table("T") is None:
        apply(cat, table("T", col("A"), col("B")))
    apply(cat, CreateIndex(name=name, table="T", columns=("A",)))
    index = _index(cat, name)
    steps: list[Command] = []
    if status is not IndexStatus.REGISTERED:
        steps.append(StartBuildingIndex(index.id))
    if status in (IndexStatus.AVAILABLE, IndexStatus.STOPPING):
        steps.append(MakeIndexAvailable(index.id))
    if status is IndexStatus.STOPPING:
        steps.append(DropIndex(name))
    for step in steps:
        apply(cat, step)
    current = cat.catalog().index_by_id(index.id)
    assert current is not None and current.status is status
    return current


# -- create --------------------------------------------------------------------------


def test_create_index_on_an_existing_table_starts_registered(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    t = cat.catalog().table("T")
    assert t is not None
    before = cat.catalog().object_id_gen
    result = apply(cat, CreateIndex(name="I", table="T", columns=("B", "A")))
    index = _index(cat, "I")
    assert index.status is IndexStatus.REGISTERED
    assert index.table_id == t.id and index.schema_id == t.schema_id
    assert index.columns == ("B", "A")
    assert not index.unique and not index.primary_key
    assert index.kind is IndexKind.SORTED
    assert index.collations == (Collation.ASC_NULLS_LAST, Collation.ASC_NULLS_LAST)
    assert index.id == before
    assert index.created_version == index.update_version == result.version
    assert cat.catalog().indexes(t.id) == [_index(cat, "T_PK"), index]


def test_index_created_with_its_table_starts_available(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    assert _index(cat, "I").status is IndexStatus.AVAILABLE


def test_index_on_a_table_created_earlier_in_the_same_batch_but_renamed(cat: Catalog) -> None:
    apply(
        cat,
        table("T", col("A")),
        RenameTable("T", "U"),
        CreateIndex(name="I", table="U", columns=("A",)),
    )
    assert _index(cat, "I").status is IndexStatus.AVAILABLE


def test_hash_index_and_explicit_collations(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    apply(
        cat,
        CreateIndex(name="H", table="T", columns=("A",), kind=IndexKind.HASH),
        CreateIndex(
            name="S",
            table="T",
            columns=("A", "B"),
            collations=(Collation.DESC_NULLS_LAST, Collation.ASC_NULLS_FIRST),
        ),
    )
    h, s = _index(cat, "H"), _index(cat, "S")
    assert h.kind is IndexKind.HASH and h.collations == ()
    assert s.collations == (Collation.DESC_NULLS_LAST, Collation.ASC_NULLS_FIRST)


def test_hash_index_takes_no_sort_order(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    cmd = CreateIndex(
        name="H",
        table="T",
        columns=("A",),
        kind=IndexKind.HASH,
        collations=(Collation.ASC_NULLS_LAST,),
    )
    rejected(cat, cmd, ValidationError, "PUBLIC.H")


def test_sorted_index_needs_one_collation_per_column(cat: Catalog) -> None:
    apply(cat, table("T", col("A"), col("B")))
    cmd = CreateIndex(
        name="S", table="T", columns=("A", "B"), collations=(Collation.ASC_NULLS_LAST,)
    )
    rejected(cat, cmd, ValidationError, "PUBLIC.S")


def test_collation_helpers() -> None:
    assert Collation.of() is Collation.ASC_NULLS_LAST
    assert Collation.of(ascending=False) is Collation.DESC_NULLS_FIRST
    assert Collation.of(ascending=False, nulls_first=False) is Collation.DESC_NULLS_LAST
    assert Collation.ASC_NULLS_FIRST.ascending and Collation.ASC_NULLS_FIRST.nulls_first
    assert not Collation.DESC_NULLS_LAST.ascending and not Collation.DESC_NULLS_LAST.nulls_first


def test_index_needs_a_column(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    rejected(cat, CreateIndex(name="I", table="T", columns=()), ValidationError, "PUBLIC.I")


def test_index_columns_without_duplicates(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    cmd = CreateIndex(name="I", table="T", columns=("A", "A"))
    rejected(cat, cmd, ValidationError, "'A'", "PUBLIC.I")


def test_index_columns_must_exist(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    cmd = CreateIndex(name="I", table="T", columns=("A", "NOPE"))
    rejected(cat, cmd, ValidationError, "'NOPE'", "PUBLIC.I", "PUBLIC.T")


def test_index_on_a_missing_table(cat: Catalog) -> None:
    rejected(cat, CreateIndex(name="I", table="NOPE", columns=("A",)), NotFoundError, "PUBLIC.NOPE")


def test_unique_index_must_contain_every_colocation_column(cat: Catalog) -> None:
    apply(
        cat,
        CreateTable(
            name="T",
            columns=(ID, col("K", nullable=False), col("A")),
            primary_key=("ID", "K"),
            colocation=("K",),
        ),
    )
    rejected(
        cat,
        CreateIndex(name="U", table="T", columns=("A", "ID"), unique=True),
        ValidationError,
        "PUBLIC.U",
        "colocation",
    )
    apply(cat, CreateIndex(name="U", table="T", columns=("A", "K"), unique=True))
    assert _index(cat, "U").unique
    apply(cat, CreateIndex(name="N", table="T", columns=("A",)))  # non-unique: no rule


def test_index_name_taken_by_an_index_or_a_table(cat: Catalog) -> None:
    _with_index(cat, IndexStatus.REGISTERED)
    rejected(cat, CreateIndex(name="I", table="T", columns=("B",)), AlreadyExistsError, "PUBLIC.I")
    rejected(cat, CreateIndex(name="T", table="T", columns=("B",)), AlreadyExistsError, "PUBLIC.T")
    rejected(
        cat, CreateIndex(name="T_PK", table="T", columns=("B",)), AlreadyExistsError, "PUBLIC.T_PK"
    )


def test_create_index_if_not_exists_is_a_noop(cat: Catalog) -> None:
    _with_index(cat, IndexStatus.REGISTERED)
    noop(cat, CreateIndex(name="I", table="T", columns=("B",), if_not_exists=True))


def test_stopping_index_frees_its_name(cat: Catalog) -> None:
    old = _with_index(cat, IndexStatus.STOPPING)
    assert cat.catalog().index("I") is None
    apply(cat, CreateIndex(name="I", table="T", columns=("B",)))
    new = _index(cat, "I")
    assert new.id != old.id
    both = cat.catalog().indexes()
    assert old.id in {i.id for i in both}
    # Removing the old STOPPING index keeps the new one's name.
    apply(cat, RemoveIndex(old.id))
    assert _index(cat, "I") == new


# -- lifecycle ------------------------------------------------------------------------


def test_full_lifecycle(cat: Catalog) -> None:
    index = _with_index(cat, IndexStatus.REGISTERED)
    seen = [index.status]
    versions = [index.update_version]
    for step in (StartBuildingIndex(index.id), MakeIndexAvailable(index.id), DropIndex("I")):
        result = apply(cat, step)
        current = cat.catalog().index_by_id(index.id)
        assert current is not None
        assert current.update_version == result.version
        seen.append(current.status)
        versions.append(current.update_version)
    assert seen == [
        IndexStatus.REGISTERED,
        IndexStatus.BUILDING,
        IndexStatus.AVAILABLE,
        IndexStatus.STOPPING,
    ]
    assert versions == sorted(versions) and len(set(versions)) == 4
    apply(cat, RemoveIndex(index.id))
    assert cat.catalog().index_by_id(index.id) is None
    t = cat.catalog().table("T")
    assert t is not None and [i.name for i in cat.catalog().indexes(t.id)] == ["T_PK"]


TRANSITIONS: dict[str, tuple[Callable[[int], Command], IndexStatus]] = {
    "start building": (StartBuildingIndex, IndexStatus.REGISTERED),
    "make available": (MakeIndexAvailable, IndexStatus.BUILDING),
    "remove": (RemoveIndex, IndexStatus.STOPPING),
}


@pytest.mark.parametrize("action", list(TRANSITIONS))
@pytest.mark.parametrize("status", list(IndexStatus), ids=lambda s: s.name)
def test_transition_requires_its_source_status(
    cat: Catalog, action: str, status: IndexStatus
) -> None:
    make, source = TRANSITIONS[action]
    index = _with_index(cat, status)
    if status is source:
        apply(cat, make(index.id))
    else:
        rejected(cat, make(index.id), ValidationError, "'I'", status.name, source.name)


@pytest.mark.parametrize("action", list(TRANSITIONS))
def test_transition_of_an_unknown_index(cat: Catalog, action: str) -> None:
    make, _ = TRANSITIONS[action]
    rejected(cat, make(999), NotFoundError, "999")


@pytest.mark.parametrize("action", list(TRANSITIONS))
def test_primary_key_index_is_always_available(cat: Catalog, action: str) -> None:
    make, _ = TRANSITIONS[action]
    apply(cat, table("T"))
    pk = _index(cat, "T_PK")
    rejected(cat, make(pk.id), ValidationError, "'T_PK'")
    assert _index(cat, "T_PK").status is IndexStatus.AVAILABLE


# -- drop -----------------------------------------------------------------------------


def test_drop_available_index_makes_it_stopping(cat: Catalog) -> None:
    index = _with_index(cat, IndexStatus.AVAILABLE)
    apply(cat, DropIndex("I"))
    current = cat.catalog().index_by_id(index.id)
    assert current is not None and current.status is IndexStatus.STOPPING
    assert cat.catalog().index("I") is None


@pytest.mark.parametrize("status", [IndexStatus.REGISTERED, IndexStatus.BUILDING])
def test_drop_unfinished_index_removes_it(cat: Catalog, status: IndexStatus) -> None:
    index = _with_index(cat, status)
    apply(cat, DropIndex("I"))
    assert cat.catalog().index_by_id(index.id) is None
    assert cat.catalog().index("I") is None


def test_primary_key_index_cannot_be_dropped(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, DropIndex("T_PK"), ValidationError, "PUBLIC.T_PK", "primary")
    rejected(cat, DropIndex("T_PK", if_exists=True), ValidationError, "PUBLIC.T_PK")


def test_drop_missing_index(cat: Catalog) -> None:
    rejected(cat, DropIndex("NOPE"), NotFoundError, "PUBLIC.NOPE")
    noop(cat, DropIndex("NOPE", if_exists=True))
    noop(cat, DropIndex("NOPE", schema="NOSCHEMA", if_exists=True))


def test_drop_stopping_index_by_name_finds_nothing(cat: Catalog) -> None:
    _with_index(cat, IndexStatus.STOPPING)
    rejected(cat, DropIndex("I"), NotFoundError, "PUBLIC.I")


# -- rename ---------------------------------------------------------------------------


def test_rename_index_keeps_its_id(cat: Catalog) -> None:
    index = _with_index(cat, IndexStatus.BUILDING)
    result = apply(cat, RenameIndex("I", "J"))
    renamed = _index(cat, "J")
    assert renamed.id == index.id and renamed.status is IndexStatus.BUILDING
    assert renamed.update_version == result.version
    assert cat.catalog().index("I") is None


def test_rename_index_to_a_taken_name(cat: Catalog) -> None:
    _with_index(cat, IndexStatus.REGISTERED)
    _with_index(cat, IndexStatus.REGISTERED, name="J")
    rejected(cat, RenameIndex("I", "J"), AlreadyExistsError, "PUBLIC.J")
    rejected(cat, RenameIndex("I", "T"), AlreadyExistsError, "PUBLIC.T")
    rejected(cat, RenameIndex("I", "T_PK"), AlreadyExistsError, "PUBLIC.T_PK")


def test_rename_primary_key_index_fails(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, RenameIndex("T_PK", "X"), ValidationError, "PUBLIC.T_PK")


def test_rename_missing_index(cat: Catalog) -> None:
    rejected(cat, RenameIndex("NOPE", "X"), NotFoundError, "PUBLIC.NOPE")
    noop(cat, RenameIndex("NOPE", "X", if_exists=True))


def test_rename_index_to_a_blank_name(cat: Catalog) -> None:
    _with_index(cat, IndexStatus.REGISTERED)
    rejected(cat, RenameIndex("I", ""), ValidationError, "blank")

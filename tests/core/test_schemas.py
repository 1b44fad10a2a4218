"""CREATE SCHEMA / DROP SCHEMA rules."""

from __future__ import annotations

import pytest

from almanac import (
    AlreadyExistsError,
    Catalog,
    CreateIndex,
    CreateSchema,
    DropIndex,
    DropSchema,
    NotFoundError,
    ValidationError,
)
from almanac.model.descriptors import IndexStatus

from .support import apply, col, noop, rejected, table

RESERVED = ["SYSTEM", "INFORMATION_SCHEMA", "DEFINITION_SCHEMA"]


def test_version_zero_is_empty_and_version_one_has_only_public(cat: Catalog) -> None:
    empty = cat.catalog(0)
    assert empty.version == 0
    assert empty.schemas() == []
    assert empty.tables() == [] and empty.zones() == [] and empty.indexes() == []
    initial = cat.catalog(1)
    assert [s.name for s in initial.schemas()] == ["PUBLIC"]
    public = initial.schema("PUBLIC")
    assert public is not None and public.update_version == 1
    assert cat.latest_version == 1


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_schemas_are_not_created_but_cannot_be_created(cat: Catalog, name: str) -> None:
    assert cat.catalog().schema(name) is None
    rejected(cat, CreateSchema(name), ValidationError, name, "reserved")
    rejected(cat, CreateSchema(name, if_not_exists=True), ValidationError, name)


def test_create_schema(cat: Catalog) -> None:
    before = cat.catalog()
    result = apply(cat, CreateSchema("S"))
    schema = cat.catalog().schema("S")
    assert schema is not None
    assert schema.name == "S"
    assert schema.update_version == result.version
    assert schema.id == before.object_id_gen
    assert cat.catalog().schema_by_id(schema.id) == schema
    assert cat.catalog().object_id_gen == before.object_id_gen + 1


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_create_schema_with_blank_name_fails(cat: Catalog, name: str) -> None:
    rejected(cat, CreateSchema(name), ValidationError, "Schema", "blank")


def test_create_schema_with_taken_name_fails(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    rejected(cat, CreateSchema("S"), AlreadyExistsError, "'S'")
    rejected(cat, CreateSchema("PUBLIC"), AlreadyExistsError, "'PUBLIC'")


def test_create_schema_if_not_exists_is_a_noop_when_taken(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    result = noop(cat, CreateSchema("S", if_not_exists=True))
    assert result.applied == (False,)
    assert result.skipped == (0,)


def test_drop_empty_schema(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    schema = cat.catalog().schema("S")
    assert schema is not None
    apply(cat, DropSchema("S"))
    assert cat.catalog().schema("S") is None
    assert cat.catalog().schema_by_id(schema.id) is None


def test_drop_non_empty_schema_without_cascade_fails(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"), table("T", schema="S"))
    error = rejected(cat, DropSchema("S"), ValidationError, "'S'", "CASCADE")
    assert "'S.T'" in str(error)


def test_drop_schema_cascade_drops_tables_and_indexes_in_one_version(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"), table("T", col("A"), schema="S"), table("U", schema="S"))
    apply(cat, CreateIndex(name="I", table="T", columns=("A",), schema="S"))
    apply(cat, CreateIndex(name="J", table="T", columns=("A",), schema="S"))
    apply(cat, DropIndex("J", schema="S"))  # REGISTERED: removed at once
    apply(cat, table("KEEP"))
    version = cat.catalog()
    doomed_tables = {t.id for t in version.tables("S")}
    doomed_indexes = {i.id for i in version.indexes() if i.table_id in doomed_tables}
    assert len(doomed_tables) == 2 and len(doomed_indexes) == 3  # two pk indexes + I

    apply(cat, DropSchema("S", cascade=True))
    after = cat.catalog()
    assert after.schema("S") is None
    assert not doomed_tables & set(after.tables_by_id)
    assert not doomed_indexes & set(after.indexes_by_id)
    assert after.table("KEEP") is not None


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_schema_cannot_be_dropped(cat: Catalog, name: str) -> None:
    rejected(cat, DropSchema(name), ValidationError, name)
    rejected(cat, DropSchema(name, if_exists=True), ValidationError, name)


def test_default_schema_public_cannot_be_dropped(cat: Catalog) -> None:
    rejected(cat, DropSchema("PUBLIC"), ValidationError, "'PUBLIC'")
    rejected(cat, DropSchema("PUBLIC", cascade=True), ValidationError, "'PUBLIC'")


def test_drop_missing_schema_fails_unless_if_exists(cat: Catalog) -> None:
    rejected(cat, DropSchema("NOPE"), NotFoundError, "'NOPE'")
    noop(cat, DropSchema("NOPE", if_exists=True))


def test_recreated_schema_gets_a_new_id(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    first = cat.catalog().schema("S")
    apply(cat, DropSchema("S"))
    apply(cat, CreateSchema("S"))
    second = cat.catalog().schema("S")
    assert first is not None and second is not None
    assert second.id > first.id


def test_cascade_of_available_index_created_with_table(cat: Catalog) -> None:
    apply(
        cat,
        CreateSchema("S"),
        table("T", col("A"), schema="S"),
        CreateIndex(name="I", table="T", columns=("A",), schema="S"),
    )
    index = cat.catalog().index("I", "S")
    assert index is not None and index.status is IndexStatus.AVAILABLE
    apply(cat, DropIndex("I", schema="S"))
    stopping = cat.catalog().index_by_id(index.id)
    assert stopping is not None and stopping.status is IndexStatus.STOPPING
    apply(cat, DropSchema("S", cascade=True))
    assert cat.catalog().index_by_id(index.id) is None
    assert cat.catalog().indexes() == []

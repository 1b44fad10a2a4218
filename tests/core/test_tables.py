"""CREATE / DROP / RENAME TABLE rules."""

from __future__ import annotations

import pytest

from almanac import (
    AlreadyExistsError,
    Catalog,
    Collation,
    ColumnType,
    CreateIndex,
    CreateSchema,
    CreateTable,
    CreateZone,
    DropIndex,
    DropTable,
    FunctionDefault,
    IndexKind,
    IndexStatus,
    NotFoundError,
    RenameIndex,
    RenameTable,
    SetDefaultZone,
    SetTableProperties,
    StartBuildingIndex,
    TableProperties,
    ValidationError,
)

from .support import ID, apply, col, noop, rejected, table


def _create(
    name: str = "T",
    *,
    columns: tuple[str, ...] = ("ID", "A"),
    pk: tuple[str, ...] = ("ID",),
    **kwargs: object,
) -> CreateTable:
    defs = tuple(ID if c == "ID" else col(c, nullable=c != "K") for c in columns)
    return CreateTable(name=name, columns=defs, primary_key=pk, **kwargs)  # type: ignore[arg-type]


# -- create: happy paths ------------------------------------------------------


def test_create_table_with_pk_index_and_default_zone(cat: Catalog) -> None:
    before = cat.catalog()
    assert before.default_zone is None and before.zones() == []
    result = apply(cat, table("T", col("A"), col("B", ColumnType.STRING)))
    version = cat.catalog()
    t = version.table("T")
    assert t is not None
    assert [c.id for c in t.columns] == [0, 1, 2]
    assert [c.name for c in t.columns] == ["ID", "A", "B"]
    assert t.primary_key == ("ID",)
    assert t.colocation == ("ID",)
    assert t.table_version == 1
    assert t.properties == TableProperties()
    assert t.created_version == t.update_version == result.version
    public = version.schema("PUBLIC")
    assert public is not None and t.schema_id == public.id

    assert t.primary_key_index_id is not None
    pk = version.index_by_id(t.primary_key_index_id)
    assert pk is not None
    assert pk.name == "T_PK"
    assert version.index("T_PK") == pk
    assert pk.primary_key and pk.unique
    assert pk.status is IndexStatus.AVAILABLE
    assert pk.table_id == t.id and pk.columns == ("ID",)
    assert version.indexes(t.id) == [pk]

    zone = version.default_zone
    assert zone is not None
    assert zone.name == "Default"
    assert zone.update_version == result.version
    assert t.zone_id == zone.id
    assert t.storage_profile == zone.storage_profiles[0]
    assert len({zone.id, t.id, pk.id}) == 3
    assert min(zone.id, t.id, pk.id) >= before.object_id_gen


def test_second_table_reuses_the_default_zone(cat: Catalog) -> None:
    apply(cat, table("T"))
    zones = cat.catalog().zones()
    apply(cat, table("U"))
    version = cat.catalog()
    assert version.zones() == zones
    u = version.table("U")
    assert u is not None and u.zone_id == zones[0].id


def test_table_without_zone_goes_to_the_current_default_zone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), SetDefaultZone("Z"))
    apply(cat, table("T"))
    version = cat.catalog()
    zone = version.zone("Z")
    t = version.table("T")
    assert zone is not None and t is not None
    assert t.zone_id == zone.id
    assert version.zone("Default") is None


def test_table_in_a_named_zone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", storage_profiles=("fast", "slow")))
    apply(cat, table("T", zone="Z"))
    version = cat.catalog()
    zone = version.zone("Z")
    t = version.table("T")
    assert zone is not None and t is not None
    assert t.zone_id == zone.id
    assert t.storage_profile == "fast"


def test_table_in_an_unknown_zone_fails(cat: Catalog) -> None:
    rejected(cat, table("T", zone="NOPE"), NotFoundError, "'NOPE'")


def test_table_in_a_missing_schema_fails(cat: Catalog) -> None:
    rejected(cat, table("T", schema="NOPE"), NotFoundError, "'NOPE'")


def test_table_in_another_schema(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"), table("T", schema="S"), table("T"))
    version = cat.catalog()
    in_s = version.table("T", "S")
    in_public = version.table("T")
    assert in_s is not None and in_public is not None and in_s.id != in_public.id
    assert version.index("T_PK", "S") is not None and version.index("T_PK") is not None


# -- create: storage profile ----------------------------------------------------


def test_storage_profile_must_be_one_of_the_zones(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", storage_profiles=("fast", "slow")))
    apply(cat, _create("T", zone="Z", storage_profile="slow"))
    t = cat.catalog().table("T")
    assert t is not None and t.storage_profile == "slow"
    rejected(
        cat, _create("U", zone="Z", storage_profile="other"), ValidationError, "'other'", "'Z'"
    )


def test_storage_profile_checked_against_the_implicit_default_zone(cat: Catalog) -> None:
    rejected(cat, _create("T", storage_profile="other"), ValidationError, "'other'")
    assert cat.catalog().zones() == []


# -- create: columns and primary key -------------------------------------------


def test_table_needs_a_column(cat: Catalog) -> None:
    rejected(
        cat, CreateTable(name="T", columns=(), primary_key=("ID",)), ValidationError, "PUBLIC.T"
    )


def test_column_names_must_be_unique(cat: Catalog) -> None:
    cmd = CreateTable(name="T", columns=(ID, col("A"), col("A")), primary_key=("ID",))
    rejected(cat, cmd, ValidationError, "'A'", "PUBLIC.T")


@pytest.mark.parametrize("name", ["", "  "])
def test_table_name_must_not_be_blank(cat: Catalog, name: str) -> None:
    rejected(cat, _create(name), ValidationError, "blank")


@pytest.mark.parametrize("name", ["", " "])
def test_column_name_must_not_be_blank(cat: Catalog, name: str) -> None:
    cmd = CreateTable(name="T", columns=(ID, col(name)), primary_key=("ID",))
    rejected(cat, cmd, ValidationError, "blank")


def test_a_table_without_primary_key_has_no_key_index(cat: Catalog) -> None:
    apply(cat, _create(pk=()))
    t = cat.catalog().table("T")
    assert t is not None
    assert (t.primary_key, t.primary_key_index_id, t.colocation) == ((), None, ())
    assert not t.bucketed
    assert cat.catalog().index("T_PK") is None
    assert cat.catalog().table_indexes[t.id] == ()


def test_primary_key_without_duplicates(cat: Catalog) -> None:
    rejected(cat, _create(pk=("ID", "ID")), ValidationError, "'ID'", "PUBLIC.T")


def test_primary_key_columns_must_exist(cat: Catalog) -> None:
    rejected(cat, _create(pk=("ID", "NOPE")), ValidationError, "'NOPE'", "PUBLIC.T")


def test_primary_key_columns_must_not_be_nullable(cat: Catalog) -> None:
    rejected(cat, _create(pk=("ID", "A")), ValidationError, "'A'", "PUBLIC.T", "nullable")


def test_composite_primary_key(cat: Catalog) -> None:
    apply(cat, _create(columns=("ID", "K", "A"), pk=("K", "ID")))
    t = cat.catalog().table("T")
    assert t is not None
    assert t.primary_key == ("K", "ID")
    assert t.colocation == ("K", "ID")
    pk = cat.catalog().index("T_PK")
    assert pk is not None and pk.columns == ("K", "ID")


# -- create: colocation -------------------------------------------------------


def test_colocation_is_a_subset_of_the_primary_key(cat: Catalog) -> None:
    apply(cat, _create(columns=("ID", "K", "A"), pk=("ID", "K"), colocation=("K",)))
    t = cat.catalog().table("T")
    assert t is not None and t.colocation == ("K",)


def test_colocation_outside_the_primary_key_fails(cat: Catalog) -> None:
    cmd = _create(columns=("ID", "K", "A"), pk=("ID", "K"), colocation=("A",))
    rejected(cat, cmd, ValidationError, "'A'", "PUBLIC.T", "primary key")


def test_colocation_must_not_be_empty_or_repeat(cat: Catalog) -> None:
    rejected(cat, _create(colocation=()), ValidationError, "PUBLIC.T")
    rejected(cat, _create(colocation=("ID", "ID")), ValidationError, "'ID'")


# -- create: primary key kind and collations -------------------------------------


def test_sorted_primary_key_defaults_to_ascending_nulls_last(cat: Catalog) -> None:
    apply(cat, _create(primary_key_kind=IndexKind.SORTED))
    t = cat.catalog().table("T")
    pk = cat.catalog().index("T_PK")
    assert t is not None and pk is not None
    assert t.primary_key_kind is IndexKind.SORTED
    assert t.primary_key_collations == (Collation.ASC_NULLS_LAST,)
    assert pk.kind is IndexKind.SORTED
    assert pk.collations == (Collation.ASC_NULLS_LAST,)


def test_sorted_primary_key_with_explicit_collations(cat: Catalog) -> None:
    cmd = _create(
        columns=("ID", "K"),
        pk=("ID", "K"),
        primary_key_kind=IndexKind.SORTED,
        primary_key_collations=(Collation.DESC_NULLS_FIRST, Collation.ASC_NULLS_FIRST),
    )
    apply(cat, cmd)
    pk = cat.catalog().index("T_PK")
    assert pk is not None
    assert pk.collations == (Collation.DESC_NULLS_FIRST, Collation.ASC_NULLS_FIRST)


def test_sorted_primary_key_needs_one_collation_per_column(cat: Catalog) -> None:
    cmd = _create(
        columns=("ID", "K"),
        pk=("ID", "K"),
        primary_key_kind=IndexKind.SORTED,
        primary_key_collations=(Collation.ASC_NULLS_LAST,),
    )
    rejected(cat, cmd, ValidationError, "PUBLIC.T")


def test_hash_primary_key_takes_no_collations(cat: Catalog) -> None:
    apply(cat, _create("H"))
    pk = cat.catalog().index("H_PK")
    assert pk is not None and pk.kind is IndexKind.HASH and pk.collations == ()
    cmd = _create(primary_key_collations=(Collation.ASC_NULLS_LAST,))
    rejected(cat, cmd, ValidationError, "PUBLIC.T", "HASH")


# -- create: function defaults ---------------------------------------------------


def test_rand_uuid_default_on_a_uuid_key_column(cat: Catalog) -> None:
    key = col("U", ColumnType.UUID, nullable=False, default=FunctionDefault("RAND_UUID"))
    apply(cat, CreateTable(name="T", columns=(key,), primary_key=("U",)))
    t = cat.catalog().table("T")
    assert t is not None and t.columns[0].default == FunctionDefault("RAND_UUID")


def test_function_default_only_on_primary_key_columns(cat: Catalog) -> None:
    other = col("U", ColumnType.UUID, default=FunctionDefault("RAND_UUID"))
    cmd = CreateTable(name="T", columns=(ID, other), primary_key=("ID",))
    rejected(cat, cmd, ValidationError, "'U'", "PUBLIC.T", "primary key")


def test_rand_uuid_only_on_uuid_columns(cat: Catalog) -> None:
    key = col("K", ColumnType.STRING, nullable=False, default=FunctionDefault("RAND_UUID"))
    cmd = CreateTable(name="T", columns=(key,), primary_key=("K",))
    rejected(cat, cmd, ValidationError, "'K'", "RAND_UUID", "UUID")


def test_unknown_default_function_fails(cat: Catalog) -> None:
    key = col("K", ColumnType.UUID, nullable=False, default=FunctionDefault("NOPE"))
    cmd = CreateTable(name="T", columns=(key,), primary_key=("K",))
    rejected(cat, cmd, ValidationError, "'NOPE'", "'K'")


# -- create: the shared relation namespace ---------------------------------------


def test_table_name_taken_by_a_table(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, table("T"), AlreadyExistsError, "PUBLIC.T")


def test_create_table_if_not_exists_is_a_noop(cat: Catalog) -> None:
    apply(cat, table("T"))
    noop(cat, _create("T", if_not_exists=True))


def test_table_name_taken_by_an_index(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    rejected(cat, table("I"), AlreadyExistsError, "PUBLIC.I")


def test_table_whose_pk_index_name_is_taken_by_an_index(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="X_PK", table="T", columns=("A",)))
    rejected(cat, table("X"), AlreadyExistsError, "PUBLIC.X_PK")


def test_table_named_like_another_tables_pk_index(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, table("T_PK"), AlreadyExistsError, "PUBLIC.T_PK")


def test_table_whose_pk_index_name_is_taken_by_a_table(cat: Catalog) -> None:
    apply(cat, table("X_PK"))
    rejected(cat, table("X"), AlreadyExistsError, "PUBLIC.X_PK")


def test_stopping_index_frees_its_name_for_a_table(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    apply(cat, DropIndex("I"))
    index = cat.catalog().indexes()[-1]
    assert index.name == "I" and index.status is IndexStatus.STOPPING
    apply(cat, table("I"))
    assert cat.catalog().table("I") is not None


def test_namespaces_are_per_schema(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    apply(cat, CreateSchema("S"), table("I", schema="S"), table("T", schema="S"))
    assert cat.catalog().table("I", "S") is not None


# -- drop ---------------------------------------------------------------------------


def test_drop_table_removes_it_and_all_its_indexes(cat: Catalog) -> None:
    apply(
        cat,
        table("T", col("A"), col("B")),
        CreateIndex(name="AVAIL", table="T", columns=("A",)),
    )
    apply(cat, DropIndex("AVAIL"))  # STOPPING
    apply(cat, CreateIndex(name="REG", table="T", columns=("A",)))
    apply(cat, CreateIndex(name="BUILD", table="T", columns=("B",)))
    build = cat.catalog().index("BUILD")
    assert build is not None
    apply(cat, StartBuildingIndex(build.id))
    apply(cat, table("OTHER", col("A")), CreateIndex(name="OI", table="OTHER", columns=("A",)))
    version = cat.catalog()
    t = version.table("T")
    assert t is not None
    owned = {i.id for i in version.indexes(t.id)}
    statuses = {i.status for i in version.indexes(t.id)}
    assert statuses == set(IndexStatus) and len(owned) == 4
    others = {i.id for i in version.indexes()} - owned

    apply(cat, DropTable("T"))
    after = cat.catalog()
    assert after.table("T") is None and after.table_by_id(t.id) is None
    assert {i.id for i in after.indexes()} == others
    assert after.index("T_PK") is None and after.index("REG") is None
    assert t.id not in after.table_indexes


def test_drop_missing_table_fails_unless_if_exists(cat: Catalog) -> None:
    rejected(cat, DropTable("NOPE"), NotFoundError, "PUBLIC.NOPE")
    noop(cat, DropTable("NOPE", if_exists=True))
    noop(cat, DropTable("NOPE", schema="NOSCHEMA", if_exists=True))


def test_recreated_table_gets_new_ids(cat: Catalog) -> None:
    apply(cat, table("T"))
    first = cat.catalog().table("T")
    apply(cat, DropTable("T"))
    apply(cat, table("T"))
    second = cat.catalog().table("T")
    assert first is not None and second is not None
    assert second.id != first.id
    assert second.primary_key_index_id not in (first.id, first.primary_key_index_id)
    assert [c.id for c in second.columns] == [0]


# -- rename -------------------------------------------------------------------------


def test_rename_table_renames_its_pk_index_and_keeps_ids(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    old = cat.catalog().table("T")
    assert old is not None
    result = apply(cat, RenameTable("T", "U"))
    version = cat.catalog()
    new = version.table("U")
    assert new is not None
    assert version.table("T") is None
    assert new.id == old.id
    assert new.columns == old.columns
    assert new.primary_key_index_id == old.primary_key_index_id
    assert new.table_version == old.table_version, "a rename does not bump table_version"
    assert new.update_version == result.version
    pk = version.index("U_PK")
    assert pk is not None and pk.id == old.primary_key_index_id
    assert version.index("T_PK") is None


def test_rename_table_stamps_the_pk_index_update_version(cat: Catalog) -> None:
    apply(cat, table("T"))
    result = apply(cat, RenameTable("T", "U"))
    pk = cat.catalog().index("U_PK")
    assert pk is not None
    assert pk.update_version == result.version


def test_rename_table_frees_the_old_names(cat: Catalog) -> None:
    apply(cat, table("T"))
    apply(cat, RenameTable("T", "U"))
    apply(cat, table("T"))
    assert cat.catalog().index("T_PK") is not None


def test_rename_table_to_a_taken_table_name(cat: Catalog) -> None:
    apply(cat, table("T"), table("U"))
    rejected(cat, RenameTable("T", "U"), AlreadyExistsError, "PUBLIC.U")


def test_rename_table_to_a_taken_index_name(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    rejected(cat, RenameTable("T", "I"), AlreadyExistsError, "PUBLIC.I")


def test_rename_table_when_the_new_pk_name_is_taken(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="U_PK", table="T", columns=("A",)))
    rejected(cat, RenameTable("T", "U"), AlreadyExistsError, "PUBLIC.U_PK")
    apply(cat, table("V_PK"))
    rejected(cat, RenameTable("T", "V"), AlreadyExistsError, "PUBLIC.V_PK")


def test_rename_table_to_its_own_pk_index_name(cat: Catalog) -> None:
    apply(cat, table("T"))
    apply(cat, RenameTable("T", "T_PK"))
    version = cat.catalog()
    assert version.table("T_PK") is not None
    assert version.index("T_PK_PK") is not None


def test_rename_table_to_its_own_name_is_a_noop(cat: Catalog) -> None:
    apply(cat, table("T"))
    noop(cat, RenameTable("T", "T"))


def test_rename_missing_table_fails_unless_if_exists(cat: Catalog) -> None:
    rejected(cat, RenameTable("NOPE", "X"), NotFoundError, "PUBLIC.NOPE")
    noop(cat, RenameTable("NOPE", "X", if_exists=True))


def test_rename_table_to_blank_fails(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, RenameTable("T", " "), ValidationError, "blank")


def test_rename_index_does_not_touch_its_table(cat: Catalog) -> None:
    apply(cat, table("T", col("A")), CreateIndex(name="I", table="T", columns=("A",)))
    before = cat.catalog().table("T")
    apply(cat, RenameIndex("I", "J"))
    assert cat.catalog().table("T") == before


# -- properties -----------------------------------------------------------------------


def test_set_table_properties(cat: Catalog) -> None:
    apply(cat, table("T"))
    result = apply(cat, SetTableProperties(name="T", stale_rows_fraction=0.5))
    t = cat.catalog().table("T")
    assert t is not None
    assert t.properties == TableProperties(0.5, TableProperties().min_stale_rows)
    assert t.table_version == 1, "property changes do not bump table_version"
    assert t.update_version == result.version
    apply(cat, SetTableProperties(name="T", min_stale_rows=0))
    t = cat.catalog().table("T")
    assert t is not None and t.properties == TableProperties(0.5, 0)


def test_create_table_with_properties(cat: Catalog) -> None:
    apply(cat, _create(properties=TableProperties(1.0, 10)))
    t = cat.catalog().table("T")
    assert t is not None and t.properties == TableProperties(1.0, 10)


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_stale_rows_fraction_in_unit_interval(cat: Catalog, fraction: float) -> None:
    apply(cat, table("T"))
    rejected(
        cat, SetTableProperties(name="T", stale_rows_fraction=fraction), ValidationError, "PUBLIC.T"
    )
    rejected(
        cat, _create("U", properties=TableProperties(fraction, 1)), ValidationError, "PUBLIC.U"
    )


@pytest.mark.parametrize("fraction", [float("nan"), float("inf"), 2**1100])
def test_stale_rows_fraction_is_a_finite_number_when_built(fraction: float) -> None:
    with pytest.raises(ValidationError, match="'stale_rows_fraction' of SetTableProperties 'T'"):
        SetTableProperties(name="T", stale_rows_fraction=fraction)
    with pytest.raises(ValidationError, match="'stale_rows_fraction' of TableProperties"):
        TableProperties(fraction, 1)


def test_min_stale_rows_not_negative(cat: Catalog) -> None:
    apply(cat, table("T"))
    rejected(cat, SetTableProperties(name="T", min_stale_rows=-1), ValidationError, "PUBLIC.T")


def test_unchanged_properties_are_a_noop(cat: Catalog) -> None:
    apply(cat, table("T"))
    noop(cat, SetTableProperties(name="T"))
    noop(cat, SetTableProperties(name="T", min_stale_rows=TableProperties().min_stale_rows))


def test_properties_of_a_missing_table(cat: Catalog) -> None:
    rejected(cat, SetTableProperties(name="NOPE", min_stale_rows=1), NotFoundError, "PUBLIC.NOPE")
    noop(cat, SetTableProperties(name="NOPE", min_stale_rows=1, if_exists=True))


def test_an_existing_zone_named_default_is_made_the_default(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Default", replicas=3))
    zone = cat.catalog().zone("Default")
    assert zone is not None and cat.catalog().default_zone is None
    apply(cat, table("T"))
    version = cat.catalog()
    assert version.zones() == [zone]
    assert version.default_zone == zone
    t = version.table("T")
    assert t is not None and t.zone_id == zone.id

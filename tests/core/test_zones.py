"""Distribution zones: create, alter, rename, default, drop."""

from __future__ import annotations

import math

import pytest

from almanac import (
    AlreadyExistsError,
    AlterZone,
    Catalog,
    ConsistencyMode,
    CreateTable,
    CreateZone,
    DropTable,
    DropZone,
    NotFoundError,
    RenameZone,
    SetDefaultZone,
    ValidationError,
    Zone,
)

from .support import ID, apply, noop, rejected, table


def _zone(cat: Catalog, name: str) -> Zone:
    zone = cat.catalog().zone(name)
    assert zone is not None
    return zone


def quorum_bounds(replicas: int) -> tuple[int, int]:
    """The spec's range: [min(r, 2), max(min(r, 2), ceil(r / 2))]."""
    low = min(replicas, 2)
    return low, max(low, math.ceil(replicas / 2))


# -- create ----------------------------------------------------------------------------


def test_create_zone_with_every_setting(cat: Catalog) -> None:
    before = cat.catalog().object_id_gen
    result = apply(
        cat,
        CreateZone(
            name="Z",
            partitions=7,
            replicas=5,
            quorum_size=3,
            scale_up_seconds=10,
            scale_down_seconds=20,
            node_filter="$[?(@.region == 'eu')]",
            storage_profiles=("ssd", "hdd"),
            consistency_mode=ConsistencyMode.HA,
        ),
    )
    z = _zone(cat, "Z")
    assert z.id == before
    assert (z.partitions, z.replicas, z.quorum_size) == (7, 5, 3)
    assert (z.scale_up_seconds, z.scale_down_seconds) == (10, 20)
    assert z.node_filter == "$[?(@.region == 'eu')]"
    assert z.storage_profiles == ("ssd", "hdd")
    assert z.default_storage_profile == "ssd"
    assert z.consistency_mode is ConsistencyMode.HA
    assert z.update_version == result.version
    assert cat.catalog().zone_by_id(z.id) == z
    assert cat.catalog().default_zone is None, "creating a zone does not make it default"


def test_create_zone_defaults(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    z = _zone(cat, "Z")
    assert 1 <= z.partitions <= 65000
    assert z.replicas >= 1
    low, high = quorum_bounds(z.replicas)
    assert low <= z.quorum_size <= high
    assert len(z.storage_profiles) >= 1
    assert z.consistency_mode is ConsistencyMode.STRONG


@pytest.mark.parametrize("partitions", [1, 2, 65000])
def test_partitions_in_range(cat: Catalog, partitions: int) -> None:
    apply(cat, CreateZone(name="Z", partitions=partitions))
    assert _zone(cat, "Z").partitions == partitions


@pytest.mark.parametrize("partitions", [0, -1, 65001])
def test_partitions_out_of_range(cat: Catalog, partitions: int) -> None:
    rejected(cat, CreateZone(name="Z", partitions=partitions), ValidationError, "'Z'", "Partitions")


@pytest.mark.parametrize("replicas", [0, -3])
def test_replicas_at_least_one(cat: Catalog, replicas: int) -> None:
    rejected(cat, CreateZone(name="Z", replicas=replicas), ValidationError, "'Z'", "Replicas")


QUORUM_CASES = [(r, q) for r in range(1, 10) for q in range(0, r + 2)]


@pytest.mark.parametrize(("replicas", "quorum"), QUORUM_CASES)
def test_quorum_range(cat: Catalog, replicas: int, quorum: int) -> None:
    low, high = quorum_bounds(replicas)
    cmd = CreateZone(name="Z", replicas=replicas, quorum_size=quorum)
    if low <= quorum <= high:
        apply(cat, cmd)
        assert _zone(cat, "Z").quorum_size == quorum
    else:
        rejected(cat, cmd, ValidationError, "'Z'", "Quorum")


@pytest.mark.parametrize("replicas", range(1, 12))
def test_default_quorum_is_in_range(cat: Catalog, replicas: int) -> None:
    apply(cat, CreateZone(name="Z", replicas=replicas))
    low, high = quorum_bounds(replicas)
    assert low <= _zone(cat, "Z").quorum_size <= high


def test_storage_profiles_not_empty(cat: Catalog) -> None:
    rejected(cat, CreateZone(name="Z", storage_profiles=()), ValidationError, "'Z'")


def test_create_zone_with_taken_name(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    rejected(cat, CreateZone(name="Z"), AlreadyExistsError, "'Z'")
    noop(cat, CreateZone(name="Z", partitions=3, if_not_exists=True))
    assert _zone(cat, "Z").partitions != 3


@pytest.mark.parametrize("name", ["", "   "])
def test_create_zone_with_blank_name(cat: Catalog, name: str) -> None:
    rejected(cat, CreateZone(name=name), ValidationError, "blank")


# -- alter ------------------------------------------------------------------------------


def test_alter_zone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", replicas=3, storage_profiles=("a",)))
    z = _zone(cat, "Z")
    result = apply(
        cat,
        AlterZone(
            name="Z",
            replicas=7,
            quorum_size=4,
            scale_up_seconds=1,
            scale_down_seconds=2,
            node_filter="f",
            storage_profiles=("a", "b"),
        ),
    )
    altered = _zone(cat, "Z")
    assert altered.id == z.id and altered.partitions == z.partitions
    assert (altered.replicas, altered.quorum_size) == (7, 4)
    assert (altered.scale_up_seconds, altered.scale_down_seconds) == (1, 2)
    assert altered.node_filter == "f" and altered.storage_profiles == ("a", "b")
    assert altered.update_version == result.version


@pytest.mark.parametrize(
    ("replicas", "quorum", "new_replicas"),
    [(1, 1, 5), (5, 3, 1), (5, 3, 3), (9, 5, 5), (3, 2, 9), (7, 4, 2)],
)
def test_replica_change_clamps_the_quorum(
    cat: Catalog, replicas: int, quorum: int, new_replicas: int
) -> None:
    apply(cat, CreateZone(name="Z", replicas=replicas, quorum_size=quorum))
    apply(cat, AlterZone(name="Z", replicas=new_replicas))
    low, high = quorum_bounds(new_replicas)
    assert _zone(cat, "Z").quorum_size == min(max(quorum, low), high)


def test_explicit_quorum_is_not_clamped_but_checked(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", replicas=5, quorum_size=3))
    rejected(cat, AlterZone(name="Z", replicas=3, quorum_size=3), ValidationError, "'Z'", "Quorum")
    rejected(cat, AlterZone(name="Z", quorum_size=1), ValidationError, "'Z'")
    apply(cat, AlterZone(name="Z", replicas=9, quorum_size=5))
    assert (_zone(cat, "Z").replicas, _zone(cat, "Z").quorum_size) == (9, 5)


def test_alter_replicas_below_one(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    rejected(cat, AlterZone(name="Z", replicas=0), ValidationError, "'Z'")


def test_partitions_are_fixed_after_creation(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", partitions=4))
    rejected(cat, AlterZone(name="Z", partitions=5), ValidationError, "'Z'", "Partitions")
    noop(cat, AlterZone(name="Z", partitions=4))


def test_consistency_mode_is_fixed_after_creation(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", consistency_mode=ConsistencyMode.HA))
    rejected(
        cat,
        AlterZone(name="Z", consistency_mode=ConsistencyMode.STRONG),
        ValidationError,
        "'Z'",
        "Consistency",
    )
    noop(cat, AlterZone(name="Z", consistency_mode=ConsistencyMode.HA))


def test_alter_zone_profiles_not_empty(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    rejected(cat, AlterZone(name="Z", storage_profiles=()), ValidationError, "'Z'")


def test_alter_zone_cannot_remove_a_profile_in_use(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", storage_profiles=("a", "b")))
    apply(
        cat,
        CreateTable(name="T", columns=(ID,), primary_key=("ID",), zone="Z", storage_profile="b"),
    )
    rejected(cat, AlterZone(name="Z", storage_profiles=("a",)), ValidationError, "'Z'", "'b'")
    apply(cat, AlterZone(name="Z", storage_profiles=("b", "c")))


def test_alter_zone_unchanged_is_a_noop(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z", replicas=3))
    z = _zone(cat, "Z")
    noop(cat, AlterZone(name="Z"))
    noop(cat, AlterZone(name="Z", replicas=3, node_filter=z.node_filter))


def test_alter_missing_zone(cat: Catalog) -> None:
    rejected(cat, AlterZone(name="NOPE", replicas=2), NotFoundError, "'NOPE'")
    noop(cat, AlterZone(name="NOPE", replicas=2, if_exists=True))


# -- rename -----------------------------------------------------------------------------


def test_rename_zone_keeps_its_id_and_tables(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), table("T", zone="Z"))
    z = _zone(cat, "Z")
    result = apply(cat, RenameZone("Z", "Y"))
    y = _zone(cat, "Y")
    assert y.id == z.id and cat.catalog().zone("Z") is None
    assert y.update_version == result.version
    t = cat.catalog().table("T")
    assert t is not None and t.zone_id == y.id


def test_rename_zone_to_a_taken_name(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), CreateZone(name="Y"))
    rejected(cat, RenameZone("Z", "Y"), AlreadyExistsError, "'Y'")


def test_rename_missing_zone(cat: Catalog) -> None:
    rejected(cat, RenameZone("NOPE", "X"), NotFoundError, "'NOPE'")
    noop(cat, RenameZone("NOPE", "X", if_exists=True))


def test_rename_zone_to_a_blank_name(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    rejected(cat, RenameZone("Z", " "), ValidationError, "blank")


def test_renamed_default_zone_stays_default(cat: Catalog) -> None:
    apply(cat, table("T"))
    apply(cat, RenameZone("Default", "Main"))
    apply(cat, table("U"))
    version = cat.catalog()
    assert version.default_zone == _zone(cat, "Main")
    assert version.zone("Default") is None
    assert len(version.zones()) == 1


# -- default ---------------------------------------------------------------------------


def test_set_default_zone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), CreateZone(name="Y"))
    apply(cat, SetDefaultZone("Z"))
    assert cat.catalog().default_zone == _zone(cat, "Z")
    apply(cat, SetDefaultZone("Y"))
    assert cat.catalog().default_zone == _zone(cat, "Y")
    assert cat.catalog().default_zone_id == _zone(cat, "Y").id


def test_set_default_zone_that_is_already_default_is_a_noop(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), SetDefaultZone("Z"))
    noop(cat, SetDefaultZone("Z"))


def test_set_missing_zone_as_default(cat: Catalog) -> None:
    rejected(cat, SetDefaultZone("NOPE"), NotFoundError, "'NOPE'")
    noop(cat, SetDefaultZone("NOPE", if_exists=True))


# -- drop --------------------------------------------------------------------------------


def test_drop_zone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"))
    z = _zone(cat, "Z")
    apply(cat, DropZone("Z"))
    assert cat.catalog().zone("Z") is None and cat.catalog().zone_by_id(z.id) is None


def test_default_zone_cannot_be_dropped(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), SetDefaultZone("Z"))
    rejected(cat, DropZone("Z"), ValidationError, "'Z'", "default")
    rejected(cat, DropZone("Z", if_exists=True), ValidationError, "'Z'")


def test_zone_used_by_a_table_cannot_be_dropped(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), table("T", zone="Z"))
    rejected(cat, DropZone("Z"), ValidationError, "'Z'", "PUBLIC.T")


def test_drop_missing_zone(cat: Catalog) -> None:
    rejected(cat, DropZone("NOPE"), NotFoundError, "'NOPE'")
    noop(cat, DropZone("NOPE", if_exists=True))


def test_zone_can_be_dropped_once_its_tables_are_gone(cat: Catalog) -> None:
    apply(cat, CreateZone(name="Z"), table("T", zone="Z"))
    apply(cat, DropTable("T"), DropZone("Z"))
    assert cat.catalog().zone("Z") is None

"""Versions: one per change, bulk execution, reading by version and by time."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from pathlib import Path

import pytest

import almanac
from almanac import (
    AddColumns,
    AlreadyExistsError,
    AlterColumn,
    AlterField,
    AlterZone,
    Catalog,
    CatalogError,
    CatalogVersion,
    Command,
    ConflictError,
    CreateIndex,
    CreateSchema,
    CreateZone,
    DropColumns,
    DropIndex,
    DropSchema,
    DropTable,
    DropZone,
    EvolvePartitionSpec,
    NotFoundError,
    PurgeTable,
    RenameColumn,
    RenameIndex,
    RenameTable,
    RenameZone,
    SetDefaultZone,
    SetPartitionSpec,
    SetPrimaryKey,
    SetSortOrder,
    SetTableProperties,
    ValidationError,
    VersionInfo,
    VersionNotFoundError,
)
from almanac.model.entries import UpdateEntry
from almanac.node.log import UpdateLog

from .conftest import open_catalog
from .support import apply, col, noop, rejected, table


def test_initial_versions(cat: Catalog) -> None:
    assert cat.latest_version == 1
    assert cat.catalog().version == 1
    assert cat.catalog(0).version == 0
    assert cat.catalog(0).object_id_gen == 0
    assert cat.catalog(0).schema("PUBLIC") is None
    assert cat.catalog(1).schema("PUBLIC") is not None


def test_each_change_adds_exactly_one_version(cat: Catalog) -> None:
    for expected, cmd in enumerate(
        [CreateSchema("A"), CreateSchema("B"), table("T"), DropTable("T")], start=2
    ):
        result = cat.execute([cmd])
        assert result.created and result.version == expected == cat.latest_version


def test_a_batch_makes_one_version(cat: Catalog) -> None:
    result = apply(cat, CreateSchema("A"), CreateSchema("B"), table("T", schema="A"))
    assert result.version == 2
    assert result.applied == (True, True, True)
    assert result.skipped == ()
    version = cat.catalog()
    assert version.schema("A") is not None and version.schema("B") is not None
    assert version.table("T", "A") is not None
    assert cat.catalog(1).schema("A") is None


def test_later_commands_see_earlier_ones(cat: Catalog) -> None:
    apply(
        cat,
        CreateSchema("S"),
        table("T", col("A"), schema="S"),
        AddColumns(table="T", schema="S", columns=(col("B"),)),
        CreateIndex(name="I", table="T", schema="S", columns=("B",)),
        CreateZone(name="Z"),
        SetDefaultZone("Z"),
        AlterZone(name="Z", replicas=3),
    )
    version = cat.catalog()
    t = version.table("T", "S")
    assert t is not None and [c.name for c in t.columns] == ["ID", "A", "B"]
    assert version.index("I", "S") is not None
    zone = version.zone("Z")
    assert zone is not None and zone.replicas == 3 and version.default_zone == zone


def test_a_failing_command_discards_the_whole_batch(cat: Catalog) -> None:
    apply(cat, table("T"))
    before = cat.catalog()
    rejected(
        cat,
        [CreateSchema("S"), table("U", schema="S"), CreateSchema("S")],
        AlreadyExistsError,
        "'S'",
    )
    assert cat.catalog() is before
    rejected(cat, [CreateSchema("S"), DropTable("NOPE")], NotFoundError, "PUBLIC.NOPE")
    assert cat.catalog().schema("S") is None


def test_a_batch_of_noops_returns_the_current_version(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    result = noop(cat, CreateSchema("S", if_not_exists=True), DropTable("NOPE", if_exists=True))
    assert result.version == 2
    assert result.applied == (False, False)
    assert result.skipped == (0, 1)


def test_an_empty_batch_returns_the_current_version(cat: Catalog) -> None:
    result = noop(cat)
    assert result.version == 1 and result.applied == ()


def test_result_tells_applied_and_skipped_commands(cat: Catalog) -> None:
    result = apply(
        cat,
        CreateSchema("S"),
        CreateSchema("S", if_not_exists=True),
        DropTable("NOPE", if_exists=True),
        CreateSchema("R"),
    )
    assert result.applied == (True, False, False, True)
    assert result.skipped == (1, 2)


def test_something_that_is_not_a_command_is_refused(cat: Catalog) -> None:
    bogus: list[almanac.Command] = [CreateSchema("S"), "CREATE SCHEMA X"]  # type: ignore[list-item]
    with pytest.raises(CatalogError):
        cat.execute(bogus)
    assert cat.latest_version == 1


def test_activation_timestamps_strictly_increase(cat: Catalog) -> None:
    for i in range(5):
        apply(cat, CreateSchema(f"S{i}"))
    times = [cat.catalog(v).activation_time for v in range(cat.latest_version + 1)]
    assert all(a < b for a, b in itertools.pairwise(times))
    info = cat.history()
    assert [i.version for i in info] == list(range(1, cat.latest_version + 1))
    assert [i.activation_time for i in info] == times[1:]


def test_catalog_at_returns_the_newest_version_active_at_a_time(cat: Catalog) -> None:
    apply(cat, CreateSchema("A"))
    apply(cat, CreateSchema("B"))
    t1, t2, t3 = (cat.catalog(v).activation_time for v in (1, 2, 3))
    assert cat.catalog_at(t1).version == 1
    assert cat.catalog_at(t2 - 1).version == 1
    assert cat.catalog_at(t2).version == 2
    assert cat.catalog_at(t3 - 1).version == 2
    assert cat.catalog_at(t3).version == 3
    assert cat.catalog_at(t3 + 10**12).version == 3
    assert cat.catalog_at(t1 - 1).version == 0


def test_catalog_at_a_datetime(cat: Catalog) -> None:
    apply(cat, CreateSchema("A"))
    now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    assert cat.catalog_at(now).version == cat.latest_version
    long_ago = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    assert cat.catalog_at(long_ago).version == 0


def test_catalog_at_before_time_began(cat: Catalog) -> None:
    with pytest.raises(VersionNotFoundError):
        cat.catalog_at(-1)


def test_catalog_by_version_is_exact_and_immutable(cat: Catalog) -> None:
    apply(cat, table("T", col("A")))
    v2 = cat.catalog(2)
    apply(cat, AddColumns(table="T", columns=(col("B"),)))
    apply(cat, DropTable("T"))
    assert cat.catalog(2) is v2
    t = cat.catalog(2).table("T")
    assert t is not None and [c.name for c in t.columns] == ["ID", "A"]
    t3 = cat.catalog(3).table("T")
    assert t3 is not None and [c.name for c in t3.columns] == ["ID", "A", "B"]
    assert cat.catalog(4).table("T") is None
    assert [cat.catalog(v).version for v in range(5)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("version", [2, 3, 100, -1])
def test_unknown_version(cat: Catalog, version: int) -> None:
    with pytest.raises(VersionNotFoundError) as info:
        cat.catalog(version)
    assert str(version) in str(info.value)
    assert info.value.version == version


def test_history_holds_each_versions_update(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"))
    apply(cat, table("T"))
    info = cat.history()
    assert all(isinstance(i, VersionInfo) for i in info)
    assert [i.update.version for i in info] == [1, 2, 3]
    assert all(i.update.entries for i in info)
    assert [i.version for i in cat.history(since=3)] == [3]
    assert all(i.commit_time <= i.activation_time for i in info)


def test_update_version_records_the_last_touch(cat: Catalog) -> None:
    v_schema = apply(cat, CreateSchema("S")).version
    v_table = apply(cat, table("T", col("A"), schema="S")).version
    v_zone = apply(cat, CreateZone(name="Z")).version
    v_index = apply(cat, CreateIndex(name="I", table="T", schema="S", columns=("A",))).version
    v_alter = apply(cat, AddColumns(table="T", schema="S", columns=(col("B"),))).version
    version = cat.catalog()
    s, t, z, i = (
        version.schema("S"),
        version.table("T", "S"),
        version.zone("Z"),
        version.index("I", "S"),
    )
    assert s is not None and t is not None and z is not None and i is not None
    assert s.update_version == v_schema
    assert t.update_version == v_alter and t.created_version == v_table
    assert z.update_version == v_zone
    assert i.update_version == v_index


def test_object_ids_come_from_one_generator(cat: Catalog) -> None:
    apply(cat, CreateSchema("S"), CreateZone(name="Z"), table("T"), CreateSchema("R"))
    version = cat.catalog()
    ids = (
        [s.id for s in version.schemas()]
        + [z.id for z in version.zones()]
        + [t.id for t in version.tables()]
        + [i.id for i in version.indexes()]
    )
    assert sorted(ids) == list(range(len(ids)))
    assert version.object_id_gen == len(ids)


def test_no_version_is_made_by_a_validation_error_after_an_id_was_taken(cat: Catalog) -> None:
    rejected(cat, [CreateZone(name="Z"), CreateZone(name="Y", replicas=0)], ValidationError, "'Y'")
    apply(cat, CreateZone(name="Y"))
    y = cat.catalog().zone("Y")
    assert y is not None and y.id == 1


def test_closed_catalog_refuses_to_execute(backend: str, tmp_path: Path) -> None:
    cat = open_catalog(backend, tmp_path)
    cat.close()
    with pytest.raises(CatalogError):
        cat.execute([CreateSchema("S")])


def test_unsupported_target() -> None:
    with pytest.raises(CatalogError):
        almanac.connect("nope://")


# -- IF [NOT] EXISTS ----------------------------------------------------------------------

# For every command with an IF [NOT] EXISTS flag: the command that fails without the
# flag, and the error it fails with. With the flag, the same command is a no-op.
IF_FLAG_CASES: dict[str, tuple[Command, type[CatalogError]]] = {
    "CreateSchema": (CreateSchema("S"), AlreadyExistsError),
    "DropSchema": (DropSchema("NOPE"), NotFoundError),
    "CreateTable": (table("T"), AlreadyExistsError),
    "DropTable": (DropTable("NOPE"), NotFoundError),
    "PurgeTable": (PurgeTable("NOPE"), NotFoundError),
    "RenameTable": (RenameTable("NOPE", "X"), NotFoundError),
    "SetTableProperties": (SetTableProperties(name="NOPE", min_stale_rows=1), NotFoundError),
    "SetPrimaryKey": (SetPrimaryKey(name="NOPE", primary_key=()), NotFoundError),
    "SetPartitionSpec": (SetPartitionSpec(name="NOPE", fields=()), NotFoundError),
    "EvolvePartitionSpec": (EvolvePartitionSpec(name="NOPE", drop=("X",)), NotFoundError),
    "SetSortOrder": (SetSortOrder(name="NOPE", fields=()), NotFoundError),
    "AddColumns": (AddColumns(table="T", columns=(col("A"),)), AlreadyExistsError),
    "DropColumns": (DropColumns(table="T", columns=("NOPE",)), NotFoundError),
    "RenameColumn": (RenameColumn(table="T", column="NOPE", new_name="B"), NotFoundError),
    "AlterColumn": (AlterColumn(table="NOPE", column="A", not_null=False), NotFoundError),
    "AlterField": (AlterField(table="NOPE", path=("A",), comment="x"), NotFoundError),
    "CreateIndex": (CreateIndex(name="I", table="T", columns=("A",)), AlreadyExistsError),
    "DropIndex": (DropIndex("NOPE"), NotFoundError),
    "RenameIndex": (RenameIndex("NOPE", "X"), NotFoundError),
    "CreateZone": (CreateZone(name="Z"), AlreadyExistsError),
    "AlterZone": (AlterZone(name="NOPE", replicas=2), NotFoundError),
    "RenameZone": (RenameZone("NOPE", "X"), NotFoundError),
    "SetDefaultZone": (SetDefaultZone("NOPE"), NotFoundError),
    "DropZone": (DropZone("NOPE"), NotFoundError),
}
# Commands with a flag for the table as well as one for the objects inside it.
EXTRA_FLAG_CASES: list[tuple[Command, type[CatalogError], str]] = [
    (AddColumns(table="NOPE", columns=(col("B"),)), NotFoundError, "if_table_exists"),
    (DropColumns(table="NOPE", columns=("A",)), NotFoundError, "if_table_exists"),
    (RenameColumn(table="NOPE", column="A", new_name="B"), NotFoundError, "if_table_exists"),
]


# The bare flags guard the object a command names (``name``); a command on
# columns of a table says which of the two each of its flags guards.
OWN_FLAGS = {"if_exists", "if_not_exists"}
COLUMN_FLAGS = {"if_table_exists", "if_column_exists", "if_column_not_exists"}


def _flags(cls: type) -> set[str]:
    if not dataclasses.is_dataclass(cls):
        return set()
    return {f.name for f in dataclasses.fields(cls) if f.name.startswith("if_")}


def _flag_of(command: Command) -> str:
    flags = _flags(type(command))
    (flag,) = sorted(flags - {"if_table_exists"}) or ["if_table_exists"]
    return flag


def test_every_if_flag_names_what_it_guards() -> None:
    for name in almanac.__all__:
        cls = getattr(almanac, name)
        if isinstance(cls, type) and issubclass(cls, Command) and dataclasses.is_dataclass(cls):
            fields = {f.name for f in dataclasses.fields(cls)}
            expected = COLUMN_FLAGS if "table" in fields and "name" not in fields else OWN_FLAGS
            assert _flags(cls) <= expected, name


def _setup_for_flags(cat: Catalog) -> None:
    apply(
        cat,
        CreateSchema("S"),
        CreateZone(name="Z"),
        table("T", col("A")),
        CreateIndex(name="I", table="T", columns=("A",)),
    )


def test_every_command_with_an_if_flag_is_covered() -> None:
    flagged: set[str] = set()
    for name in almanac.__all__:
        cls = getattr(almanac, name)
        if isinstance(cls, type) and issubclass(cls, Command) and _flags(cls):
            flagged.add(name)
    assert flagged == set(IF_FLAG_CASES)


@pytest.mark.parametrize("name", list(IF_FLAG_CASES))
def test_if_flag_turns_the_matching_error_into_a_noop(cat: Catalog, name: str) -> None:
    command, error = IF_FLAG_CASES[name]
    assert type(command).__name__ == name
    _setup_for_flags(cat)
    rejected(cat, command, error)
    flag = _flag_of(command)
    result = noop(cat, dataclasses.replace(command, **{flag: True}))  # type: ignore[type-var]
    assert result.skipped == (0,)


@pytest.mark.parametrize(("command", "error", "flag"), EXTRA_FLAG_CASES)
def test_table_level_if_exists_flags(
    cat: Catalog, command: Command, error: type[CatalogError], flag: str
) -> None:
    rejected(cat, command, error)
    noop(cat, dataclasses.replace(command, **{flag: True}))  # type: ignore[type-var]


# -- racing writers --------------------------------------------------------------------------


class _Racing(Command):
    """Creates schema ``name``, but first lets ``other`` commit ``races`` times,
    each time after this node took its base version."""

    def __init__(self, other: Catalog, races: int, name: str) -> None:
        self.other = other
        self.races = races
        self.name = name
        self.bases: list[int] = []

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        self.bases.append(version.version)
        if self.races > 0:
            self.races -= 1
            self.other.execute([CreateSchema(f"{self.name}_RIVAL_{self.races}")])
        return CreateSchema(self.name).validate(version)


def _two_nodes(backend: str, directory: Path, max_attempts: int) -> tuple[Catalog, Catalog]:
    """Two nodes on one store: two connects to one SQLite directory, or a
    second node on the first one's in-memory store."""
    first = open_catalog(backend, directory)
    first.max_attempts = max_attempts
    if backend == "memory":
        second = Catalog(UpdateLog(first.log.store))
    else:
        second = open_catalog(backend, directory)
    return first, second


def test_a_commit_that_loses_a_race_is_validated_again(backend: str, tmp_path: Path) -> None:
    first, second = _two_nodes(backend, tmp_path, max_attempts=3)
    with first, second:
        racing = _Racing(second, races=2, name="MINE")
        result = first.execute([racing])
        assert result.created and result.version == 4
        assert racing.bases == [2, 3, 4], "each retry validates against the winner's version"
        assert second.catalog_ready(result.version, timeout=10)
        assert second.catalog() == first.catalog()
        assert [s.name for s in first.catalog().schemas()] == [
            "PUBLIC",
            "MINE_RIVAL_1",
            "MINE_RIVAL_0",
            "MINE",
        ]


def test_a_commit_that_keeps_losing_gives_up_with_a_conflict_error(
    backend: str, tmp_path: Path
) -> None:
    first, second = _two_nodes(backend, tmp_path, max_attempts=3)
    with first, second:
        racing = _Racing(second, races=5, name="MINE")
        with pytest.raises(ConflictError) as info:
            first.execute([racing])
        assert info.value.attempts == 3
        assert len(racing.bases) == 3
        assert first.catalog().schema("MINE") is None
        assert second.catalog_ready(first.latest_version, timeout=10)
        assert second.catalog() == first.catalog()
        assert first.latest_version == 4


def test_a_version_becomes_active_after_the_delay() -> None:
    with almanac.connect("memory://", delay_ms=30) as cat:
        result = cat.execute([CreateSchema("S")])
        (info,) = cat.history(since=result.version)
        delay = 30 << 16  # hybrid timestamps carry milliseconds above 16 logical bits
        assert info.activation_time >= info.commit_time + delay
        # Before its activation time a reader still gets the previous version...
        assert cat.catalog_at(info.activation_time - 1).version == result.version - 1
        assert cat.catalog_at(info.commit_time).version == result.version - 1
        # ...and execute returned only once the new version was active.
        assert cat.clock.now() >= info.activation_time
        assert cat.catalog_at(cat.clock.now()).version == result.version

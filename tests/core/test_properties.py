"""Property tests: random command sequences keep the catalog's invariants, and a
failing batch changes nothing."""

from __future__ import annotations

import dataclasses
import itertools
import math
import shutil
import tempfile
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import almanac
from almanac import (
    AddColumns,
    AlterColumn,
    AlterZone,
    CatalogError,
    CatalogVersion,
    ColumnDef,
    ColumnType,
    Command,
    ConstantDefault,
    CreateIndex,
    CreateSchema,
    CreateTable,
    CreateZone,
    DropColumns,
    DropIndex,
    DropSchema,
    DropTable,
    DropZone,
    Event,
    EventType,
    IndexKind,
    IndexStatus,
    MakeIndexAvailable,
    RemoveIndex,
    RenameIndex,
    RenameTable,
    RenameZone,
    SetDefaultZone,
    SetPrimaryKey,
    SetTableProperties,
    StartBuildingIndex,
)
from almanac.model.entries import apply_update

from .support import ID

# -- command strategies -----------------------------------------------------------------
# Small name pools so that commands often hit existing objects (and often collide).

SCHEMAS = st.sampled_from(["PUBLIC"] * 6 + ["S1", "S1", "S2", "SYSTEM"])
SCHEMA_NAMES = st.sampled_from(["S1", "S1", "S2", "PUBLIC", "SYSTEM", " "])
TABLES = st.sampled_from(["T1"] * 4 + ["T2"] * 3 + ["T3", "T1_PK", "I1"])
INDEXES = st.sampled_from(["I1"] * 3 + ["I2"] * 2 + ["I3", "T2", "T3_PK"])
COLUMNS = st.sampled_from(["A"] * 3 + ["B"] * 3 + ["C", "ID"])
ZONES = st.sampled_from(["Default", "Z1", "Z1", "Z2"])
TYPES = st.sampled_from(
    [
        ColumnType.INT8,
        ColumnType.INT16,
        ColumnType.INT32,
        ColumnType.INT64,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.STRING,
        ColumnType.DECIMAL,
    ]
)
PROFILES = st.sampled_from([None, None, ("default",), ("default", "fast"), ("fast",), ()])
INDEX_IDS = st.integers(0, 40)
WIDER = {
    ColumnType.INT8: [ColumnType.INT16, ColumnType.INT32, ColumnType.INT64],
    ColumnType.INT16: [ColumnType.INT32, ColumnType.INT64],
    ColumnType.INT32: [ColumnType.INT64],
    ColumnType.FLOAT: [ColumnType.DOUBLE],
}

column_defs = st.builds(
    ColumnDef,
    name=st.sampled_from(["A", "B", "C", "C", "ID"]),
    type=TYPES,
    nullable=st.sampled_from([True, True, True, False]),
    default=st.sampled_from([None, None, ConstantDefault(1)]),
)


@st.composite
def create_table(draw: st.DrawFn) -> CreateTable:
    extra = draw(st.lists(column_defs, max_size=3, unique_by=lambda c: c.name))
    columns = tuple(c for c in extra if c.name != "ID")
    if draw(st.integers(0, 9)) > 0:
        columns = (ID, *columns)
    return CreateTable(
        name=draw(TABLES),
        schema=draw(SCHEMAS),
        columns=columns,
        primary_key=draw(st.sampled_from([("ID",), ("ID",), ("ID",), ("A",), ()])),
        zone=draw(st.one_of(st.none(), st.none(), ZONES)),
        primary_key_kind=draw(st.sampled_from(IndexKind)),
        colocation=draw(st.sampled_from([None, None, None, ("ID",)])),
        if_not_exists=draw(st.booleans()),
    )


schema_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(CreateSchema, SCHEMA_NAMES, if_not_exists=st.booleans()),
    st.builds(DropSchema, SCHEMA_NAMES, if_exists=st.booleans(), cascade=st.booleans()),
)

table_commands: st.SearchStrategy[Command] = st.one_of(
    create_table(),
    st.builds(
        SetPrimaryKey,
        name=TABLES,
        primary_key=st.sampled_from([(), ("ID",), ("A",), ("ID", "A")]),
        schema=SCHEMAS,
        if_exists=st.booleans(),
    ),
    st.builds(DropTable, TABLES, schema=SCHEMAS, if_exists=st.booleans()),
    st.builds(RenameTable, TABLES, TABLES, schema=SCHEMAS),
    st.builds(
        SetTableProperties,
        name=TABLES,
        schema=SCHEMAS,
        stale_rows_fraction=st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 1.5])),
        min_stale_rows=st.one_of(st.none(), st.integers(-1, 3)),
    ),
)

column_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        AddColumns,
        table=TABLES,
        schema=SCHEMAS,
        columns=st.lists(column_defs, min_size=1, max_size=2).map(tuple),
        if_column_not_exists=st.booleans(),
    ),
    st.builds(
        DropColumns,
        table=TABLES,
        schema=SCHEMAS,
        columns=st.lists(COLUMNS, min_size=1, max_size=2).map(tuple),
        if_column_exists=st.booleans(),
    ),
    st.builds(
        AlterColumn,
        table=TABLES,
        schema=SCHEMAS,
        column=COLUMNS,
        type=st.one_of(st.none(), TYPES),
        not_null=st.one_of(st.none(), st.booleans()),
        precision=st.sampled_from([None, None, 10, 32767]),
    ),
)

index_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        CreateIndex,
        name=INDEXES,
        table=TABLES,
        schema=SCHEMAS,
        columns=st.lists(COLUMNS, max_size=3).map(tuple),
        unique=st.booleans(),
        kind=st.sampled_from(IndexKind),
        if_not_exists=st.booleans(),
    ),
    st.builds(DropIndex, INDEXES, schema=SCHEMAS, if_exists=st.booleans()),
    st.builds(RenameIndex, INDEXES, INDEXES, schema=SCHEMAS),
    st.builds(StartBuildingIndex, INDEX_IDS),
    st.builds(MakeIndexAvailable, INDEX_IDS),
    st.builds(RemoveIndex, INDEX_IDS),
)

zone_commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        CreateZone,
        name=ZONES,
        partitions=st.sampled_from([None, None, 1, 8, 0, 65001]),
        replicas=st.one_of(st.none(), st.integers(0, 7)),
        quorum_size=st.one_of(st.none(), st.none(), st.integers(0, 4)),
        storage_profiles=PROFILES,
    ),
    st.builds(
        AlterZone,
        name=ZONES,
        replicas=st.one_of(st.none(), st.integers(0, 7)),
        quorum_size=st.one_of(st.none(), st.none(), st.integers(0, 4)),
        storage_profiles=PROFILES,
    ),
    st.builds(RenameZone, ZONES, ZONES),
    st.builds(SetDefaultZone, ZONES),
    st.builds(DropZone, ZONES, if_exists=st.booleans()),
)

commands: st.SearchStrategy[Command] = st.one_of(
    schema_commands, table_commands, column_commands, index_commands, zone_commands
)

# -- invariants -----------------------------------------------------------------------------


def quorum_bounds(replicas: int) -> tuple[int, int]:
    low = min(replicas, 2)
    return low, max(low, math.ceil(replicas / 2))


def check_snapshot(version: CatalogVersion) -> None:
    """Internal consistency of one version: name maps, ownership, keys, ranges."""
    v = version.version
    assert dict(version.schema_names) == {s.name: s.id for s in version.schemas_by_id.values()}
    assert dict(version.zone_names) == {z.name: z.id for z in version.zones_by_id.values()}
    assert dict(version.table_names) == {
        (t.schema_id, t.name): t.id for t in version.tables_by_id.values()
    }
    alive = {
        i.id: i for i in version.indexes_by_id.values() if i.status is not IndexStatus.STOPPING
    }
    assert dict(version.index_names) == {(i.schema_id, i.name): i.id for i in alive.values()}
    assert not set(version.index_names) & set(version.table_names), "tables and indexes share names"
    # The case-free key maps, kept up entry by entry, equal those derived
    # afresh from the name maps (as a decoded snapshot gets them), and no
    # two names in one parent differ only by case.
    compared = [f.name for f in dataclasses.fields(version) if f.compare]
    derived = CatalogVersion(**{name: getattr(version, name) for name in compared})
    for keys in ("schema_keys", "table_keys", "index_keys", "zone_keys"):
        assert getattr(version, keys) == getattr(derived, keys), keys
    assert version.name_collisions() == []
    assert set(version.table_indexes) == set(version.tables_by_id)
    if version.default_zone_id is not None:
        assert version.default_zone_id in version.zones_by_id
    for z in version.zones_by_id.values():
        assert 1 <= z.partitions <= 65000 and z.replicas >= 1 and z.storage_profiles
        low, high = quorum_bounds(z.replicas)
        assert low <= z.quorum_size <= high
        assert 0 < z.update_version <= v
    for s in version.schemas_by_id.values():
        assert 0 < s.update_version <= v
    for t in version.tables_by_id.values():
        assert t.schema_id in version.schemas_by_id
        zone = version.zones_by_id.get(t.zone_id)
        assert zone is not None and t.storage_profile in zone.storage_profiles
        owned = [i for i in version.indexes_by_id.values() if i.table_id == t.id]
        assert sorted(version.table_indexes[t.id]) == sorted(i.id for i in owned)
        if t.primary_key_index_id is None:
            assert t.primary_key == () and not [i for i in owned if i.primary_key]
        else:
            pk = version.indexes_by_id[t.primary_key_index_id]
            assert pk.primary_key and pk.status is IndexStatus.AVAILABLE
            assert pk.name == f"{t.name}_PK" and pk.table_id == t.id
            assert pk.columns == t.primary_key
            assert [i for i in owned if i.primary_key] == [pk]
        col_ids = [c.id for c in t.columns]
        assert len(set(col_ids)) == len(col_ids) and all(0 <= c < t.next_column_id for c in col_ids)
        assert len({c.name for c in t.columns}) == len(t.columns)
        for name in t.primary_key:
            column = t.column(name)
            assert column is not None and not column.nullable
        if t.primary_key:
            assert t.colocation and set(t.colocation) <= set(t.primary_key)
        assert t.bucketed or t.colocation == t.primary_key
        for index in owned:
            if index.status is not IndexStatus.STOPPING:
                assert all(t.column(c) is not None for c in index.columns)
            if index.unique:
                assert set(t.colocation) <= set(index.columns)
        assert 0 < t.created_version <= t.update_version <= v and t.table_version >= 1
    for i in version.indexes_by_id.values():
        assert i.table_id in version.tables_by_id
        assert 0 < i.created_version <= i.update_version <= v
    every = [
        *version.schemas_by_id,
        *version.zones_by_id,
        *version.tables_by_id,
        *version.indexes_by_id,
    ]
    assert len(every) == len(set(every)), "object ids are unique across kinds"
    assert all(0 <= i < version.object_id_gen for i in every)


class CatalogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cat = self.connect()
        self.replayed = CatalogVersion.empty()
        self.kind_of_id: dict[int, str] = {}
        self.gone_ids: set[int] = set()
        self.column_names: dict[int, dict[int, str]] = {}
        self.gone_columns: dict[int, set[int]] = {}
        self.events: list[Event] = []
        for event_type in EventType:
            self.cat.listen(event_type, self.events.append)
        self.outcomes = {"created": 0, "noop": 0, "error": 0}

    def connect(self) -> almanac.Catalog:
        return almanac.connect("memory://")

    def _execute(self, batch: Sequence[Command]) -> None:
        before = self.cat.catalog()
        events_before = len(self.events)
        try:
            result = self.cat.execute(batch)
        except CatalogError:
            self.outcomes["error"] += 1
            assert self.cat.latest_version == before.version
            assert self.cat.catalog() is before
            assert len(self.events) == events_before
            return
        assert len(result.applied) == len(batch)
        assert result.created == any(result.applied)
        if result.created:
            self.outcomes["created"] += 1
            assert result.version == before.version + 1 == self.cat.latest_version
            fired = self.events[events_before:]
            assert all(e.version == result.version for e in fired)
        else:
            self.outcomes["noop"] += 1
            assert result.version == before.version == self.cat.latest_version
            assert self.cat.catalog() is before
            assert len(self.events) == events_before

    @rule(command=schema_commands)
    def schemas(self, command: Command) -> None:
        self._execute([command])

    @rule(command=table_commands)
    def tables(self, command: Command) -> None:
        self._execute([command])

    @rule(command=column_commands)
    def columns(self, command: Command) -> None:
        self._execute([command])

    @rule(command=index_commands)
    def indexes(self, command: Command) -> None:
        self._execute([command])

    @rule(command=zone_commands)
    def zones(self, command: Command) -> None:
        self._execute([command])

    @rule(batch=st.lists(commands, min_size=2, max_size=4))
    def bulk(self, batch: list[Command]) -> None:
        self._execute(batch)

    @initialize(name=st.just("T1"), schema=st.just("PUBLIC"))
    def first_table(self, name: str, schema: str) -> None:
        self.valid_table(name, schema)

    @precondition(lambda self: len(self.cat.catalog().tables()) < 3)
    @rule(name=st.sampled_from(["T1", "T2", "T3"]), schema=st.sampled_from(["PUBLIC", "S1"]))
    def valid_table(self, name: str, schema: str) -> None:
        """A table most index and column commands can act on."""
        self._execute(
            [
                CreateSchema(schema, if_not_exists=True),
                CreateTable(
                    name=name,
                    schema=schema,
                    columns=(
                        ID,
                        ColumnDef(name="A", type=ColumnType.INT16),
                        ColumnDef(name="B", type=ColumnType.STRING),
                    ),
                    primary_key=("ID",),
                    if_not_exists=True,
                ),
            ]
        )

    @precondition(
        lambda self: len(self.cat.catalog().indexes()) < 2 * len(self.cat.catalog().tables())
    )
    @rule(
        data=st.data(),
        name=st.sampled_from(["I1", "I2", "I3"]),
        columns=st.sampled_from([("A",), ("B",), ("B", "A")]),
    )
    def valid_index(self, data: st.DataObject, name: str, columns: tuple[str, ...]) -> None:
        version = self.cat.catalog()
        t = data.draw(st.sampled_from(version.tables()))
        schema = version.schema_by_id(t.schema_id)
        assert schema is not None
        self._execute([CreateIndex(name=name, table=t.name, schema=schema.name, columns=columns)])

    @rule(data=st.data())
    def on_existing_table(self, data: st.DataObject) -> None:
        """A column, index or rename command aimed at a table that exists."""
        version = self.cat.catalog()
        tables = version.tables()
        if not tables:
            return
        t = data.draw(st.sampled_from(tables))
        schema = version.schema_by_id(t.schema_id)
        assert schema is not None
        names = [c.name for c in t.columns]
        some = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True).map(tuple)
        # A table may have no column left (its key is optional): then only
        # adding one or renaming the table can aim at it.
        actions = ["add", "drop", "alter", "index", "rename"] if names else ["add", "rename"]
        action = data.draw(st.sampled_from(actions))
        command: Command
        if action == "add":
            fresh = st.builds(
                ColumnDef,
                name=st.sampled_from(["A", "B", "C", "D"]),
                type=TYPES,
                nullable=st.sampled_from([True, True, True, False]),
                default=st.sampled_from([None, ConstantDefault(1)]),
            )
            command = AddColumns(
                table=t.name,
                schema=schema.name,
                columns=tuple(data.draw(st.lists(fresh, min_size=1, max_size=2))),
                if_column_not_exists=data.draw(st.booleans()),
            )
        elif action == "drop":
            command = DropColumns(table=t.name, schema=schema.name, columns=data.draw(some))
        elif action == "alter":
            column = data.draw(st.sampled_from(t.columns))
            wider = WIDER.get(column.type, [])
            command = AlterColumn(
                table=t.name,
                schema=schema.name,
                column=column.name,
                type=data.draw(st.sampled_from(wider) if wider else TYPES),
                not_null=data.draw(st.sampled_from([None, None, False, True])),
            )
        elif action == "index":
            command = CreateIndex(
                name=data.draw(INDEXES),
                table=t.name,
                schema=schema.name,
                columns=data.draw(some),
                unique=data.draw(st.booleans()),
                kind=data.draw(st.sampled_from(IndexKind)),
            )
        else:
            command = RenameTable(t.name, data.draw(TABLES), schema=schema.name)
        self._execute([command])

    @rule(data=st.data())
    def on_existing_zone(self, data: st.DataObject) -> None:
        """A zone command aimed at a zone that exists."""
        zones = self.cat.catalog().zones()
        if not zones:
            return
        zone = data.draw(st.sampled_from(zones)).name
        command = data.draw(
            st.sampled_from(
                [
                    AlterZone(name=zone, replicas=data.draw(st.integers(1, 7))),
                    AlterZone(name=zone, storage_profiles=data.draw(PROFILES)),
                    RenameZone(zone, data.draw(ZONES)),
                    SetDefaultZone(zone),
                    DropZone(zone),
                ]
            )
        )
        self._execute([command])

    @rule(data=st.data())
    def lifecycle(self, data: st.DataObject) -> None:
        """Move a real index one step along its lifecycle (or try a wrong step)."""
        indexes = [i for i in self.cat.catalog().indexes() if not i.primary_key]
        if not indexes:
            return
        index = data.draw(st.sampled_from(indexes))
        step = data.draw(st.sampled_from(["next", "next", "next", "any", "rename"]))
        schema = self.cat.catalog().schema_by_id(index.schema_id)
        assert schema is not None
        command: Command
        if step == "rename":
            command = RenameIndex(index.name, data.draw(INDEXES), schema=schema.name)
        elif step == "any":
            make = data.draw(st.sampled_from([StartBuildingIndex, MakeIndexAvailable, RemoveIndex]))
            command = make(index.id)
        elif index.status is IndexStatus.REGISTERED:
            command = StartBuildingIndex(index.id)
        elif index.status is IndexStatus.BUILDING:
            command = MakeIndexAvailable(index.id)
        elif index.status is IndexStatus.STOPPING:
            command = RemoveIndex(index.id)
        else:
            command = DropIndex(index.name, schema=schema.name)
        self._execute([command])

    @invariant()
    def versions_are_contiguous(self) -> None:
        history = self.cat.history()
        latest = self.cat.latest_version
        assert [h.version for h in history] == list(range(1, latest + 1))
        times = [self.cat.catalog(v).activation_time for v in range(latest + 1)]
        assert all(a < b for a, b in itertools.pairwise(times))
        assert [h.activation_time for h in history] == times[1:]

    @invariant()
    def replay_reproduces_every_version(self) -> None:
        for info in self.cat.history(since=self.replayed.version + 1):
            self.replayed = apply_update(self.replayed, info.update)
            assert self.replayed == self.cat.catalog(info.version)
            check_snapshot(self.replayed)
        assert self.replayed.version == self.cat.latest_version

    @invariant()
    def ids_are_never_reused(self) -> None:
        version = self.cat.catalog()
        current: dict[int, str] = {}
        for kind, ids in (
            ("schema", version.schemas_by_id),
            ("zone", version.zones_by_id),
            ("table", version.tables_by_id),
            ("index", version.indexes_by_id),
        ):
            for object_id in ids:
                assert object_id not in current, f"id {object_id} used twice"
                current[object_id] = kind
        for object_id, kind in current.items():
            assert object_id not in self.gone_ids, f"{kind} id {object_id} reused"
            assert self.kind_of_id.setdefault(object_id, kind) == kind
        self.gone_ids |= set(self.kind_of_id) - set(current)

    @invariant()
    def column_ids_are_never_reused(self) -> None:
        for t in self.cat.catalog().tables():
            names = self.column_names.setdefault(t.id, {})
            gone = self.gone_columns.setdefault(t.id, set())
            present = {c.id: c.name for c in t.columns}
            for column_id, name in present.items():
                assert column_id not in gone, f"column id {column_id} of {t.name} reused"
                assert names.setdefault(column_id, name) == name
            gone |= set(names) - set(present)
            if names:
                assert t.next_column_id > max(names)

    def teardown(self) -> None:
        replayed = CatalogVersion.empty()
        for update in self.cat.history():
            replayed = apply_update(replayed, update.update)
            assert replayed == self.cat.catalog(update.version)
        self.cat.close()


STATEFUL_RUNS: list[dict[str, int]] = []


class RecordingMachine(CatalogMachine):
    def teardown(self) -> None:
        STATEFUL_RUNS.append(dict(self.outcomes))
        super().teardown()


class SqliteRecordingMachine(RecordingMachine):
    """The same machine on a SQLite catalog in a fresh directory; at the end
    a second node reopens the directory and must hold the same catalog."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="almanac-machine-")
        super().__init__()

    def connect(self) -> almanac.Catalog:
        return almanac.connect(self.directory, delay_ms=0)

    def teardown(self) -> None:
        try:
            latest = self.cat.catalog()
            with almanac.connect(self.directory, delay_ms=0) as reopened:
                assert reopened.catalog() == latest
            super().teardown()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.mark.parametrize(
    ("machine", "examples"), [(RecordingMachine, 50), (SqliteRecordingMachine, 30)]
)
def test_random_command_sequences_keep_the_invariants(
    machine: type[RecordingMachine], examples: int
) -> None:
    STATEFUL_RUNS.clear()
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    # The run must have exercised all three outcomes, or it proved little.
    totals = {k: sum(run[k] for run in STATEFUL_RUNS) for k in ("created", "noop", "error")}
    assert all(totals.values()), totals


# -- failed batches ------------------------------------------------------------------------

NAME = st.text(alphabet="ABCDEFGHJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=6)


@st.composite
def valid_batch(draw: st.DrawFn, tag: str) -> list[Command]:
    """Commands that are valid together in one batch, by construction: fresh names
    with per-kind and per-batch prefixes so that no two collide."""
    schemas = [f"S{tag}_{s}" for s in draw(st.lists(NAME, max_size=2, unique=True))]
    tables = [f"T{tag}_{t}" for t in draw(st.lists(NAME, min_size=1, max_size=3, unique=True))]
    zones = [f"Z{tag}_{z}" for z in draw(st.lists(NAME, max_size=2, unique=True))]
    batch: list[Command] = [CreateSchema(s) for s in schemas]
    batch += [CreateZone(name=z, replicas=draw(st.integers(1, 5))) for z in zones]
    homes = ["PUBLIC", *schemas]
    for name in tables:
        schema = draw(st.sampled_from(homes))
        zone = draw(st.sampled_from([None, *zones]))
        batch.append(
            CreateTable(
                name=name,
                schema=schema,
                columns=(ID, ColumnDef(name="A", type=draw(TYPES))),
                primary_key=("ID",),
                zone=zone,
            )
        )
        if draw(st.booleans()):
            batch.append(CreateIndex(name=f"I{name}", table=name, schema=schema, columns=("A",)))
        if draw(st.booleans()):
            batch.append(
                AddColumns(
                    table=name,
                    schema=schema,
                    columns=(ColumnDef(name="B", type=ColumnType.STRING),),
                )
            )
    return batch


def invalid_commands(batch: Sequence[Command]) -> list[Command]:
    """Commands that fail whatever came before them in ``batch``."""
    invalid: list[Command] = [
        DropSchema("PUBLIC"),
        CreateSchema("SYSTEM"),
        CreateSchema(" "),
        CreateZone(name="bad", replicas=0),
        CreateZone(name="bad", partitions=0),
        DropTable("missing"),
        StartBuildingIndex(10**9),
        CreateTable(name="bad", columns=(), primary_key=("ID",)),
        CreateTable(
            name="bad", columns=(ColumnDef(name="ID", type=ColumnType.INT64),), primary_key=("ID",)
        ),
    ]
    for cmd in batch:
        if isinstance(cmd, CreateSchema):
            invalid.append(CreateSchema(cmd.name))
        elif isinstance(cmd, CreateZone):
            invalid.append(CreateZone(name=cmd.name))
        elif isinstance(cmd, CreateTable):
            invalid.append(DropColumns(table=cmd.name, schema=cmd.schema, columns=("ID",)))
            invalid.append(
                AlterColumn(table=cmd.name, schema=cmd.schema, column="A", not_null=True)
            )
            invalid.append(
                CreateIndex(name="bad", table=cmd.name, schema=cmd.schema, columns=("NOPE",))
            )
        elif isinstance(cmd, CreateIndex):
            invalid.append(DropColumns(table=cmd.table, schema=cmd.schema, columns=("A",)))
    return invalid


@settings(max_examples=50, deadline=None)
@given(data=st.data(), setup=valid_batch("P"), batch=valid_batch("Q"))
def test_a_failed_batch_changes_nothing(
    data: st.DataObject, setup: list[Command], batch: list[Command]
) -> None:
    bad = data.draw(st.sampled_from(invalid_commands(batch)), label="invalid")

    # The same batch without its last command succeeds on an identical catalog...
    with almanac.connect("memory://") as twin:
        twin.execute(setup)
        result = twin.execute(batch)
        assert result.created

    # ...but with the invalid command appended it changes nothing at all.
    with almanac.connect("memory://") as cat:
        cat.execute(setup)
        events: list[Event] = []
        for event_type in EventType:
            cat.listen(event_type, events.append)
        before = cat.catalog()
        history = cat.history()
        with pytest.raises(CatalogError):
            cat.execute([*batch, bad])
        assert cat.latest_version == before.version
        assert cat.catalog() is before
        assert cat.history() == history
        assert events == []
        with pytest.raises(almanac.VersionNotFoundError):
            cat.catalog(before.version + 1)

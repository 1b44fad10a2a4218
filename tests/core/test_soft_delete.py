"""Soft delete: DROP TABLE with a reserve, RECOVER TABLE, and the purge.

Time is the catalog's own clock: the tests that cross a reserve's end run
a catalog whose hybrid clock reads a wall clock the test moves, so no test
sleeps for a reserve to end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
from almanac import (
    AlreadyExistsError,
    Catalog,
    CatalogError,
    Command,
    CreateIndex,
    DropSchema,
    DropTable,
    DropZone,
    HybridClock,
    NotFoundError,
    PurgeTable,
    RecoverTable,
    RenameTable,
    ValidationError,
    is_soft_deleted,
    purge_expired_tables,
)
from almanac.commands import CommitContext
from almanac.errors import MetastoreError
from almanac.metastore import Compare, MemoryMetastore, Op, Put, TxnResult
from almanac.node.log import UpdateLog
from almanac.serialization import encode

from .support import col, rejected, table

START_MS = 1_800_000_000_000


class WallClock:
    """A wall clock in milliseconds that moves only when told."""

    def __init__(self) -> None:
        self.ms = START_MS

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def timed(wall: WallClock) -> Iterator[Catalog]:
    """An in-memory catalog on the test's wall clock."""
    with Catalog(UpdateLog(MemoryMetastore()), clock=HybridClock(wall)) as catalog:
        yield catalog


E = TypeVar("E", bound=CatalogError)


def expect_error(cat: Catalog, error: type[E], command: Command) -> E:
    """The command is refused with exactly ``error`` and changes nothing."""
    return rejected(cat, command, error)


def _soft_deleted_id(cat: Catalog, name: str, schema: str = "PUBLIC") -> int:
    found = cat.catalog().soft_deleted_table(name, schema)
    assert found is not None, f"{schema}.{name} is not soft-deleted"
    return found.id


# -- lookups and names ------------------------------------------------------------


def test_a_soft_deleted_table_is_gone_by_name_and_there_by_id(cat: Catalog) -> None:
    cat.sql(
        "CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY, V INT);"
        "CREATE INDEX T_BY_V ON T (V);"
        "CREATE TABLE KEEP (ID BIGINT NOT NULL PRIMARY KEY)"
    )
    live = cat.catalog().table("T")
    assert live is not None
    version = cat.sql("DROP TABLE T WITH (RESERVE = '1h')").version
    at = cat.catalog()
    dropped = at.table_by_id(live.id)
    assert dropped is not None and dropped.soft_deleted and is_soft_deleted(dropped)
    assert dropped.reserve_ms == 3_600_000 and dropped.update_version == version
    assert at.tables_by_id[live.id] is dropped
    assert at.table("T") is None
    assert [t.name for t in at.tables()] == ["KEEP"]
    assert at.soft_deleted_tables() == [dropped]
    assert at.index("T_BY_V") is None and at.index("T_PK") is None
    assert {i.name for i in at.indexes()} == {"KEEP_PK"}
    assert {i.name for i in at.indexes(live.id)} == {"T_PK", "T_BY_V"}  # by id: still there
    assert [r[1] for r in cat.sql("SHOW TABLES").rows] == ["KEEP"]
    assert all(r[1] != "T" for r in cat.sql("SHOW INDEXES").rows)
    assert cat.sql("SHOW SCHEMAS").rows[0][2] == 1
    err = expect_error(cat, NotFoundError, DropTable("T"))
    assert "soft-deleted" in err.message and "RECOVER TABLE" in err.message
    with pytest.raises(NotFoundError, match="soft-deleted"):
        cat.sql("DESCRIBE T")
    with pytest.raises(NotFoundError, match="soft-deleted"):
        cat.sql("ALTER TABLE T ADD COLUMN W INT")
    assert cat.execute([DropTable("T", if_exists=True)]).applied == (False,)


def test_show_dropped_tables_lists_what_recover_can_bring_back(
    timed: Catalog, wall: WallClock
) -> None:
    timed.sql(
        "CREATE SCHEMA S; CREATE TABLE S.T (ID BIGINT NOT NULL PRIMARY KEY);"
        "CREATE TABLE U (ID BIGINT NOT NULL PRIMARY KEY)"
    )
    before = timed.latest_version
    dropped = timed.sql("DROP TABLE S.T WITH (RESERVE = '1h'); DROP TABLE U WITH (RESERVE = '2d')")
    result = timed.sql("SHOW DROPPED TABLES")
    assert result.columns == (
        "SCHEMA",
        "NAME",
        "ID",
        "DROP_VERSION",
        "DROPPED_AT",
        "RESERVED_UNTIL",
    )
    assert [r[:2] for r in result.rows] == [("PUBLIC", "U"), ("S", "T")]
    assert {r[3] for r in result.rows} == {dropped.version}
    assert result.rows[1][4] == "2027-01-15T08:00:00.000Z"  # START_MS
    assert result.rows[1][5] == "2027-01-15T09:00:00.000Z"
    assert [r[1] for r in timed.sql("SHOW DROPPED TABLES IN S").rows] == ["T"]
    assert timed.sql(f"SHOW DROPPED TABLES AS OF VERSION {before}").rows == ()
    with pytest.raises(NotFoundError):
        timed.sql("SHOW DROPPED TABLES IN NOPE")


def test_a_reserved_name_cannot_be_reused(cat: Catalog) -> None:
    cat.sql(
        "CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY, V INT); CREATE INDEX T_BY_V ON T (V);"
        "CREATE TABLE OTHER (ID BIGINT NOT NULL PRIMARY KEY)"
    )
    cat.execute([DropTable("T", reserve_s=60)])
    for command in (
        table("T"),
        RenameTable("OTHER", "T"),
        CreateIndex(name="T_BY_V", table="OTHER", columns=("ID",)),
        table("T_PK"),
    ):
        err = expect_error(cat, AlreadyExistsError, command)
        assert err.context.get("rule") == "soft-deleted-name", err.message
        assert "soft-deleted" in err.message and "PUBLIC.T" in err.message
    # IF NOT EXISTS does not pretend: the table it names is not usable.
    with pytest.raises(AlreadyExistsError, match="reserved by a soft-deleted table"):
        cat.sql("CREATE TABLE IF NOT EXISTS T (ID BIGINT NOT NULL PRIMARY KEY)")


def test_recover_brings_the_table_and_its_indexes_back(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY, V INT); CREATE INDEX T_BY_V ON T (V)")
    before = cat.catalog().table("T")
    assert before is not None
    cat.sql("DROP TABLE T WITH (RESERVE = '15m')")
    cat.sql("RECOVER TABLE T")
    version = cat.catalog()
    back = version.table("T")
    assert back is not None and not back.soft_deleted and back.reserve_ms == 0
    assert back.id == before.id and back.columns == before.columns
    assert version.index("T_BY_V") is not None and version.index("T_PK") is not None
    diff = cat.diff(version.version - 2, version.version - 1)
    assert [(c.name, {f.field for f in c.fields}) for c in diff.changed] == [
        ("PUBLIC.T", {"soft_deleted", "dropped_at", "reserve_ms"})
    ]
    assert cat.describe(version.version - 1).endswith(
        "dropped table PUBLIC.T, recoverable for 15min"
    )
    assert cat.describe(version.version).endswith("recovered table PUBLIC.T")


def test_recover_as_another_name_frees_the_old_one(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    first = cat.catalog().table("T")
    assert first is not None
    cat.sql("DROP TABLE T WITH (RESERVE = '1h')")
    cat.sql("CREATE TABLE TAKEN (ID BIGINT NOT NULL PRIMARY KEY)")
    err = expect_error(cat, AlreadyExistsError, RecoverTable("T", new_name="TAKEN"))
    assert "TAKEN" in err.message
    cat.sql("RECOVER TABLE T AS T_OLD; CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    version = cat.catalog()
    old, new = version.table("T_OLD"), version.table("T")
    assert old is not None and old.id == first.id
    assert new is not None and new.id != first.id
    assert version.index("T_OLD_PK") is not None and version.index("T_PK") is not None


def test_recover_and_purge_refuse_what_is_not_soft_deleted(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    err = expect_error(cat, ValidationError, RecoverTable("T"))
    assert err.context.get("rule") == "not-soft-deleted"
    err = expect_error(cat, ValidationError, PurgeTable("T"))
    assert err.context.get("rule") == "not-soft-deleted"
    expect_error(cat, NotFoundError, RecoverTable("NOPE"))
    expect_error(cat, NotFoundError, PurgeTable("NOPE"))
    expect_error(cat, NotFoundError, RecoverTable("T", schema="NOPE"))
    assert cat.execute([PurgeTable("NOPE", if_exists=True)]).applied == (False,)
    assert cat.execute([PurgeTable("T", schema="NOPE", if_exists=True)]).applied == (False,)


def test_a_purge_removes_it_for_good_and_frees_its_names(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY, V INT); CREATE INDEX T_BY_V ON T (V)")
    table_id = cat.catalog().table("T").id  # type: ignore[union-attr]
    cat.sql("DROP TABLE T WITH (RESERVE = '2d')")
    cat.sql("PURGE TABLE T")
    version = cat.catalog()
    assert version.table_by_id(table_id) is None
    assert version.indexes(table_id) == [] and len(version.indexes_by_id) == 0
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY, V INT); CREATE INDEX T_BY_V ON T (V)")
    again = cat.catalog().table("T")
    assert again is not None and again.id > table_id
    expect_error(cat, NotFoundError, RecoverTable("T_X"))


def test_zero_reserve_drops_at_once(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    cat.sql("DROP TABLE T WITH (RESERVE = '0s')")
    assert len(cat.catalog().tables_by_id) == 0


def test_schema_and_zone_keep_their_soft_deleted_tables(cat: Catalog) -> None:
    cat.sql(
        "CREATE SCHEMA S; CREATE ZONE Z WITH (PARTITIONS = 2);"
        "CREATE TABLE S.T (ID BIGINT NOT NULL PRIMARY KEY) ZONE Z"
    )
    cat.sql("DROP TABLE S.T WITH (RESERVE = '1h')")
    with pytest.raises(ValidationError, match=r"not empty .*'S\.T' \(soft-deleted\)"):
        cat.execute([DropSchema("S")])
    with pytest.raises(ValidationError, match=r"used by table 'S\.T' \(soft-deleted"):
        cat.execute([DropZone("Z")])
    # CASCADE takes the soft-deleted table along, for good.
    cat.execute([DropSchema("S", cascade=True), DropZone("Z")])
    assert len(cat.catalog().tables_by_id) == 0


def test_the_reserve_is_checked(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    for bad in (-1.0, 10.0**12, 2**70):
        err = expect_error(cat, ValidationError, DropTable("T", reserve_s=bad))
        assert "reserve of DROP TABLE 'PUBLIC.T'" in err.message
    for odd in (float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="reserve_s"):
            DropTable("T", reserve_s=odd)
    with pytest.raises(ValidationError, match="soft_delete_reserve_s"):
        almanac.connect("memory://", soft_delete_reserve_s=-5)
    with pytest.raises(CatalogError):
        DropTable("T", reserve_s="1h")  # type: ignore[arg-type]


def test_a_tiny_reserve_is_never_rounded_down_to_a_hard_drop(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    cat.execute([DropTable("T", reserve_s=1e-9)])
    dropped = cat.catalog().soft_deleted_table("T")
    assert dropped is not None and dropped.reserve_ms == 1


def test_a_replace_drops_at_once_whatever_the_default(tmp_path: Path) -> None:
    """REPLACE TABLE AS SELECT is a drop with reserve 0 and a create in one
    batch: with the node's default reserve the drop would keep the name."""
    with almanac.connect("memory://", soft_delete_reserve_s=3600) as cat:
        cat.execute([table("T")])
        err = rejected(cat, [DropTable("T"), table("T", col("V"))], AlreadyExistsError)
        assert err.context.get("rule") == "soft-deleted-name"
        cat.execute([DropTable("T", reserve_s=0), table("T", col("V"))])
        version = cat.catalog()
        assert version.soft_deleted_tables() == [] and version.table("T") is not None


# -- time --------------------------------------------------------------------------


def test_recover_is_refused_once_the_reserve_ended(timed: Catalog, wall: WallClock) -> None:
    timed.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    timed.sql("DROP TABLE T WITH (RESERVE = '90s')")
    dropped = timed.catalog().soft_deleted_table("T")
    assert dropped is not None and dropped.dropped_at is not None
    assert dropped.dropped_at >> 16 == START_MS
    wall.ms += 90_000 - 1
    assert purge_expired_tables(timed) == []
    wall.ms += 2
    err = expect_error(timed, ValidationError, RecoverTable("T"))
    assert err.context.get("rule") == "reserve-ended" and "awaits purge" in err.message
    # A purge commits only for what expired when it commits.
    assert timed.execute([PurgeTable("T", expired_only=True)]).applied == (True,)
    assert timed.catalog().tables_by_id.get(dropped.id) is None


def test_the_periodic_purge_removes_only_expired_tables(timed: Catalog, wall: WallClock) -> None:
    timed.sql(
        "CREATE TABLE A (ID BIGINT NOT NULL PRIMARY KEY);"
        "CREATE TABLE B (ID BIGINT NOT NULL PRIMARY KEY);"
        "CREATE TABLE C (ID BIGINT NOT NULL PRIMARY KEY)"
    )
    timed.sql("DROP TABLE A WITH (RESERVE = '1m'); DROP TABLE B WITH (RESERVE = '1h')")
    a, b = _soft_deleted_id(timed, "A"), _soft_deleted_id(timed, "B")
    wall.ms += 61_000
    purged = purge_expired_tables(timed)
    assert [t.id for t in purged] == [a]
    version = timed.catalog()
    assert (
        a not in version.tables_by_id
        and b in version.tables_by_id
        and version.table("C") is not None
    )
    assert purge_expired_tables(timed) == []
    wall.ms += 3_600_000
    assert [t.id for t in purge_expired_tables(timed)] == [b]


def test_a_purge_judged_before_a_recover_leaves_the_table_alone(
    timed: Catalog, wall: WallClock
) -> None:
    """The expired_only purge is judged when it commits, not when it was planned."""
    timed.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    timed.sql("DROP TABLE T WITH (RESERVE = '1s')")
    stale = PurgeTable("T", if_exists=True, expired_only=True)
    timed.sql("RECOVER TABLE T")
    wall.ms += 5_000
    assert timed.execute([stale]).applied == (False,)
    assert timed.catalog().table("T") is not None


def test_the_node_default_is_recorded_in_the_entry(tmp_path: Path) -> None:
    """A node's default reserve decides its own drops; the log stores it, so
    a node with another default reads the same state."""
    target = str(tmp_path / "cat")
    with (
        almanac.connect(target, delay_ms=0, soft_delete_reserve_s=3600) as keeper,
        almanac.connect(target, delay_ms=0) as hard,
    ):
        keeper.sql("CREATE TABLE A (ID BIGINT NOT NULL PRIMARY KEY)")
        keeper.sql("CREATE TABLE B (ID BIGINT NOT NULL PRIMARY KEY)")
        keeper.sql("DROP TABLE A")
        hard.catch_up()
        hard.sql("DROP TABLE B")
        keeper.catch_up()
        for node in (keeper, hard):
            version = node.catalog()
            a = version.soft_deleted_table("A")
            assert a is not None and a.reserve_ms == 3_600_000
            assert len(version.tables_by_id) == 1  # B is gone for good
        assert encode(keeper.catalog()) == encode(hard.catalog())
        hard.sql("RECOVER TABLE A")
        keeper.catch_up()
        assert keeper.catalog().table("A") is not None


def test_an_unbound_command_judges_time_at_the_base_version(cat: Catalog) -> None:
    """``preview`` validates without a committing node: the base version's
    activation stands in for now, the same answer every time."""
    cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY)")
    base = cat.catalog()
    planned = almanac.preview(base, [DropTable("T", reserve_s=10)])
    dropped = planned.catalog.table_by_id(base.table("T").id)  # type: ignore[union-attr]
    assert dropped is not None and dropped.dropped_at == base.activation_time
    bound = DropTable("T").bind(CommitContext(now=123 << 16, soft_delete_reserve_s=7))
    assert bound == DropTable("T", reserve_s=7, at=123 << 16)
    # The committing node's time wins over any given: no caller dates a drop.
    assert DropTable("T", reserve_s=0, at=1).bind(CommitContext(5, 7)) == DropTable(
        "T", reserve_s=0, at=5
    )
    assert RecoverTable("T", at=1).bind(CommitContext(5)) == RecoverTable("T", at=5)
    assert PurgeTable("T", at=1).bind(CommitContext(5)) == PurgeTable("T", at=5)


# -- a property over random sequences ------------------------------------------------


@dataclass
class _Model:
    """What the catalog must hold: live names, soft-deleted names with the
    wall millisecond their reserve ends, and every id ever handed out."""

    live: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, tuple[int, int]] = field(default_factory=dict)
    ids: set[int] = field(default_factory=set)


_NAMES = st.sampled_from(["A", "B", "C"])
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), _NAMES),
        st.tuples(st.just("drop"), _NAMES, st.sampled_from([0, 1, 2, 30])),
        st.tuples(st.just("recover"), _NAMES, st.none() | _NAMES),
        st.tuples(st.just("rename"), _NAMES, _NAMES),
        st.tuples(st.just("purge"), _NAMES),
        st.tuples(st.just("wait"), st.sampled_from([0, 999, 1000, 1001, 5000])),
        st.tuples(st.just("purge_expired")),
    ),
    max_size=25,
)


def _check(cat: Catalog, model: _Model) -> None:
    version = cat.catalog()
    assert {t.name: t.id for t in version.tables()} == model.live
    assert {t.name: t.id for t in version.soft_deleted_tables()} == {
        n: i for n, (i, _) in model.dropped.items()
    }
    for name, (table_id, _) in model.dropped.items():
        assert version.table(name) is None
        found = version.table_by_id(table_id)
        assert found is not None and found.soft_deleted
    assert set(version.tables_by_id) <= model.ids


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS)
def test_names_stay_reserved_and_ids_are_never_reused(steps: list[tuple[object, ...]]) -> None:
    wall = WallClock()
    store = MemoryMetastore()
    model = _Model()
    with Catalog(UpdateLog(store), clock=HybridClock(wall)) as cat:
        for step in steps:
            _step(cat, wall, model, step)
            _check(cat, model)
        # Another node replaying the same log holds the same catalog.
        with Catalog(UpdateLog(store), clock=HybridClock(wall), node_name="replay") as other:
            assert encode(other.catalog()) == encode(cat.catalog())


def _step(cat: Catalog, wall: WallClock, model: _Model, step: tuple[object, ...]) -> None:
    kind = step[0]
    taken = set(model.live) | set(model.dropped)
    if kind == "create":
        name = str(step[1])
        if name in taken:
            err = expect_error(cat, AlreadyExistsError, table(name))
            assert (err.context.get("rule") == "soft-deleted-name") == (name in model.dropped)
            return
        cat.execute([table(name, col("V"))])
        created = cat.catalog().table(name)
        assert created is not None and created.id not in model.ids
        assert created.primary_key_index_id is not None
        model.ids |= {created.id, created.primary_key_index_id}
        model.live[name] = created.id
    elif kind == "drop":
        name, seconds = str(step[1]), int(step[2])  # type: ignore[call-overload]
        if name not in model.live:
            expect_error(cat, NotFoundError, DropTable(name, reserve_s=seconds))
            return
        cat.execute([DropTable(name, reserve_s=seconds)])
        table_id = model.live.pop(name)
        if seconds:
            model.dropped[name] = (table_id, wall.ms + seconds * 1000)
    elif kind == "recover":
        name, new = str(step[1]), step[2]
        target = name if new is None else str(new)
        entry = model.dropped.get(name)
        if entry is None:
            with pytest.raises(CatalogError):
                cat.execute([RecoverTable(name, new_name=None if new is None else target)])
            return
        table_id, ends = entry
        command = RecoverTable(name, new_name=None if new is None else target)
        if target != name and target in taken:
            expect_error(cat, AlreadyExistsError, command)
        elif wall.ms > ends:
            expect_error(cat, ValidationError, command)
        elif wall.ms < ends:
            cat.execute([command])
            del model.dropped[name]
            model.live[target] = table_id
        else:  # at the very millisecond the reserve ends: either answer, as the catalog says
            try:
                cat.execute([command])
            except ValidationError:
                return
            del model.dropped[name]
            model.live[target] = table_id
    elif kind == "rename":
        old, new = str(step[1]), str(step[2])
        if old not in model.live:
            expect_error(cat, NotFoundError, RenameTable(old, new))
        elif old == new:
            assert cat.execute([RenameTable(old, new)]).applied == (False,)
        elif new in taken:
            err = expect_error(cat, AlreadyExistsError, RenameTable(old, new))
            assert (err.context.get("rule") == "soft-deleted-name") == (new in model.dropped)
        else:
            cat.execute([RenameTable(old, new)])
            model.live[new] = model.live.pop(old)
    elif kind == "purge":
        name = str(step[1])
        if name in model.dropped:
            cat.execute([PurgeTable(name)])
            del model.dropped[name]
        else:
            with pytest.raises(CatalogError):
                cat.execute([PurgeTable(name)])
    elif kind == "wait":
        wall.ms += int(step[1])  # type: ignore[call-overload]
    elif kind == "purge_expired":
        purged = {t.name for t in purge_expired_tables(cat)}
        expired = {n for n, (_, ends) in model.dropped.items() if wall.ms > ends}
        maybe = {n for n, (_, ends) in model.dropped.items() if wall.ms == ends}
        assert expired <= purged <= expired | maybe
        for name in purged:
            del model.dropped[name]


# -- faults --------------------------------------------------------------------------


class _FlakyMemory(MemoryMetastore):
    """A store whose next transactions that append a catalog version fail:
    before applying (``lost``) or after, with the reply lost (``applied``)."""

    mode: str | None = None

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        appends = any(isinstance(op, Put) and op.key == "catalog.version" for op in success)
        if appends and self.mode == "lost":
            raise MetastoreError("the metastore went away (injected)")
        result: TxnResult = super()._txn(compares, success, failure)
        if appends and self.mode == "applied":
            raise MetastoreError("the reply was lost (injected)")
        return result


@pytest.mark.parametrize("mode", ["lost", "applied"])
def test_a_failed_purge_leaves_a_consistent_catalog(wall: WallClock, mode: str) -> None:
    store = _FlakyMemory()
    with Catalog(UpdateLog(store), clock=HybridClock(wall), max_attempts=1) as cat:
        cat.sql("CREATE TABLE T (ID BIGINT NOT NULL PRIMARY KEY); CREATE INDEX T_I ON T (ID)")
        cat.sql("DROP TABLE T WITH (RESERVE = '1s')")
        table_id = _soft_deleted_id(cat, "T")
        wall.ms += 2_000
        store.mode = mode
        with pytest.raises(CatalogError):
            purge_expired_tables(cat)
        store.mode = None
        cat.catch_up()
        version = cat.catalog()
        if mode == "lost":  # nothing happened: the table waits for the next purge
            assert version.soft_deleted_table("T") is not None
            assert [t.id for t in purge_expired_tables(cat)] == [table_id]
        else:  # it happened: the next purge finds nothing left to do
            assert table_id not in version.tables_by_id
            assert purge_expired_tables(cat) == []
        version = cat.catalog()
        assert table_id not in version.tables_by_id and len(version.indexes_by_id) == 0
        with Catalog(UpdateLog(store), clock=HybridClock(wall), node_name="replay") as other:
            assert encode(other.catalog()) == encode(version)

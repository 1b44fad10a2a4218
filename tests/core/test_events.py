"""Catalog events: types, order, payload, readiness and failing listeners."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from almanac import (
    AddColumns,
    AlreadyExistsError,
    AlterColumn,
    AlterZone,
    Catalog,
    ColumnType,
    Command,
    CreateIndex,
    CreateSchema,
    CreateZone,
    DropColumns,
    DropIndex,
    DropTable,
    DropZone,
    Event,
    EventType,
    MakeIndexAvailable,
    RemoveIndex,
    RenameTable,
    RenameZone,
    SetDefaultZone,
    SetTableProperties,
    StartBuildingIndex,
    WaitTimeoutError,
)

from .support import apply, col, rejected, table


class Recorder:
    def __init__(self, cat: Catalog, *types: EventType) -> None:
        self.events: list[Event] = []
        for event_type in types or tuple(EventType):
            cat.listen(event_type, self.events.append)

    @property
    def types(self) -> list[EventType]:
        return [e.type for e in self.events]


def _index_id(cat: Catalog, name: str = "I") -> int:
    index = cat.catalog().index(name)
    assert index is not None
    return index.id


def _stopping_id(cat: Catalog) -> int:
    (index,) = [i for i in cat.catalog().indexes() if i.name == "I"]
    return index.id


# Each case: setup commands (each its own version), then the action and the events it fires.
Step = Callable[[Catalog], Command]
CASES: dict[str, tuple[list[Step], Step, list[EventType]]] = {
    "create table": (
        [lambda c: CreateZone(name="Z"), lambda c: SetDefaultZone("Z")],
        lambda c: table("T"),
        [EventType.TABLE_CREATE, EventType.INDEX_CREATE],
    ),
    "create table with the default zone": (
        [],
        lambda c: table("T"),
        [
            EventType.ZONE_CREATE,
            EventType.SET_DEFAULT_ZONE,
            EventType.TABLE_CREATE,
            EventType.INDEX_CREATE,
        ],
    ),
    "drop table": (
        [lambda c: table("T")],
        lambda c: DropTable("T"),
        [EventType.INDEX_REMOVED, EventType.TABLE_DROP],
    ),
    "rename table": (
        [lambda c: table("T")],
        lambda c: RenameTable("T", "U"),
        [EventType.TABLE_ALTER],
    ),
    "add columns": (
        [lambda c: table("T")],
        lambda c: AddColumns(table="T", columns=(col("A"), col("B"))),
        [EventType.TABLE_ALTER],
    ),
    "drop columns": (
        [lambda c: table("T", col("A"))],
        lambda c: DropColumns(table="T", columns=("A",)),
        [EventType.TABLE_ALTER],
    ),
    "alter column": (
        [lambda c: table("T", col("A", ColumnType.INT8))],
        lambda c: AlterColumn(table="T", column="A", type=ColumnType.INT32),
        [EventType.TABLE_ALTER],
    ),
    "table properties": (
        [lambda c: table("T")],
        lambda c: SetTableProperties(name="T", stale_rows_fraction=0.5),
        [EventType.TABLE_ALTER],
    ),
    "create index": (
        [lambda c: table("T", col("A"))],
        lambda c: CreateIndex(name="I", table="T", columns=("A",)),
        [EventType.INDEX_CREATE],
    ),
    "start building": (
        [
            lambda c: table("T", col("A")),
            lambda c: CreateIndex(name="I", table="T", columns=("A",)),
        ],
        lambda c: StartBuildingIndex(_index_id(c)),
        [EventType.INDEX_BUILDING],
    ),
    "make available": (
        [
            lambda c: table("T", col("A")),
            lambda c: CreateIndex(name="I", table="T", columns=("A",)),
            lambda c: StartBuildingIndex(_index_id(c)),
        ],
        lambda c: MakeIndexAvailable(_index_id(c)),
        [EventType.INDEX_AVAILABLE],
    ),
    "drop registered index": (
        [
            lambda c: table("T", col("A")),
            lambda c: CreateIndex(name="I", table="T", columns=("A",)),
        ],
        lambda c: DropIndex("I"),
        [EventType.INDEX_REMOVED],
    ),
    "stop index": (
        [
            lambda c: table("T", col("A")),
            lambda c: CreateIndex(name="I", table="T", columns=("A",)),
            lambda c: StartBuildingIndex(_index_id(c)),
            lambda c: MakeIndexAvailable(_index_id(c)),
        ],
        lambda c: DropIndex("I"),
        [EventType.INDEX_STOPPING],
    ),
    "remove index": (
        [
            lambda c: table("T", col("A")),
            lambda c: CreateIndex(name="I", table="T", columns=("A",)),
            lambda c: StartBuildingIndex(_index_id(c)),
            lambda c: MakeIndexAvailable(_index_id(c)),
            lambda c: DropIndex("I"),
        ],
        lambda c: RemoveIndex(_stopping_id(c)),
        [EventType.INDEX_REMOVED],
    ),
    "create zone": ([], lambda c: CreateZone(name="Z"), [EventType.ZONE_CREATE]),
    "alter zone": (
        [lambda c: CreateZone(name="Z")],
        lambda c: AlterZone(name="Z", replicas=3),
        [EventType.ZONE_ALTER],
    ),
    "rename zone": (
        [lambda c: CreateZone(name="Z")],
        lambda c: RenameZone("Z", "Y"),
        [EventType.ZONE_ALTER],
    ),
    "drop zone": (
        [lambda c: CreateZone(name="Z")],
        lambda c: DropZone("Z"),
        [EventType.ZONE_DROP],
    ),
    "set default zone": (
        [lambda c: CreateZone(name="Z")],
        lambda c: SetDefaultZone("Z"),
        [EventType.SET_DEFAULT_ZONE],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_event_types(cat: Catalog, case: str) -> None:
    setup, action, expected = CASES[case]
    for step in setup:
        apply(cat, step(cat))
    recorder = Recorder(cat)
    result = apply(cat, action(cat))
    assert recorder.types == expected
    for event in recorder.events:
        assert event.version == result.version
        assert isinstance(event.causality_token, int)


def test_events_of_a_batch_fire_in_entry_order(cat: Catalog) -> None:
    recorder = Recorder(cat)
    result = apply(
        cat,
        CreateZone(name="Z"),
        table("T", col("A")),
        CreateIndex(name="I", table="T", columns=("A",)),
        DropIndex("I"),
        AlterZone(name="Z", replicas=2),
    )
    assert recorder.types == [
        EventType.ZONE_CREATE,
        EventType.ZONE_CREATE,
        EventType.SET_DEFAULT_ZONE,
        EventType.TABLE_CREATE,
        EventType.INDEX_CREATE,
        EventType.INDEX_CREATE,
        EventType.INDEX_STOPPING,
        EventType.ZONE_ALTER,
    ]
    assert {e.version for e in recorder.events} == {result.version}
    assert len({e.causality_token for e in recorder.events}) == 1


def test_event_identifies_its_object(cat: Catalog) -> None:
    recorder = Recorder(cat, EventType.TABLE_CREATE, EventType.INDEX_CREATE)
    apply(cat, table("T"))
    t = cat.catalog().table("T")
    assert t is not None
    assert [e.object_id for e in recorder.events] == [t.id, t.primary_key_index_id]


def test_causality_tokens_grow_with_versions(cat: Catalog) -> None:
    recorder = Recorder(cat, EventType.ZONE_CREATE)
    for name in "ABC":
        apply(cat, CreateZone(name=name))
    tokens = [e.causality_token for e in recorder.events]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def _ready_elsewhere(cat: Catalog, version: int) -> bool:
    """Whether another thread finds ``version`` ready right now."""
    outcome: list[bool] = []

    def probe() -> None:
        try:
            outcome.append(cat.catalog_ready(version, timeout=0))
        except WaitTimeoutError:
            outcome.append(False)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return outcome[0]


def test_listener_reads_the_events_version(cat: Catalog) -> None:
    seen: list[tuple[int, bool, bool, bool]] = []

    def listener(event: Event) -> None:
        version = cat.catalog(event.version)
        applied_here = cat.catalog_ready(event.version, timeout=0)
        ready_elsewhere = _ready_elsewhere(cat, event.version)
        seen.append(
            (version.version, version.table("T") is not None, applied_here, ready_elsewhere)
        )

    cat.listen(EventType.TABLE_CREATE, listener)
    result = apply(cat, table("T"))
    assert seen == [(result.version, True, True, False)], "not ready while its listeners run"
    assert cat.catalog_ready(result.version, timeout=0)


def test_listeners_run_on_one_thread_that_is_not_the_callers(cat: Catalog) -> None:
    threads: set[int] = set()
    cat.listen(EventType.ZONE_CREATE, lambda e: threads.add(threading.get_ident()))
    apply(cat, CreateZone(name="Z"))
    apply(cat, CreateZone(name="Y"))
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_no_events_for_a_failed_batch(cat: Catalog) -> None:
    recorder = Recorder(cat)
    rejected(cat, [CreateZone(name="Z"), CreateZone(name="Z")], AlreadyExistsError, "'Z'")
    assert recorder.events == []


def test_no_events_for_changes_without_an_event_type(cat: Catalog) -> None:
    recorder = Recorder(cat)
    apply(cat, CreateSchema("S"))
    assert recorder.events == []


def test_failing_listener_is_reported_and_does_not_block(cat: Catalog) -> None:
    calls: list[str] = []

    def bad(event: Event) -> None:
        calls.append("bad")
        raise RuntimeError("listener broke")

    def good(event: Event) -> None:
        calls.append("good")

    cat.listen(EventType.ZONE_CREATE, bad)
    cat.listen(EventType.ZONE_CREATE, good)
    result = apply(cat, CreateZone(name="Z"))
    assert calls == ["bad", "good"]
    assert cat.catalog_ready(result.version, timeout=1)
    (failure,) = cat.listener_failures
    assert failure.event.type is EventType.ZONE_CREATE
    assert failure.event.version == result.version
    assert isinstance(failure.error, RuntimeError)
    assert failure.listener is bad
    apply(cat, CreateZone(name="Y"))
    assert len(cat.listener_failures) == 2


@pytest.mark.parametrize("error", [SystemExit("bye"), KeyboardInterrupt()], ids=repr)
def test_a_listener_raising_a_base_exception_does_not_stop_the_dispatcher(
    cat: Catalog, error: BaseException
) -> None:
    calls: list[int] = []

    def quits(event: Event) -> None:
        calls.append(event.version)
        if len(calls) == 1:
            raise error

    cat.listen(EventType.ZONE_CREATE, quits)
    first = cat.execute([CreateZone(name="Z")], timeout=30).version
    second = cat.execute([CreateZone(name="Y")], timeout=30).version  # not stuck
    assert cat.catalog_ready(second, timeout=30)
    assert calls == [first, second]
    (failure,) = cat.listener_failures
    assert failure.error is error


def test_unlisten(cat: Catalog) -> None:
    events: list[Event] = []

    def listener(event: Event) -> None:
        events.append(event)

    cat.listen(EventType.ZONE_CREATE, listener)
    apply(cat, CreateZone(name="Z"))
    cat.unlisten(EventType.ZONE_CREATE, listener)
    apply(cat, CreateZone(name="Y"))
    assert len(events) == 1


def test_unlisten_a_bound_method(cat: Catalog) -> None:
    events: list[Event] = []
    cat.listen(EventType.ZONE_CREATE, events.append)
    apply(cat, CreateZone(name="Z"))
    cat.unlisten(EventType.ZONE_CREATE, events.append)
    apply(cat, CreateZone(name="Y"))
    assert len(events) == 1


def test_listeners_get_only_their_type(cat: Catalog) -> None:
    recorder = Recorder(cat, EventType.ZONE_DROP)
    apply(cat, CreateZone(name="Z"))
    assert recorder.events == []
    apply(cat, DropZone("Z"))
    assert recorder.types == [EventType.ZONE_DROP]


def test_a_listener_may_execute_and_readiness_never_goes_back(cat: Catalog) -> None:
    order: list[tuple[str, int]] = []

    def on_table(event: Event) -> None:
        order.append(("table", event.version))
        result = cat.execute([CreateZone(name="FROM_LISTENER")])
        # Its own version is applied and visible, its listeners come later.
        assert cat.catalog(result.version).zone("FROM_LISTENER") is not None
        assert cat.catalog_ready(result.version, timeout=0)
        order.append(("listener returns", event.version))

    cat.listen(EventType.TABLE_CREATE, on_table)
    cat.listen(
        EventType.ZONE_CREATE,
        lambda e: order.append(("zone", e.version)) if e.version == 3 else None,
    )
    result = cat.execute([table("T")])
    assert result.version == 2
    assert cat.latest_version == 3
    assert cat.catalog().zone("FROM_LISTENER") is not None
    assert cat.catalog_ready(2, timeout=0)
    assert cat.catalog_ready(3, timeout=10)
    assert order == [("table", 2), ("listener returns", 2), ("zone", 3)], "entry order kept"


def test_a_listener_that_checkpoints_past_the_callers_version_does_not_fail_its_commit(
    cat: Catalog,
) -> None:
    """The caller's execute waits for the listeners of its version; one of
    them commits a later version and checkpoints the log there, so the
    caller's version is trimmed away before execute returns. The commit
    succeeded and must be reported so."""
    trimmed: list[int] = []

    def on_table(event: Event) -> None:
        if event.version == 2:
            cat.execute([CreateZone(name="LATER")])
            trimmed.append(cat.checkpoint_log())

    cat.listen(EventType.TABLE_CREATE, on_table)
    result = cat.execute([table("T")])
    assert result.version == 2
    assert trimmed == [3]
    assert cat.earliest_version == 3
    assert cat.listener_failures == []
    assert cat.catalog().table("T") is not None


def test_a_listener_may_wait_for_its_own_execute_async(cat: Catalog) -> None:
    """The async execute's version has listeners that run only after this
    one returns: the future completes once the version is applied, as a
    listener's own execute does, instead of timing out."""
    results: list[int] = []

    def on_table(event: Event) -> None:
        if event.version == 2:
            future = cat.execute_async([CreateZone(name="ASYNC")], timeout=30)
            results.append(future.result(timeout=30).version)
            assert cat.catalog(3).zone("ASYNC") is not None

    cat.listen(EventType.TABLE_CREATE, on_table)
    assert cat.execute([table("T")], timeout=60).version == 2
    assert results == [3]
    assert cat.listener_failures == []
    assert cat.catalog_ready(3, timeout=10)


def test_catalog_ready_times_out_with_a_typed_error(cat: Catalog) -> None:
    with pytest.raises(
        WaitTimeoutError, match=r"version 7 was not ready .* within 0\.05 s"
    ) as info:
        cat.catalog_ready(7, timeout=0.05)
    assert isinstance(info.value, TimeoutError)
    assert info.value.context["version"] == 7 and info.value.timeout == 0.05
    with pytest.raises(WaitTimeoutError, match="version 7 was not applied"):
        cat.catalog_ready(7, timeout=0, applied_only=True)


def test_a_slow_listener_makes_execute_time_out_after_its_commit(cat: Catalog) -> None:
    release = threading.Event()

    def slow(event: Event) -> None:
        release.wait(60)

    cat.listen(EventType.ZONE_CREATE, slow)
    try:
        with pytest.raises(
            WaitTimeoutError, match=r"version 2 was committed, but its listeners .* within 0\.05 s"
        ) as info:
            cat.execute([CreateZone(name="Z")], timeout=0.05)
        assert info.value.context["committed"] is True
        assert cat.catalog().zone("Z") is not None
    finally:
        release.set()
    assert cat.catalog_ready(cat.latest_version, timeout=10)

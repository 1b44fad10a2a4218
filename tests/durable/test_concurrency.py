"""Writers that share a catalog: serialised on SQLite and in memory,
optimistic with backoff elsewhere, and listeners that run DDL of their own."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac import Catalog, ConflictError, CreateSchema, Event, EventType
from almanac.metastore import MemoryMetastore, Metastore
from almanac.model.entries import VersionedUpdate
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from tests.durable.support import digest, race_ddl_workers, table
from tests.waiting import PATIENCE

NO_WAIT = SchemaSync(delay_ms=0, max_clock_skew_ms=0)


@pytest.fixture(params=["sqlite", "memory-optimistic"])
def two_nodes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Catalog, Catalog]]:
    """Two nodes on one store: two connects to one SQLite file, or two nodes
    on one in-memory store that does not serialise its writers."""
    if request.param == "sqlite":
        target = str(tmp_path / "data")
        with (
            almanac.connect(target, delay_ms=0) as a,
            almanac.connect(target, delay_ms=0) as b,
        ):
            yield a, b
        return
    store = MemoryMetastore(serialize_writers=False)
    try:
        with (
            Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT) as a,
            Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT) as b,
        ):
            yield a, b
    finally:
        store.close()


def _counting_appends(cat: Catalog) -> list[bool]:
    """Record whether each of ``cat``'s appends won its compare-and-swap."""
    outcomes: list[bool] = []
    original = cat.log.append

    def append(update: VersionedUpdate, **kw: object) -> int | None:
        token = original(update, **kw)  # type: ignore[arg-type]
        outcomes.append(token is not None)
        return token

    cat.log.append = append  # type: ignore[method-assign]
    return outcomes


def test_a_listener_runs_ddl_while_another_node_commits_first(
    two_nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = two_nodes
    done: list[int] = []

    def listener(event: Event) -> None:
        if event.version != 2:
            return
        # Node B commits from inside A's listener, before the listener's own
        # commit: A has not applied B's version when its listener commits.
        b.execute([CreateSchema("FROM_B")], timeout=PATIENCE)
        done.append(a.execute([CreateSchema("FROM_LISTENER")], timeout=PATIENCE).version)

    a.listen(EventType.TABLE_CREATE, listener)
    appends = _counting_appends(a)
    assert a.execute([table("T")], timeout=PATIENCE).version == 2
    assert done == [4]
    assert a.catalog_ready(4, timeout=PATIENCE) and b.catalog_ready(4, timeout=PATIENCE)
    assert digest(a.catalog()) == digest(b.catalog())
    assert a.catalog(3).schema("FROM_B") is not None
    assert a.catalog(4).schema("FROM_LISTENER") is not None
    assert a.listener_failures == []
    # Where the store serialises writers, A catches up with the log before it
    # validates, so the listener's commit does not even race; an optimistic
    # store is not read before a first attempt, which loses once and retries.
    assert appends == ([True, True] if a.metastore.serializes_writers else [True, False, True])


def test_a_listener_whose_commit_loses_the_race_does_not_stall(
    two_nodes: tuple[Catalog, Catalog],
) -> None:
    """The commit of A's listener loses its compare-and-swap to B, forced from
    inside the append; the retry must not wait for a thread that is busy
    running the listener."""
    a, b = two_nodes
    appends = _counting_appends(a)
    counted_append = a.log.append
    raced: list[int] = []

    def racing_append(update: VersionedUpdate, **kw: object) -> int | None:
        if update.version == 3 and not raced:
            raced.append(b.execute([CreateSchema("FROM_B")], timeout=PATIENCE).version)
        return counted_append(update, **kw)  # type: ignore[arg-type]

    done: list[int] = []

    def listener(event: Event) -> None:
        if event.version == 2:
            done.append(a.execute([CreateSchema("FROM_LISTENER")], timeout=PATIENCE).version)

    a.listen(EventType.TABLE_CREATE, listener)
    a.log.append = racing_append  # type: ignore[method-assign]
    assert a.execute([table("T")], timeout=PATIENCE).version == 2
    assert raced == [3] and done == [4]
    assert appends == [True, False, True], "lost once, then won on the retry"
    assert b.catalog_ready(4, timeout=PATIENCE)
    assert digest(a.catalog()) == digest(b.catalog())
    assert a.listener_failures == []


def test_a_real_conflict_says_what_the_other_writer_changed(
    two_nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = two_nodes
    original = a.log.append

    def racing_append(update: VersionedUpdate, **kw: object) -> int | None:
        if b.catalog().table("T") is None:
            b.execute([table("T")])
        return original(update, **kw)  # type: ignore[arg-type]

    a.log.append = racing_append  # type: ignore[method-assign]
    with pytest.raises(almanac.AlreadyExistsError) as info:
        a.execute([table("T")])
    message = str(info.value)
    assert "'PUBLIC.T' already exists" in message
    assert "another writer committed first: version 2: " in message
    assert "created table PUBLIC.T" in message
    assert info.value.context["concurrent_versions"] == (2,)
    assert a.latest_version == 2


def test_a_conflict_whose_earlier_versions_were_checkpointed_away_keeps_its_own_error(
    two_nodes: tuple[Catalog, Catalog],
) -> None:
    """The other writer commits and checkpoints past the version this node
    started from: the race cannot be described, but the error stays the
    batch's own, never a VersionNotFoundError about the trimmed version."""
    a, b = two_nodes
    original = a.log.append

    def racing_append(update: VersionedUpdate, **kw: object) -> int | None:
        if b.catalog().table("T") is None:
            b.execute([table("T")])
            b.execute([CreateSchema("LATER")])
            b.checkpoint_log()
            a.log.catch_up(a)
            a.on_truncate(b.earliest_version)  # as a's follower does, soon or now
            assert a.earliest_version == 3, "version 1, where a started, is gone"
        return original(update, **kw)  # type: ignore[arg-type]

    a.log.append = racing_append  # type: ignore[method-assign]
    with pytest.raises(almanac.AlreadyExistsError) as info:
        a.execute([table("T")])
    assert "'PUBLIC.T' already exists" in str(info.value)


def test_an_error_of_the_batch_itself_mentions_no_race(
    two_nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = two_nodes
    b.execute([table("T")])
    a.catalog_ready(2, timeout=PATIENCE)
    with pytest.raises(almanac.AlreadyExistsError) as info:
        a.execute([table("T")])
    assert "another writer" not in str(info.value)


def _optimistic_store() -> Metastore:
    return MemoryMetastore(serialize_writers=False)


def test_optimistic_writers_back_off_and_every_commit_lands() -> None:
    store = _optimistic_store()
    nodes = [Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT) for _ in range(3)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(nodes))

    def write(index: int, node: Catalog) -> None:
        try:
            start.wait(PATIENCE)
            for i in range(40):
                node.execute([table(f"N{index}_{i}")])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i, n)) for i, n in enumerate(nodes)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        for node in nodes:
            assert node.catalog_ready(121, timeout=PATIENCE)
        assert len({digest(node.catalog()) for node in nodes}) == 1
        assert len(nodes[0].catalog().tables()) == 120
    finally:
        for node in nodes:
            node.close()
        store.close()


def test_an_optimistic_commit_gives_up_at_its_deadline_not_a_count() -> None:
    store = _optimistic_store()
    with (
        Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT) as a,
        Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT, commit_timeout_s=0.2) as b,
    ):
        assert b.max_attempts is None
        original = b.log.append
        counter = iter(range(100_000))

        def always_racing(update: VersionedUpdate, **kw: object) -> int | None:
            a.execute([table(f"R{next(counter)}")])
            return original(update, **kw)  # type: ignore[arg-type]

        b.log.append = always_racing  # type: ignore[method-assign]
        with pytest.raises(ConflictError, match=r"Gave up committing after \d+ attempts in") as e:
            b.execute([table("NEVER")])
        assert e.value.attempts >= 1
        assert a.catalog().table("NEVER") is None
    store.close()


def test_four_processes_commit_beside_a_cpu_hog_without_a_single_lost_race(
    tmp_path: Path,
) -> None:
    """Each worker allows one attempt per commit: one lost race (or starved
    writer) would fail it with ConflictError."""
    target = str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0):
        pass
    count, workers = 100, 4
    total = 1 + workers * count
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        reports = race_ddl_workers(
            target, [f"W{w}_" for w in range(workers)], count, "1", timeout=300
        )
    finally:
        hog.kill()
        hog.wait()
    for report in reports:
        assert report["applied"] == list(range(2, total + 1))
    assert len({report["digest"] for report in reports}) == 1
    with almanac.connect(target) as cat:
        assert cat.latest_version == total
        assert len(cat.catalog().tables()) == workers * count

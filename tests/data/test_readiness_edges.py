"""Readiness at its edges: a node that jumps over versions to a checkpoint
(the jump counts as DDL, since the versions it skips may hold some), a node
closed while versions wait for their listeners (no caller is left waiting),
and listeners, of DDL and of data, that commit and wait themselves."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from almanac import Catalog, CatalogError, CreateZone, Event, EventType, WaitTimeoutError
from almanac.data import DataSnapshot, read_table
from almanac.metastore import WatchEvent
from tests.data.support import append, connect, create, ids_of
from tests.waiting import PATIENCE


def _ready_now(cat: Catalog, version: int) -> bool:
    try:
        return cat.catalog_ready(version, timeout=0)
    except WaitTimeoutError:
        return False


class Stuck:
    """A listener that stays in the first event it hears until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.heard: list[int] = []

    def __call__(self, event: Event) -> None:
        self.heard.append(event.version)
        self.entered.set()
        self.release.wait(PATIENCE)


def test_a_checkpoint_jump_counts_as_ddl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node whose data listener is stuck lags while another node commits
    DDL and data and checkpoints past them; the node then jumps to the
    checkpoint. A data version after the jump is applied but not ready
    until the stuck listener returned: the DDL the jump skipped is
    unheard."""
    target = str(tmp_path / "cat")
    with connect(target) as writer, connect(target) as node:
        create(writer)
        node.catch_up()
        stuck = Stuck()
        node.listen(EventType.DATA_COMMIT, stuck)
        try:
            heard = append(writer, [1]).catalog_version
            assert stuck.entered.wait(PATIENCE)

            def nothing_new(
                prefix: str, from_revision: int
            ) -> tuple[Sequence[WatchEvent], int, bool]:
                return [], from_revision, False

            with monkeypatch.context() as patch:
                patch.setattr(node.log.store, "_watch_poll", nothing_new)
                writer.execute([CreateZone(name="Z")])
                skipped = append(writer, [2]).catalog_version
                jump = writer.checkpoint_log()
            node.catch_up()
            assert node.earliest_version == jump > heard
            after = append(writer, [3]).catalog_version
            assert node.catalog_ready(after, timeout=PATIENCE, applied_only=True)
            assert _ready_now(node, heard)  # data, no DDL before it unheard
            assert not _ready_now(node, skipped)
            assert not _ready_now(node, jump)
            assert not _ready_now(node, after)
        finally:
            stuck.release.set()
        assert node.catalog_ready(after, timeout=PATIENCE)
        assert ids_of(read_table(node, "T")) == [1, 2, 3]


def test_closing_a_node_with_versions_pending_leaves_no_caller_waiting(tmp_path: Path) -> None:
    """A DDL listener is stuck; a DDL ``execute``, an ``execute_async``
    future and a ``catalog_ready`` (of a data version behind it) without a
    timeout all wait for it, while a data write behind it returns once
    applied. Closing the node ends every wait with a ``CatalogError`` (the
    catalog is closed), the listener still stuck."""
    with connect(str(tmp_path / "cat")) as cat:
        create(cat)
        stuck = Stuck()
        cat.listen(EventType.ZONE_CREATE, stuck)
        outcomes: dict[str, object] = {}

        def run(name: str, step: Callable[[], object]) -> threading.Thread:
            def body() -> None:
                try:
                    outcomes[name] = step()
                except BaseException as exc:
                    outcomes[name] = exc

            thread = threading.Thread(target=body, name=name)
            thread.start()
            return thread

        try:
            threads = [run("ddl", lambda: cat.execute([CreateZone(name="Z")]))]
            assert stuck.entered.wait(PATIENCE)
            ddl = cat.latest_version
            threads += [
                run("data", lambda: append(cat, [1])),
                run("async", lambda: cat.execute_async([CreateZone(name="Y")]).result()),
                run("ready", lambda: cat.catalog_ready(ddl + 2, timeout=None)),
            ]
            assert cat.catalog_ready(ddl + 2, timeout=PATIENCE, applied_only=True)
            closing = threading.Thread(target=cat.close)
            closing.start()
            for thread in [*threads, closing]:
                thread.join(PATIENCE)
                assert not thread.is_alive(), f"{thread.name} still waits after close"
        finally:
            stuck.release.set()
        assert set(outcomes) == {"ddl", "data", "async", "ready"}
        written = outcomes.pop("data")
        assert isinstance(written, DataSnapshot), written  # a writer waits for no listener
        for name, outcome in outcomes.items():
            assert isinstance(outcome, CatalogError), (name, outcome)
            assert "closed" in str(outcome), (name, outcome)


@pytest.mark.parametrize("on", [EventType.ZONE_CREATE, EventType.DATA_COMMIT])
def test_a_listener_may_write_commit_and_wait_from_inside(tmp_path: Path, on: EventType) -> None:
    """Inside a listener of DDL or of data: a data write, a DDL ``execute``,
    an ``execute_async`` waited on, and ``catalog_ready`` of the version it
    hears all return (they wait for application there, not for the
    listener itself); each then becomes ready, and the listener hears the
    versions it made afterwards, in order."""
    with connect(str(tmp_path / "cat")) as cat:
        create(cat)
        names = itertools.count()
        made: list[int] = []
        heard: list[tuple[EventType, int]] = []
        failed: list[BaseException] = []

        def listener(event: Event) -> None:
            heard.append((event.type, event.version))
            if len(heard) > 1:
                return
            try:
                assert cat.catalog_ready(event.version, timeout=PATIENCE)
                made.append(append(cat, [10]).catalog_version)
                made.append(cat.execute([CreateZone(name=f"Y{next(names)}")]).version)
                future = cat.execute_async([CreateZone(name=f"Y{next(names)}")])
                made.append(future.result(PATIENCE).version)
            except BaseException as exc:
                failed.append(exc)

        cat.listen(EventType.ZONE_CREATE, listener)
        cat.listen(EventType.DATA_COMMIT, listener)
        if on is EventType.ZONE_CREATE:
            first = cat.execute([CreateZone(name="Z")]).version
        else:
            first = append(cat, [1]).catalog_version
        assert cat.catalog_ready(first + 3, timeout=PATIENCE)
        assert not failed, failed
        assert made == [first + 1, first + 2, first + 3]
        assert [version for _, version in heard] == [first, *made]
        assert heard[1][0] is EventType.DATA_COMMIT
        assert cat.listener_failures == []
        assert ids_of(read_table(cat, "T")) == ([1, 10] if on is EventType.DATA_COMMIT else [10])


def test_a_stuck_ddl_listener_on_one_node_holds_only_that_nodes_readiness(
    tmp_path: Path,
) -> None:
    """Node A's DDL listener is stuck. Node B's DDL and data writes return
    (B has no listener); on A, B's data versions are applied and readable
    but not ready, since a DDL version before them is unheard there; they
    become ready there once the listener returned."""
    target = str(tmp_path / "cat")
    with connect(target) as a, connect(target) as b:
        create(a)
        b.catch_up()
        stuck = Stuck()
        a.listen(EventType.ZONE_CREATE, stuck)
        try:
            ddl = b.execute([CreateZone(name="Z")]).version
            assert stuck.entered.wait(PATIENCE)
            data = [append(b, [i]).catalog_version for i in range(3)]
            assert all(_ready_now(b, v) for v in [ddl, *data])
            assert a.catalog_ready(data[-1], timeout=PATIENCE, applied_only=True)
            assert ids_of(read_table(a, "T")) == [0, 1, 2]
            assert not any(_ready_now(a, v) for v in [ddl, *data])
        finally:
            stuck.release.set()
        assert a.catalog_ready(data[-1], timeout=PATIENCE)
        assert stuck.heard == [ddl]


@pytest.mark.parametrize("failure", [RuntimeError("boom"), SystemExit(3)], ids=repr)
def test_data_listeners_that_raise_or_unlisten_themselves_hold_up_nothing(
    tmp_path: Path, failure: BaseException
) -> None:
    """One listener raises on every data commit, another unlistens itself
    on its first one: every version is ready, the failures are recorded
    (one per data version), the self-removed listener heard one event, and
    a listener beside them hears every version in order."""
    with connect(str(tmp_path / "cat")) as cat:
        create(cat)
        heard: list[int] = []
        once: list[int] = []

        def raises(event: Event) -> None:
            raise failure

        def leaves(event: Event) -> None:
            once.append(event.version)
            cat.unlisten(EventType.DATA_COMMIT, leaves)

        cat.listen(EventType.DATA_COMMIT, raises)
        cat.listen(EventType.DATA_COMMIT, leaves)
        cat.listen(EventType.DATA_COMMIT, lambda event: heard.append(event.version))
        cat.listen(EventType.ZONE_CREATE, lambda event: heard.append(event.version))
        made = [append(cat, [1]).catalog_version]
        made.append(cat.execute([CreateZone(name="Z")]).version)
        made.append(append(cat, [2]).catalog_version)
        made.append(cat.execute([CreateZone(name="Y")]).version)
        assert cat.catalog_ready(made[-1], timeout=PATIENCE)
        assert heard == made
        assert once == [made[0]]
        failures = cat.listener_failures
        assert [f.event.version for f in failures] == [made[0], made[2]]
        assert all(f.error is failure for f in failures)

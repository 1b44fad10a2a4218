"""``execute_async``: many DDL wait out their schema sync at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from almanac import Catalog, EventType
from almanac.metastore import SqliteMetastore
from almanac.model.clock import HybridClock
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from tests.durable.support import table
from tests.waiting import PATIENCE


class HeldClock:
    """A wall clock that stands still while held, then runs on (with the time
    it lost): no version's activation delay can pass while it is held."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self._at = 0

    def hold(self) -> None:
        self._at = time.time_ns() // 1_000_000
        self.held.set()

    def release(self) -> None:
        self.held.clear()

    def __call__(self) -> int:
        return self._at if self.held.is_set() else time.time_ns() // 1_000_000


def _wait_for(predicate: object, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + PATIENCE
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE} s"
        time.sleep(0.01)


@pytest.mark.parametrize("listening", [False, True])
def test_many_async_executes_all_commit_before_any_activation_passes(
    tmp_path: Path, listening: bool
) -> None:
    """With the clock held, no execute can finish its 300 ms schema-sync wait:
    all of them must still commit, so all are waiting at the same time. Far
    more than the worker threads that commit them."""
    wall = HeldClock()
    count = 48
    with Catalog(
        UpdateLog(SqliteMetastore(tmp_path / "c.db")),
        sync=SchemaSync(delay_ms=300, max_clock_skew_ms=5),
        clock=HybridClock(wall),
    ) as cat:
        seen: list[int] = []
        if listening:
            cat.listen(EventType.TABLE_CREATE, lambda e: seen.append(e.version))
        wall.hold()
        try:
            futures = [cat.execute_async([table(f"T{i}")]) for i in range(count)]
            _wait_for(lambda: cat.latest_version == 1 + count, "every execute committed")
            assert not any(f.done() for f in futures), "an execute finished inside its delay"
        finally:
            wall.release()  # or the node's close waits for the held executes forever
        activations = [cat.catalog(v).activation_time for v in range(2, count + 2)]
        assert activations == sorted(activations)
        versions = sorted(f.result(timeout=PATIENCE).version for f in futures)
        assert versions == list(range(2, count + 2))
        assert cat.clock.now() > cat.sync.visible_everywhere_at(activations[-1])
        if listening:
            assert seen == list(range(2, count + 2))

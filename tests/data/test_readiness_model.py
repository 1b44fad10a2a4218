"""Readiness under interleaved data and DDL versions, as a state machine.

A writer node commits DDL (a zone) and data (an append); a follower node on
the same catalog (SQLite, or a real etcd) hears every version through listeners that stay
until the machine releases them, in any order it picks, and submits DDL of
its own with ``execute_async``. Whatever the interleaving: a ready version
means every DDL version up to it is ready and its listeners returned; a
data version is ready once applied and every earlier DDL listener
returned; ready stays ready; an ``execute_async`` future is done only once
its version is ready; and the listeners hear every version once, in order.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import almanac
from almanac import Catalog, CreateZone, Event, EventType, ExecuteResult, WaitTimeoutError
from almanac.dev.etcd_local import LocalEtcd
from tests.data.support import append, create
from tests.waiting import PATIENCE, wait_for


def ready_now(cat: Catalog, version: int) -> bool:
    try:
        return cat.catalog_ready(version, timeout=0)
    except WaitTimeoutError:
        return False


class Gated:
    """A listener that records each version it hears and stays in it until
    the version's gate opens."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gates: dict[int, threading.Event] = {}
        self.heard: list[int] = []
        self.returned: set[int] = set()

    def gate(self, version: int) -> threading.Event:
        with self.lock:
            return self.gates.setdefault(version, threading.Event())

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.heard.append(event.version)
        self.gate(event.version).wait(PATIENCE)
        with self.lock:
            self.returned.add(event.version)


_runs = itertools.count()


class ReadinessMachine(RuleBasedStateMachine):
    def __init__(self, root: Path, etcd: str | None) -> None:
        super().__init__()
        run = next(_runs)
        target = str(root / f"cat-{run}") if etcd is None else f"{etcd}/ready-{uuid.uuid4().hex}"
        warehouse = str(root / f"wh-{run}")
        self.writer = almanac.connect(target, warehouse=warehouse, delay_ms=0)
        create(self.writer)
        self.follower = almanac.connect(target, warehouse=warehouse, delay_ms=0)
        self.listener = Gated()
        self.follower.listen(EventType.ZONE_CREATE, self.listener)
        self.follower.listen(EventType.DATA_COMMIT, self.listener)
        self.first = self.writer.latest_version + 1
        self.ddl: set[int] = set()
        self.data: set[int] = set()
        self.ready: set[int] = set()
        self.futures: dict[int, Future[ExecuteResult]] = {}
        self.zones = itertools.count()

    @property
    def versions(self) -> list[int]:
        return sorted(self.ddl | self.data)

    def _applied(self, version: int) -> None:
        assert self.follower.catalog_ready(version, timeout=PATIENCE, applied_only=True)

    @rule()
    def ddl_on_the_writer(self) -> None:
        version = self.writer.execute([CreateZone(name=f"W{next(self.zones)}")]).version
        self.ddl.add(version)
        self._applied(version)

    @rule(rows=st.integers(1, 3))
    def data_on_the_writer(self, rows: int) -> None:
        version = append(self.writer, list(range(rows))).catalog_version
        self.data.add(version)
        self._applied(version)

    @rule()
    def async_ddl_on_the_follower(self) -> None:
        version = self.follower.latest_version + 1
        future = self.follower.execute_async([CreateZone(name=f"F{next(self.zones)}")])
        self._applied(version)
        self.ddl.add(version)
        self.futures[version] = future

    @rule(data=st.data())
    def release_a_listener(self, data: st.DataObject) -> None:
        closed = [v for v in self.versions if not self.listener.gate(v).is_set()]
        if closed:
            self.listener.gate(data.draw(st.sampled_from(closed))).set()

    def blocked(self, version: int) -> bool:
        """Whether a closed gate holds ``version`` up: listeners run in
        order, so a DDL version waits for every gate up to it, and a data
        version for every gate up to the last DDL version before it."""
        last = max((u for u in self.ddl if u <= version), default=None)
        if last is None:
            return False
        return any(not self.listener.gate(w).is_set() for w in self.versions if w <= last)

    @invariant()
    def readiness_follows_the_rule(self) -> None:
        for version in self.versions:
            if self.blocked(version):
                assert not ready_now(self.follower, version), f"version {version} ran ahead"
            elif version in self.data:
                # Not held up by its own listener, nor a later one's.
                assert self.follower.catalog_ready(version, timeout=PATIENCE)
            if ready_now(self.follower, version):
                self.ready.add(version)
                returned = set(self.listener.returned)
                missing = {u for u in self.ddl if u <= version} - returned
                assert not missing, f"version {version} ready before the listeners of {missing}"
            else:
                assert version not in self.ready, f"version {version} was ready, and is not"

    @invariant()
    def a_future_is_done_only_once_its_version_is_ready(self) -> None:
        for version, future in self.futures.items():
            if self.blocked(version):
                assert not future.done(), f"the future of version {version} ran ahead"
            if future.done():
                assert future.result().version == version
                assert ready_now(self.follower, version)

    def teardown(self) -> None:
        try:
            for version in self.versions:
                self.listener.gate(version).set()
            latest = self.follower.latest_version
            assert self.follower.catalog_ready(latest, timeout=PATIENCE)
            for version, future in self.futures.items():
                assert future.result(PATIENCE).version == version
            # A data version is ready before its listener returned: wait for them.
            wait_for(lambda: len(self.listener.returned) == len(self.versions), "the listeners")
            # Every version once, in order.
            assert self.listener.heard == self.versions
        finally:
            for version in self.versions:
                self.listener.gate(version).set()
            self.follower.close()
            self.writer.close()


@pytest.fixture(scope="module")
def etcd1() -> Iterator[LocalEtcd]:
    with LocalEtcd(1, fsync=False) as cluster:
        yield cluster


@pytest.mark.parametrize("store", ["sqlite", "etcd"])
def test_readiness_follows_its_rule_in_any_interleaving(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    """On SQLite the follower polls the log; on etcd it watches it."""
    etcd = request.getfixturevalue("etcd1").uri if store == "etcd" else None

    class Here(ReadinessMachine):
        def __init__(self) -> None:
            super().__init__(tmp_path, etcd)

    run_state_machine_as_test(
        Here,
        settings=settings(
            max_examples=6,
            stateful_step_count=10,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

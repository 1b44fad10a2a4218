"""Checkpoints truncate logs of any length under a cap on transaction size,
and a truncation cut short (an error, or the process killed between its
batches) leaves a log that opens, loses nothing a reader may read, and is
cleaned by the next checkpoint."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
import almanac.node.retention
from almanac.dev.etcd_local import LocalEtcd
from almanac.errors import CorruptLogError, MetastoreError, VersionNotFoundError
from almanac.metastore import (
    Compare,
    Delete,
    MemoryMetastore,
    Metastore,
    Op,
    Put,
    SqliteMetastore,
    TxnResult,
)
from almanac.metastore.etcd import EtcdMetastore
from almanac.model.entries import VersionedUpdate
from almanac.model.schema_sync import SchemaSync
from almanac.node.catalog import Catalog
from almanac.node.log import (
    KEY_CHECKPOINT_VERSION,
    KEY_TRUNCATING,
    KEY_VERSION,
    UPDATE_PREFIX,
    UpdateLog,
    update_key,
)
from almanac.node.log_format import frame_update
from almanac.node.log_truncation import VersionPins, truncate
from tests.durable.support import child, digest, table
from tests.metastore.support import make_store

NO_WAIT = SchemaSync(delay_ms=0, max_clock_skew_ms=0)
CAP = 128
LONG = 10_000


def node(store: Metastore) -> Catalog:
    return Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT)


def make_updates(count: int) -> list[VersionedUpdate]:
    """``count`` real versions, committed on a scratch in-memory node."""
    with node(MemoryMetastore()) as cat:
        cat.execute([table("T")])
        while cat.latest_version < count:
            cat.execute([almanac.SetTableProperties(name="T", min_stale_rows=cat.latest_version)])
        return [info.update for info in cat.history()]


@pytest.fixture(scope="module")
def long_log() -> list[VersionedUpdate]:
    return make_updates(LONG)


def load(store: Metastore, updates: list[VersionedUpdate]) -> None:
    """Store a log as the nodes that committed it would have, in few transactions."""
    step = (store.max_txn_ops or 2000) - 3
    for start in range(0, len(updates), step):
        chunk = updates[start : start + step]
        ops: list[Op] = [Put(update_key(u.version), frame_update(u)) for u in chunk]
        ops.append(Put(KEY_VERSION, str(chunk[-1].version).encode()))
        if start == 0:
            ops.append(Put(KEY_CHECKPOINT_VERSION, b"0"))
        assert store.txn([], ops).succeeded


def log_versions(store: Metastore) -> list[int]:
    """The versions whose keys are stored, in order."""
    keys = [kv.key for kv in store.range(UPDATE_PREFIX).kvs]
    return sorted(int(key[len(UPDATE_PREFIX) :]) for key in keys)


class FaultyStore:
    """Mixin for a backend whose delete-only transactions (the batches of a
    truncation) fail from the ``fail_after``-th on, or call ``between``
    before each one: a store lost, or another process acting, mid-truncation."""

    fail_after: int | None = None
    between: Callable[[], None] | None = None
    batches = 0

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        if success and all(
            isinstance(op, Delete) and op.key.startswith((UPDATE_PREFIX, KEY_TRUNCATING))
            for op in success
        ):
            if self.fail_after is not None and self.batches >= self.fail_after:
                raise MetastoreError("the metastore went away (injected)")
            self.batches += 1
            hook, self.between = self.between, None
            if hook is not None:
                hook()
                self.between = hook
        result: TxnResult = super()._txn(compares, success, failure)  # type: ignore[misc]
        return result


class FaultyMemory(FaultyStore, MemoryMetastore):
    pass


class FaultySqlite(FaultyStore, SqliteMetastore):
    pass


@pytest.fixture(params=["memory", "sqlite"])
def capped(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultyStore]:
    """A store with etcd's cap of 128 operations per transaction."""
    store: FaultyMemory | FaultySqlite
    if request.param == "memory":
        store = FaultyMemory(max_txn_ops=CAP)
    else:
        store = FaultySqlite(tmp_path / "c.db", durability="normal")
        store.max_txn_ops = CAP
    yield store
    store.close()


@pytest.mark.parametrize("kind", ["memory-capped", "sqlite", "etcd"])
def test_a_checkpoint_truncates_ten_thousand_versions(
    kind: str, long_log: list[VersionedUpdate], tmp_path: Path
) -> None:
    store: Metastore
    if kind == "memory-capped":
        store = MemoryMetastore(max_txn_ops=CAP)
    elif kind == "sqlite":
        store = SqliteMetastore(tmp_path / "c.db", durability="normal")
    else:
        # A real etcd refuses any transaction above its cap of 128 operations.
        store = make_store("etcd", tmp_path)
    try:
        load(store, long_log)
        with node(store) as cat:
            expected = digest(cat.catalog())
            assert cat.checkpoint_log() == LONG
            assert log_versions(store) == [LONG]
            assert store.get(KEY_TRUNCATING) is None
        with node(store) as again:
            assert (again.earliest_version, again.latest_version) == (LONG, LONG)
            assert digest(again.catalog()) == expected
            assert again.execute([table("AFTER")]).version == LONG + 1
    finally:
        store.close()


def test_a_truncation_cut_short_opens_and_the_next_checkpoint_cleans(
    capped: FaultyMemory, long_log: list[VersionedUpdate]
) -> None:
    store = capped
    load(store, long_log[:2000])
    with node(store) as cat:
        expected = {v: digest(cat.catalog(v)) for v in range(1500, 2001)}
        store.fail_after = 3
        assert cat.checkpoint_log(1500) == 1500  # the checkpoint stands
        left = log_versions(store)
        assert len(left) > 501, "the injected failure left nothing behind"
        assert left[-501:] == list(range(1500, 2001))
        assert store.get(KEY_TRUNCATING) is not None
    with node(store) as reopened:
        assert reopened.earliest_version == 1500
        assert {v: digest(reopened.catalog(v)) for v in range(1500, 2001)} == expected
        with pytest.raises(VersionNotFoundError), reopened.pin(1499):
            pass
        store.fail_after = None
        reopened.execute([table("NEXT")])
        assert reopened.checkpoint_log() == 2001
        assert log_versions(store) == [2001]
        assert store.get(KEY_TRUNCATING) is None


def test_asking_again_for_the_same_checkpoint_finishes_the_cleanup(
    capped: FaultyMemory, long_log: list[VersionedUpdate]
) -> None:
    store = capped
    load(store, long_log[:700])
    with node(store) as cat:
        store.fail_after = 1
        assert cat.checkpoint_log() == 700
        assert len(log_versions(store)) > 1
        store.fail_after = None
        assert cat.checkpoint_log() == 700
        assert log_versions(store) == [700]
        assert store.get(KEY_TRUNCATING) is None


def test_pins_taken_between_batches_are_never_truncated(
    capped: FaultyMemory, long_log: list[VersionedUpdate]
) -> None:
    store = capped
    load(store, long_log[:900])
    with (
        node(store) as cat,
        node(store) as reader,
        contextlib.closing(VersionPins(store)) as pins,  # another process's
    ):
        assert reader.catalog_ready(900, timeout=30)
        held: list[int] = []
        refused: list[int] = []

        def pin_some() -> None:
            for version in (1, 399, 400, 650, 900):
                try:
                    pin = pins.pin(version, timeout=10)
                except VersionNotFoundError:
                    refused.append(version)
                else:
                    held.append(pin.version)

        store.between = pin_some
        assert cat.checkpoint_log(400) == 400
        assert store.batches >= 3  # so pins were taken between batches
        assert set(refused) == {1, 399} and set(held) == {400, 650, 900}
        assert log_versions(store) == list(range(400, 901))
        store.between = None
        assert cat.checkpoint_log() == 400  # the pins hold it there
        with node(store) as fresh:
            assert all(fresh.catalog(v).version == v for v in (400, 650, 900))


def test_a_checkpoint_racing_another_ones_batches_keeps_its_marker(
    capped: FaultyMemory, long_log: list[VersionedUpdate]
) -> None:
    """A second checkpoint, cut short itself, rewrites the marker while the
    first deletes its batches: the first must leave the marker, or what the
    second left would be refused at the next open."""
    store = capped
    load(store, long_log[:1200])
    with node(store) as first, node(store) as second:
        assert second.catalog_ready(1200, timeout=30)
        raced: list[int] = []

        def checkpoint_elsewhere() -> None:
            if not raced:
                store.fail_after = store.batches  # the second one's batches fail
                raced.append(second.checkpoint_log(1100))
                store.fail_after = None

        store.between = checkpoint_elsewhere
        assert first.checkpoint_log(300) == 1100
        store.between = None
        assert raced == [1100]
        left = log_versions(store)
        assert left[0] >= 300 and left[-101:] == list(range(1100, 1201)) and len(left) > 101
        assert store.get(KEY_TRUNCATING) is not None
        with node(store) as opened:
            assert (opened.earliest_version, opened.latest_version) == (1100, 1200)
        assert second.checkpoint_log(1100) == 1100
        assert log_versions(store) == list(range(1100, 1201))
        assert store.get(KEY_TRUNCATING) is None


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    versions=st.integers(2, 400),
    cap=st.integers(5, 40),
    fail_after=st.none() | st.integers(0, 12),
    cut=st.floats(0, 1),
    pin=st.none() | st.floats(0, 1),
)
def test_any_cut_short_truncation_keeps_the_log_readable(
    long_log: list[VersionedUpdate],
    versions: int,
    cap: int,
    fail_after: int | None,
    cut: float,
    pin: float | None,
) -> None:
    store = FaultyMemory(max_txn_ops=cap)
    try:
        load(store, long_log[:versions])
        with node(store) as cat:
            target = max(1, round(cut * versions))
            pinned = None if pin is None else max(1, round(pin * versions))
            expected = {v: digest(cat.catalog(v)) for v in range(target, versions + 1)}
            store.fail_after = fail_after
            with cat.pin(pinned) if pinned is not None else contextlib.nullcontext():
                earliest = cat.checkpoint_log(target)
            assert earliest == min(target, pinned or target)
            with node(store) as opened:
                assert opened.earliest_version == earliest
                for v in range(earliest, versions + 1):
                    if v >= target:
                        assert digest(opened.catalog(v)) == expected[v]
            store.fail_after = None
            assert cat.checkpoint_log(earliest) == earliest
            assert log_versions(store) == list(range(max(earliest, 1), versions + 1))
            assert store.get(KEY_TRUNCATING) is None
    finally:
        store.close()


# -- what the layout check accepts --------------------------------------------


def _checkpointed(store: Metastore, versions: int, at: int) -> None:
    load(store, make_updates(versions))
    with node(store) as cat:
        assert cat.checkpoint_log(at) == at


def test_leftovers_below_the_checkpoint_need_the_marker() -> None:
    store = MemoryMetastore()
    _checkpointed(store, 12, 8)
    updates = make_updates(12)
    store.put(update_key(5), frame_update(updates[4]))
    with pytest.raises(CorruptLogError, match=r"'catalog.update.5'.*before the checkpoint"):
        node(store)
    store.put(KEY_TRUNCATING, b"4")
    with node(store) as cat:  # an unfinished truncation's leftover: ignored
        assert (cat.earliest_version, cat.latest_version) == (8, 12)
        store.put(update_key(5), b"garbage: never read")
    with node(store) as cat:
        assert cat.checkpoint_log(8) == 8
    assert log_versions(store) == list(range(8, 13))
    assert store.get(KEY_TRUNCATING) is None


@pytest.mark.parametrize(
    ("marker", "leftover", "message"),
    [
        (b"8", None, r"'catalog.truncating'.*from 8 on.*not before the checkpoint version 8"),
        (b"0", None, r"'catalog.truncating'.*from 0 on"),
        (b"04", None, r"'catalog.truncating' holds b'04', not a version number"),
        (b"5", 3, r"'catalog.update.3'.*before the checkpoint"),
    ],
)
def test_a_bad_marker_or_a_leftover_below_it_is_corruption(
    marker: bytes, leftover: int | None, message: str
) -> None:
    store = MemoryMetastore()
    _checkpointed(store, 12, 8)
    store.put(KEY_TRUNCATING, marker)
    if leftover is not None:
        store.put(update_key(leftover), frame_update(make_updates(leftover)[-1]))
    with pytest.raises(CorruptLogError, match=message):
        node(store)


def test_an_entry_at_the_checkpoint_is_still_checked_during_a_truncation() -> None:
    store = MemoryMetastore()
    _checkpointed(store, 12, 8)
    store.put(KEY_TRUNCATING, b"2")
    store.put(update_key(8), b"\x00" * 30)
    with pytest.raises(CorruptLogError, match=r"'catalog.update.8' of version 8 is corrupted"):
        node(store)


# -- a real process killed between batches ----------------------------------------


def test_a_process_killed_between_batches_leaves_a_log_that_opens(
    tmp_path: Path, long_log: list[VersionedUpdate]
) -> None:
    target = tmp_path / "d"
    target.mkdir()
    store = SqliteMetastore(target / "catalog.db", durability="normal")
    load(store, long_log[:3000])
    store.close()
    with almanac.connect(str(target)) as cat:
        expected = {v: digest(cat.catalog(v)) for v in range(2000, 3001)}
    proc = child("tests.durable.worker_truncate", str(target), "2000", "4")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "batches 4"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store = SqliteMetastore(target / "catalog.db")
    try:
        left = log_versions(store)
        assert 1001 < len(left) < 2999 and left[-1001:] == list(range(2000, 3001))
        assert store.get(KEY_TRUNCATING) is not None
    finally:
        store.close()
    with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0) as cat:
        assert cat.earliest_version == 2000
        assert {v: digest(cat.catalog(v)) for v in range(2000, 3001)} == expected
        cat.execute([table("AFTER")])
        assert cat.checkpoint_log() == 3001
    store = SqliteMetastore(target / "catalog.db")
    try:
        assert log_versions(store) == [3001]
        assert store.get(KEY_TRUNCATING) is None
    finally:
        store.close()


def test_a_pin_taken_after_the_checkpoint_read_the_pins_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryMetastore(max_txn_ops=CAP)
    load(store, make_updates(300))
    with node(store) as cat, contextlib.closing(VersionPins(store)) as pins:

        def pin_first(
            log: UpdateLog,
            version: almanac.CatalogVersion,
            pins_revision: int,
            requests: tuple[Any, ...] = (),
        ) -> bool:
            pins.pin(10)  # after checkpoint_log read the pins
            return truncate(log, version, pins_revision, requests)

        monkeypatch.setattr(almanac.node.retention, "truncate", pin_first)
        assert cat.checkpoint_log(200) == 0
        assert log_versions(store) == list(range(1, 301))


class FaultyEtcd(FaultyStore, EtcdMetastore):
    pass


def test_the_only_etcd_member_stopped_mid_truncation(long_log: list[VersionedUpdate]) -> None:
    with LocalEtcd(1, fsync=False) as cluster:
        store = FaultyEtcd(cluster.endpoints, timeout_s=2)
        try:
            load(store, long_log[:700])
            with node(store) as cat:
                expected = {v: digest(cat.catalog(v)) for v in range(500, 701)}
                store.between = lambda: cluster.stop(0) if store.batches == 2 else None
                with pytest.raises(MetastoreError):
                    cat.checkpoint_log(500)
            cluster.restart(0)
            cluster.wait_healthy()
            store.between = None
            with node(store) as opened:
                # Cut short before or after its checkpoint transaction: every
                # version a reader may read is intact, nothing half-applied.
                earliest = opened.earliest_version
                assert earliest in (1, 500)
                assert {v: digest(opened.catalog(v)) for v in range(500, 701)} == expected
                assert opened.checkpoint_log(500) == 500
            assert log_versions(store) == list(range(500, 701))
            assert store.get(KEY_TRUNCATING) is None
        finally:
            store.close()

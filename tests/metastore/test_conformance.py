"""The behaviour every metastore backend must have.

Tests taking ``store`` run against each backend; ``test_sqlite_*`` tests
cover what only a file shared between handles and processes can show.
Nothing here asserts how long something took: waits are bounded, generous,
and only decide when to give up.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac.metastore.sqlite as sqlite_backend
from almanac.errors import CompactedError, MetastoreError
from almanac.metastore import (
    Compare,
    CompareTarget,
    Delete,
    DeleteRange,
    DeleteResponse,
    Get,
    GetResponse,
    InvalidArgumentError,
    KeyValue,
    LeaseNotFoundError,
    MemoryMetastore,
    Metastore,
    Op,
    Put,
    PutResponse,
    Range,
    RangeResult,
    SqliteMetastore,
    WatchEvent,
    WatchEventKind,
    open_metastore,
)
from tests.waiting import PATIENCE

from .support import (
    ManualClock,
    cas_increment,
    cas_worker,
    make_store,
    put_then_die,
    wait_until,
    watch_worker,
)

SPAWN = multiprocessing.get_context("spawn")


def keys_of(result: RangeResult) -> list[str]:
    return [kv.key for kv in result.kvs]


def next_event(watch: Any, timeout: float = PATIENCE) -> WatchEvent:
    event = watch.next(timeout=timeout)
    assert event is not None, "expected a watch event"
    assert isinstance(event, WatchEvent)
    return event


def current(store: Metastore, key: str) -> KeyValue:
    kv = store.get(key)
    assert kv is not None, f"expected key {key!r} to exist"
    return kv


# --------------------------------------------------------------------------- revisions


def test_empty_store_starts_at_revision_zero(store: Metastore) -> None:
    assert store.revision == 0
    assert store.compact_revision == 0
    assert store.get("missing") is None
    assert store.range("") == RangeResult((), 0, False)


def test_each_write_bumps_the_revision_by_exactly_one(store: Metastore) -> None:
    assert store.put("a", b"1") == 1
    assert store.put("b", b"2") == 2
    assert store.put("a", b"3") == 3
    assert store.revision == 3
    assert store.get("a") == KeyValue("a", b"3", create_revision=1, mod_revision=3, version=2)
    assert store.get("b") == KeyValue("b", b"2", create_revision=2, mod_revision=2, version=1)


def test_reads_failed_txns_and_noop_deletes_leave_the_revision_alone(store: Metastore) -> None:
    store.put("a", b"1")
    store.get("a")
    store.range("")
    read_only = store.txn([Compare.value("a", "==", b"1")], [Get("a"), Range("")])
    assert read_only.succeeded
    assert read_only.revision == 1
    failed = store.txn([Compare.value("a", "==", b"other")], [Put("a", b"2")])
    assert (failed.succeeded, failed.revision, failed.responses) == (False, 1, ())
    assert store.delete("missing") == 1
    assert store.txn([], [DeleteRange("zzz")]).revision == 1
    assert store.revision == 1
    assert current(store, "a").value == b"1"


def test_version_and_create_revision_restart_after_a_delete(store: Metastore) -> None:
    store.put("k", b"1")
    store.put("k", b"2")
    assert store.delete("k") == 3
    assert store.put("k", b"3") == 4
    assert store.get("k") == KeyValue("k", b"3", create_revision=4, mod_revision=4, version=1)


# --------------------------------------------------------------------------- get and range


def test_range_respects_prefix_boundaries(store: Metastore) -> None:
    keys = ["a", "a/", "a/b", "a/c", "a0", "ab", "b", "é", "\U0001f600", "a/\U0001f600", "a/b/c"]
    for key in keys:
        store.put(key, key.encode())
    assert keys_of(store.range("")) == sorted(keys)
    assert keys_of(store.range("a/")) == sorted(["a/", "a/b", "a/c", "a/\U0001f600", "a/b/c"])
    assert keys_of(store.range("a/b")) == ["a/b", "a/b/c"]
    assert keys_of(store.range("a/b/")) == ["a/b/c"]
    assert keys_of(store.range("a/bb")) == []
    assert keys_of(store.range("a")) == sorted(k for k in keys if k.startswith("a"))
    assert keys_of(store.range("b")) == ["b"]
    assert keys_of(store.range("é")) == ["é"]
    assert keys_of(store.range("\U0001f600")) == ["\U0001f600"]
    assert keys_of(store.range("c")) == []
    assert all(kv.value == kv.key.encode() for kv in store.range("").kvs)


def test_range_limit_reports_whether_more_keys_exist(store: Metastore) -> None:
    for suffix in "abcde":
        store.put(f"k/{suffix}", b"")
    store.put("z", b"")
    limited = store.range("k/", limit=2)
    assert keys_of(limited) == ["k/a", "k/b"]
    assert limited.more
    assert limited.revision == 6
    assert not store.range("k/", limit=5).more
    assert keys_of(store.range("k/", limit=9)) == ["k/a", "k/b", "k/c", "k/d", "k/e"]


def test_get_returns_only_the_exact_key(store: Metastore) -> None:
    store.put("ab", b"1")
    assert store.get("a") is None
    assert store.get("abc") is None
    assert current(store, "ab").value == b"1"


# --------------------------------------------------------------------------- transactions


def test_every_compare_target_and_op(store: Metastore) -> None:
    store.put("k", b"m")  # 1
    store.put("x", b"x")  # 2
    store.put("k", b"n")  # 3: k = b"n", create 1, mod 3, version 2
    cases: list[tuple[Compare, bool]] = [
        (Compare.value("k", "==", b"n"), True),
        (Compare.value("k", "!=", b"n"), False),
        (Compare.value("k", "<", b"o"), True),
        (Compare.value("k", "<", b"n"), False),
        (Compare.value("k", ">", b"m"), True),
        (Compare.value("k", ">", b"nn"), False),
        (Compare.mod_revision("k", "==", 3), True),
        (Compare.mod_revision("k", "!=", 3), False),
        (Compare.mod_revision("k", "<", 4), True),
        (Compare.mod_revision("k", ">", 3), False),
        (Compare.create_revision("k", "==", 1), True),
        (Compare.create_revision("k", "!=", 1), False),
        (Compare.create_revision("k", "<", 1), False),
        (Compare.create_revision("k", ">", 0), True),
        (Compare.version("k", "==", 2), True),
        (Compare.version("k", "!=", 3), True),
        (Compare.version("k", "<", 2), False),
        (Compare.version("k", ">", 1), True),
        (Compare("k", CompareTarget.VERSION, "==", 2), True),
        (Compare.exists("k"), True),
        (Compare.absent("k"), False),
        (Compare.absent("nope"), True),
        (Compare.exists("nope"), False),
        (Compare.mod_revision("nope", "==", 0), True),
        (Compare.version("nope", "==", 0), True),
        (Compare.create_revision("nope", "<", 1), True),
        # As in etcd, a value compare on an absent key is false whatever the op.
        (Compare.value("nope", "==", b""), False),
        (Compare.value("nope", "!=", b"x"), False),
    ]
    outcomes = [store.txn([compare], [Get("k")]).succeeded for compare, _ in cases]
    assert outcomes == [expected for _, expected in cases]
    assert store.txn([c for c, ok in cases if ok], [Get("k")]).succeeded
    assert not store.txn([cases[0][0], cases[1][0]], [Get("k")]).succeeded
    assert store.revision == 3


def test_failure_branch_runs_when_any_compare_fails(store: Metastore) -> None:
    store.put("k", b"1")
    result = store.txn(
        [Compare.value("k", "==", b"1"), Compare.absent("k")],
        [Put("s", b"success")],
        [Put("f", b"failure"), Get("k")],
    )
    assert not result.succeeded
    assert result.revision == 2
    assert result.responses == (PutResponse(None), GetResponse(store.get("k")))
    assert store.get("s") is None
    assert current(store, "f").value == b"failure"


def test_create_if_absent_only_succeeds_once(store: Metastore) -> None:
    first = store.txn([Compare.absent("lock")], [Put("lock", b"one")])
    second = store.txn([Compare.absent("lock")], [Put("lock", b"two")])
    assert first.succeeded and not second.succeeded
    assert current(store, "lock").value == b"one"


def test_all_writes_of_a_txn_share_one_revision(store: Metastore) -> None:
    store.put("gone", b"x")
    store.put("d/1", b"x")
    store.put("d/2", b"x")
    watch = store.watch("", 4)
    result = store.txn(
        [],
        [
            Put("a", b"1"),
            Put("b", b"2"),
            Delete("gone"),
            DeleteRange("d/"),
            Get("a"),
            Range("", limit=1),
        ],
    )
    assert (result.succeeded, result.revision, store.revision) == (True, 4, 4)
    a, b = current(store, "a"), current(store, "b")
    assert a.mod_revision == b.mod_revision == 4
    assert result.responses == (
        PutResponse(None),
        PutResponse(None),
        DeleteResponse(1, (KeyValue("gone", b"x", 1, 1, 1),)),
        DeleteResponse(2, (KeyValue("d/1", b"x", 2, 2, 1), KeyValue("d/2", b"x", 3, 3, 1))),
        GetResponse(a),
        RangeResult((a,), 4, True),
    )
    events = [next_event(watch) for _ in range(5)]
    assert [(e.type, e.kv.key, e.revision) for e in events] == [
        (WatchEventKind.PUT, "a", 4),
        (WatchEventKind.PUT, "b", 4),
        (WatchEventKind.DELETE, "gone", 4),
        (WatchEventKind.DELETE, "d/1", 4),
        (WatchEventKind.DELETE, "d/2", 4),
    ]
    assert watch.next(timeout=0.05) is None
    watch.close()


def test_readers_never_see_half_a_txn(store: Metastore) -> None:
    stop = threading.Event()
    torn: list[RangeResult] = []

    def read() -> None:
        while not stop.is_set():
            result = store.range("pair/")
            if len({kv.value for kv in result.kvs}) > 1 or len(result.kvs) == 1:
                torn.append(result)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for index in range(100):
            value = str(index).encode()
            store.txn([], [Put("pair/a", value), Put("pair/b", value)])
    finally:
        stop.set()
        reader.join()
    assert torn == []


def test_txn_rejects_writing_a_key_twice(store: Metastore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.txn([], [Put("a", b"1"), Put("a", b"2")])
    with pytest.raises(InvalidArgumentError):
        store.txn([], [Put("a/x", b"1"), DeleteRange("a/")])
    with pytest.raises(InvalidArgumentError):
        store.txn([], [], [Delete("a"), Put("a", b"1")])
    assert store.revision == 0
    store.put("a", b"1")
    overlapping_deletes = store.txn([], [Delete("a"), DeleteRange("")])
    assert overlapping_deletes.responses == (
        DeleteResponse(1, (KeyValue("a", b"1", 1, 1, 1),)),
        DeleteResponse(0, ()),
    )


def test_txn_above_max_txn_ops_is_refused_and_changes_nothing(backend: str, tmp_path: Path) -> None:
    with (
        MemoryMetastore(max_txn_ops=128) if backend == "memory" else make_store(backend, tmp_path)
    ) as store:
        limit = store.max_txn_ops
        if limit is None:
            pytest.skip(f"the {backend} backend has no cap on a transaction's size")
        store.put("k", b"0")
        before = store.revision
        over = [Put(f"k{i}", b"v") for i in range(limit + 1)]
        fits = [Compare.value("k", "==", b"0")] * limit
        for compares, success, failure in [
            ((), over, ()),
            (fits, [Put("k", b"1")], over),
            ([*fits, Compare.value("k", "==", b"0")], [Put("k", b"1")], ()),
        ]:
            with pytest.raises(InvalidArgumentError) as info:
                store.txn(compares, success, failure)
            assert info.value.context["limit"] == limit
        assert store.revision == before
        assert keys_of(store.range("")) == ["k"]
        assert store.txn(fits, over[:limit]).succeeded


def test_delete_and_delete_range(store: Metastore) -> None:
    for key in ["a", "a/1", "a/2", "b"]:
        store.put(key, key.encode())
    assert store.delete("a") == 5
    assert store.get("a") is None
    result = store.txn([], [DeleteRange("a/")])
    assert result.revision == 6
    response = result.responses[0]
    assert isinstance(response, DeleteResponse)
    assert response.deleted == 2
    assert [kv.key for kv in response.prev_kvs] == ["a/1", "a/2"]
    assert keys_of(store.range("")) == ["b"]
    assert store.txn([], [DeleteRange("")]).revision == 7
    assert store.range("").kvs == ()


# --------------------------------------------------------------------------- history


def test_reads_at_past_revisions_see_the_state_of_then(store: Metastore) -> None:
    states = {0: store.range("").kvs}
    steps: list[Callable[[], object]] = [
        lambda: store.put("a", b"1"),
        lambda: store.put("b", b"1"),
        lambda: store.put("a", b"2"),
        lambda: store.delete("b"),
        lambda: store.txn([], [Put("c", b"1"), Delete("a")]),
        lambda: store.put("b", b"2"),
        lambda: store.put("ab", b"1"),
    ]
    for step in steps:
        step()
        states[store.revision] = store.range("").kvs
    assert sorted(states) == list(range(8))
    for revision, kvs in states.items():
        past = store.range("", revision=revision)
        assert (past.kvs, past.revision) == (kvs, revision)
        by_key = {kv.key: kv for kv in kvs}
        for key in ["a", "ab", "b", "c"]:
            assert store.get(key, revision=revision) == by_key.get(key)
        assert store.range("a", revision=revision).kvs == tuple(
            kv for kv in kvs if kv.key.startswith("a")
        )
    limited = store.range("", revision=2, limit=1)
    assert (keys_of(limited), limited.more) == (["a"], True)


def test_reading_a_future_revision_is_an_error(store: Metastore) -> None:
    store.put("a", b"1")
    with pytest.raises(MetastoreError) as info:
        store.get("a", revision=2)
    assert not isinstance(info.value, CompactedError)


def test_compaction_drops_history_below_the_compact_revision(store: Metastore) -> None:
    for index in range(5):
        store.put("k", str(index).encode())
    store.compact(3)
    assert store.compact_revision == 3
    assert current(store, "k").value == b"4"
    assert [store.get("k", revision=r) for r in (3, 4)] == [
        KeyValue("k", b"2", 1, 3, 3),
        KeyValue("k", b"3", 1, 4, 4),
    ]
    with pytest.raises(CompactedError) as info:
        store.get("k", revision=2)
    assert (info.value.revision, info.value.compact_revision) == (2, 3)
    with pytest.raises(CompactedError):
        store.range("", revision=0)
    store.compact(3)
    with pytest.raises(CompactedError):
        store.compact(2)
    with pytest.raises(MetastoreError) as future:
        store.compact(6)
    assert not isinstance(future.value, CompactedError)
    with store.watch("", 3) as watch:
        replayed = [next_event(watch) for _ in range(3)]
    assert [e.revision for e in replayed] == [3, 4, 5]
    # As in etcd: the state before the compact revision is gone, so the
    # change made at it comes without its previous value.
    assert [e.prev_kv.value if e.prev_kv else None for e in replayed] == [None, b"2", b"3"]
    with pytest.raises(CompactedError) as watch_info:
        store.watch("", 2)
    assert (watch_info.value.revision, watch_info.value.compact_revision) == (2, 3)
    assert "2" in str(watch_info.value) and "3" in str(watch_info.value)
    store.compact(5)
    assert store.range("", revision=5).kvs == (KeyValue("k", b"4", 1, 5, 5),)


# --------------------------------------------------------------------------- watches


def test_watch_replays_history_then_follows_new_changes(store: Metastore) -> None:
    store.put("w/a", b"1")
    store.put("other", b"x")
    store.put("w/b", b"2")
    with store.watch("w/", 1) as watch:
        replayed = [next_event(watch) for _ in range(2)]
        assert [(e.kv.key, e.revision) for e in replayed] == [("w/a", 1), ("w/b", 3)]
        assert watch.next(timeout=0.05) is None

        waiting = threading.Event()

        def write_later() -> None:
            waiting.wait(PATIENCE)  # the reader is (about to be) blocked on the watch
            store.put("w/c", b"3")
            store.put("other", b"y")
            store.delete("w/a")

        writer = threading.Thread(target=write_later)
        writer.start()
        waiting.set()
        followed = [next_event(watch) for _ in range(2)]
        writer.join()
    assert [(e.type, e.kv.key, e.revision) for e in followed] == [
        (WatchEventKind.PUT, "w/c", 4),
        (WatchEventKind.DELETE, "w/a", 6),
    ]
    with store.watch("w/", 3) as later:
        assert next_event(later).kv.key == "w/b"


def test_watch_without_start_revision_sees_only_new_changes(store: Metastore) -> None:
    store.put("a", b"old")
    with store.watch("") as watch:
        assert watch.next(timeout=0.05) is None
        store.put("b", b"new")
        event = next_event(watch)
    assert (event.kv.key, event.revision) == ("b", 2)


def test_watch_reports_prev_kv_and_delete_tombstones(store: Metastore) -> None:
    store.put("k", b"v1")
    store.put("k", b"v2")
    with store.watch("k", 1) as watch:
        store.delete("k")
        events = [next_event(watch) for _ in range(3)]
    assert events == [
        WatchEvent(WatchEventKind.PUT, KeyValue("k", b"v1", 1, 1, 1), None),
        WatchEvent(
            WatchEventKind.PUT, KeyValue("k", b"v2", 1, 2, 2), KeyValue("k", b"v1", 1, 1, 1)
        ),
        WatchEvent(
            WatchEventKind.DELETE, KeyValue("k", b"", 0, 3, 0), KeyValue("k", b"v2", 1, 2, 2)
        ),
    ]


def test_a_delete_at_the_compact_revision_is_compacted_with_the_history(
    store: Metastore,
) -> None:
    store.put("gone", b"1")
    store.put("kept", b"1")
    at = store.txn([], [Delete("gone"), Put("kept", b"2")]).revision
    store.compact(at)
    # etcd drops a tombstone at the compact revision: only the put remains,
    # without its previous value, and later changes follow it.
    with store.watch("", at) as watch:
        first = next_event(watch)
        assert (first.type, first.kv.key, first.revision, first.prev_kv) == (
            WatchEventKind.PUT,
            "kept",
            at,
            None,
        )
        store.put("later", b"")
        assert next_event(watch).kv.key == "later"
    assert [kv.key for kv in store.range("", revision=at).kvs] == ["kept"]


def test_watch_that_falls_behind_a_compaction_raises(store: Metastore) -> None:
    for index in range(4):
        store.put("k", str(index).encode())
    watch = store.watch("", 1)
    store.compact(3)
    with pytest.raises(CompactedError) as info:
        watch.next(timeout=PATIENCE)
    assert (info.value.revision, info.value.compact_revision) == (1, 3)


def test_watch_iteration_ends_when_the_watch_is_closed(store: Metastore) -> None:
    watch = store.watch("")
    received: list[WatchEvent] = []

    def consume() -> None:
        received.extend(watch)

    consumer = threading.Thread(target=consume)
    consumer.start()
    store.put("a", b"1")
    assert wait_until(lambda: len(received) == 1, PATIENCE)
    watch.close()
    consumer.join(PATIENCE)
    assert not consumer.is_alive()
    assert watch.closed
    assert watch.next(timeout=0) is None
    assert [e.kv.key for e in received] == ["a"]


def test_closing_the_store_ends_watches_and_refuses_calls(backend: str, tmp_path: Path) -> None:
    store = make_store(backend, tmp_path)
    watch = store.watch("")
    consumer = threading.Thread(target=lambda: list(watch))
    consumer.start()
    store.close()
    consumer.join(PATIENCE)
    assert not consumer.is_alive()
    calls: list[Callable[[], object]] = [
        lambda: store.put("a", b"1"),
        lambda: store.get("a"),
        lambda: store.revision,
        lambda: store.watch(""),
        lambda: store.grant_lease(1),
    ]
    for call in calls:
        with pytest.raises(MetastoreError):
            call()
    store.close()


def test_watch_callback_delivers_events_and_errors(store: Metastore) -> None:
    got: list[WatchEvent] = []
    watch = store.watch_callback("", 1, got.append)
    store.put("a", b"1")
    store.put("b", b"2")
    assert wait_until(lambda: len(got) == 2, PATIENCE)
    watch.close()
    assert [e.kv.key for e in got] == ["a", "b"]

    errors: list[BaseException] = []

    def explode(event: WatchEvent) -> None:
        raise RuntimeError(f"cannot handle {event.kv.key}")

    failing = store.watch_callback("", 1, explode, on_error=errors.append)
    assert wait_until(lambda: bool(errors), PATIENCE)
    assert isinstance(errors[0], RuntimeError)
    assert wait_until(lambda: failing.closed, PATIENCE)


# --------------------------------------------------------------------------- leases


def test_keys_vanish_when_their_lease_expires(store: Metastore) -> None:
    lease = store.grant_lease(0.5)
    # etcd grants whole seconds, at least its minimum TTL; keep_alive reports
    # what was granted.
    granted = store.keep_alive(lease)
    assert granted >= 0.5
    store.put("l/a", b"1", lease)
    store.put("l/b", b"2", lease)
    store.put("keep", b"3")
    assert current(store, "l/a").lease == lease
    remaining = store.lease_ttl(lease)
    assert remaining is not None and 0 < remaining <= granted
    # Nobody touches the store while the watch waits: only the background
    # sweeper can expire the lease and wake it.
    with store.watch("l/", 4) as watch:
        expired = [watch.next(timeout=PATIENCE) for _ in range(2)]
    assert all(e is not None and e.type is WatchEventKind.DELETE for e in expired)
    assert {e.revision for e in expired if e} == {4}
    assert [e.prev_kv for e in expired if e] == [
        KeyValue("l/a", b"1", 1, 1, 1, lease),
        KeyValue("l/b", b"2", 2, 2, 1, lease),
    ]
    assert keys_of(store.range("")) == ["keep"]
    assert store.revision == 4
    assert store.lease_ttl(lease) is None
    with pytest.raises(LeaseNotFoundError):
        store.put("again", b"1", lease)
    with pytest.raises(LeaseNotFoundError):
        store.keep_alive(lease)


def test_keep_alive_extends_a_lease(backend: str, tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    with make_store(backend, tmp_path, clock=clock) as store:
        lease = store.grant_lease(1.0)
        store.put("k", b"v", lease)
        clock.advance(0.2)
        before = store.lease_ttl(lease)
        assert before == pytest.approx(0.8)
        assert store.keep_alive(lease) == 1.0
        assert store.lease_ttl(lease) == pytest.approx(1.0)
        for _ in range(15):  # 1.5 times the ttl, kept alive every 0.1 s
            clock.advance(0.1)
            store.keep_alive(lease)
            assert store.get("k") is not None
        clock.advance(0.99)
        assert store.get("k") is not None
        clock.advance(0.02)
        assert store.get("k") is None
        assert store.lease_ttl(lease) is None


def test_revoke_deletes_the_leases_keys_in_one_revision(store: Metastore) -> None:
    lease = store.grant_lease(60)
    other = store.grant_lease(60)
    assert len({lease, other, store.grant_lease(60)}) == 3
    store.put("a", b"1", lease)
    store.put("b", b"1", lease)
    store.put("moved", b"1", lease)
    store.put("moved", b"2")  # detached again
    store.put("c", b"1", other)
    assert store.revoke_lease(lease) == 6
    assert keys_of(store.range("")) == ["c", "moved"]
    with store.watch("", 6) as watch:
        assert [(e.type, e.kv.key) for e in (next_event(watch), next_event(watch))] == [
            (WatchEventKind.DELETE, "a"),
            (WatchEventKind.DELETE, "b"),
        ]
    assert store.lease_ttl(lease) is None
    with pytest.raises(LeaseNotFoundError):
        store.put("d", b"1", lease)
    with pytest.raises(LeaseNotFoundError):
        store.revoke_lease(lease)
    with pytest.raises(LeaseNotFoundError):
        store.keep_alive(lease)
    empty = store.grant_lease(60)
    assert store.revoke_lease(empty) == 6
    assert store.revision == 6


def test_puts_with_unknown_leases_fail_without_writing(store: Metastore) -> None:
    with pytest.raises(LeaseNotFoundError) as info:
        store.put("a", b"1", 12345)
    assert info.value.lease_id == 12345
    with pytest.raises(LeaseNotFoundError):
        store.txn([], [Put("a", b"1"), Put("b", b"1", 12345)])
    assert store.revision == 0
    assert store.get("a") is None
    # Only the branch that runs needs live leases, as in etcd.
    result = store.txn([Compare.absent("a")], [Put("a", b"1")], [Put("b", b"1", 12345)])
    assert result.succeeded


# --------------------------------------------------------------------------- bad input

BAD_CALLS: list[tuple[str, Callable[[Metastore], object]]] = [
    ("non-str key", lambda s: s.put(1, b"x")),  # type: ignore[arg-type]
    ("empty key", lambda s: s.put("", b"x")),
    ("str value", lambda s: s.put("k", "x")),  # type: ignore[arg-type]
    ("negative lease", lambda s: s.put("k", b"x", -1)),
    ("lone surrogate", lambda s: s.put("\ud800", b"x")),
    ("None key", lambda s: s.get(None)),  # type: ignore[arg-type]
    ("negative revision", lambda s: s.get("k", revision=-1)),
    ("bool revision", lambda s: s.get("k", revision=True)),
    ("int prefix", lambda s: s.range(5)),  # type: ignore[arg-type]
    ("zero limit", lambda s: s.range("", limit=0)),
    ("negative ttl", lambda s: s.grant_lease(-1)),
    ("zero ttl", lambda s: s.grant_lease(0)),
    ("nan ttl", lambda s: s.grant_lease(float("nan"))),
    ("infinite ttl", lambda s: s.grant_lease(float("inf"))),
    ("str ttl", lambda s: s.grant_lease("1")),  # type: ignore[arg-type]
    ("str lease id", lambda s: s.keep_alive("1")),  # type: ignore[arg-type]
    ("zero lease id", lambda s: s.revoke_lease(0)),
    ("negative lease id", lambda s: s.lease_ttl(-3)),
    ("negative compact", lambda s: s.compact(-1)),
    ("int watch prefix", lambda s: s.watch(3)),  # type: ignore[arg-type]
    ("negative watch start", lambda s: s.watch("", -1)),
    ("negative watch timeout", lambda s: s.watch("").next(timeout=-1)),
    ("not a compare", lambda s: s.txn(["k"], [])),  # type: ignore[list-item]
    ("not an op", lambda s: s.txn([], ["k"])),  # type: ignore[list-item]
    ("str target", lambda s: Compare("k", "value", "==", b"x")),  # type: ignore[arg-type]
    ("unknown op", lambda s: Compare.value("k", "=", b"x")),  # type: ignore[arg-type]
    ("negative operand", lambda s: Compare.mod_revision("k", "==", -1)),
    ("int value operand", lambda s: Compare.value("k", "==", 1)),  # type: ignore[arg-type]
    ("bytes version operand", lambda s: Compare.version("k", "==", b"1")),  # type: ignore[arg-type]
    ("negative range limit", lambda s: Range("", limit=-1)),
    ("empty delete key", lambda s: Delete("")),
]


@pytest.mark.parametrize("call", [call for _, call in BAD_CALLS], ids=[n for n, _ in BAD_CALLS])
def test_bad_input_raises_invalid_argument(
    store: Metastore, call: Callable[[Metastore], object]
) -> None:
    with pytest.raises(InvalidArgumentError):
        call(store)
    assert store.revision == 0


def test_invalid_argument_is_a_metastore_error() -> None:
    assert issubclass(InvalidArgumentError, MetastoreError)
    assert issubclass(LeaseNotFoundError, MetastoreError)


# --------------------------------------------------------------------------- concurrency


def test_concurrent_compare_and_swap_from_threads_is_exact(store: Metastore) -> None:
    threads = [
        threading.Thread(target=cas_increment, args=(store, "counter", 100)) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counter = current(store, "counter")
    assert (counter.value, counter.version, store.revision) == (b"400", 400, 400)


def test_sqlite_handles_in_threads_share_one_file_exactly(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    stores = [SqliteMetastore(path) for _ in range(3)]
    try:
        threads = [threading.Thread(target=cas_increment, args=(s, "counter", 100)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [current(s, "counter").value for s in stores] == [b"300"] * 3
        assert stores[0].revision == 300
    finally:
        for opened in stores:
            opened.close()


def test_sqlite_processes_increment_one_counter_exactly(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SqliteMetastore(path) as store, store.watch("counter", 1) as watch:
        start = SPAWN.Event()
        workers = [
            SPAWN.Process(target=cas_worker, args=(str(path), "counter", 200, start))
            for _ in range(4)
        ]
        for worker in workers:
            worker.start()
        start.set()
        for worker in workers:
            worker.join(PATIENCE * 4)
        assert [worker.exitcode for worker in workers] == [0] * 4
        counter = current(store, "counter")
        assert (counter.value, counter.version, store.revision) == (b"800", 800, 800)
        events = [next_event(watch) for _ in range(800)]
    assert [int(e.kv.value) for e in events] == list(range(1, 801))
    assert [e.revision for e in events] == list(range(1, 801))


# --------------------------------------------------------------------------- sqlite sharing


def test_sqlite_second_handle_sees_writes_and_watch_events(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SqliteMetastore(path) as first, SqliteMetastore(path) as second:
        watch = second.watch("", 1)
        first.put("k", b"1")
        assert current(second, "k").value == b"1"
        assert second.revision == 1
        event = next_event(watch)
        assert (event.kv.key, event.revision) == ("k", 1)
        second.put("k", b"2")
        assert current(first, "k") == KeyValue("k", b"2", 1, 2, 2)
        first.delete("k")
        assert next_event(watch).revision == 2
        assert next_event(watch).type is WatchEventKind.DELETE
        watch.close()


def test_sqlite_watch_in_another_process_sees_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with SqliteMetastore(path) as store:
        store.put("w/0", b"before")
        ready = SPAWN.Event()
        results: Any = SPAWN.Queue()
        child = SPAWN.Process(target=watch_worker, args=(str(path), "w/", 1, 4, ready, results))
        child.start()
        try:
            assert ready.wait(PATIENCE)
            store.put("w/1", b"a")
            store.put("x", b"ignored")
            store.delete("w/0")
            store.put("w/2", b"b")
            seen = results.get(timeout=PATIENCE)
        finally:
            child.join(PATIENCE)
        assert child.exitcode == 0
    assert seen == [
        ("put", "w/0", b"before", 1),
        ("put", "w/1", b"a", 2),
        ("delete", "w/0", b"", 4),
        ("put", "w/2", b"b", 5),
    ]


def test_sqlite_watch_far_behind_reads_all_of_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small window makes the watch read the history in several slices,
    # most of which hold nothing under its prefix.
    monkeypatch.setattr(sqlite_backend, "_WATCH_WINDOW", 2)
    with SqliteMetastore(tmp_path / "far.db") as store:
        for index in range(7):
            store.put("noise", str(index).encode())
        store.put("w/a", b"1")
        store.put("w/b", b"2")
        with store.watch("w/", 1) as watch:
            assert [next_event(watch).revision for _ in range(2)] == [8, 9]


def test_sqlite_reopening_keeps_revision_data_and_leases(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    with SqliteMetastore(path) as store:
        store.put("a", b"1")
        store.put("b", b"2")
        store.delete("a")
        store.compact(2)
        lease = store.grant_lease(60)
        store.put("l", b"leased", lease)
    with SqliteMetastore(path) as store:
        assert (store.revision, store.compact_revision) == (4, 2)
        assert keys_of(store.range("")) == ["b", "l"]
        assert current(store, "b").value == b"2"
        assert current(store, "l").lease == lease
        assert store.get("a", revision=2) == KeyValue("a", b"1", 1, 1, 1)
        remaining = store.lease_ttl(lease)
        assert remaining is not None and remaining > 0
        assert store.put("c", b"3") == 5
        assert store.grant_lease(60) > lease


def test_sqlite_committed_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    child = SPAWN.Process(target=put_then_die, args=(str(path), 50))
    child.start()
    child.join(PATIENCE)
    assert child.exitcode == -signal.SIGKILL
    with SqliteMetastore(path) as store:
        assert store.revision == 50
        assert current(store, "k49").value == b"49"


def test_sqlite_lease_of_a_closed_handle_expires_with_no_traffic(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    with SqliteMetastore(path) as observer, observer.watch("", 1) as watch:
        with SqliteMetastore(path) as owner:
            lease = owner.grant_lease(0.5)
            owner.put("ephemeral", b"1", lease)
        assert next_event(watch).type is WatchEventKind.PUT
        expired = watch.next(timeout=PATIENCE)
        assert expired is not None
        assert (expired.type, expired.kv.key) == (WatchEventKind.DELETE, "ephemeral")
        assert expired.revision == 2


def test_open_metastore_maps_uris_to_backends(tmp_path: Path) -> None:
    with open_metastore("memory://") as memory:
        assert isinstance(memory, MemoryMetastore)
    path = tmp_path / "uri.db"
    with open_metastore(f"sqlite://{path}") as by_uri:
        assert isinstance(by_uri, SqliteMetastore)
        by_uri.put("a", b"1")
    with open_metastore(f"sqlite://{tmp_path}/catalog.db") as by_uri:
        by_uri.put("b", b"2")
    with open_metastore(str(tmp_path)) as by_directory:  # a catalog directory's catalog.db
        assert isinstance(by_directory, SqliteMetastore)
        assert current(by_directory, "b").value == b"2"
    for bad in [
        "etcd://localhost",
        "etcd://h:1/ns/",
        "sqlite://relative.db",
        "memory://x",
        "memory:/",
        "",
    ]:
        with pytest.raises(InvalidArgumentError):
            open_metastore(bad)


def test_sqlite_unopenable_path_is_a_metastore_error(tmp_path: Path) -> None:
    with pytest.raises(MetastoreError):
        SqliteMetastore(tmp_path / "missing-dir" / "x.db")


# --------------------------------------------------------------------------- model check

KEYS = st.sampled_from(["a", "a/b", "a/c", "ab", "b", "b/a"])
PREFIXES = st.sampled_from(["", "a", "a/", "b", "c"])
VALUES = st.binary(max_size=2)
COMPARE_OPS = st.sampled_from(["==", "!=", "<", ">"])
REVISIONS = st.integers(0, 12)

COMPARES = st.one_of(
    st.builds(Compare.value, KEYS, COMPARE_OPS, VALUES),
    st.builds(Compare.mod_revision, KEYS, COMPARE_OPS, REVISIONS),
    st.builds(Compare.create_revision, KEYS, COMPARE_OPS, REVISIONS),
    st.builds(Compare.version, KEYS, COMPARE_OPS, st.integers(0, 4)),
    st.builds(Compare.absent, KEYS),
    st.builds(Compare.exists, KEYS),
)
OPS: st.SearchStrategy[Op] = st.one_of(
    st.builds(Put, KEYS, VALUES),
    st.builds(Delete, KEYS),
    st.builds(DeleteRange, PREFIXES),
    st.builds(Get, KEYS),
    st.builds(Range, PREFIXES, st.none() | st.integers(1, 3)),
)
ACTIONS = st.one_of(
    st.tuples(
        st.just("txn"),
        st.lists(COMPARES, max_size=2),
        st.lists(OPS, max_size=3),
        st.lists(OPS, max_size=3),
    ),
    st.tuples(st.just("put"), KEYS, VALUES),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("grant")),
    st.tuples(st.just("put_leased"), KEYS, VALUES, st.integers(0, 3)),
    st.tuples(st.just("revoke"), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.integers(0, 100)),
    st.tuples(st.just("read"), PREFIXES, st.integers(0, 100), st.none() | st.integers(1, 3)),
)


def _apply(store: Metastore, leases: list[int], action: tuple[Any, ...]) -> object:
    kind = action[0]
    if kind == "txn":
        return store.txn(action[1], action[2], action[3])
    if kind == "put":
        return store.put(action[1], action[2])
    if kind == "delete":
        return store.delete(action[1])
    if kind == "grant":
        leases.append(store.grant_lease(3600))
        return len(leases)
    if kind == "put_leased":
        lease = leases[action[3] % len(leases)] if leases else 999
        return store.put(action[1], action[2], lease)
    if kind == "revoke":
        return store.revoke_lease(leases[action[1] % len(leases)]) if leases else None
    if kind == "compact":
        low = store.compact_revision
        store.compact(low + action[1] % (store.revision - low + 1))
        return store.compact_revision
    low = store.compact_revision
    revision = low + action[2] % (store.revision - low + 1)
    return store.range(action[1], revision=revision, limit=action[3])


def _outcome(store: Metastore, leases: list[int], action: tuple[Any, ...]) -> object:
    try:
        return _apply(store, leases, action)
    except MetastoreError as exc:
        return type(exc).__name__


def _drain(store: Metastore) -> list[WatchEvent]:
    with store.watch("", store.compact_revision) as watch:
        events = []
        while (event := watch.next(timeout=0)) is not None:
            events.append(event)
        return events


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(ACTIONS, max_size=25))
def test_sqlite_behaves_exactly_like_memory(actions: list[tuple[Any, ...]]) -> None:
    with (
        tempfile.TemporaryDirectory() as directory,
        MemoryMetastore() as model,
        SqliteMetastore(Path(directory) / "model.db") as real,
    ):
        model_leases: list[int] = []
        real_leases: list[int] = []
        for action in actions:
            expected = _outcome(model, model_leases, action)
            assert _outcome(real, real_leases, action) == expected, action
            assert real.revision == model.revision
        for revision in range(model.compact_revision, model.revision + 1):
            assert real.range("", revision=revision) == model.range("", revision=revision)
        assert _drain(real) == _drain(model)


def _leases_as_models(value: object, leases: dict[int, int]) -> object:
    """``value`` with every lease id replaced by its model's: etcd picks
    random ids where the model counts from 1."""
    if isinstance(value, KeyValue):
        return dataclasses.replace(value, lease=leases.get(value.lease, value.lease))
    if isinstance(value, tuple):
        return tuple(_leases_as_models(item, leases) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value,
            **{
                field.name: _leases_as_models(getattr(value, field.name), leases)
                for field in dataclasses.fields(value)
            },
        )
    return value


def _drain_until(store: Metastore, count: int) -> list[WatchEvent]:
    """``count`` events from the compact revision on (a watch that delivers
    them asynchronously), then any others of the last revision seen so far:
    one revision may hold several events, so its first one is no end mark."""
    events: list[WatchEvent] = []
    if store.revision == 0:
        return events
    with store.watch("", store.compact_revision) as watch:
        while len(events) < count:
            events.append(next_event(watch))
        while (extra := watch.next(timeout=0.2)) is not None:
            events.append(extra)
    return events


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(ACTIONS, max_size=25))
def test_etcd_behaves_exactly_like_memory(actions: list[tuple[Any, ...]]) -> None:
    with make_store("etcd", Path(".")) as real, MemoryMetastore() as model:
        model_leases: list[int] = []
        real_leases: list[int] = []
        for action in actions:
            expected = _outcome(model, model_leases, action)
            got = _outcome(real, real_leases, action)
            as_model = dict(zip(real_leases, model_leases, strict=True))
            assert _leases_as_models(got, as_model) == expected, action
            assert real.revision == model.revision
        as_model = dict(zip(real_leases, model_leases, strict=True))
        for revision in range(model.compact_revision, model.revision + 1):
            got_range = real.range("", revision=revision)
            assert _leases_as_models(got_range, as_model) == model.range("", revision=revision)
        expected_events = tuple(_drain(model))
        drained = _leases_as_models(tuple(_drain_until(real, len(expected_events))), as_model)
        assert drained == expected_events

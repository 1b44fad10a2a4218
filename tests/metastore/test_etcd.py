"""What only a real etcd cluster can show: members that die and come back,
leader elections, a bound on every call, namespaces sharing one cluster,
and a catalog running on it. Everything waits on conditions, never on time."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aetcd import rpc

import almanac
from almanac.dev.etcd_local import LocalEtcd
from almanac.errors import CompactedError, InvalidArgumentError, MetastoreUnavailableError
from almanac.metastore import (
    Compare,
    Delete,
    DeleteRange,
    DeleteResponse,
    Get,
    GetResponse,
    KeyValue,
    Put,
    PutResponse,
    WatchEvent,
    open_metastore,
)
from almanac.metastore.etcd import EtcdMetastore
from almanac.node.log import UpdateLog
from tests.waiting import PATIENCE

from .support import cas_increment, wait_until


@pytest.fixture(scope="module")
def trio() -> Iterator[LocalEtcd]:
    """One 3-member cluster for the tests that take members apart; every
    test leaves all three running."""
    with LocalEtcd(3, fsync=False) as cluster:
        yield cluster


@pytest.fixture
def namespace() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def _restore(cluster: LocalEtcd) -> None:
    for index in range(len(cluster.members)):
        cluster.restart(index)
    cluster.wait_healthy()


def _drain(watch: object, count: int) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    deadline = time.monotonic() + PATIENCE
    while len(events) < count and time.monotonic() < deadline:
        event = watch.next(timeout=0.5)  # type: ignore[attr-defined]
        if event is not None:
            events.append(event)
    return events


# --------------------------------------------------------------------------- bounds


def test_an_unreachable_cluster_raises_unavailable_within_the_bound_then_recovers() -> None:
    with (
        LocalEtcd(1, fsync=False) as cluster,
        EtcdMetastore(cluster.endpoints, timeout_s=1.0) as store,
    ):
        store.put("k", b"1")
        cluster.stop(0)
        for call in (lambda: store.get("k"), lambda: store.put("k", b"2")):
            with pytest.raises(MetastoreUnavailableError) as info:
                call()
            assert cluster.endpoints[0] in str(info.value)
            assert info.value.context["endpoints"] == tuple(cluster.endpoints)
        cluster.restart(0)
        assert wait_until(lambda: _answers(store))
        assert store.put("k", b"3") == store.revision
        kv = store.get("k")
        assert kv is not None and kv.value == b"3"


def test_connecting_to_an_unreachable_cluster_is_unavailable_not_a_hang() -> None:
    # Nothing serves etcd on port 1 of the loopback.
    with pytest.raises(MetastoreUnavailableError, match=r"127\.0\.0\.1:1\b"):
        almanac.connect("etcd://127.0.0.1:1/nowhere?timeout=0.5")


def _answers(store: EtcdMetastore) -> bool:
    try:
        store.get("k")
    except MetastoreUnavailableError:
        return False
    return True


def test_the_servers_txn_cap_is_the_declared_one() -> None:
    with LocalEtcd(1, fsync=False) as cluster, EtcdMetastore(cluster.endpoints) as store:
        limit = store.max_txn_ops
        assert limit == 128
        ops = tuple(Put(f"k{i}", b"v") for i in range(limit))
        assert store.txn([], ops).succeeded
        # Past our own check, the server refuses one more op the same way.
        with pytest.raises(InvalidArgumentError, match="too many operations"):
            store._txn((), (*ops, Put("extra", b"v")), ())
        assert store.get("extra") is None


def test_open_metastore_opens_etcd_targets_with_namespace_and_bound(namespace: str) -> None:
    with LocalEtcd(1, fsync=False) as cluster:
        with open_metastore(f"{cluster.uri}/{namespace}?timeout=2") as store:
            assert isinstance(store, EtcdMetastore)
            assert (store.namespace, store.timeout_s) == (namespace, 2.0)
            store.put("k", b"v")
        with EtcdMetastore(cluster.endpoints) as raw:
            assert [kv.key for kv in raw.range("").kvs] == [f"{namespace}/k"]


class _LostReplies(EtcdMetastore):
    """Fault injection: the next ``lose`` writing transactions reach etcd and
    apply, but their replies are lost as if the connection broke."""

    lose = 0

    def _stub_kv(self, index: int) -> Any:
        stub = super()._stub_kv(index)
        store = self

        class Lossy:
            Range = stub.Range
            Compact = stub.Compact

            async def Txn(self, request: Any, **options: Any) -> Any:
                response = await stub.Txn(request, **options)
                writes = any(
                    op.HasField("request_put") or op.HasField("request_delete_range")
                    for op in (*request.success, *request.failure)
                )
                if writes and store.lose > 0:
                    store.lose -= 1
                    raise rpc.AioRpcError(
                        rpc.StatusCode.UNAVAILABLE, None, None, details="Socket closed"
                    )
                return response

        return Lossy()


def test_a_lost_reply_is_resolved_from_the_store_not_reported_as_a_lost_race() -> None:
    with LocalEtcd(1, fsync=False) as cluster, _LostReplies(cluster.endpoints) as store:
        store.put("k", b"0")
        store.put("other", b"x")
        before = store.revision
        store.lose = 1
        result = store.txn(
            [Compare.value("k", "==", b"0")],
            [Put("k", b"1"), Get("k"), Put("new", b"n"), Delete("other")],
            [Put("k", b"failed")],
        )
        # Applied once, by the first attempt; the answer is that attempt's.
        assert (result.succeeded, result.revision, store.revision) == (True, before + 1, before + 1)
        assert result.responses == (
            PutResponse(KeyValue("k", b"0", 1, 1, 1)),
            GetResponse(KeyValue("k", b"1", 1, before + 1, 2)),
            PutResponse(None),
            DeleteResponse(1, (KeyValue("other", b"x", 2, 2, 1),)),
        )
        # A genuine lost race after a lost reply is still reported as one.
        store.put("k", b"moved")
        store.lose = 1
        raced = store.txn([Compare.value("k", "==", b"1")], [Put("k", b"2")])
        assert not raced.succeeded
        kv = store.get("k")
        assert kv is not None and kv.value == b"moved"


def test_a_write_left_unsettled_reports_an_unknown_outcome() -> None:
    with (
        LocalEtcd(1, fsync=False) as cluster,
        _LostReplies(cluster.endpoints, timeout_s=2.0) as store,
    ):
        store.put("k", b"0")
        store.lose = 1
        # A delete leaves no proof of having applied once the key is gone.
        with pytest.raises(MetastoreUnavailableError) as info:
            store.txn([Compare.exists("k")], [Delete("k")])
        assert info.value.context["outcome"] == "unknown"
        assert store.get("k") is None
        # A lost put is settled by reading it back ...
        store.lose = 1
        assert store.put("j", b"1") == store.revision
        # ... a delete whose replies are lost until the bound is not.
        store.lose = 10**9
        with pytest.raises(MetastoreUnavailableError) as again:
            store.delete("j")
        assert again.value.context["outcome"] == "unknown"
        assert isinstance(again.value, almanac.RetryableError)


# --------------------------------------------------------------------------- namespaces


def test_namespaces_share_a_cluster_without_seeing_each_other(trio: LocalEtcd) -> None:
    with (
        EtcdMetastore(trio.endpoints, namespace="cat/a") as a,
        EtcdMetastore(trio.endpoints, namespace="cat/b") as b,
        EtcdMetastore(trio.endpoints, namespace="cat") as parent,
    ):
        start = a.revision
        watch_b = b.watch("", start + 1)
        a.put("k", b"a")
        b.put("k", b"b")
        assert a.txn([Compare.value("k", "==", b"a")], [DeleteRange("")]).succeeded
        assert a.range("").kvs == ()
        kv = b.get("k")
        assert kv is not None and kv.value == b"b"
        # Revisions are the cluster's: b's write came after a's.
        assert kv.mod_revision == start + 2
        event = watch_b.next(timeout=PATIENCE)
        assert event is not None and (event.kv.key, event.kv.value) == ("k", b"b")
        assert watch_b.next(timeout=0.5) is None
        watch_b.close()
        assert [kv.key for kv in parent.range("").kvs] == ["b/k"]


# --------------------------------------------------------------------------- failover


def test_killing_the_leader_mid_stream_loses_and_repeats_nothing(
    trio: LocalEtcd, namespace: str
) -> None:
    with EtcdMetastore(trio.endpoints, namespace=namespace) as store:
        start = store.revision
        watch = store.watch("", start + 1)
        total = 150
        done = threading.Event()
        errors: list[BaseException] = []

        def write() -> None:
            try:
                cas_increment(store, "counter", total)
            except BaseException as exc:
                errors.append(exc)
            finally:
                done.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert wait_until(lambda: _value(store) >= 20 or done.is_set())
        leader = trio.leader()
        assert leader is not None
        trio.kill(leader)
        try:
            assert done.wait(PATIENCE * 4)
            writer.join()
            assert errors == []
            assert _value(store) == total
            events = _drain(watch, total)
            assert [int(e.kv.value) for e in events] == list(range(1, total + 1))
            revisions = [e.revision for e in events]
            assert revisions == sorted(set(revisions))
            assert watch.next(timeout=0.5) is None
        finally:
            watch.close()
            _restore(trio)


def _value(store: EtcdMetastore) -> int:
    kv = store.get("counter")
    return int(kv.value) if kv else 0


def test_a_watch_resumes_across_a_member_restart(trio: LocalEtcd, namespace: str) -> None:
    # The watcher talks to member 0 first; the writer never does.
    watcher = EtcdMetastore(trio.endpoints, namespace=namespace)
    writer = EtcdMetastore(trio.endpoints[1:], namespace=namespace)
    try:
        start = writer.revision
        watch = watcher.watch("", start + 1)
        writer.put("k", b"0")
        assert _drain(watch, 1)[0].kv.value == b"0"
        trio.kill(0)
        for index in range(1, 11):
            writer.put("k", str(index).encode())
        trio.restart(0)
        writer.put("k", b"11")
        events = _drain(watch, 11)
        assert [e.kv.value for e in events] == [str(i).encode() for i in range(1, 12)]
        assert [e.prev_kv.value for e in events if e.prev_kv] == [
            str(i).encode() for i in range(11)
        ]
        assert watch.next(timeout=0.5) is None
        watch.close()
    finally:
        watcher.close()
        writer.close()
        _restore(trio)


def test_a_watch_whose_resume_point_was_compacted_raises(trio: LocalEtcd, namespace: str) -> None:
    # Only member 0 serves the watcher, so it cannot resume while it is down.
    watcher = EtcdMetastore(trio.endpoints[:1], namespace=namespace)
    writer = EtcdMetastore(trio.endpoints[1:], namespace=namespace)
    try:
        start = writer.revision
        watch = watcher.watch("", start + 1)
        writer.put("k", b"0")
        assert len(_drain(watch, 1)) == 1
        trio.kill(0)
        for index in range(5):
            writer.put("k", str(index).encode())
        writer.compact(writer.revision)
        trio.restart(0)
        with pytest.raises(CompactedError) as info:
            _drain(watch, 1)
        assert info.value.revision == start + 2
        assert info.value.compact_revision == writer.revision
        watch.close()
    finally:
        watcher.close()
        writer.close()
        _restore(trio)


# --------------------------------------------------------------------------- leases


def test_a_kept_alive_lease_outlives_its_ttl_and_expires_once_left_alone() -> None:
    with LocalEtcd(1, fsync=False) as cluster, EtcdMetastore(cluster.endpoints) as store:
        lease = store.grant_lease(0.2)
        granted = store.keep_alive(lease)
        # Whole seconds, at least etcd's minimum TTL, reported as granted.
        assert granted >= 1 and granted == int(granted)
        store.put("k", b"v", lease)
        until = time.monotonic() + 2 * granted
        while time.monotonic() < until:
            assert store.keep_alive(lease) == granted
            assert store.get("k") is not None
            time.sleep(granted / 4)
        assert wait_until(lambda: store.get("k") is None)
        assert store.lease_ttl(lease) is None


def test_pins_outlive_an_outage_longer_than_the_call_bound(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    with LocalEtcd(1, fsync=False) as cluster:
        store = EtcdMetastore(cluster.endpoints, namespace=namespace, timeout_s=0.5)
        cat = almanac.Catalog(UpdateLog(store), pin_ttl_s=2.0)
        try:
            with cat.pin(1):
                lease = int(store.range("catalog.pin.").kvs[0].lease)
                granted = store.keep_alive(lease)
                cluster.stop(0)
                assert wait_until(lambda: "Could not renew" in caplog.text)
                cluster.restart(0)
                # Renewals resume: the pin stays past several TTLs.
                until = time.monotonic() + 3 * granted
                while time.monotonic() < until:
                    assert cat.oldest_pinned()[0] == 1
                    time.sleep(granted / 4)
        finally:
            cat.close()
            store.close()


# --------------------------------------------------------------------------- a catalog on etcd


def test_catalog_nodes_on_etcd_run_ddl_converge_and_checkpoint(
    trio: LocalEtcd, namespace: str, tmp_path: Path
) -> None:
    uri = f"{trio.uri}/{namespace}"
    with (
        almanac.connect(uri, delay_ms=0, max_clock_skew_ms=0) as one,
        almanac.connect(uri, delay_ms=0, max_clock_skew_ms=0) as two,
    ):
        assert one.target == uri
        one.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR)")
        two.sql("ALTER TABLE t ADD COLUMN w INT")
        # Truncation deletes one key per version in one transaction; keep it
        # under etcd's 128-op cap until truncation batches by max_txn_ops.
        for index in range(100):
            (one if index % 2 else two).sql(f"CREATE TABLE x{index} (id INT PRIMARY KEY)")
        latest = one.latest_version
        assert wait_until(lambda: two.latest_version == latest)
        assert one.catalog(latest) == two.catalog(latest)
        assert one.checkpoint_log() == latest
        assert wait_until(lambda: two.earliest_version == latest)
        table = two.catalog().table("T")
        assert table is not None and [c.name for c in table.columns] == ["ID", "V", "W"]
    with almanac.connect(uri, delay_ms=0, max_clock_skew_ms=0) as again:
        assert (again.earliest_version, again.latest_version) == (latest, latest)


def test_a_follower_cut_off_past_a_compaction_catches_up(trio: LocalEtcd, namespace: str) -> None:
    alone = EtcdMetastore(trio.endpoints[:1], namespace=namespace)
    uri = f"etcd://{','.join(trio.endpoints[1:])}/{namespace}"
    try:
        with almanac.connect(uri, delay_ms=0, max_clock_skew_ms=0) as writer:
            writer.sql("CREATE TABLE a (id INT PRIMARY KEY)")
            follower = almanac.Catalog(UpdateLog(alone))
            try:
                assert wait_until(lambda: follower.latest_version == writer.latest_version)
                trio.kill(0)
                for index in range(5):
                    writer.sql(f"CREATE TABLE b{index} (id INT PRIMARY KEY)")
                writer.metastore.compact(writer.metastore.revision)
                trio.restart(0)
                latest = writer.latest_version
                assert wait_until(lambda: follower.latest_version == latest)
                assert follower.catalog(latest) == writer.catalog(latest)
                assert not follower.closed
            finally:
                follower.close()
    finally:
        alone.close()
        _restore(trio)


def test_a_data_commit_on_an_etcd_catalog(trio: LocalEtcd, namespace: str, tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    from almanac.data import read_table, write_table

    uri = f"{trio.uri}/{namespace}"
    with almanac.connect(uri, delay_ms=0, warehouse=str(tmp_path / "wh")) as cat:
        cat.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        write_table(cat, "T", pa.table({"ID": [1, 2], "V": [10, 20]}))
        write_table(cat, "T", pa.table({"ID": [3], "V": [30]}))
        assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [1, 2, 3]


def test_a_namespace_cannot_nest_inside_another_catalogs_key_ranges(trio: LocalEtcd) -> None:
    # "a/catalog.update.7" would be the key "catalog.update.7/..." of the
    # catalog in "a": inside its log's range, its node listing, its checkpoint.
    with pytest.raises(InvalidArgumentError, match="reserved"):
        EtcdMetastore(trio.endpoints, namespace="a/catalog.update.7")
    with pytest.raises(almanac.ValidationError, match="reserved"):
        almanac.connect(f"{trio.uri}/a/catalog.node.x")
    # Nested namespaces of other names stay out of the catalog's ranges.
    outer_ns = f"t{uuid.uuid4().hex[:12]}"
    options: dict[str, Any] = {"delay_ms": 0, "max_clock_skew_ms": 0, "node_name": "n1"}
    with (
        almanac.connect(f"{trio.uri}/{outer_ns}", **options) as outer,
        almanac.connect(f"{trio.uri}/{outer_ns}/catalog", **options) as inner,
    ):
        inner.sql("CREATE TABLE i (id INT64 PRIMARY KEY)")
        outer.sql("CREATE TABLE o (id INT64 PRIMARY KEY)")
        inner.sql("CREATE TABLE j (id INT64 PRIMARY KEY)")
        assert [n.name for n in outer.nodes()] == ["n1"]
        outer.checkpoint_log(outer.catalog().version)
        assert inner.catalog(1).version == 1
        assert inner.catalog().version == 3
    with almanac.connect(f"{trio.uri}/{outer_ns}", **options) as again:
        assert again.catalog().version == 2


def test_a_node_stops_when_an_entry_it_applied_is_overwritten_with_bad_bytes(
    trio: LocalEtcd, namespace: str
) -> None:
    target = f"{trio.uri}/{namespace}"
    options: dict[str, Any] = {"delay_ms": 0, "max_clock_skew_ms": 0}
    with almanac.connect(target, node_name="n1", **options) as cat:
        cat.sql("CREATE TABLE t (id INT64 PRIMARY KEY)")
        cat.sql("CREATE TABLE u (id INT64 PRIMARY KEY)")
        with open_metastore(target) as raw:
            kv = raw.get("catalog.update.2")
            assert kv is not None
            bad = bytearray(kv.value)
            bad[len(bad) // 2] ^= 0x10
            raw.put("catalog.update.2", bytes(bad))
        # The running node hears the rewrite and stops rather than append
        # to a log no other node can read.
        assert wait_until(lambda: cat.closed)
        with pytest.raises(almanac.CatalogError, match=r"catalog\.update\.2") as info:
            cat.sql("CREATE TABLE w (id INT64 PRIMARY KEY)")
        assert isinstance(info.value.__cause__, almanac.CorruptLogError)
        with pytest.raises(almanac.CorruptLogError, match=r"'catalog\.update\.2'"):
            almanac.connect(target, node_name="n2", **options)


def test_a_node_pins_again_after_its_pin_lease_expired(trio: LocalEtcd, namespace: str) -> None:
    # A process paused past its lease's TTL (SIGSTOP, a long GC pause) finds
    # its lease gone: its old pins went with it, new ones take a new lease.
    target = f"{trio.uri}/{namespace}"
    with (
        almanac.connect(target, node_name="n1", delay_ms=0, max_clock_skew_ms=0) as cat,
        open_metastore(target) as raw,
    ):
        cat.sql("CREATE TABLE t (id INT64 PRIMARY KEY)")
        with cat.pin(1):
            (held,) = raw.range("catalog.pin.").kvs
        raw.revoke_lease(held.lease)  # what the lease's expiry does
        with cat.pin(1):
            (renewed,) = raw.range("catalog.pin.").kvs
            assert renewed.lease != held.lease
            assert raw.lease_ttl(renewed.lease) is not None
        assert raw.range("catalog.pin.").kvs == ()


def test_every_call_on_a_stopped_cluster_returns_or_raises_unavailable() -> None:
    with LocalEtcd(1, fsync=False) as cluster:
        target = f"{cluster.uri}/{uuid.uuid4().hex[:12]}?timeout=0.5"
        cat = almanac.connect(target, node_name="n1", delay_ms=0, max_clock_skew_ms=0)
        cat.sql("CREATE TABLE t (id INT64 PRIMARY KEY)")
        cluster.stop(0)
        calls: dict[str, Any] = {
            "execute": lambda: cat.execute([almanac.CreateSchema("S")]),
            "sql": lambda: cat.sql("CREATE SCHEMA S2"),
            "checkpoint_log": lambda: cat.checkpoint_log(1),
            "pin": lambda: cat.pin(1).__enter__(),
            "nodes": cat.nodes,
            "connect": lambda: almanac.connect(target, node_name="n2"),
        }
        for call in calls.values():
            with pytest.raises(MetastoreUnavailableError, match=r"127\.0\.0\.1"):
                call()
        # What a node holds in memory still answers.
        assert (cat.catalog().version, cat.catalog(1).version) == (2, 1)
        assert cat.history()[-1].update.version == 2
        cat.close()
        assert cat.closed

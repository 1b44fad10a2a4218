"""Tablets end to end: catalog nodes (``almanac node``, each a placement
candidate) and tablet servers (``almanac tserver``) as real processes on a
SQLite catalog and on a 3-member etcd cluster, read through Arrow Flight.

Every wait is on a condition read from the placement keys, never a
duration; a route audit follows every route value written meanwhile.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import almanac.spark
from almanac.cli import main
from almanac.data import write_table
from almanac.data.snapshots import decode_pointer, table_key
from almanac.metastore import WatchEventKind
from almanac.placement.keys import server_key
from almanac.placement.model import ServerInfo, TableRoute, TabletState
from almanac.placement.state import read_servers
from almanac.server.background import BackgroundServer
from almanac.tserver.client import read_table
from tests.tablets.support import (
    PATIENCE,
    RouteAudit,
    TabletCluster,
    connections_to,
    current_tablets,
    placement_disagreements,
)

ROWS = 40_000
"""Rows of the table read while its leaders die: 100 Flight batches a tablet."""

LONG_LEASE_S = 60.0
"""The lease of servers a test pauses but must not lose: far beyond any
pause, so that only the pause, not an expiry, is what the test sees."""


def _rows(first: int, count: int) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table({"ID": pa.array(ids, pa.int64()), "V": [f"v{i}" for i in ids]})


def _create(
    cluster: TabletCluster, zone: str, partitions: int, replicas: int, *tables: str
) -> None:
    ddl = [f"CREATE ZONE IF NOT EXISTS {zone} WITH (PARTITIONS={partitions}, REPLICAS={replicas})"]
    ddl += [
        f"CREATE TABLE {t} (ID INT64 PRIMARY KEY, V VARCHAR(20)) COLOCATE BY (ID) ZONE {zone}"
        for t in tables
    ]
    cluster.cat.sql("; ".join(ddl))


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: int(row["ID"]))


def _ids(table: pa.Table) -> list[int]:
    return sorted(int(i) for i in table.column("ID").to_pylist())


@pytest.fixture
def spark_catalog(cluster: TabletCluster, spark: Any) -> Iterator[str]:
    """The test's catalog as a Spark catalog of its own on Apache Iceberg's
    runtime, served by this process for the test."""
    name = f"tablets_{uuid.uuid4().hex[:12]}"
    server = BackgroundServer(cluster.cat).start()
    try:
        almanac.spark.add_catalog(spark, name, server.url, token=server.token)
        yield name
    finally:
        server.stop()


def _spark_rows(spark: Any, catalog: str, name: str) -> list[dict[str, Any]]:
    rows = spark.sql(f"SELECT * FROM {catalog}.{name}").collect()
    return sorted((r.asDict() for r in rows), key=lambda row: int(row["ID"]))


def _led_by(route: TableRoute, server: str) -> set[int]:
    return {t.id for t in route.tablets if t.state is TabletState.RUNNING and t.leader == server}


def test_tables_run_everywhere_and_an_alter_reaches_a_server_that_was_down(
    cluster: TabletCluster, spark: Any, spark_catalog: str
) -> None:
    cluster.start_nodes(["n1"])
    cluster.start_servers(["ts1", "ts2", "ts3"], lease_ttl_s=LONG_LEASE_S)
    audit = RouteAudit(cluster.store, cluster.store.revision + 1)
    _create(cluster, "Z3", 4, 3, "A")
    _create(cluster, "Z1", 3, 1, "B")
    write_table(cluster.cat, "A", _rows(0, 3000))
    write_table(cluster.cat, "A", _rows(3000, 1000))
    write_table(cluster.cat, "B", _rows(0, 2000))
    route_a = cluster.wait_settled("A", 4, 3)
    cluster.wait_settled("B", 3, 1)
    assert placement_disagreements(cluster.store) == []

    # What the tablet servers serve is what Spark reads through Iceberg's runtime.
    for name in ("PUBLIC.A", "PUBLIC.B"):
        through_flight = _sorted(read_table(cluster.cat, name))
        assert through_flight == _spark_rows(spark, spark_catalog, name), name
    assert _ids(read_table(cluster.cat, "PUBLIC.A")) == list(range(4000))

    # The leader of a tablet goes silent; an ALTER cannot reach it meanwhile.
    down = next(t.leader for t in route_a.tablets if t.state is TabletState.RUNNING)
    assert down is not None
    cluster.pause(cluster.servers[down])
    cluster.cat.sql("ALTER TABLE A ADD COLUMN E INT64")
    target = cluster.cat.catalog().table("A")
    assert target is not None
    table_id, new_version = target.id, target.table_version

    def others_caught_up() -> bool:
        route = cluster.routes().get(table_id)
        return (
            route is not None
            and route.table_version == new_version
            and all(
                t.table_version == new_version
                for t in route.tablets
                if t.state is TabletState.RUNNING and t.leader != down
            )
        )

    cluster.wait(others_caught_up, "the servers that are up to report the ALTER")
    route = cluster.routes()[table_id]
    assert _led_by(route, down), f"{down} still leads its tablets: {route}"
    assert route.altering, f"A must read as ALTERING while {down} is down: {route}"

    cluster.servers[down].resume()

    def done() -> bool:
        route = cluster.routes()[table_id]
        report = cluster.reports().get(down)
        hosted = [] if report is None else [r for r in report.tablets if r.table_id == table_id]
        return (
            not route.altering
            and all(
                t.table_version == new_version
                for t in route.tablets
                if t.state is TabletState.RUNNING
            )
            and len(hosted) == 4
            and all(r.table_version == new_version for r in hosted)
        )

    cluster.wait(done, "A to leave ALTERING, with the server that was down caught up")
    after = read_table(cluster.cat, "PUBLIC.A")
    assert after.column_names == ["ID", "V", "E"]
    assert after.column("E").null_count == 4000
    assert _sorted(after) == _spark_rows(spark, spark_catalog, "PUBLIC.A")
    assert placement_disagreements(cluster.store) == []
    audit.close()
    assert audit.violations == []
    assert audit.seen > 0


class _Writer:
    """Appends batches of fresh ids to a table until stopped: the workload
    a failover happens under. ``committed`` holds the ids of every write
    that returned."""

    def __init__(self, cluster: TabletCluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.committed: list[int] = []
        self.commits = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"writer-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        first = 0
        while not self._stop.is_set():
            try:
                write_table(self.cluster.cat, self.name, _rows(first, 100))
            except BaseException as exc:  # reported by the test, never lost
                self.errors.append(exc)
                return
            self.committed.extend(range(first, first + 100))
            self.commits += 1
            first += 100

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("cluster", ["sqlite"], indirect=True)
def test_an_unpartitioned_tables_files_are_each_served_once_and_follow_a_killed_server(
    cluster: TabletCluster,
) -> None:
    cluster.start_nodes(["n1"])
    cluster.start_servers(["ts1", "ts2", "ts3"])
    cluster.cat.sql(
        "CREATE ZONE U WITH (PARTITIONS=6, REPLICAS=1); CREATE TABLE P (ID INT64, V VARCHAR(20)) "
        "ZONE U"
    )
    table = cluster.cat.catalog().table("P")
    assert table is not None and not table.bucketed
    snapshots = [write_table(cluster.cat, "P", _rows(50 * i, 50)) for i in range(12)]
    assert [len(s.files) for s in snapshots] == list(range(1, 13)), "one file per write"
    files = snapshots[-1].files
    assert len({f.partition for f in files}) > 1
    route = cluster.wait_settled("P", 6, 1)
    cluster.wait_replicas_serving("P")

    def served_once() -> None:
        delivered: list[tuple[int, str, int]] = []
        rows = read_table(
            cluster.cat, "PUBLIC.P", progress=lambda t, s, n: delivered.append((t, s, n))
        )
        assert _ids(rows) == list(range(600)), "every row exactly once"
        by_tablet: dict[int, int] = {}
        for tablet, _, n in delivered:  # n: the tablet's rows so far
            by_tablet[tablet] = max(by_tablet.get(tablet, 0), n)
        expected: dict[int, int] = {}
        for f in files:
            expected[f.partition] = expected.get(f.partition, 0) + f.rows
        assert by_tablet == expected, "each file from its own tablet only"

    served_once()
    victim = cluster.servers[next(t.leader for t in route.tablets if t.leader is not None)]
    moved = _led_by(route, victim.name)
    victim.kill()
    cluster.wait(lambda: victim.name not in cluster.live(), f"{victim.name}'s lease to expire")
    after = cluster.wait_settled("P", 6, 1, avoid=[victim.name])
    cluster.wait_replicas_serving("P")
    assert all(t.leader != victim.name for t in after.tablets if t.id in moved)
    served_once()


def test_a_killed_server_fails_over_mid_read_and_mid_workload(cluster: TabletCluster) -> None:
    cluster.start_nodes(["n1"])
    # Many batches a tablet: a stream to cut.
    cluster.start_servers(["ts1", "ts2", "ts3", "ts4"], "--batch-rows", "100")
    _create(cluster, "Z", 4, 2, "F", "W")
    write_table(cluster.cat, "F", _rows(0, ROWS))
    route = cluster.wait_settled("F", 4, 2)
    cluster.wait_settled("W", 4, 2)
    cluster.wait_replicas_serving("F")
    audit = RouteAudit(cluster.store, cluster.store.revision + 1)
    writer = _Writer(cluster, "W")
    cluster.wait(lambda: writer.commits >= 2 or bool(writer.errors), "the workload to run")

    # A read is in flight to a leader when it dies: its request was sent
    # (the connection is up) while the server was stopped, then SIGKILL.
    first = next(t for t in route.tablets if t.state is TabletState.RUNNING)
    assert first.leader is not None
    victim = cluster.servers[first.leader]
    victim_tablets = _led_by(route, victim.name)
    delivered: list[tuple[int, str, int]] = []
    result: list[pa.Table] = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            table = read_table(
                cluster.cat, "PUBLIC.F", progress=lambda t, s, n: delivered.append((t, s, n))
            )
            result.append(table)
        except BaseException as exc:
            failed.append(exc)

    cluster.pause(victim)
    before = connections_to(victim.port)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    cluster.wait(
        lambda: connections_to(victim.port) > before or not reader.is_alive(),
        f"the read to connect to {victim.name}",
    )
    assert reader.is_alive(), f"the read ended without its leader {victim.name}: {failed}"
    victim.kill()
    reader.join()
    assert failed == []
    assert _ids(result[0]) == list(range(ROWS)), "every row exactly once"
    servers_of = {(tablet, server) for tablet, server, _ in delivered}
    for tablet in victim_tablets:
        assert any(t == tablet and s != victim.name for t, s in servers_of), tablet
    assert not any(s == victim.name for _, s in servers_of)

    # Its tablets fail over while the workload keeps writing.
    cluster.wait(lambda: victim.name not in cluster.live(), f"{victim.name}'s lease to expire")
    cluster.wait_settled("F", 4, 2, avoid=[victim.name])
    cluster.wait_settled("W", 4, 2, avoid=[victim.name])
    mark = writer.commits
    cluster.wait(lambda: writer.commits > mark + 1 or bool(writer.errors), "writes after it")
    writer.stop()
    assert writer.errors == []
    assert _ids(read_table(cluster.cat, "PUBLIC.W")) == sorted(writer.committed)

    # A second leader dies mid-stream: killed from the read's own progress
    # callback, once its first batch arrived.
    route = cluster.wait_settled("F", 4, 2, avoid=[victim.name])
    cluster.wait_replicas_serving("F")
    second = cluster.servers[next(t.leader for t in route.tablets if t.leader is not None)]
    killed = threading.Event()
    lock = threading.Lock()

    def kill_on_first_batch(tablet: int, server: str, rows: int) -> None:
        with lock:
            if server == second.name and not killed.is_set():
                second.kill()
                killed.set()

    again = read_table(cluster.cat, "PUBLIC.F", progress=kill_on_first_batch)
    assert killed.is_set()
    assert _ids(again) == list(range(ROWS)), "every row exactly once"
    gone = {victim.name, second.name}
    cluster.wait(lambda: not (gone & cluster.live()), f"{second.name}'s lease to expire")
    cluster.wait_settled("F", 4, 2, avoid=gone)
    cluster.wait_settled("W", 4, 2, avoid=gone)
    assert _ids(read_table(cluster.cat, "PUBLIC.F")) == list(range(ROWS))
    assert placement_disagreements(cluster.store) == []
    audit.close()
    assert audit.violations == []


def test_the_placement_leader_restarts_and_dies_mid_assignment_and_a_silent_server_is_replaced(
    cluster: TabletCluster,
) -> None:
    cluster.start_nodes(["n1", "n2"])
    servers = cluster.start_servers(["ts1", "ts2"], lease_ttl_s=LONG_LEASE_S)
    audit = RouteAudit(cluster.store, cluster.store.revision + 1)
    _create(cluster, "Z", 4, 2)

    def assigned(name: str) -> bool:
        route = cluster.route(name)
        return (
            route is not None
            and len(route.tablets) == 4
            and all(t.state is TabletState.CREATING for t in route.tablets)
        )

    def mid_assignment(name: str) -> None:
        """Create ``name`` while no server can report it: the leader assigns
        its tablets, which then wait in CREATING."""
        cluster.pause(*servers)
        cluster.cat.sql(f"CREATE TABLE {name} (ID INT64 PRIMARY KEY, V VARCHAR(20)) ZONE Z")
        cluster.wait(lambda: assigned(name), f"{name}'s tablets to be assigned")

    leader = cluster.wait_leader_elected()
    mid_assignment("P1")
    assert cluster.nodes[leader].stop() == 0
    cluster.start_node(leader)
    for server in servers:
        server.resume()
    cluster.wait_settled("P1", 4, 2)

    leader = cluster.wait_leader_elected()
    mid_assignment("P2")
    cluster.nodes[leader].kill()
    successor = cluster.wait_leader_elected(other_than=leader)
    assert cluster.nodes[successor].alive
    for server in servers:
        server.resume()
    cluster.wait_settled("P2", 4, 2)
    cluster.wait_settled("P1", 4, 2)
    write_table(cluster.cat, "P2", _rows(0, 300))
    assert _ids(read_table(cluster.cat, "PUBLIC.P2")) == list(range(300))
    assert placement_disagreements(cluster.store) == []

    # A server that registers but never reports is the least loaded, so it
    # gets tablets; they are replaced, and fresh tablets take their
    # partitions on the servers that do report.
    ghost = cluster.silent_server("ghost")
    _create(cluster, "Z1", 3, 1, "G")
    write_table(cluster.cat, "G", _rows(0, 500))
    table_id = cluster.table_id("G")
    cluster.wait(lambda: bool(audit.ever_on(table_id, ghost.name)), "a tablet on the silent server")
    route = cluster.wait_settled("G", 3, 1, avoid=[ghost.name])
    held = current_tablets(route)
    for tablet, partition in audit.ever_on(table_id, ghost.name).items():
        old = route.tablet(tablet)
        assert old is None or old.state is TabletState.REPLACED, old
        assert held[partition][0].id > tablet, "a fresh tablet takes the partition"
    assert ghost.name in cluster.live(), "the silent server stayed registered throughout"
    assert _ids(read_table(cluster.cat, "PUBLIC.G")) == list(range(500))
    cluster.wait(lambda: placement_disagreements(cluster.store) == [], "indexes to agree")
    audit.close()
    assert audit.violations == []


def test_a_server_killed_and_restarted_on_its_data_directory_keeps_its_tablets(
    cluster: TabletCluster, capsys: Any
) -> None:
    cluster.start_nodes(["n1"])
    cluster.start_servers(["ts1", "ts2", "ts3"], lease_ttl_s=LONG_LEASE_S)
    _create(cluster, "Z", 3, 2, "K")
    write_table(cluster.cat, "K", _rows(0, 900))
    before = cluster.wait_settled("K", 3, 2)
    cluster.wait_replicas_serving("K")
    table_id = cluster.table_id("K")
    victim = cluster.servers[next(t.leader for t in before.tablets if t.leader is not None)]
    mine = {t.id for t in before.tablets if victim.name in t.replicas}
    cache = victim.data_dir / "tablets" / str(table_id)
    # A tablet reports RUNNING from its creation on, before the write's
    # files reach its cache: wait until each of the victim's tablets
    # records the table's current data snapshot, so its cache is whole.
    pointer = cluster.store.get(table_key(table_id))
    assert pointer is not None
    current = decode_pointer(pointer.key, pointer.value)

    def cached_at(tablet_id: int) -> int | None:
        try:
            return int(
                json.loads((cache / str(tablet_id) / "tablet.json").read_bytes())["snapshot_id"]
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    cluster.wait(
        lambda: all(cached_at(t) == current for t in mine),
        f"{victim.name} to cache data snapshot {current} of every tablet it holds",
    )
    files = {p: p.stat().st_ino for p in cache.rglob("*.parquet")}
    assert files and mine
    old = read_servers(cluster.store)[victim.name]
    assert old.instance_id
    audit = RouteAudit(cluster.store, cluster.store.revision + 1)
    registrations = cluster.store.watch(server_key(victim.name), cluster.store.revision + 1)
    try:
        victim.kill()
        restarted = cluster.start_server(victim.name, lease_ttl_s=LONG_LEASE_S)
        new = read_servers(cluster.store)[victim.name]
        assert new.instance_id == old.instance_id and new.lease != old.lease
        events: list[tuple[WatchEventKind, int]] = []  # up to the takeover, in order
        while not events or events[-1] != (WatchEventKind.PUT, new.lease):
            event = registrations.next(timeout=PATIENCE)
            assert event is not None, f"no takeover among {events}"
            lease = ServerInfo.decode(event.kv.value).lease if event.kv.value else 0
            events.append((event.type, lease))
        assert all(kind is WatchEventKind.PUT for kind, _ in events), events
        cluster.wait(lambda: cluster.store.lease_ttl(old.lease) is None, "the old lease revoked")

        def serving_again() -> bool:
            report = cluster.reports().get(victim.name)
            running = {
                r.tablet_id
                for r in (report.tablets if report else ())
                if r.table_id == table_id and r.state is TabletState.RUNNING
            }
            return running == mine

        cluster.wait(serving_again, f"{victim.name} to serve its tablets again")
        assert _ids(read_table(cluster.cat, "PUBLIC.K")) == list(range(900))
        after = cluster.wait_settled("K", 3, 2)
        assert {t.id: t.replicas for t in after.tablets} == {
            t.id: t.replicas for t in before.tablets
        }, "no tablet moved and none was replaced"
        audit.close()
        assert audit.violations == []
        assert not any(
            victim.name not in t.replicas
            for route in audit.history.get(table_id, [])
            for t in route.tablets
            if t.id in mine
        ), "the restarted server never lost a tablet"
        assert {p: p.stat().st_ino for p in cache.rglob("*.parquet")} == files, "cache kept"
        assert "took over the registration of its previous process" in restarted.log_text()
    finally:
        registrations.close()
        audit.close()

    # The same name on another data directory is another server: refused
    # while the name lives; a second process on the same directory too.
    base = ["tserver", "--store", cluster.target, "--warehouse", cluster.warehouse]
    base += ["--name", victim.name, "--lease-ttl", "0.5"]
    assert main([*base, "--data-dir", str(cluster.directory / "other")]) == 1
    assert "is taken by a live server on another data directory" in capsys.readouterr().err
    assert main([*base, "--data-dir", str(victim.data_dir)]) == 1
    assert "is in use by another live process" in capsys.readouterr().err
    assert read_servers(cluster.store)[victim.name] == new

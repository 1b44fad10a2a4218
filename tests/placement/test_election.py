"""Leader election among catalog nodes sharing one store (SQLite, and a
real etcd): exactly one leads; when it closes, another takes over from the
stored state and finishes the work. Also a stale writer loses, never
overwrites."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

import almanac
from almanac import Catalog
from almanac.dev.etcd_local import LocalEtcd
from almanac.placement import LEADER_KEY, TabletState, read_route, read_server_index, route_key
from almanac.placement.manager import PlacementManager, placement_of
from almanac.placement.route_changes import route_write
from almanac.placement.state import decode_route
from almanac.placement.verify import verify_placement
from tests.placement.conftest import SETTINGS, namespace
from tests.placement.support import servers
from tests.waiting import wait_for


@pytest.fixture(params=["sqlite", "etcd"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "etcd":
        cluster: LocalEtcd = request.getfixturevalue("etcd")
        return f"{cluster.uri}/{namespace()}"
    return str(tmp_path / "catalog")


def node(target: str, name: str, *, placement: bool = True) -> Catalog:
    settings = dataclasses.replace(SETTINGS, interval_s=0.05, leader_ttl_s=3.0)
    return almanac.connect(
        target,
        node_name=name,
        delay_ms=0,
        max_clock_skew_ms=0,
        placement=settings if placement else None,
    )


def leaders(*managers: PlacementManager) -> list[PlacementManager]:
    return [m for m in managers if m.is_leader]


def running(cat: Catalog, table: str) -> Callable[[], bool]:
    def check() -> bool:
        found = cat.catalog().table(table)
        route = None if found is None else read_route(cat.metastore, found.id)
        return route is not None and route.state is TabletState.RUNNING

    return check


def test_one_node_leads_and_another_takes_over(target: str) -> None:
    observer = node(target, "observer", placement=False)
    a = node(target, "node-a")
    b = node(target, "node-b")
    try:
        ma, mb = placement_of(a), placement_of(b)
        wait_for(lambda: len(leaders(ma, mb)) == 1, "a placement leader")
        (first,) = leaders(ma, mb)
        held = observer.metastore.get(LEADER_KEY)
        assert held is not None and held.value == first.catalog.node_name.encode()
        fleet = servers(observer.metastore, "ts1", "ts2", "ts3")

        def serve() -> None:
            for server in fleet:
                server.serve_index()

        observer.sql(
            "CREATE ZONE Z WITH (PARTITIONS = 3, REPLICAS = 2); "
            "CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z"
        )
        wait_for(running(observer, "T"), "T running", tick=serve)
        assert len(leaders(ma, mb)) == 1  # never two

        # The leader goes; the other finishes what is left, from the store.
        first.catalog.close()
        other = mb if first is ma else ma
        observer.sql("CREATE TABLE U (ID INT PRIMARY KEY) ZONE Z")
        wait_for(lambda: other.is_leader, "a new leader")
        wait_for(running(observer, "U"), "U running", tick=serve)
        held = observer.metastore.get(LEADER_KEY)
        assert held is not None and held.value == other.catalog.node_name.encode()
        verify_placement(observer)

        # Its lease expires under it (a long pause): it steps down and, the
        # key being free, campaigns and leads again; never two leaders.
        observer.metastore.revoke_lease(held.lease)
        wait_for(
            lambda: (
                (kv := observer.metastore.get(LEADER_KEY)) is not None
                and kv.create_revision > held.create_revision
                and other.is_leader
            ),
            "leadership again",
        )
        observer.sql("CREATE TABLE V (ID INT PRIMARY KEY) ZONE Z")
        wait_for(running(observer, "V"), "V running", tick=serve)
        verify_placement(observer)
    finally:
        for cat in (a, b, observer):
            cat.close()


def test_a_stale_route_write_fails_and_changes_nothing(target: str) -> None:
    cat = node(target, "writer", placement=False)
    try:
        manager = PlacementManager(cat, SETTINGS, run=False)
        store = cat.metastore
        servers(store, "ts1", "ts2")
        cat.sql(
            "CREATE ZONE Z WITH (PARTITIONS = 2, REPLICAS = 1); "
            "CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z"
        )
        table = cat.catalog().table("T")
        assert table is not None
        read = store.get(route_key(table.id))
        assert read is not None
        route = decode_route(read)
        moved = dataclasses.replace(
            route,
            version=route.version + 1,
            tablets=tuple(
                dataclasses.replace(t, state=TabletState.CREATING, replicas=("ts1",), leader="ts1")
                for t in route.tablets
            ),
        )
        stale_compares, stale_ops, _ = route_write(store, table.id, read, moved).parts()
        # Another writer moves the route first (the ALTER's own hook).
        cat.sql("ALTER TABLE T ADD COLUMN W INT")
        assert not store.txn(stale_compares, stale_ops).succeeded
        after = read_route(store, table.id)
        assert after is not None and after.tablets == route.tablets
        assert read_server_index(store, "ts1") is None
        # A stale index alone is enough to refuse it too.
        read = store.get(route_key(table.id))
        assert read is not None
        fresh_compares, fresh_ops, _ = route_write(store, table.id, read, moved).parts()
        manager.run_pass(now=1000.0)  # writes ts1's and ts2's indexes
        assert not store.txn(fresh_compares, fresh_ops).succeeded
        verify_placement(cat)
    finally:
        cat.close()

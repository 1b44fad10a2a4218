"""Kudu-style consistency: random CREATE, RENAME, ALTER and DROP while a
quarter of all metastore writes fail by injection, fake servers report and
die, and the placement loop runs; routes, server indexes and the catalog
must agree exactly after every step, and again after a restart once the
loop settled."""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from almanac import Catalog, CatalogError, MetastoreError
from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Compare, MemoryMetastore, Metastore, Op, TxnResult
from almanac.metastore.etcd import EtcdMetastore
from almanac.metastore.sqlite import SqliteMetastore
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from almanac.placement import TabletState, read_routes
from almanac.placement.manager import PlacementManager
from almanac.placement.verify import verify_placement
from tests.placement.conftest import SETTINGS, namespace
from tests.placement.support import FakeServer, servers

FAIL_RATE = 0.25


class Flaky(Metastore):
    """Mixin: while ``rng`` is set, a write transaction fails before it
    applies with probability ``FAIL_RATE`` (reads never fail)."""

    rng: random.Random | None = None
    injected = 0

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        rng = self.rng
        if rng is not None and (success or failure) and rng.random() < FAIL_RATE:
            self.injected += 1
            raise MetastoreError("the metastore refused a write (injected)")
        result: TxnResult = super()._txn(compares, success, failure)  # type: ignore[safe-super]
        return result


class FlakyMemory(Flaky, MemoryMetastore):
    pass


class FlakySqlite(Flaky, SqliteMetastore):
    pass


class FlakyEtcd(Flaky, EtcdMetastore):
    pass


FlakyStore = FlakyMemory | FlakySqlite | FlakyEtcd


@pytest.fixture(params=["memory", "sqlite", "etcd"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FlakyStore]:
    flaky: FlakyStore
    if request.param == "memory":
        flaky = FlakyMemory()
    elif request.param == "sqlite":
        flaky = FlakySqlite(tmp_path / "catalog.db", durability="normal")
    else:
        cluster: LocalEtcd = request.getfixturevalue("etcd")
        flaky = FlakyEtcd(cluster.endpoints, namespace=namespace())
    yield flaky
    flaky.rng = None
    flaky.close()


def open_node(store: Metastore) -> tuple[Catalog, PlacementManager]:
    cat = Catalog(
        UpdateLog(store, owns_store=False, identity=False),
        sync=SchemaSync(delay_ms=0, max_clock_skew_ms=0),
    )
    return cat, PlacementManager(cat, SETTINGS, run=False)


def quietly(action: Callable[[], object]) -> None:
    """Run ``action``; an injected failure leaves whatever committed."""
    with contextlib.suppress(CatalogError):
        action()


def random_statement(rng: random.Random, cat: Catalog, counter: list[int]) -> str:
    names = [t.name for t in cat.catalog().tables("PUBLIC")]
    counter[0] += 1
    n = counter[0]
    choice = rng.random()
    if not names or choice < 0.35:
        zone = rng.choice(["Z1", "Z2"])
        return f"CREATE TABLE T{n} (ID INT PRIMARY KEY, V INT) ZONE {zone}"
    name = rng.choice(names)
    if choice < 0.55:
        return f"ALTER TABLE {name} RENAME TO T{n}"
    if choice < 0.8:
        return f"ALTER TABLE {name} ADD COLUMN C{n} INT"
    return f"DROP TABLE {name}"


@pytest.mark.parametrize("seed", [1, 2])
def test_routes_indexes_and_catalog_agree_under_failing_writes(store: Flaky, seed: int) -> None:
    rng = random.Random(seed)
    cat, manager = open_node(store)
    cat.sql(
        "CREATE ZONE Z1 WITH (PARTITIONS = 3, REPLICAS = 2); "
        "CREATE ZONE Z2 WITH (PARTITIONS = 2, REPLICAS = 1)"
    )
    fleet = servers(store, "ts1", "ts2", "ts3")
    spare = 4
    store.rng = random.Random(seed * 7919)
    counter = [0]
    now = 1000.0
    for _ in range(60):
        now += 1.0
        quietly(lambda: cat.sql(random_statement(rng, cat, counter)))
        roll = rng.random()
        if roll < 0.5:
            quietly(functools.partial(manager.run_pass, now=now))
        elif roll < 0.8:
            for server in fleet:
                quietly(server.serve_index)
        elif roll < 0.85 and len(fleet) > 2:
            victim = fleet.pop(rng.randrange(len(fleet)))
            quietly(victim.die)
        elif roll < 0.9:
            fresh = FakeServer(store, f"ts{spare}")
            spare += 1
            try:
                fleet.append(fresh.register())
            except CatalogError:
                if fresh.lease:  # half registered: gone, as a crash leaves it
                    store.revoke_lease(fresh.lease)
        store.rng = None  # the check reads and writes nothing
        verify_placement(cat)
        store.rng = random.Random(rng.random())
    store.rng = None
    assert store.injected > 10
    cat.close()

    # Restart: a new node with a new manager picks up from the stored state.
    cat, manager = open_node(store)
    try:
        verify_placement(cat)
        for _ in range(10):
            now += 1.0
            for server in fleet:
                server.serve_index()
            manager.run_pass(now=now)
        verify_placement(cat)
        routes = read_routes(store)
        live = {t.id for t in cat.catalog().tables("PUBLIC")}
        assert set(routes) == live  # dropped tables' routes were cleaned
        assert all(r.state is TabletState.RUNNING for r in routes.values()), (
            [r for r in routes.values() if r.state is not TabletState.RUNNING],
            manager.problems,
            [s.name for s in fleet],
        )
        for route in routes.values():
            table = cat.catalog().table_by_id(route.table_id)
            assert table is not None
            zone = cat.catalog().zone_by_id(table.zone_id)
            assert zone is not None
            assert len(route.tablets) == zone.partitions
            assert all(len(t.replicas) == zone.replicas for t in route.tablets)
            assert all(set(t.replicas) <= {s.name for s in fleet} for t in route.tablets)
            assert not route.altering
    finally:
        cat.close()

"""Soft delete through placement: a soft-deleted table's route is
SOFT_DELETED (its servers keep the data), a recovered one is placed again
and runs once reported, a purged one is DELETED. Soft delete comes from its
own branch of work; until it is merged here, this module is skipped."""

from __future__ import annotations

import pytest

import almanac.descriptors
from almanac import Catalog
from almanac.placement import TabletState, read_route
from almanac.placement.manager import PlacementManager
from almanac.placement.verify import verify_placement
from tests.placement.support import servers

pytestmark = pytest.mark.skipif(
    not hasattr(almanac.descriptors, "is_soft_deleted"), reason="soft delete is not merged yet"
)


def test_soft_delete_recover_and_purge_move_the_route(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2")
    cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 2, REPLICAS = 2); "
        "CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z"
    )
    table = cat.catalog().table("T")
    assert table is not None
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)

    def state() -> TabletState | None:
        route = read_route(store, table.id)
        return None if route is None else route.state

    assert state() is TabletState.RUNNING
    cat.sql("DROP TABLE T WITH (RESERVE = '1h')")
    route = read_route(store, table.id)
    assert route is not None and route.state is TabletState.SOFT_DELETED
    assert {t.state for t in route.tablets} == {TabletState.SOFT_DELETED}
    verify_placement(cat)
    manager.run_pass(now=1002.0)
    assert state() is TabletState.SOFT_DELETED  # kept, not reassigned nor cleaned
    cat.sql("RECOVER TABLE T")
    route = read_route(store, table.id)
    assert route is not None and {t.state for t in route.tablets} == {TabletState.CREATING}
    verify_placement(cat)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1003.0)
    assert state() is TabletState.RUNNING
    cat.sql("DROP TABLE T WITH (RESERVE = '1h'); PURGE TABLE T")
    assert state() is TabletState.DELETED
    verify_placement(cat)

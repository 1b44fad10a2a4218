"""SYSTEM.TABLETS and SYSTEM.SERVERS follow what the real placement manager
writes: assignment, ALTER propagation, a server's death, a drop."""

from __future__ import annotations

from typing import Any

from almanac import Catalog
from almanac.placement import TabletState, read_route, read_routes
from almanac.placement.manager import PlacementManager
from almanac.system_tables import system_table
from tests.placement.support import servers


def _tablets(cat: Catalog) -> list[dict[str, Any]]:
    return list(system_table(cat, "SYSTEM.TABLETS").to_pylist())


def _servers(cat: Catalog) -> dict[str, dict[str, Any]]:
    return {r["NAME"]: r for r in system_table(cat, "SYSTEM.SERVERS").to_pylist()}


def _matches_routes(cat: Catalog) -> None:
    """Every row is its route's tablet, field by field, and nothing else is listed."""
    routes = read_routes(cat.metastore)
    expected = [
        (
            r.table_id,
            t.id,
            t.partition,
            t.state.value,
            list(t.replicas),
            t.leader,
            t.table_version,
            r.table_version,
            r.version,
            r.altering,
        )
        for r in sorted(routes.values(), key=lambda r: r.table_id)
        for t in sorted(r.tablets, key=lambda t: t.id)
    ]
    keys = (
        *("TABLE_ID", "TABLET_ID", "PARTITION", "STATE", "REPLICAS", "LEADER"),
        *("REPORTED_TABLE_VERSION", "TABLE_VERSION", "ROUTE_VERSION", "ALTERING"),
    )
    assert [tuple(row[k] for k in keys) for row in _tablets(cat)] == expected


def test_placement_tables_follow_the_manager(cat: Catalog, manager: PlacementManager) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2", "ts3")
    cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 4, REPLICAS = 2); "
        "CREATE TABLE T (ID INT PRIMARY KEY, V INT) ZONE Z"
    )
    table = cat.catalog().table("T")
    assert table is not None
    assert {row["STATE"] for row in _tablets(cat)} == {"PREPARING"}
    _matches_routes(cat)

    now = 1000.0
    for _ in range(3):
        manager.run_pass(now=now)
        for server in fleet:
            server.serve_index()
        now += 1
    manager.run_pass(now=now)
    rows = _tablets(cat)
    assert [r["STATE"] for r in rows] == ["RUNNING"] * 4
    assert all(len(r["REPLICAS"]) == 2 and r["LEADER"] in r["REPLICAS"] for r in rows)
    assert {(r["SCHEMA"], r["TABLE"], r["ALTERING"]) for r in rows} == {("PUBLIC", "T", False)}
    _matches_routes(cat)
    live = _servers(cat)
    assert sorted(live) == ["ts1", "ts2", "ts3"] and all(s["LIVE"] for s in live.values())
    assert sum(s["TABLETS"] for s in live.values()) == 8
    assert sum(s["LEADERS"] for s in live.values()) == 4
    shown = cat.sql("SHOW TABLETS ON T")
    assert [row[5] for row in shown.rows] == ["RUNNING"] * 4

    # ALTER: ALTERING until every tablet reports the new table version
    cat.sql("ALTER TABLE T ADD COLUMN W INT")
    manager.run_pass(now=now)
    assert {r["ALTERING"] for r in _tablets(cat)} == {True}
    _matches_routes(cat)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=now + 1)
    assert {r["ALTERING"] for r in _tablets(cat)} == {False}
    assert {r["REPORTED_TABLE_VERSION"] for r in _tablets(cat)} == {table.table_version + 1}

    # a server dies: not live; once failed over, it holds nothing
    fleet[0].die()
    assert "ts1" not in {n for n, s in _servers(cat).items() if s["LIVE"]}
    manager.run_pass(now=now + 2)
    _matches_routes(cat)
    after = _servers(cat)
    assert after.get("ts1", {"TABLETS": 0})["TABLETS"] == 0
    assert all("ts1" not in r["REPLICAS"] for r in _tablets(cat))

    # DROP: the route's tablets go DELETED and the rows lose their names
    cat.sql("DROP TABLE T")
    manager.run_pass(now=now + 3)
    assert read_route(store, table.id) is not None  # the cleaner waits clean_after_s
    rows = _tablets(cat)
    assert {r["STATE"] for r in rows} == {TabletState.DELETED.value}
    assert {(r["SCHEMA"], r["TABLE"]) for r in rows} == {(None, None)}
    assert sum(s["TABLETS"] for s in _servers(cat).values()) == 0
    _matches_routes(cat)

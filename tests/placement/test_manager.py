"""The placement loop step by step (``run_pass`` with an explicit clock),
against fake servers that register and report through the real keys."""

from __future__ import annotations

import dataclasses
import logging
import threading

import pytest

from almanac import Catalog, CorruptDataError, ValidationError, WaitTimeoutError
from almanac.metastore import MemoryMetastore
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from almanac.placement import (
    LEADER_KEY,
    TabletReport,
    TabletState,
    read_reasons,
    read_route,
    read_routes,
    read_server_index,
    reason_key,
    route_key,
    tombstone_key,
)
from almanac.placement.manager import PlacementManager, attach_placement
from almanac.placement.settings import PlacementSettings
from almanac.placement.verify import verify_placement
from almanac.system_tables import system_table
from tests.placement.conftest import SETTINGS
from tests.placement.support import FakeServer, servers


def table_id(cat: Catalog, name: str = "T") -> int:
    table = cat.catalog().table(name)
    assert table is not None
    return table.id


def make_table(cat: Catalog, partitions: int = 4, replicas: int = 2) -> int:
    cat.sql(
        f"CREATE ZONE Z WITH (PARTITIONS = {partitions}, REPLICAS = {replicas}); "
        "CREATE TABLE T (ID INT PRIMARY KEY, V INT) ZONE Z"
    )
    return table_id(cat)


def test_create_table_puts_its_route_in_the_same_version(
    cat: Catalog, manager: PlacementManager
) -> None:
    tid = make_table(cat, partitions=5)
    route = read_route(cat.metastore, tid)
    assert route is not None
    assert route.state is TabletState.PREPARING
    assert [(t.id, t.partition, t.state) for t in route.tablets] == [
        (i, i, TabletState.PREPARING) for i in range(5)
    ]
    assert route.next_tablet_id == 5
    # The route's revision is the version's: one transaction made both.
    kv = cat.metastore.get(f"__table_route/{tid}")
    version_kv = cat.metastore.get("catalog.version")
    assert kv is not None and version_kv is not None
    assert kv.mod_revision == version_kv.mod_revision
    verify_placement(cat)


def test_assign_spreads_replicas_over_the_least_loaded_servers(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    servers(store, "ts1", "ts2", "ts3")
    tid = make_table(cat, partitions=6, replicas=2)
    result = manager.run_pass(now=1000.0)
    assert result.written == 1 and result.problems == ()
    route = read_route(store, tid)
    assert route is not None
    loads = {"ts1": 0, "ts2": 0, "ts3": 0}
    for t in route.tablets:
        assert t.state is TabletState.CREATING
        assert len(t.replicas) == 2 and t.leader in t.replicas
        assert t.assigned_at == 1000.0
        for r in t.replicas:
            loads[r] += 1
    assert sorted(loads.values()) == [4, 4, 4]
    for name in loads:
        index = read_server_index(store, name)
        assert index is not None and len(index.tablets) == loads[name]
    verify_placement(cat)
    assert manager.run_pass(now=1001.0).written == 0  # nothing left to do


def test_reported_tablets_become_running(cat: Catalog, manager: PlacementManager) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2", "ts3")
    tid = make_table(cat)
    manager.run_pass(now=1000.0)
    fleet[0].serve_index()
    manager.run_pass(now=1001.0)
    route = read_route(store, tid)
    assert route is not None
    for t in route.tablets:
        # Only the leader's report counts.
        want = TabletState.RUNNING if t.leader == "ts1" else TabletState.CREATING
        assert t.state is want
    assert route.state is TabletState.PREPARING
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1002.0)
    route = read_route(store, tid)
    assert route is not None and route.state is TabletState.RUNNING
    assert all(t.table_version == route.table_version for t in route.tablets)
    verify_placement(cat)


def test_a_silent_server_loses_its_tablets_to_fresh_ones(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2", "ts3")
    tid = make_table(cat, partitions=6, replicas=1)
    manager.run_pass(now=1000.0)
    fleet[0].serve_index()
    fleet[1].serve_index()
    before = read_route(store, tid)
    assert before is not None
    silent = {t.id for t in before.tablets if t.leader == "ts3"}
    assert silent
    # ts3 holds its tablets but never gets them running.
    fleet[2].report([TabletReport(tid, t, TabletState.CREATING, 0) for t in sorted(silent)])
    manager.run_pass(now=1000.0 + SETTINGS.assignment_timeout_s / 2)
    assert read_route(store, tid) is not None
    manager.run_pass(now=1001.0 + SETTINGS.assignment_timeout_s)
    route = read_route(store, tid)
    assert route is not None
    replaced = {t.id for t in route.tablets if t.state is TabletState.REPLACED}
    assert replaced == silent
    fresh = [t for t in route.tablets if t.id >= before.next_tablet_id]
    assert len(fresh) == len(silent)
    assert {t.partition for t in fresh} == {t.partition for t in before.tablets if t.id in silent}
    assert all(t.replicas != ("ts3",) for t in fresh)  # elsewhere while others fit
    assert route.next_tablet_id == before.next_tablet_id + len(silent)
    index = read_server_index(store, "ts3")
    assert index is not None and index.tablets == ()
    verify_placement(cat)
    for server in fleet:
        server.serve_index()  # ts3 drops what left its index
    manager.run_pass(now=1002.0 + SETTINGS.assignment_timeout_s)
    route = read_route(store, tid)
    assert route is not None and route.state is TabletState.RUNNING
    # Replaced tablets no server holds any more leave the route.
    assert all(t.state is TabletState.RUNNING for t in route.tablets)
    verify_placement(cat)


def test_failover_moves_a_dead_servers_replicas_and_leads_from_survivors(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2", "ts3", "ts4")
    tid = make_table(cat, partitions=8, replicas=2)
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)
    before = read_route(store, tid)
    assert before is not None and before.state is TabletState.RUNNING
    led = {t.id: t for t in before.tablets if t.leader == "ts2"}
    assert led
    fleet[1].die()
    manager.run_pass(now=1002.0)
    route = read_route(store, tid)
    assert route is not None
    for t in route.tablets:
        assert "ts2" not in t.replicas and len(t.replicas) == 2
        assert t.leader is not None and t.leader in t.replicas
        if t.id in led:
            # The surviving replica, which serves it, leads at once.
            (survivor,) = set(led[t.id].replicas) - {"ts2"}
            assert t.leader == survivor
            assert t.state is TabletState.RUNNING
    index = read_server_index(store, "ts2")
    assert index is not None and index.tablets == ()
    verify_placement(cat)


def test_a_tablet_whose_replicas_all_died_is_recreated_elsewhere(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2")
    tid = make_table(cat, partitions=2, replicas=1)
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)
    fleet[0].die()
    manager.run_pass(now=1002.0)
    route = read_route(store, tid)
    assert route is not None
    moved = [t for t in route.tablets if t.assigned_at == 1002.0]
    assert moved and all(t.replicas == ("ts2",) for t in moved)
    assert all(t.state is TabletState.CREATING for t in moved)
    fleet[1].serve_index()
    manager.run_pass(now=1003.0)
    route = read_route(store, tid)
    assert route is not None and route.state is TabletState.RUNNING
    verify_placement(cat)


def test_alter_is_altering_until_every_tablet_reports_the_new_version(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2")
    tid = make_table(cat, partitions=3, replicas=2)
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)
    cat.sql("ALTER TABLE T ADD COLUMN W INT")
    table = cat.catalog().table("T")
    assert table is not None
    route = read_route(store, tid)
    assert route is not None
    assert route.table_version == table.table_version  # same version's transaction
    assert route.altering
    verify_placement(cat)
    fleet[0].serve_index()
    manager.run_pass(now=1002.0)
    route = read_route(store, tid)
    assert route is not None
    assert route.altering == any(t.leader == "ts2" for t in route.tablets)
    fleet[1].serve_index()
    manager.run_pass(now=1003.0)
    route = read_route(store, tid)
    assert route is not None and not route.altering
    verify_placement(cat)


def test_drop_deletes_tablets_and_the_cleaner_leaves_a_tombstone(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2")
    tid = make_table(cat, partitions=2, replicas=2)
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)
    cat.sql("DROP TABLE T")
    route = read_route(store, tid)
    assert route is not None and route.state is TabletState.DELETED
    assert all(t.state is TabletState.DELETED for t in route.tablets)
    for name in ("ts1", "ts2"):
        index = read_server_index(store, name)
        assert index is not None and index.tablets == ()
    verify_placement(cat)
    manager.run_pass(now=1002.0)
    assert read_route(store, tid) is not None  # servers still report its tablets
    fleet[0].serve_index()
    manager.run_pass(now=1003.0)
    assert read_route(store, tid) is not None  # ts2 still does
    fleet[1].serve_index()
    manager.run_pass(now=1004.0)
    assert read_route(store, tid) is None
    tomb = store.get(tombstone_key(tid))
    assert tomb is not None
    verify_placement(cat)


def test_the_cleaner_gives_up_on_servers_after_clean_after(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1")
    tid = make_table(cat, partitions=1, replicas=1)
    manager.run_pass(now=1000.0)
    fleet[0].serve_index()
    manager.run_pass(now=1001.0)
    cat.sql("DROP TABLE T")
    manager.run_pass(now=1002.0)
    assert read_route(store, tid) is not None
    manager.run_pass(now=1002.0 + SETTINGS.clean_after_s)
    assert read_route(store, tid) is None
    verify_placement(cat)


def test_create_fails_after_waiting_for_too_few_servers(cat: Catalog) -> None:
    settings = dataclasses.replace(SETTINGS, create_wait_s=0.2)
    attach_placement(cat, settings, run=False)
    servers(cat.metastore, "ts1")
    before = cat.latest_version
    with pytest.raises(WaitTimeoutError, match=r"needs 2 replicas .* only 1 live tablet server"):
        make_table(cat, replicas=2)
    assert cat.catalog().table("T") is None
    assert cat.latest_version == before
    assert read_routes(cat.metastore) == {}


def test_create_waits_for_a_server_to_arrive(cat: Catalog) -> None:
    settings = dataclasses.replace(SETTINGS, create_wait_s=120.0)
    attach_placement(cat, settings, run=False)
    servers(cat.metastore, "ts1")
    cat.sql("CREATE ZONE Z WITH (PARTITIONS = 2, REPLICAS = 2)")
    done = threading.Event()
    errors: list[BaseException] = []

    def create() -> None:
        try:
            cat.sql("CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z")
        except BaseException as exc:
            errors.append(exc)
        done.set()

    threading.Thread(target=create, daemon=True).start()
    servers(cat.metastore, "ts2")
    assert done.wait(120)
    assert errors == []
    assert read_route(cat.metastore, table_id(cat)) is not None


def test_tablets_times_replicas_is_limited_per_server(cat: Catalog) -> None:
    settings = dataclasses.replace(SETTINGS, max_tablets_per_server=3)
    attach_placement(cat, settings, run=False)
    servers(cat.metastore, "ts1", "ts2")
    with pytest.raises(WaitTimeoutError, match=r"8 tablet replicas .* \(3\) x 2 live .* = 6"):
        make_table(cat, partitions=4, replicas=2)
    assert cat.catalog().table("T") is None


def test_no_servers_at_all_creates_at_once_and_tablets_wait(
    cat: Catalog, manager: PlacementManager
) -> None:
    tid = make_table(cat, partitions=2, replicas=3)
    result = manager.run_pass(now=1000.0)
    assert result.written == 0 and len(result.problems) == 2
    assert "needs 3 tablet servers" in result.problems[0]
    route = read_route(cat.metastore, tid)
    assert route is not None and route.state is TabletState.PREPARING


def test_the_leader_logs_why_a_tablet_waits_once_while_it_does(
    cat: Catalog, manager: PlacementManager, caplog: pytest.LogCaptureFixture
) -> None:
    make_table(cat, partitions=2, replicas=3)
    with caplog.at_level(logging.WARNING, logger="almanac.placement"):
        manager.run_pass(now=1000.0)
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 2 and all("needs 3 tablet servers" in m for m in said), said
        caplog.clear()
        manager.run_pass(now=1001.0)
        assert caplog.records == [], "a problem that lasts is not said again"


def test_the_node_filter_and_storage_profile_choose_servers(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    FakeServer(store, "eu1", {"region": "eu"}).register()
    FakeServer(store, "eu2", {"region": "eu", "disk": "ssd"}).register()
    FakeServer(store, "us1", {"region": "us"}).register()
    FakeServer(store, "eu3", {"region": "eu"}, profiles=("cold",)).register()
    cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 4, REPLICAS = 2, "
        """DATA_NODES_FILTER = '$[?(@.region == "eu" || @.region == "mars")]')"""
    )
    cat.sql("CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z")
    manager.run_pass(now=1000.0)
    route = read_route(store, table_id(cat))
    assert route is not None
    assert {r for t in route.tablets for r in t.replicas} == {"eu1", "eu2"}
    verify_placement(cat)


def test_an_unsupported_filter_is_a_clear_problem_not_a_crash(
    cat: Catalog, manager: PlacementManager
) -> None:
    cat.sql("CREATE ZONE Z WITH (REPLICAS = 1, DATA_NODES_FILTER = '$.nodes[0]')")
    cat.sql("CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z")
    servers(cat.metastore, "ts1")
    result = manager.run_pass(now=1000.0)
    assert any("'$.nodes[0]' is not supported" in p for p in result.problems)
    with pytest.raises(ValidationError, match=r"PUBLIC.U cannot be placed.*not supported"):
        cat.sql("CREATE TABLE U (ID INT PRIMARY KEY) ZONE Z")


def test_the_loop_creates_routes_the_hook_did_not_write(cat: Catalog) -> None:
    # Tables made by a node without placement get their routes from the loop.
    make_table(cat, partitions=3)
    assert read_routes(cat.metastore) == {}
    manager = attach_placement(cat, SETTINGS, run=False)
    manager.run_pass(now=1000.0)
    route = read_route(cat.metastore, table_id(cat))
    assert route is not None and len(route.tablets) == 3
    cat.sql("DROP TABLE T")
    verify_placement(cat)


def test_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="interval_s"):
        PlacementSettings(interval_s=0)
    with pytest.raises(ValidationError, match="max_tablets_per_server"):
        PlacementSettings(max_tablets_per_server=0)


def test_one_version_dropping_tables_that_share_servers_writes_each_index_once(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    fleet = servers(store, "ts1", "ts2")
    cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 2, REPLICAS = 2); "
        "CREATE TABLE A (ID INT PRIMARY KEY) ZONE Z; CREATE TABLE B (ID INT PRIMARY KEY) ZONE Z"
    )
    manager.run_pass(now=1000.0)
    for server in fleet:
        server.serve_index()
    manager.run_pass(now=1001.0)
    before = cat.latest_version
    cat.sql("DROP TABLE A; DROP TABLE B")
    assert cat.latest_version == before + 1
    for name in ("A", "B"):
        route = read_route(store, table_id_of(cat, before, name))
        assert route is not None and route.state is TabletState.DELETED
    for name in ("ts1", "ts2"):
        index = read_server_index(store, name)
        assert index is not None and index.tablets == ()
    verify_placement(cat)


def table_id_of(cat: Catalog, version: int, name: str) -> int:
    table = cat.catalog(version).table(name)
    assert table is not None
    return table.id


def test_a_pass_batches_many_routes_under_the_stores_cap_and_loses_none() -> None:
    store = MemoryMetastore(max_txn_ops=40)
    cat = Catalog(UpdateLog(store), sync=SchemaSync(delay_ms=0, max_clock_skew_ms=0))
    try:
        manager = PlacementManager(cat, SETTINGS, run=False)
        fleet = servers(store, "ts1", "ts2", "ts3")
        cat.sql("CREATE ZONE Z WITH (PARTITIONS = 4, REPLICAS = 2)")
        for i in range(12):
            cat.sql(f"CREATE TABLE T{i} (ID INT PRIMARY KEY) ZONE Z")
        result = manager.run_pass(now=1000.0)
        assert (result.written, result.lost) == (12, 0)
        verify_placement(cat)
        for server in fleet:
            server.serve_index()
        fleet[0].die()
        result = manager.run_pass(now=1001.0)
        assert (result.written, result.lost) == (12, 0)
        verify_placement(cat)
        for route in read_routes(store).values():
            assert all("ts1" not in t.replicas for t in route.tablets)
        # Dropping them all in one version: the routes that do not fit in
        # its transaction are left to the loop, which catches up.
        cat.sql("; ".join(f"DROP TABLE T{i}" for i in range(12)))
        states = [r.state for r in read_routes(store).values()]
        assert TabletState.DELETED in states
        assert any(state is not TabletState.DELETED for state in states)
        manager.run_pass(now=1002.0)
        manager.run_pass(now=1003.0 + SETTINGS.clean_after_s)
        assert read_routes(store) == {}
        verify_placement(cat)
    finally:
        cat.close()


def test_damaged_records_are_reported_and_left_alone_while_the_rest_is_placed(
    cat: Catalog, manager: PlacementManager
) -> None:
    store = cat.metastore
    servers(store, "ts1", "ts2")
    cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 2, REPLICAS = 1); "
        "CREATE TABLE A (ID INT PRIMARY KEY) ZONE Z; CREATE TABLE B (ID INT PRIMARY KEY) ZONE Z"
    )
    a, b = table_id(cat, "A"), table_id(cat, "B")
    key = f"__table_route/{a}"
    stored = store.get(key)
    assert stored is not None
    flipped = bytearray(stored.value)
    flipped[len(flipped) // 2] ^= 0x40
    store.put(key, bytes(flipped))
    store.put("__tserver_report/ts2", b"\x00 not a report")
    result = manager.run_pass(now=1000.0)
    assert any(key in p for p in result.problems)
    assert any("__tserver_report/ts2" in p for p in result.problems)
    after = store.get(key)
    assert after is not None and after.value == bytes(flipped)  # never overwritten
    route = read_route(store, b)
    assert route is not None and all(t.state is TabletState.CREATING for t in route.tablets)
    # DDL on the damaged table still commits; its route stays as it was.
    cat.sql("ALTER TABLE A ADD COLUMN W INT")
    after = store.get(key)
    assert after is not None and after.value == bytes(flipped)
    with pytest.raises(CorruptDataError, match=key):
        verify_placement(cat)


def test_bad_arguments_are_catalog_errors(cat: Catalog, manager: PlacementManager) -> None:
    import almanac
    from almanac.placement.manager import placement_of

    with pytest.raises(ValidationError, match="attach_placement"):
        attach_placement("memory://")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="placement_of"):
        placement_of([])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="run_pass"):
        manager.run_pass(now="soon")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="placement"):
        almanac.connect("memory://", placement="on")  # type: ignore[call-overload]
    assert placement_of(cat) is manager


def _reasons(cat: Catalog) -> list[tuple[str, str, int, str | None]]:
    """(table, state, tablet, reason) of every row of SYSTEM.TABLETS."""
    rows = system_table(cat, "SYSTEM.TABLETS").to_pylist()
    return [(r["TABLE"], r["STATE"], r["TABLET_ID"], r["REASON"]) for r in rows]


def test_the_leader_stores_why_each_tablet_waits_once_and_clears_it_when_placed(
    cat: Catalog,
) -> None:
    settings = dataclasses.replace(SETTINGS, max_tablets_per_server=3)
    manager = attach_placement(cat, settings, run=False)
    store = cat.metastore
    tid = make_table(cat, partitions=4, replicas=1)
    manager.run_pass(now=1000.0)
    none = "no live tablet server"
    assert _reasons(cat) == [("T", "PREPARING", i, none) for i in range(4)]
    first = store.get(reason_key(tid))
    assert first is not None
    manager.run_pass(now=1001.0)
    again = store.get(reason_key(tid))
    assert again is not None and again.mod_revision == first.mod_revision, "no write per pass"

    servers(store, "ts1")
    manager.run_pass(now=1002.0)
    full = "no tablet server has room: 1 server at max_tablets_per_server=3"
    rows = _reasons(cat)
    assert sorted((state, reason) for _, state, _, reason in rows) == [
        ("CREATING", None),
        ("CREATING", None),
        ("CREATING", None),
        ("PREPARING", full),
    ]
    said, route = store.get(reason_key(tid)), store.get(route_key(tid))
    assert said is not None and route is not None
    assert said.mod_revision == route.mod_revision, "the reason changes with its route"

    servers(store, "ts2")
    manager.run_pass(now=1003.0)
    assert [(state, reason) for _, state, _, reason in _reasons(cat)] == [("CREATING", None)] * 4
    assert store.get(reason_key(tid)) is None and read_reasons(store) == {}
    cat.sql("DROP TABLE T")
    manager.run_pass(now=1004.0)
    assert read_reasons(store) == {}


def test_each_reason_names_what_is_missing(cat: Catalog) -> None:
    settings = dataclasses.replace(SETTINGS, max_tablets_per_server=2)
    manager = attach_placement(cat, settings, run=False)
    store = cat.metastore
    cat.sql(
        "CREATE ZONE THREE WITH (PARTITIONS = 1, REPLICAS = 3); "
        "CREATE ZONE EU WITH (PARTITIONS = 1, REPLICAS = 1, "
        """DATA_NODES_FILTER = '$[?(@.region == "eu")]'); """
        "CREATE ZONE TWO WITH (PARTITIONS = 3, REPLICAS = 2); "
        "CREATE ZONE ODD WITH (REPLICAS = 1, DATA_NODES_FILTER = '$.nodes[0]'); "
        "CREATE TABLE A (ID INT PRIMARY KEY) ZONE THREE; "
        "CREATE TABLE B (ID INT PRIMARY KEY) ZONE EU; "
        "CREATE TABLE C (ID INT PRIMARY KEY) ZONE TWO; "
        "CREATE TABLE D (ID INT PRIMARY KEY) ZONE ODD"
    )
    FakeServer(store, "us1", {"region": "us"}).register()
    FakeServer(store, "us2", {"region": "us"}).register()
    manager.run_pass(now=1000.0)
    said = {(table, tablet): reason for table, _, tablet, reason in _reasons(cat)}
    assert said[("A", 0)] == "zone 'THREE' needs 3 replicas, 2 tablet servers live"
    assert said[("B", 0)] == (
        """zone 'EU' needs 1 replica, 0 of 2 live tablet servers match its node filter """
        """'$[?(@.region == "eu")]' and storage profile 'default'"""
    )
    # C's three tablets of two replicas each on two servers of room 2: two
    # tablets placed, the third finds no room.
    assert [said[("C", i)] for i in range(3)].count(None) == 2
    assert "no tablet server has room: 2 servers at max_tablets_per_server=2" in said.values()
    odd = said[("D", 0)]
    assert odd is not None and "'$.nodes[0]' is not supported" in odd


def test_a_deposed_leaders_reasons_are_not_written(cat: Catalog) -> None:
    manager = PlacementManager(cat, SETTINGS, run=False)
    store = cat.metastore
    tid = make_table(cat, partitions=2, replicas=1)
    manager._campaign()  # leads, with its fence on LEADER_KEY
    assert manager.is_leader
    held = store.get(LEADER_KEY)
    assert held is not None
    store.revoke_lease(held.lease)  # its lease expires under it
    store.put(LEADER_KEY, b"other")  # and another node leads
    manager.run_pass(now=1000.0)  # a pass already under way when that happened
    assert store.get(reason_key(tid)) is None
    manager.close()

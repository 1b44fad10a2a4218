"""``almanac servers`` and ``almanac tablets S.T`` on a local store and
through a catalog server, over placement keys written under a real lease."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac.cli import main
from almanac.placement import (
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletReport,
    TabletState,
    report_key,
    route_key,
    server_key,
)
from almanac.system_tables import system_table
from tests.cli.support import almanac as run
from tests.cli.support import start
from tests.placement.support import FakeServer
from tests.server.support import Server
from tests.waiting import PATIENCE, wait_for

_TTL_S = 3600.0
"""The registration outlives the module; the fixture revokes it."""


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A catalog with SHOP.ITEMS on two tablets, one server registered under
    a lease (ts1) and one named by the route only (ts2); the table's id."""
    target = str(tmp_path_factory.mktemp("placed") / "catalog")
    with almanac.connect(target) as cat:
        cat.sql("CREATE SCHEMA SHOP; CREATE TABLE SHOP.ITEMS (ID INT PRIMARY KEY)")
        items = cat.catalog().table("ITEMS", "SHOP")
        assert items is not None
        store = cat.metastore
        running = TabletState.RUNNING
        tablets = (
            Tablet(0, 0, running, ("ts1", "ts2"), "ts1", 1, 1.0),
            Tablet(1, 1, TabletState.CREATING, ("ts2",), "ts2", 0, 1.0),
        )
        route = TableRoute(items.id, 4, 1, tablets, 2, running)
        store.put(route_key(items.id), route.encode())
        lease = store.grant_lease(_TTL_S)
        info = ServerInfo("ts1", "127.0.0.1", 47470, (("rack", "r1"),), ("ssd",), 1.0e9, lease)
        store.put(server_key("ts1"), info.encode(), lease)
        report = ServerReport("ts1", (TabletReport(items.id, 0, running, 1),), 1, 1.0e9 + 5)
        store.put(report_key("ts1"), report.encode(), lease)
        try:
            yield target, items.id
        finally:
            store.revoke_lease(lease)


def _call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_servers_and_tablets_print_the_placement(
    placed: tuple[str, int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target, table_id = placed
    status, out, err = _call(capsys, "--store", target, "servers")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "HOST",
        "FLIGHT_PORT",
        "ATTRIBUTES",
        "STORAGE_PROFILES",
        "STARTED_AT",
        "LIVE",
        "TABLETS",
        "LEADERS",
        "REPORTED_AT",
    ]
    assert lines[1].split() == [
        "ts1",
        "127.0.0.1",
        "47470",
        "rack=r1",
        "ssd",
        "2001-09-09T01:46:40.000Z",
        "true",
        "1",
        "1",
        "2001-09-09T01:46:45.000Z",
    ]
    assert lines[2].split()[0] == "ts2" and "false" in lines[2].split()

    status, out, err = _call(capsys, "--store", target, "tablets", "shop.items", "--json")
    assert (status, err) == (0, "")
    document = json.loads(out)
    rows = [dict(zip(document["columns"], row, strict=True)) for row in document["rows"]]
    assert [(r["TABLE_ID"], r["TABLET_ID"], r["STATE"], r["REPLICAS"]) for r in rows] == [
        (table_id, 0, "RUNNING", "ts1, ts2"),
        (table_id, 1, "CREATING", "ts2"),
    ]
    assert {(r["SCHEMA"], r["TABLE"], r["ROUTE_VERSION"]) for r in rows} == {("SHOP", "ITEMS", 4)}

    # the real entry point: a missing table is one line on stderr and exit 1
    missing = run("tablets", "SHOP.NOPE", cwd=tmp_path, store=target)
    assert missing.returncode == 1
    assert missing.stderr == "error: Table 'SHOP.NOPE' does not exist\n"
    assert missing.stdout == ""


def test_a_catalog_server_answers_them_too(
    placed: tuple[str, int], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target, _ = placed
    server = Server(target, log=tmp_path / "server.log")
    try:
        for args in (("servers",), ("tablets", "SHOP.ITEMS")):
            local = _call(capsys, "--store", target, *args, "--json")
            remote = _call(capsys, "--store", server.url, *args, "--json")
            assert remote == local
            assert local[0] == 0 and json.loads(local[1])["rows"]
    finally:
        assert server.stop() == 0, server.log_text()


def test_serve_gives_a_server_at_most_its_max_tablets_and_says_why_the_rest_wait(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "c")
    limit = "no tablet server has room: 1 server at max_tablets_per_server=2"
    with almanac.connect(path) as cat:
        cat.sql(
            "CREATE ZONE Z WITH (PARTITIONS = 3, REPLICAS = 1); "
            "CREATE TABLE T (ID INT PRIMARY KEY) ZONE Z"
        )
        server = FakeServer(cat.metastore, "ts1", ttl_s=_TTL_S).register()
        args = ("--store", path, "serve", "--port", "0", "--max-tablets-per-server", "2")
        proc = start(*args, cwd=tmp_path)
        try:
            rows: list[tuple[str, str | None]] = []

            def two_placed() -> bool:
                if proc.poll() is not None:
                    assert proc.stderr is not None
                    raise AssertionError(f"almanac serve exited: {proc.stderr.read()}")
                rows[:] = [
                    (r["STATE"], r["REASON"])
                    for r in system_table(cat, "SYSTEM.TABLETS").to_pylist()
                ]
                return sorted(rows, key=repr) == sorted(
                    [("CREATING", None), ("CREATING", None), ("PREPARING", limit)], key=repr
                )

            wait_for(two_placed, "the leader of almanac serve to fill ts1 up to 2 tablets")
            assert proc.stdout is not None
            # It ends on SIGINT once it serves (or its stdout ends, if it died).
            assert proc.stdout.readline().startswith("Listening on ")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=PATIENCE) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            server.die()

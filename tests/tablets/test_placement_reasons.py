"""Why a tablet waits, end to end: a real catalog node leads placement with a
low ``--max-tablets-per-server``, real tablet servers come one by one, and
``SYSTEM.TABLETS`` and ``almanac tablets`` say what holds each tablet back
until there is room for it, then nothing."""

from __future__ import annotations

import json
from typing import Any

from almanac.system_tables import system_table
from tests.cli.support import almanac
from tests.tablets.support import TabletCluster

LIMIT = 4
"""Tablet replicas the leader gives one server: two tables of three take six."""

NO_SERVER = "no live tablet server"
NO_ROOM = f"no tablet server has room: 1 server at max_tablets_per_server={LIMIT}"


def _tablets(cluster: TabletCluster) -> list[dict[str, Any]]:
    return list(system_table(cluster.cat, "SYSTEM.TABLETS").to_pylist())


def _states(cluster: TabletCluster) -> list[tuple[str, str, str | None]]:
    """(table, state, reason) of every tablet, in table and tablet order."""
    return [(r["TABLE"], r["STATE"], r["REASON"]) for r in _tablets(cluster)]


def _cli_tablets(cluster: TabletCluster, table: str) -> tuple[list[dict[str, Any]], str]:
    """``almanac tablets TABLE`` as JSON rows, and as the text a person reads."""
    as_json = almanac("tablets", table, "--json", cwd=cluster.directory, store=cluster.target)
    assert (as_json.returncode, as_json.stderr) == (0, ""), as_json
    document = json.loads(as_json.stdout)
    rows = [dict(zip(document["columns"], row, strict=True)) for row in document["rows"]]
    text = almanac("tablets", table, cwd=cluster.directory, store=cluster.target)
    assert (text.returncode, text.stderr) == (0, ""), text
    return rows, text.stdout


def test_a_full_server_is_the_reason_a_tablet_waits_until_a_second_server_comes(
    cluster: TabletCluster,
) -> None:
    # Made before any server registers: CREATE does not wait, the tablets do.
    cluster.cat.sql(
        "CREATE ZONE Z WITH (PARTITIONS = 3, REPLICAS = 1); "
        "CREATE TABLE A (ID INT64 PRIMARY KEY) ZONE Z; "
        "CREATE TABLE B (ID INT64 PRIMARY KEY) ZONE Z"
    )
    cluster.start_node("n1", "--max-tablets-per-server", str(LIMIT))
    every = [(t, "PREPARING", NO_SERVER) for t in ("A", "B") for _ in range(3)]
    cluster.wait(lambda: _states(cluster) == every, "every tablet to wait for a server")
    rows, text = _cli_tablets(cluster, "A")
    assert [r["REASON"] for r in rows] == [NO_SERVER] * 3
    assert "REASON" in text.splitlines()[0] and text.count(NO_SERVER) == 3, text

    # One server: it takes LIMIT tablets, the other two say it is full.
    cluster.start_server("ts1")

    def one_full() -> bool:
        found = [(state, reason) for _, state, reason in _states(cluster)]
        return sorted(found, key=repr) == sorted(
            [("RUNNING", None)] * LIMIT + [("PREPARING", NO_ROOM)] * (6 - LIMIT), key=repr
        )

    cluster.wait(one_full, f"{LIMIT} tablets to run on ts1 and the rest to wait for room")
    waiting = {(r["TABLE"], r["TABLET_ID"]) for r in _tablets(cluster) if r["REASON"]}
    shown: set[tuple[str, int]] = set()
    for name in ("A", "B"):
        rows, text = _cli_tablets(cluster, name)
        said = [(name, r["TABLET_ID"]) for r in rows if r["REASON"] == NO_ROOM]
        assert text.count(NO_ROOM) == len(said), text
        shown.update(said)
    assert shown == waiting

    # Room comes: every tablet is placed and no reason is left.
    cluster.start_server("ts2")
    placed = [(t, "RUNNING", None) for t in ("A", "B") for _ in range(3)]
    cluster.wait(lambda: _states(cluster) == placed, "every tablet to run, with no reason")
    for name in ("A", "B"):
        rows, text = _cli_tablets(cluster, name)
        assert [(r["STATE"], r["REASON"]) for r in rows] == [("RUNNING", None)] * 3
        assert "max_tablets_per_server" not in text, text
    cluster.wait_settled("A", 3, 1)
    cluster.wait_settled("B", 3, 1)

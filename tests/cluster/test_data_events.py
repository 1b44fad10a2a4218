"""Data commits are versions, so every node hears them: one ``DATA_COMMIT``
event per data commit, in version order, on the node that committed it and
on every other node of the catalog (SQLite and a 3-member etcd cluster)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

import almanac
from almanac import Catalog, ColumnDef, ColumnType, CreateTable, Event, EventType
from almanac.data import create_table_as, write_table
from almanac.model.entries import TableDataCommitted
from tests.waiting import PATIENCE, wait_for

_T = TypeVar("_T")
Heard = tuple[int, int, int, str, int, int]
"""(version, table id, snapshot id, operation, rows added, rows removed)."""


def _heard(event: Event) -> Heard:
    entry = event.entry
    assert isinstance(entry, TableDataCommitted)
    assert event.object_id == entry.table_id
    return (
        event.version,
        entry.table_id,
        entry.snapshot_id,
        entry.operation,
        entry.rows_added,
        entry.rows_removed,
    )


def _type(event: Event) -> EventType:
    return event.type


def _record(into: list[_T], what: Callable[[Event], _T], event: Event) -> None:
    into.append(what(event))


def _rows(ids: range) -> pa.Table:
    return pa.table({"ID": pa.array(ids, pa.int64())})


def _committed(cat: Catalog) -> list[Heard]:
    """Every data commit the log holds, as the events should tell it."""
    return [
        (info.version, e.table_id, e.snapshot_id, e.operation, e.rows_added, e.rows_removed)
        for info in cat.history(1)
        for e in info.update.entries
        if isinstance(e, TableDataCommitted)
    ]


def test_every_node_hears_each_data_commit_once_in_version_order(
    target: str, tmp_path: Path
) -> None:
    def node(name: str) -> Catalog:
        lake = str(tmp_path / "lake")
        return almanac.connect(
            target, delay_ms=0, max_clock_skew_ms=0, warehouse=lake, node_name=name
        )

    with node("a") as a, node("b") as b:
        heard: dict[str, list[Heard]] = {"a": [], "b": []}
        others: dict[str, list[EventType]] = {"a": [], "b": []}
        for name, each in (("a", a), ("b", b)):
            each.listen(EventType.DATA_COMMIT, partial(_record, heard[name], _heard))
            each.listen(EventType.TABLE_CREATE, partial(_record, others[name], _type))
        a.sql("CREATE TABLE T (ID INT64 PRIMARY KEY)")
        write_table(a, "T", _rows(range(10)))
        assert b.catalog_ready(a.latest_version, timeout=PATIENCE)
        write_table(b, "T", _rows(range(10, 25)))
        create = CreateTable(
            name="U", columns=(ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),)
        )
        create_table_as(b, create, _rows(range(3)))  # one version: the table and its data
        assert a.catalog_ready(b.latest_version, timeout=PATIENCE)
        write_table(a, "T", _rows(range(5)), operation="overwrite")
        a.sql("ALTER TABLE T ADD COLUMN NOTE VARCHAR(10)")  # DDL: no data event
        latest = a.latest_version
        assert a.catalog_ready(latest, timeout=PATIENCE)
        assert b.catalog_ready(latest, timeout=PATIENCE)

        committed = _committed(a)
        t, u = a.catalog().table("T"), a.catalog().table("U")
        assert t is not None and u is not None
        assert [(c[1], c[3], c[4], c[5]) for c in committed] == [
            (t.id, "append", 10, 0),
            (t.id, "append", 15, 0),
            (u.id, "append", 3, 0),
            (t.id, "overwrite", 5, 25),
        ]
        versions = [c[0] for c in committed]
        assert versions == sorted(set(versions)), "one data commit per version here"
        assert heard["a"] == committed
        assert heard["b"] == committed
        assert others["a"] == others["b"] == [EventType.TABLE_CREATE] * 2


def test_racing_writers_on_two_nodes_are_heard_in_one_order_everywhere(
    target: str, tmp_path: Path
) -> None:
    """Two nodes append to their own tables at the same time: whatever order
    the store gives their commits, every node hears it, one event each."""
    rounds = 5
    lake = str(tmp_path / "lake")
    with (
        almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, warehouse=lake) as a,
        almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, warehouse=lake) as b,
    ):
        heard: dict[str, list[Heard]] = {"a": [], "b": []}
        a.listen(EventType.DATA_COMMIT, partial(_record, heard["a"], _heard))
        b.listen(EventType.DATA_COMMIT, partial(_record, heard["b"], _heard))
        a.sql("CREATE TABLE TA (ID INT64 PRIMARY KEY); CREATE TABLE TB (ID INT64 PRIMARY KEY)")
        assert b.catalog_ready(a.latest_version, timeout=PATIENCE)
        start = threading.Barrier(2)
        failures: list[BaseException] = []

        def writer(cat: Catalog, name: str) -> None:
            try:
                start.wait(PATIENCE)
                for i in range(rounds):
                    write_table(cat, name, _rows(range(i * 10, i * 10 + i + 1)))
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [
            threading.Thread(target=writer, args=(a, "TA")),
            threading.Thread(target=writer, args=(b, "TB")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PATIENCE)
        assert failures == []
        latest = max(a.latest_version, b.latest_version)
        assert a.catalog_ready(latest, timeout=PATIENCE)
        assert b.catalog_ready(latest, timeout=PATIENCE)
        # A data version is ready once applied, its listeners maybe still
        # running: wait until both nodes heard every commit.
        expected = 2 * rounds
        wait_for(
            lambda: len(heard["a"]) >= expected and len(heard["b"]) >= expected,
            "both nodes' listeners to hear every data commit",
        )
        committed = _committed(a)
        assert len(committed) == 2 * rounds
        assert [c[0] for c in committed] == sorted({c[0] for c in committed})
        ta, tb = a.catalog().table("TA"), a.catalog().table("TB")
        assert ta is not None and tb is not None
        for table in (ta, tb):
            mine = [c[4] for c in committed if c[1] == table.id]
            assert mine == [i + 1 for i in range(rounds)], "each table's appends in order"
        assert heard["a"] == heard["b"] == committed

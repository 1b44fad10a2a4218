"""A node whose log follower lags still writes, reads and compacts against
the latest version: once another node's DDL returned, the change is there
for every node "now" (see Schema sync in the README), whether or not the
follower thread has delivered it yet."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from almanac import AddColumns, Catalog, ColumnDef, ColumnType, CreateTable, CreateZone
from almanac.data import compact, read_table, write_table
from almanac.metastore import WatchEvent
from tests.data.support import connect

ID = ColumnDef(name="ID", type=ColumnType.INT64, nullable=False)
N = ColumnDef(name="N", type=ColumnType.INT64)


def rows(ids: Sequence[int], columns: Sequence[str] = ("ID", "N")) -> pa.Table:
    return pa.table({c: pa.array(ids, pa.int64()) for c in columns})


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Catalog, Catalog]]:
    """Two nodes of one SQLite catalog; the second one's follower sees no
    new version (as one on a busy machine, between two polls)."""
    with connect(str(tmp_path / "cat")) as a, connect(str(tmp_path / "cat")) as b:
        a.execute([CreateZone(name="ONE", partitions=1)])
        a.execute([CreateTable(name="T", columns=(ID,), zone="ONE")])
        b.catch_up()

        def nothing_new(prefix: str, from_revision: int) -> tuple[Sequence[WatchEvent], int, bool]:
            return [], from_revision, False

        with monkeypatch.context() as patch:
            patch.setattr(b.log.store, "_watch_poll", nothing_new)
            yield a, b


def test_a_write_on_a_lagging_node_takes_a_column_added_elsewhere(
    nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = nodes
    a.execute([AddColumns(table="T", columns=(N,))])
    write_table(b, "T", rows([1]))
    assert read_table(a, "T").to_pylist() == [{"ID": 1, "N": 1}]


def test_a_read_on_a_lagging_node_sees_a_table_and_column_made_elsewhere(
    nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = nodes
    a.execute([AddColumns(table="T", columns=(N,))])
    write_table(a, "T", rows([1]))
    assert read_table(b, "T").to_pylist() == [{"ID": 1, "N": 1}]
    a.execute([CreateTable(name="U", columns=(ID,))])
    assert read_table(b, "U").num_rows == 0


def test_a_compaction_on_a_lagging_node_keeps_a_column_added_elsewhere(
    nodes: tuple[Catalog, Catalog],
) -> None:
    a, b = nodes
    a.execute([AddColumns(table="T", columns=(N,))])
    write_table(a, "T", rows([1]))
    write_table(a, "T", rows([2]))
    snapshot = compact(b, "T")
    assert snapshot is not None and len(snapshot.files) == 1
    assert sorted(read_table(a, "T").to_pylist(), key=str) == [
        {"ID": 1, "N": 1},
        {"ID": 2, "N": 2},
    ]


def test_a_compaction_rewrites_only_files_its_version_knows(
    nodes: tuple[Catalog, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column added, and rows written with it, between the node's catch-up
    and its read of the table's data: the rewrite (at the version without
    the column) must leave those files alone, not drop their column."""
    a, b = nodes
    write_table(a, "T", rows([1], ["ID"]))
    write_table(a, "T", rows([2], ["ID"]))
    b.catch_up()
    monkeypatch.setattr(b, "catch_up", lambda: None)  # what lands now, b has not seen
    a.execute([AddColumns(table="T", columns=(N,))])
    write_table(a, "T", rows([3]))
    write_table(a, "T", rows([4]))
    snapshot = compact(b, "T")
    assert snapshot is not None and len(snapshot.files) == 3
    assert sorted(read_table(a, "T").to_pylist(), key=str) == [
        {"ID": 1, "N": None},
        {"ID": 2, "N": None},
        {"ID": 3, "N": 3},
        {"ID": 4, "N": 4},
    ]

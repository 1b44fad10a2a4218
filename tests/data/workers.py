"""Code that the data tests run in spawned processes (importable by name)."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa

from almanac import Table
from almanac.data import tablets_of, write_table
from tests.data.support import connect, own_files, rows


def append_many(target: str, table: str, tag: int, count: int, gate: str) -> list[str]:
    """Commit ``count`` one-row appends from this process once every worker is
    ready (``<gate>/go`` exists); the files each commit added."""
    added: list[str] = []
    with connect(target) as cat:
        Path(gate, f"ready-{tag}").touch()
        while not Path(gate, "go").exists():
            time.sleep(0.005)
        for i in range(count):
            snapshot = write_table(cat, table, rows([tag * 10_000 + i]))
            added.extend(own_files(snapshot))
    return added


def tablets(table: Table, data: pa.Table, partitions: int) -> list[int]:
    """The tablets of ``data``'s rows in ``table``, computed in this process."""
    return [int(t) for t in tablets_of(data, table, partitions)]

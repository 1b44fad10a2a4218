"""DDL commit throughput on SQLite against the physical floor, in one process.

The floor is ``sqlite_floor.SqliteFloor``, a compare-and-swap loop on the
standard library's ``sqlite3`` with the store's pragmas, one transaction per
version whose entry is as large as the catalog's stored entry of the same DDL.
Against it: ``execute`` of a 3-column CREATE TABLE (a new table each time)
on a directory target with ``delay_ms=0, max_clock_skew_ms=0``, the same
under a fresh request id each time (the digest of the commands and the
request index), and ``cat.sql`` of the same DDL, at ``durability="full"``
and ``"normal"``.

Run: ``.venv/bin/python bench/bench_commit.py [commits]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import almanac
from almanac import ColumnDef, ColumnType
from almanac.metastore.sqlite import DURABILITY_LEVELS
from almanac.node.log_format import frame_update
from sqlite_floor import SqliteFloor

RUNS = 3


def create_table(name: str) -> almanac.CreateTable:
    return almanac.CreateTable(
        name=name,
        columns=(
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="NAME", type=ColumnType.STRING, length=100),
            ColumnDef(name="EMAIL", type=ColumnType.STRING, length=200),
        ),
        primary_key=("ID",),
    )


def create_sql(name: str) -> str:
    return f"CREATE TABLE {name} (ID INT64 PRIMARY KEY, NAME VARCHAR(100), EMAIL VARCHAR(200))"


def catalog_rate(target: Path, durability: str, commits: int, how: str) -> tuple[float, int]:
    """Commits/s through the catalog, and the size of the last stored entry."""
    with almanac.connect(
        str(target), delay_ms=0, max_clock_skew_ms=0, durability=durability
    ) as cat:
        start = time.perf_counter()
        for i in range(commits):
            if how == "sql":
                cat.sql(create_sql(f"T{i}"))
            elif how == "execute+id":
                cat.execute([create_table(f"T{i}")], request_id=f"request-{i}")
            else:
                cat.execute([create_table(f"T{i}")])
        rate = commits / (time.perf_counter() - start)
        return rate, len(frame_update(cat.history()[-1].update))


def floor_rate(path: Path, durability: str, commits: int, payload: bytes) -> float:
    """The floor: one compare-and-swap transaction per version on bare sqlite3."""
    floor = SqliteFloor(path, durability)
    try:
        start = time.perf_counter()
        for _ in range(commits):
            floor.commit(payload)
        rate = commits / (time.perf_counter() - start)
        assert floor.latest() == commits
        return rate
    finally:
        floor.close()


def main() -> None:
    commits = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for durability in DURABILITY_LEVELS:
            rates: dict[str, list[float]] = {
                "execute": [],
                "execute+id": [],
                "sql": [],
                "floor": [],
            }
            for run in range(RUNS):
                sizes = {}
                for i, how in enumerate(("execute", "execute+id", "sql")):
                    rate, sizes[how] = catalog_rate(
                        root / f"{i}-{durability}{run}", durability, commits, how
                    )
                    rates[how].append(rate)
                size = sizes["execute"]
                floor = floor_rate(
                    root / f"f-{durability}{run}.db", durability, commits, b"x" * size
                )
                rates["floor"].append(floor)
            floor = statistics.median(rates["floor"])
            print(
                f"durability={durability!r}, {commits:,} CREATE TABLE commits, median of {RUNS}: "
                f"floor (sqlite3 CAS loop, {size}-byte entries) {floor:,.0f}/s"
            )
            for what in ("execute", "execute+id", "sql"):
                rate = statistics.median(rates[what])
                print(f"  cat.{what:<10} {rate:8,.0f}/s  {rate / floor:5.0%} of the floor")


if __name__ == "__main__":
    main()

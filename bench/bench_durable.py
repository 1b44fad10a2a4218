"""Durable catalog figures on SQLite, each against a baseline in the same run
(commit throughput against the bare ``sqlite3`` floor is ``bench_commit.py``'s):

* recovery (``connect``) of a 100,000-version log, and of the same catalog
  after a snapshot, against a bare read of the same keys.

Run: ``.venv/bin/python bench/bench_durable.py [versions]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import almanac
from almanac.metastore import Put, SqliteMetastore
from almanac.node.log import KEY_VERSION, update_key
from almanac.node.log_format import frame_update
from workload import create_table

COMMITS = 1500
RUNS = 3


def build_log(path: Path, versions: int) -> None:
    """Write a log of ``versions`` versions straight into the store (fast to set up)."""
    with almanac.connect("memory://") as mem:
        mem.execute([create_table("T")])
        while mem.latest_version < versions:
            mem.execute([almanac.SetTableProperties(name="T", min_stale_rows=mem.latest_version)])
        updates = [info.update for info in mem.history()]
    store = SqliteMetastore(path)
    try:
        batch = 2000
        for start in range(0, len(updates), batch):
            chunk = updates[start : start + batch]
            ops = [Put(update_key(u.version), frame_update(u)) for u in chunk]
            ops.append(Put(KEY_VERSION, str(chunk[-1].version).encode()))
            if start == 0:
                ops.append(Put("catalog.snapshot.version", b"0"))
            store.txn([], ops)
    finally:
        store.close()


def timed_open(target: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``connect`` (the CPU time tells what the wall
    time means on a machine shared with other jobs), and the latest version."""
    start, cpu = time.perf_counter(), time.process_time()
    cat = almanac.connect(target)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    version = cat.latest_version
    cat.close()
    return elapsed, cpu, version


def bare_read_seconds(db: Path) -> float:
    """The baseline of a recovery: one range read of every catalog key."""
    store = SqliteMetastore(db)
    try:
        start = time.perf_counter()
        store.range("catalog.")
        return time.perf_counter() - start
    finally:
        store.close()


def bench_recovery(root: Path, versions: int) -> None:
    target = root / "recovery"
    target.mkdir()
    build_log(target / "catalog.db", versions)
    full, _, latest = min(timed_open(str(target)) for _ in range(3))
    assert latest == versions
    bare = bare_read_seconds(target / "catalog.db")
    print(
        f"recovery of a {versions:,}-version log: {full:.2f} s (goal ≤ 5 s); bare read of "
        f"its keys {bare:.2f} s; ratio {full / bare:.1f}x"
    )
    with almanac.connect(str(target)) as cat:
        cat.checkpoint_log()
    snap, _, latest = min(timed_open(str(target)) for _ in range(3))
    assert latest == versions
    print(f"recovery from a snapshot of the same catalog: {snap * 1000:.0f} ms (goal ≤ 1 s)")


def bench_big_snapshot(root: Path, tables: int) -> None:
    target = root / "big"
    with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0) as cat:
        for start in range(0, tables, 1000):
            cat.execute([create_table(f"T{i}") for i in range(start, start + 1000)])
        cat.checkpoint_log()
    elapsed, _, _ = min(timed_open(str(target)) for _ in range(3))
    print(f"recovery from a snapshot of a {tables:,}-table catalog: {elapsed:.2f} s (goal ≤ 1 s)")


def main() -> None:
    versions = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench_recovery(root, versions)
        bench_big_snapshot(root, 10_000)


if __name__ == "__main__":
    main()

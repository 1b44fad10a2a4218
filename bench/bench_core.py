"""Catalog core figures on ``memory://``, each next to a baseline run in the
same process (these machines are noisy; ratios travel better than seconds).

Run: ``.venv/bin/python bench/bench_core.py`` (or ``make bench``).
"""

from __future__ import annotations

import bisect
import gc
import tracemalloc
from collections.abc import Callable

import almanac
import timing
from almanac import ColumnDef, ColumnType
from workload import create_table

REPEATS = 7


def median_seconds(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    return timing.median_seconds(fn, repeats)


def big_catalog(tables: int) -> almanac.Catalog:
    cat = almanac.connect("memory://")
    batch = 1000
    for start in range(0, tables, batch):
        cat.execute([create_table(f"T{i}") for i in range(start, min(start + batch, tables))])
    return cat


def bench_commits() -> None:
    n = 2000

    def run() -> None:
        cat = almanac.connect("memory://")
        cat.execute([create_table("T")])
        for i in range(n):
            cat.execute([almanac.SetTableProperties(name="T", min_stale_rows=i + 1)])

    seconds = median_seconds(run, repeats=5)
    print(f"execute on memory://: {n / seconds:,.0f} commits/s (median of 5 runs of {n})")


def bench_lookup() -> None:
    tables = 10_000
    cat = big_catalog(tables)
    snap = cat.catalog()
    names = [f"T{i}" for i in range(0, tables, 7)]
    plain = {name: i for i, name in enumerate(names)}

    def lookups() -> None:
        table = snap.table
        for name in names:
            table(name)

    def baseline() -> None:
        get = plain.get
        for name in names:
            get(name)

    spelled = [name.lower() for name in names]  # found by the case-free key

    def other_spelling() -> None:
        table = snap.table
        for name in spelled:
            table(name, "public")

    per = median_seconds(lookups) / len(names) * 1e6
    base = median_seconds(baseline) / len(names) * 1e6
    other = median_seconds(other_spelling) / len(names) * 1e6
    print(
        f"table lookup by name, {tables:,} tables: {per:.3f} µs (goal ≤ 2 µs); "
        f"plain dict.get {base:.3f} µs; ratio {per / base:.1f}x"
    )
    print(
        f"table lookup by another spelling ('public'.'t7'), {tables:,} tables: {other:.3f} µs; "
        f"ratio {other / base:.1f}x to plain dict.get"
    )


def bench_catalog_at() -> None:
    versions = 100_000
    cat = almanac.connect("memory://")
    cat.execute([create_table("T")])
    for i in range(versions - cat.latest_version):
        cat.execute([almanac.SetTableProperties(name="T", min_stale_rows=i + 1)])
    probes = [cat.catalog(v).activation_time for v in range(1, cat.latest_version + 1, 97)]
    activations = [cat.catalog(v).activation_time for v in range(cat.latest_version + 1)]

    def lookups() -> None:
        at = cat.catalog_at
        for ts in probes:
            at(ts)

    def baseline() -> None:
        for ts in probes:
            bisect.bisect_right(activations, ts)

    per = median_seconds(lookups) / len(probes) * 1e6
    base = median_seconds(baseline) / len(probes) * 1e6
    print(
        f"catalog_at, {cat.latest_version:,} versions: {per:.3f} µs (goal ≤ 10 µs); "
        f"bare bisect {base:.3f} µs; ratio {per / base:.1f}x"
    )


def bench_memory_per_version() -> None:
    tables = 10_000
    changes = 2_000
    cat = big_catalog(tables)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(changes):
        column = ColumnDef(name=f"C{i}", type=ColumnType.INT32)
        cat.execute([almanac.AddColumns(table=f"T{(i * 37) % tables}", columns=(column,))])
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per = (after - before) / changes
    snap = cat.catalog()
    print(
        f"memory per version (one-column change, {tables:,} tables, {changes:,} versions, "
        f"snapshot + stored update): {per:,.0f} bytes (goal ≤ 4,096); "
        f"catalog holds {len(snap.tables_by_id):,} tables"
    )


def main() -> None:
    bench_commits()
    bench_lookup()
    bench_catalog_at()
    bench_memory_per_version()


if __name__ == "__main__":
    main()

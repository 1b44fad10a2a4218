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
from almanac.data.iceberg_schema import iceberg_schema
from almanac.model.nested import walk
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
    version = cat.catalog()
    names = [f"T{i}" for i in range(0, tables, 7)]
    plain = {name: i for i, name in enumerate(names)}

    def lookups() -> None:
        table = version.table
        for name in names:
            table(name)

    def baseline() -> None:
        get = plain.get
        for name in names:
            get(name)

    spelled = [name.lower() for name in names]  # found by the case-free key

    def other_spelling() -> None:
        table = version.table
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
    version = cat.catalog()
    print(
        f"memory per version (one-column change, {tables:,} tables, {changes:,} versions, "
        f"snapshot + stored update): {per:,.0f} bytes (goal ≤ 4,096); "
        f"catalog holds {len(version.tables_by_id):,} tables"
    )


NESTED_STRUCTS = 9
NESTED_FIELDS = 10


def create_nested_table(name: str) -> almanac.CreateTable:
    """A table of 100 fields: a key and 9 STRUCTs of 10 fields each (ints,
    strings, decimals, timestamps and one ARRAY, so ids go three deep)."""
    kinds = (
        ColumnDef(name="", type=ColumnType.INT64),
        ColumnDef(name="", type=ColumnType.STRING),
        ColumnDef(name="", type=ColumnType.DECIMAL, precision=18, scale=2),
        ColumnDef(name="", type=ColumnType.TIMESTAMP_NS),
    )
    structs = []
    for s in range(NESTED_STRUCTS):
        fields = [
            ColumnDef(
                name=f"F{f}",
                type=kinds[f % len(kinds)].type,
                precision=kinds[f % len(kinds)].precision,
                scale=kinds[f % len(kinds)].scale,
            )
            for f in range(NESTED_FIELDS - 2)
        ]
        fields.append(
            ColumnDef(
                name="TAGS",
                type=ColumnType.LIST,
                fields=(ColumnDef(name="element", type=ColumnType.STRING),),
            )
        )
        structs.append(ColumnDef(name=f"S{s}", type=ColumnType.STRUCT, fields=tuple(fields)))
    return almanac.CreateTable(
        name=name,
        columns=(ColumnDef(name="ID", type=ColumnType.INT64, nullable=False), *structs),
        primary_key=("ID",),
    )


def bench_memory_per_version_nested() -> None:
    """The same one-column change as ``bench_memory_per_version`` on tables
    of 100 nested fields, against the same-run memory of one pyiceberg
    ``Schema`` of such a table (what keeping a copy of the schema per
    version would cost) and the size of its Iceberg JSON."""
    tables = 1_000
    changes = 2_000
    cat = almanac.connect("memory://")
    batch = 100
    for start in range(0, tables, batch):
        cat.execute([create_nested_table(f"N{i}") for i in range(start, start + batch)])
    table = cat.catalog().table("N0")
    assert table is not None
    fields = sum(1 for _ in walk(table.columns))
    assert fields == 1 + NESTED_STRUCTS * (NESTED_FIELDS + 1), fields
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(changes):
        column = ColumnDef(name=f"C{i}", type=ColumnType.INT32)
        cat.execute([almanac.AddColumns(table=f"N{(i * 37) % tables}", columns=(column,))])
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    per = (after - before) / changes
    copies = 200
    gc.collect()
    start = tracemalloc.get_traced_memory()[0]
    kept = [iceberg_schema(table) for _ in range(copies)]
    gc.collect()
    schema_bytes = (tracemalloc.get_traced_memory()[0] - start) / copies
    tracemalloc.stop()
    json_bytes = len(kept[0].model_dump_json())
    print(
        f"memory per version (one-column change, {tables:,} tables of {fields} nested fields, "
        f"{changes:,} versions, snapshot + stored update): {per:,.0f} bytes; one pyiceberg "
        f"Schema of such a table {schema_bytes:,.0f} bytes (Iceberg JSON {json_bytes:,} bytes); "
        f"ratio {per / schema_bytes:.3f}x to the Schema, {per / json_bytes:.2f}x to its JSON"
    )


def main() -> None:
    bench_commits()
    bench_lookup()
    bench_catalog_at()
    bench_memory_per_version()
    bench_memory_per_version_nested()


if __name__ == "__main__":
    main()

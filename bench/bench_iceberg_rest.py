"""What the Iceberg REST catalog costs against pyiceberg's own SQLite catalog.

A server process (``almanac.server.serve``, no auth, loopback) over a fresh
directory catalog (SQLite, ``durability="full"``), reached by pyiceberg's
``RestCatalog`` at ``/iceberg``; beside it, in this process, pyiceberg's
``SqlCatalog`` on a SQLite file with a local warehouse. Both hold the same
3-column table with one appended snapshot. Measured, in the same run:

* ``load_table``: milliseconds a call, against ``StaticTable.from_metadata``
  of the same ``metadata.json`` (the parse every catalog's load includes:
  the floor);
  the REST load answers the stored ``metadata.json`` bytes;
* a small append (pyiceberg ``Table.append`` of 10 rows: a data file, a
  manifest, a manifest list and the commit) through each catalog: commits a
  second;
* a one-column schema change (``update_schema().add_column``) committed
  through each catalog: commits a second.

Times are the median of ``RUNS`` runs; the two catalogs' runs alternate, so
a load that drifts during the run weighs on both alike.

Run: ``.venv/bin/python bench/bench_iceberg_rest.py [loads] [commits]``.
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable
from itertools import count
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

import timing
from serving import start_server

RUNS = 5
SCHEMA = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "NAME", StringType(), required=False),
    NestedField(3, "QTY", IntegerType(), required=False),
    identifier_field_ids=[1],
)
ROWS = pa.table(
    {"ID": pa.array(range(1000), pa.int64()), "NAME": [f"n{i}" for i in range(1000)]}
).append_column("QTY", pa.array(range(1000), pa.int32()))


def per_call(fn: Callable[[], object], n: int) -> float:
    """Seconds a call of ``fn``, ``n`` calls a run, median of ``RUNS``."""
    return paired(fn, fn, n)[0]


def paired(a: Callable[[], object], b: Callable[[], object], n: int) -> tuple[float, float]:
    """Seconds a call of ``a`` and of ``b``, ``n`` calls a run, each the
    median of ``RUNS`` runs, their runs alternating."""

    def runs(fn: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                fn()

        return run

    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(RUNS):
        for fn, kept in ((a, samples[0]), (b, samples[1])):
            kept.append(timing.median_seconds(runs(fn), 1) / n)
    return statistics.median(samples[0]), statistics.median(samples[1])


def prepare(catalog: Catalog) -> str:
    catalog.create_namespace("BENCH")
    table = catalog.create_table(("BENCH", "T"), SCHEMA)
    arrow = ROWS.cast(table.schema().as_arrow())
    table.append(arrow)
    return str(catalog.load_table(("BENCH", "T")).metadata_location)


def small_appends(catalog: Catalog) -> Callable[[], None]:
    table = catalog.load_table(("BENCH", "T"))
    rows = ROWS.slice(0, 10).cast(table.schema().as_arrow())

    def append() -> None:
        table.append(rows)

    return append


def schema_changes(catalog: Catalog, names: count[int]) -> Callable[[], None]:
    table = catalog.load_table(("BENCH", "T"))

    def change() -> None:
        with table.update_schema() as update:
            update.add_column(f"C{next(names)}", StringType())

    return change


def main() -> None:
    loads = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    commits = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc, url = start_server(str(root / "almanac"))
        try:
            rest = RestCatalog("almanac", uri=url + "/iceberg")
            (root / "sql").mkdir()
            sql = SqlCatalog(
                "sql",
                uri=f"sqlite:///{root / 'sql' / 'catalog.db'}",
                warehouse=f"file://{root}/sql",
            )
            locations = {"rest": prepare(rest), "sql": prepare(sql)}

            floor = per_call(lambda: StaticTable.from_metadata(locations["rest"]), loads)
            through_rest, through_sql = paired(
                lambda: rest.load_table(("BENCH", "T")),
                lambda: sql.load_table(("BENCH", "T")),
                loads,
            )
            print(f"load_table, {loads:,} calls a run, median of {RUNS}:")
            print(f"  {'StaticTable.from_metadata':<28} {floor * 1e3:8.2f} ms   (floor)")
            for what, seconds in (
                ("RestCatalog (Almanac)", through_rest),
                ("SqlCatalog", through_sql),
            ):
                print(f"  {what:<28} {seconds * 1e3:8.2f} ms   {seconds / floor:6.2f}x the floor")
            print(f"  REST is {through_rest / through_sql:.2f}x SqlCatalog's time")

            rest_s, sql_s = paired(small_appends(rest), small_appends(sql), commits)
            rest_rate, sql_rate = 1 / rest_s, 1 / sql_s
            print(f"append of 10 rows, {commits:,} commits a run, median of {RUNS}:")
            print(f"  {'RestCatalog (Almanac)':<28} {rest_rate:8.1f}/s")
            print(f"  {'SqlCatalog':<28} {sql_rate:8.1f}/s")
            print(f"  REST runs {rest_rate / sql_rate:.2f}x SqlCatalog's rate")

            names = count()
            rest_s, sql_s = paired(schema_changes(rest, names), schema_changes(sql, names), commits)
            rest_rate, sql_rate = 1 / rest_s, 1 / sql_s
            print(f"one-column schema change, {commits:,} commits a run, median of {RUNS}:")
            print(f"  {'RestCatalog (Almanac)':<28} {rest_rate:8.1f}/s")
            print(f"  {'SqlCatalog':<28} {sql_rate:8.1f}/s")
            print(f"  REST runs {rest_rate / sql_rate:.2f}x SqlCatalog's rate")
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait()


if __name__ == "__main__":
    main()

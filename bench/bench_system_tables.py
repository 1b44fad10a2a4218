"""Cost of reading the system tables, against floors measured in the same run.

SYSTEM.TABLETS and SYSTEM.SERVERS at 10,000 tablets (1,000 routes of 10
tablets, 3 replicas, 100 registered servers with reports; SQLite,
durability normal) against the raw metastore range reads of the keys they
decode (routes, registrations, reports, server indexes); most of the cost
is decoding those records, shown beside. SYSTEM.TABLES and
SYSTEM.COLUMNS at 1,000 tables against building an Arrow table straight
from the same descriptors' attributes (no SQL text, no sorting).

Run: ``.venv/bin/python bench/bench_system_tables.py [--tables N] [--servers N]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

import almanac
from almanac.placement import (
    REPORT_PREFIX,
    ROUTE_PREFIX,
    SERVER_INDEX_PREFIX,
    SERVER_PREFIX,
    TableRoute,
    Tablet,
    TabletState,
    read_reports,
    read_routes,
    read_server_indexes,
    read_servers,
    route_key,
)
from almanac.system_tables import system_table
from timing import median_seconds
from workload import create_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.placement.support import FakeServer

PARTITIONS = 10
REPLICAS = 3
RUNS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cat = almanac.connect(
            str(Path(tmp) / "catalog"), delay_ms=0, max_clock_skew_ms=0, durability="normal"
        )
        with cat:
            store = cat.metastore
            fleet = [
                FakeServer(store, f"ts{i:03d}", ttl_s=3600).register() for i in range(args.servers)
            ]
            for start in range(0, args.tables, 100):
                names = (f"T{i}" for i in range(start, min(start + 100, args.tables)))
                cat.execute([create_table(n) for n in names])
            for n, table in enumerate(cat.catalog().tables()):
                tablets = []
                for p in range(PARTITIONS):
                    first = (n * PARTITIONS + p) % args.servers
                    replicas = tuple(
                        sorted(fleet[(first + r) % args.servers].name for r in range(REPLICAS))
                    )
                    tablets.append(Tablet(p, p, TabletState.RUNNING, replicas, replicas[0], 1, 1.0))
                route = TableRoute(table.id, 2, 1, tuple(tablets), PARTITIONS, TabletState.RUNNING)
                store.put(route_key(table.id), route.encode())
            for server in fleet:
                server.report([])

            def raw_placement() -> None:
                for prefix in (ROUTE_PREFIX, SERVER_PREFIX, REPORT_PREFIX, SERVER_INDEX_PREFIX):
                    store.range(prefix)

            version = cat.catalog()

            def raw_tables() -> None:
                pa.Table.from_pylist(
                    [
                        {"ID": t.id, "NAME": t.name, "COLUMNS": len(t.columns)}
                        | {"PRIMARY_KEY": ",".join(t.primary_key), "ZONE": t.zone_id}
                        for t in version.tables_by_id.values()
                    ]
                )

            def raw_columns() -> None:
                pa.Table.from_pylist(
                    [
                        {"TABLE_ID": t.id, "NAME": c.name, "ID": c.id, "TYPE": c.type.name}
                        for t in version.tables_by_id.values()
                        for c in t.columns
                    ]
                )

            def decoded() -> None:
                read_routes(store)
                read_servers(store)
                read_reports(store)
                read_server_indexes(store)

            floor = median_seconds(raw_placement, RUNS)
            decode_s = median_seconds(decoded, RUNS)
            tablets_s = median_seconds(lambda: system_table(cat, "SYSTEM.TABLETS"), RUNS)
            servers_s = median_seconds(lambda: system_table(cat, "SYSTEM.SERVERS"), RUNS)
            tables_floor = median_seconds(raw_tables, RUNS)
            tables_s = median_seconds(lambda: system_table(cat, "SYSTEM.TABLES"), RUNS)
            columns_floor = median_seconds(raw_columns, RUNS)
            columns_s = median_seconds(lambda: system_table(cat, "SYSTEM.COLUMNS"), RUNS)
            rows = system_table(cat, "SYSTEM.TABLETS").num_rows
    print(f"system tables at {rows:,} tablets on {args.servers} servers, {args.tables:,} tables")
    print(
        f"raw range reads of the placement keys: {floor * 1000:.0f} ms "
        f"(decoding their records, as every placement reader does: {decode_s * 1000:.0f} ms)"
    )
    print(f"SYSTEM.TABLETS: {tablets_s * 1000:.0f} ms; ratio {tablets_s / floor:.1f}x")
    print(f"SYSTEM.SERVERS: {servers_s * 1000:.0f} ms; ratio {servers_s / floor:.1f}x")
    print(
        f"SYSTEM.TABLES: {tables_s * 1000:.0f} ms; Arrow from the descriptors: "
        f"{tables_floor * 1000:.0f} ms; ratio {tables_s / tables_floor:.1f}x"
    )
    print(
        f"SYSTEM.COLUMNS: {columns_s * 1000:.0f} ms; Arrow from the descriptors: "
        f"{columns_floor * 1000:.0f} ms; ratio {columns_s / columns_floor:.1f}x"
    )


if __name__ == "__main__":
    main()

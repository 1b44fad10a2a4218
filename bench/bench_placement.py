"""Cost of one placement-loop pass at 10,000 tablets, against the physical
floor measured in the same run: the raw metastore range reads of the keys
a pass must look at (routes, server registrations and reports).

The catalog (SQLite, durability normal) holds 1,000 tables of 10 tablets
with 3 replicas on 100 fake servers that register and report through the
real keys; the figures are a steady pass (every tablet RUNNING: read,
decide, nothing to write), and the first pass that assigns all 10,000
tablets (one transaction per table), against the same number of raw
compare-and-swap transactions writing the same keys and bytes.

Run: ``.venv/bin/python bench/bench_placement.py [--tables N] [--servers N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import almanac
from almanac.metastore import Compare, Put
from almanac.placement import REPORT_PREFIX, ROUTE_PREFIX, SERVER_PREFIX
from almanac.placement.manager import PlacementManager
from almanac.placement.settings import PlacementSettings
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
    tablets = args.tables * PARTITIONS
    per_server = tablets * REPLICAS // args.servers + PARTITIONS
    settings = PlacementSettings(max_tablets_per_server=per_server, create_wait_s=0)
    with tempfile.TemporaryDirectory() as tmp:
        cat = almanac.connect(
            str(Path(tmp) / "catalog"), delay_ms=0, max_clock_skew_ms=0, durability="normal"
        )
        with cat:
            manager = PlacementManager(cat, settings, run=False)
            store = cat.metastore
            fleet = [
                FakeServer(store, f"ts{i:03d}", ttl_s=3600).register() for i in range(args.servers)
            ]
            cat.sql(f"CREATE ZONE Z WITH (PARTITIONS = {PARTITIONS}, REPLICAS = {REPLICAS})")
            for start in range(0, args.tables, 100):
                names = (f"T{i}" for i in range(start, min(start + 100, args.tables)))
                cat.execute([dataclasses.replace(create_table(n), zone="Z") for n in names])
            routes_before = store.range(ROUTE_PREFIX).kvs
            started = time.perf_counter()
            first = manager.run_pass()
            assign = time.perf_counter() - started
            assert first.written == args.tables, first
            assert first.problems == (), first.problems[:3]
            # The floor of the assignment: the same number of transactions,
            # each comparing the route's bytes and writing route-sized bytes.
            routes_after = {kv.key: kv.value for kv in store.range(ROUTE_PREFIX).kvs}
            scratch = "__bench_scratch/"
            for kv in routes_before:
                store.put(scratch + kv.key, kv.value)
            started = time.perf_counter()
            for kv in routes_before:
                key = scratch + kv.key
                store.txn([Compare.value(key, "==", kv.value)], [Put(key, routes_after[kv.key])])
            raw_assign = time.perf_counter() - started
            for server in fleet:
                server.serve_index()
            manager.run_pass()
            steady_check = manager.run_pass()
            assert steady_check.written == 0, steady_check

            def raw_read() -> None:
                for prefix in (ROUTE_PREFIX, SERVER_PREFIX, REPORT_PREFIX):
                    store.range(prefix)

            raw = median_seconds(raw_read, RUNS)
            steady = median_seconds(manager.run_pass, RUNS)
    print(
        f"placement at {tablets:,} tablets x {REPLICAS} replicas on {args.servers} servers (SQLite)"
    )
    print(
        f"steady pass: {steady * 1000:.0f} ms; raw range reads of the same keys: "
        f"{raw * 1000:.0f} ms; ratio {steady / raw:.1f}x"
    )
    print(
        f"assigning pass ({args.tables:,} route transactions): {assign:.2f} s; "
        f"raw compare-and-swap of the same routes: {raw_assign:.2f} s; "
        f"ratio {assign / raw_assign:.1f}x"
    )


if __name__ == "__main__":
    main()

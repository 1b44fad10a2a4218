"""What the HTTP API costs against a local call, on one store, in one run.

A server process (``almanac.server.serve``, no auth, loopback) and a local
node in this process open the same directory catalog (SQLite defaults:
``delay_ms=10``, ``max_clock_skew_ms=2``, ``durability="full"``). Measured:

* a table lookup: ``GET /v1/tables/PUBLIC/T`` through one keep-alive
  ``httpx.Client``, and ``RemoteCatalog.catalog().table("T")`` (which asks for
  the latest version and decodes it unless cached), against the local
  ``cat.catalog().table("T")``;
* a DDL (a new 3-column CREATE TABLE each time): ``POST /v1/sql`` through the
  same client, and ``RemoteCatalog.sql``, against the local ``cat.sql``.

Rates are the median of ``RUNS`` runs; ratios are local over HTTP.

Run: ``.venv/bin/python bench/bench_http.py [lookups] [ddls]``.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Callable
from itertools import count
from pathlib import Path

import httpx

import almanac
import timing
from serving import start_server

RUNS = 3


def rate(fn: Callable[[], object], n: int) -> float:
    """Calls per second of ``fn``, ``n`` calls a run, median of ``RUNS``."""

    def run() -> None:
        for _ in range(n):
            fn()

    return n / timing.median_seconds(run, RUNS)


def show(what: str, calls_per_s: float, local: float) -> None:
    print(f"  {what:<28} {calls_per_s:12,.0f}/s   local is {local / calls_per_s:8,.2f}x")


def ddl(names: count[int]) -> str:
    return (
        f"CREATE TABLE B{next(names)} (ID INT64 PRIMARY KEY, NAME VARCHAR(100), EMAIL VARCHAR(200))"
    )


def main() -> None:
    lookups = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    ddls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "data")
        with almanac.connect(store) as cat:
            cat.sql("CREATE TABLE T (ID INT64 PRIMARY KEY, NAME VARCHAR(100))")
        proc, url = start_server(store)
        try:
            names = count()
            with (
                almanac.connect(store) as cat,
                almanac.connect(url, token=None) as remote,
                httpx.Client(base_url=url) as http,
            ):

                def lookup() -> None:
                    http.get("/v1/tables/PUBLIC/T").raise_for_status()

                def post_ddl() -> None:
                    http.post("/v1/sql", json={"sql": ddl(names)}).raise_for_status()

                local = rate(lambda: cat.catalog().table("T"), lookups)
                over_http = rate(lookup, lookups)
                client = rate(lambda: remote.catalog().table("T"), lookups)
                print(f"table lookup, {lookups:,} calls a run, median of {RUNS}:")
                show("local cat.catalog().table", local, local)
                show("GET /v1/tables (httpx)", over_http, local)
                show("RemoteCatalog.catalog()...", client, local)
                local = rate(lambda: cat.sql(ddl(names)), ddls)
                over_http = rate(post_ddl, ddls)
                client = rate(lambda: remote.sql(ddl(names)), ddls)
                print(f"DDL (CREATE TABLE), {ddls:,} calls a run, median of {RUNS}:")
                show("local cat.sql", local, local)
                show("POST /v1/sql (httpx)", over_http, local)
                show("RemoteCatalog.sql", client, local)
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait()


if __name__ == "__main__":
    main()

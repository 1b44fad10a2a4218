"""Failover of tablets, on real processes: the time from a tablet server's
SIGKILL to every tablet it held RUNNING on other servers (its leases gone,
its replicas replaced, a new leader reporting), p50 and p99, against the
lease TTL and against the physical floor measured in the same run: a raw
lease of the same TTL in the same store, renewed as a server renews its
own, whose key is seen gone by the same polling once renewals stop.

Setup: one catalog node (``almanac node``, the placement leader), tablet
servers (``almanac tserver``) and tables of one zone; each sample kills the
server that holds the most replicas and starts a fresh one in its place.

Run: ``.venv/bin/python bench/bench_failover.py [--backend sqlite|etcd]
[--samples N] [--lease-ttl S] [--servers N] [--tables N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.tablets.support import Settings, TabletCluster, route_problems

from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Metastore
from almanac.placement.state import read_routes

POLL_S = 0.005
"""How often both figures look at the store: far below the lease TTL."""
PATIENCE_S = 120.0


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def poll_until(condition: Callable[[], bool], what: str) -> float:
    """Seconds (perf counter) at which ``condition`` first held."""
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(POLL_S)
    return time.perf_counter()


def raw_lease_expiry(store: Metastore, ttl: float, phase: float) -> float:
    """The floor: a key under a lease renewed every ttl/3 (as a server
    renews its own); renewals stop ``phase`` (0..1) of a renewal period
    after one, as a kill lands anywhere between two, and polling sees the
    key go."""
    lease = store.grant_lease(ttl)
    key = f"bench-floor/{lease}"
    store.put(key, b"x", lease=lease)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl / 3):
            store.keep_alive(lease)

    renewer = threading.Thread(target=renew, daemon=True)
    renewer.start()
    time.sleep(ttl + ttl / 3 * phase)
    stop.set()
    renewer.join()
    died = time.perf_counter()
    gone = poll_until(lambda: store.get(key) is None, "the raw lease to expire")
    return gone - died


def failover(cluster: TabletCluster, partitions: int, replicas: int, fresh: str) -> float:
    """Kill the server holding the most replicas; seconds until every table
    it held is settled elsewhere. Starts ``fresh`` afterwards."""
    routes = read_routes(cluster.store)
    load: dict[str, int] = {}
    for route in routes.values():
        for tablet in route.tablets:
            for server in tablet.replicas:
                load[server] = load.get(server, 0) + 1
    alive = [s for s in cluster.servers.values() if s.alive]
    victim = max(alive, key=lambda s: load.get(s.name, 0))
    held = [
        r.table_id for r in routes.values() if any(victim.name in t.replicas for t in r.tablets)
    ]
    assert held, f"{victim.name} holds no tablet"
    store = cluster.store

    def moved() -> bool:
        now = read_routes(store)
        live = {s.name for s in cluster.servers.values() if s.alive}
        return all(
            not route_problems(now.get(t), partitions, replicas, live, [victim.name]) for t in held
        )

    killed = time.perf_counter()
    victim.kill()
    done = poll_until(moved, f"the tablets of {victim.name} to run elsewhere")
    cluster.start_server(fresh)
    return done - killed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "etcd"], default="sqlite")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--lease-ttl", type=float, default=2.0)
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replicas", type=int, default=2)
    args = parser.parse_args()
    settings = Settings(
        lease_ttl_s=args.lease_ttl,
        report_interval_s=0.2,
        placement_interval_s=0.2,
        assignment_timeout_s=30.0,
        leader_ttl_s=args.lease_ttl,
    )
    with tempfile.TemporaryDirectory(prefix="bench-failover-") as tmp:
        etcd = LocalEtcd(3) if args.backend == "etcd" else None
        try:
            cluster = TabletCluster.open(args.backend, Path(tmp), settings, etcd)
            try:
                run(cluster, args)
            finally:
                cluster.close()
        finally:
            if etcd is not None:
                etcd.close()


def run(cluster: TabletCluster, args: argparse.Namespace) -> None:
    cluster.start_node("n1")
    cluster.start_servers(f"ts{i}" for i in range(args.servers))
    zone = f"WITH (PARTITIONS={args.partitions}, REPLICAS={args.replicas})"
    ddl = [f"CREATE ZONE Z {zone}"]
    ddl += [f"CREATE TABLE T{i} (ID INT64 PRIMARY KEY) ZONE Z" for i in range(args.tables)]
    cluster.cat.sql("; ".join(ddl))
    for i in range(args.tables):
        cluster.wait_settled(f"T{i}", args.partitions, args.replicas)
    ours = [
        failover(cluster, args.partitions, args.replicas, f"fresh{n}") for n in range(args.samples)
    ]
    phases = random.Random(11)
    floor = [
        raw_lease_expiry(cluster.store, args.lease_ttl, phases.random())
        for _ in range(args.samples)
    ]
    ttl = args.lease_ttl
    p50, p99 = statistics.median(ours), percentile(ours, 0.99)
    f50, f99 = statistics.median(floor), percentile(floor, 0.99)
    print(
        f"failover on {args.backend}: {args.servers} tablet servers, {args.tables} tables x "
        f"{args.partitions} tablets x {args.replicas} replicas, lease TTL {ttl:g} s, "
        f"placement interval {cluster.settings.placement_interval_s:g} s, "
        f"{args.samples} kills"
    )
    print(
        f"  SIGKILL -> all its tablets RUNNING elsewhere: p50 {p50:.2f} s "
        f"({p50 / ttl:.2f}x TTL), p99 {p99:.2f} s ({p99 / ttl:.2f}x TTL)"
    )
    print(
        f"  floor, a raw lease of the same TTL seen expired: p50 {f50:.2f} s "
        f"({f50 / ttl:.2f}x TTL), p99 {f99:.2f} s; ratio p50 {p50 / f50:.2f}x, "
        f"p99 {p99 / f99:.2f}x"
    )


if __name__ == "__main__":
    main()

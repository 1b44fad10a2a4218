"""A Spark application of its own for ``test_runtime_more``: ``python
append_child.py ROLE TARGET SCRATCH SIGNALS COUNT``. It starts
``almanac.spark.session(TARGET)`` (its own JVM and its own in-process catalog
server over the shared catalog) and appends to ``almanac.s.t``: ids 1000+i
for role ``a``, 2000+i for role ``b``, one INSERT each.

Files in SIGNALS force one interleaving: role ``a``'s server holds the first
commit it receives (its first INSERT, planned and written) until role ``b``
has committed an INSERT, so that commit is stale and refused with a 409,
which Iceberg's client must retry. Then each appends COUNT more rows at the
same time as the other. Prints one JSON line: the inserts made and, for
``a``, the conflicts its server answered."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

PATIENCE = 600.0
"""How long a role waits for the other: a second JVM on a loaded machine."""


def _wait(path: Path) -> None:
    deadline = time.monotonic() + PATIENCE
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {path}")
        time.sleep(0.02)


def _hold_first_commit(committing: Path, committed: Path, conflicts: list[str]) -> None:
    """Make this process's catalog server wait, at its first table commit,
    for the other application's commit; count the conflicts it answers."""
    from pyiceberg.table import CommitTableRequest

    import almanac.iceberg_rest.routes as routes
    from almanac.errors import ConflictError
    from almanac.iceberg_rest.plan import Change, plan
    from almanac.model.catalog_version import CatalogVersion
    from almanac.node.catalog import Catalog

    def held_plan(cat: Catalog, version: CatalogVersion, request: CommitTableRequest) -> Change:
        if not committing.exists():
            committing.touch()
            _wait(committed)
        try:
            return plan(cat, version, request)
        except ConflictError as exc:
            conflicts.append(str(exc))
            raise

    routes.plan = held_plan  # type: ignore[attr-defined]  # the routes' own name for it


def main(role: str, target: str, scratch: str, signals: str, count: int) -> None:
    import almanac.spark

    committing, committed = Path(signals, "a-committing"), Path(signals, "b-committed")
    conflicts: list[str] = []
    if role == "a":
        _hold_first_commit(committing, committed, conflicts)
    spark = almanac.spark.session(
        target,
        conf={"spark.local.dir": scratch, "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    table = "almanac.s.t"
    base = 1000 if role == "a" else 2000
    if role == "b":
        _wait(committing)
    spark.sql(f"INSERT INTO {table} VALUES ({base}, '{role}')")
    if role == "b":
        committed.touch()
    for i in range(1, count + 1):
        spark.sql(f"INSERT INTO {table} VALUES ({base + i}, '{role}')")
    spark.stop()
    print(json.dumps({"inserts": count + 1, "conflicts": conflicts}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))

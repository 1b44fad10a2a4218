"""Two engines append to one table at the same time through ``almanac
serve``: DuckDB and pyiceberg, ten commits each. Every round both load the
same snapshot, then both commit, so exactly one of them gets a 409
(``CommitFailedException``) and retries as its users do: pyiceberg by
itself, DuckDB by running its transaction again. No commit is lost."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from almanac.data import read_table
from almanac.node.catalog import Catalog
from tests.server.support import Server
from tests.waiting import PATIENCE

from .conftest import ADMIN_TOKEN, PREFIX
from .duckdb_engine import attach
from .tables import arrow_rows, ordered

NAMESPACE = "writers"
ROUNDS = 10
_ATTEMPTS = 5


@pytest.fixture
def duck(server: Server) -> Iterator[Any]:
    con = attach(server.url + PREFIX, ADMIN_TOKEN)
    yield con
    con.close()


class _Retries(logging.Handler):
    """Counts pyiceberg's own retries after a 409 (it logs each one)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "concurrent update, retrying" in record.getMessage():
            self.count += 1


def _is_conflict(exc: duckdb.Error) -> bool:
    return "Conflict_409" in str(exc) or "CommitFailedException" in str(exc)


def test_duckdb_and_pyiceberg_append_at_once_and_nothing_is_lost(
    duck: Any, admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace(NAMESPACE)
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.log (writer VARCHAR, n INTEGER)")
    table = admin.load_table((NAMESPACE, "log"))
    barrier = threading.Barrier(2, timeout=PATIENCE)
    failures: list[BaseException] = []
    duck_conflicts = 0
    retries = _Retries()

    def duckdb_writer() -> None:
        nonlocal duck_conflicts
        for n in range(ROUNDS):
            barrier.wait()  # the previous round is over for both
            duck.execute("BEGIN")
            duck.execute(f"SELECT count(*) FROM c.{NAMESPACE}.log").fetchall()  # pins it
            barrier.wait()  # both loaded the same snapshot
            for _ in range(_ATTEMPTS):
                try:
                    duck.execute(f"INSERT INTO c.{NAMESPACE}.log VALUES ('duckdb', {n})")
                    duck.execute("COMMIT")
                    break
                except duckdb.Error as exc:
                    if not _is_conflict(exc):
                        raise
                    duck_conflicts += 1  # a user runs the transaction again
                    duck.execute("BEGIN")
            else:
                raise AssertionError(f"DuckDB's commit {n} kept conflicting")

    def pyiceberg_writer() -> None:
        for n in range(ROUNDS):
            barrier.wait()
            table.refresh()
            barrier.wait()
            row = {"writer": ["pyiceberg"], "n": pa.array([n], pa.int32())}
            table.append(pa.table(row))  # retries a 409 itself

    def run(writer: Callable[[], None]) -> None:
        try:
            writer()
        except BaseException as exc:
            failures.append(exc)
            barrier.abort()

    logger = logging.getLogger("pyiceberg.table")
    logger.addHandler(retries)
    try:
        threads = [
            threading.Thread(target=run, args=(w,)) for w in (duckdb_writer, pyiceberg_writer)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PATIENCE)
    finally:
        logger.removeHandler(retries)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures

    expected = ordered([(w, n) for w in ("duckdb", "pyiceberg") for n in range(ROUNDS)])
    assert ordered(duck.execute(f"SELECT * FROM c.{NAMESPACE}.log").fetchall()) == expected
    cat.catch_up()
    assert arrow_rows(read_table(cat, "log", NAMESPACE)) == expected
    assert len(admin.load_table((NAMESPACE, "log")).snapshots()) == 2 * ROUNDS
    # Both commits of a round start from one snapshot: the second is refused
    # and retried, whichever engine it was.
    assert duck_conflicts + retries.count == ROUNDS, (duck_conflicts, retries.count)

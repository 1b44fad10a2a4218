"""The janitor beside Iceberg clients' commits, in two processes.

A pyiceberg client writes its files, then commits them to ``almanac
serve``; the janitor runs in this process on another node of the catalog.
The commit is forced into the gap between the janitor's read of the
referenced files and its deletes (the janitor's state read is wrapped), at
grace 0 and with the client's files aged past the default grace: nothing
committed may be lost, and the table stays readable and writable."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.table import Table, Transaction

from almanac import Catalog
from almanac.data import janitor as janitor_module
from almanac.data import run_janitor
from almanac.data.janitor import DEFAULT_GRACE_S
from tests.iceberg_rest.conftest import own_server, rest_catalog
from tests.iceberg_rest.tables import SCHEMA, batch, scanned
from tests.server.support import Server


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Catalog]]:
    """Its own server (the janitor here runs at grace 0 over its whole
    warehouse) and a second node of its catalog, where the janitor runs."""
    with own_server(tmp_path_factory.mktemp("janitor-race")) as placed:
        yield placed


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _table(client: RestCatalog, name: str) -> Table:
    if ("RACE",) not in client.list_namespaces():
        client.create_namespace("RACE")
    table = client.create_table(("RACE", name), SCHEMA)
    table.append(batch([(1, "one", 1)]))
    loaded: Table = client.load_table(("RACE", name))
    return loaded


def _janitor_with_commit_in_the_gap(
    monkeypatch: pytest.MonkeyPatch,
    cat: Catalog,
    tx: Transaction | Callable[[], object],
    grace_s: float,
) -> tuple[list[BaseException], Any]:
    """Run the janitor; right after it read the metastore (its view of the
    referenced files), the other process commits ``tx`` (or ``tx()`` runs)."""
    read_state = janitor_module._read_state
    failures: list[BaseException] = []
    commit = tx.commit_transaction if isinstance(tx, Transaction) else tx

    def read_then_commit(data: Any) -> Any:
        state = read_state(data)
        try:
            commit()
        except BadRequestError as exc:  # refused: not acknowledged, so not lost
            failures.append(exc)
        return state

    monkeypatch.setattr(janitor_module, "_read_state", read_then_commit)
    report = run_janitor(cat, grace_s=grace_s)
    monkeypatch.setattr(janitor_module, "_read_state", read_state)
    return failures, report


def _staged_append(table: Table, rows: list[tuple[Any, ...]]) -> tuple[Transaction, set[Path]]:
    """A transaction whose data file, manifest and manifest list are written
    but not committed; returns it and the files it wrote."""
    location = Path(table.metadata.location)
    before = _files_under(location)
    tx = table.transaction()
    tx.append(batch(rows))
    return tx, _files_under(location) - before


def _check_table(client: RestCatalog, name: str, expected: list[tuple[Any, ...]]) -> None:
    """Readable with exactly ``expected``, and writable."""
    table = client.load_table(("RACE", name))
    assert scanned(table) == expected
    table.append(batch([(99, "after", 99)]))
    assert scanned(client.load_table(("RACE", name))) == sorted([*expected, (99, "after", 99)])


def test_a_commit_in_the_janitors_gap_at_grace_zero_loses_nothing(
    place: tuple[Server, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cat = place
    client = rest_catalog(server)
    table = _table(client, "ZERO")
    tx, written = _staged_append(table, [(2, "two", 2)])
    assert written, "the client writes its files before it commits"
    failures, _ = _janitor_with_commit_in_the_gap(monkeypatch, cat, tx, grace_s=0)
    acknowledged = [] if failures else [(2, "two", 2)]
    _check_table(client, "ZERO", [(1, "one", 1), *acknowledged])
    assert len(failures) == 1, "the files predate the sweep: the commit must be refused"


def test_a_commit_of_files_older_than_the_grace_is_refused_not_lost(
    place: tuple[Server, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cat = place
    client = rest_catalog(server)
    table = _table(client, "AGED")
    tx, written = _staged_append(table, [(2, "two", 2)])
    old = time.time() - DEFAULT_GRACE_S - 3600  # a long job's first files
    for path in written:
        os.utime(path, (old, old))
    failures, _ = _janitor_with_commit_in_the_gap(monkeypatch, cat, tx, grace_s=DEFAULT_GRACE_S)
    acknowledged = [] if failures else [(2, "two", 2)]
    _check_table(client, "AGED", [(1, "one", 1), *acknowledged])
    assert len(failures) == 1, "files older than the janitor's cutoff cannot be committed"
    assert "janitor's cutoff" in str(failures[0])


def test_young_files_commit_in_the_gap_and_are_kept(
    place: tuple[Server, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, cat = place
    client = rest_catalog(server)
    table = _table(client, "YOUNG")
    tx, written = _staged_append(table, [(2, "two", 2)])
    failures, report = _janitor_with_commit_in_the_gap(
        monkeypatch, cat, tx, grace_s=DEFAULT_GRACE_S
    )
    assert failures == []
    assert not {str(p) for p in written} & set(report.files_removed)
    _check_table(client, "YOUNG", [(1, "one", 1), (2, "two", 2)])


def test_a_clients_directory_is_never_deleted_whole_while_it_writes_into_it(
    place: tuple[Server, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old junk alone in a client's ``data/`` (a failed job's) goes, file by
    file: an append landing in the gap writes beside it and stays."""
    server, cat = place
    client = rest_catalog(server)
    if ("RACE",) not in client.list_namespaces():
        client.create_namespace("RACE")
    table = client.create_table(("RACE", "JUNK"), SCHEMA)
    junk = Path(table.metadata.location) / "data" / "junk-of-a-failed-job.parquet"
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"PAR1 left behind")
    old = time.time() - DEFAULT_GRACE_S - 3600
    os.utime(junk, (old, old))

    def append() -> None:
        table.append(batch([(1, "one", 1)]))

    failures, report = _janitor_with_commit_in_the_gap(
        monkeypatch, cat, append, grace_s=DEFAULT_GRACE_S
    )
    assert failures == []
    _check_table(client, "JUNK", [(1, "one", 1)])
    assert not junk.exists() and str(junk) in report.files_removed


def test_a_file_the_client_finishes_after_the_listing_is_not_collected(
    place: tuple[Server, Catalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The janitor lists a client's file while it is still being written
    (old then); the client finishes it and commits in the gap: the janitor
    reads the file's age again as it deletes, and keeps it."""
    server, cat = place
    client = rest_catalog(server)
    table = _table(client, "SLOW")
    tx, written = _staged_append(table, [(2, "two", 2)])
    old = time.time() - DEFAULT_GRACE_S - 3600
    for path in written:
        os.utime(path, (old, old))

    def finish_then_commit() -> None:
        for path in written:
            os.utime(path)  # the last bytes land now
        tx.commit_transaction()

    failures, report = _janitor_with_commit_in_the_gap(
        monkeypatch, cat, finish_then_commit, grace_s=DEFAULT_GRACE_S
    )
    assert failures == []
    _check_table(client, "SLOW", [(1, "one", 1), (2, "two", 2)])
    assert not {str(p) for p in written} & set(report.files_removed)

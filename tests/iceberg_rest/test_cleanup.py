"""Cleanup is the catalog's job: every table is served with
``gc.enabled=false`` (no engine deletes files), a purge is the catalog's
drop (the soft-delete reserve, then the janitor once no kept catalog version
holds the table), a RECOVER of a table whose data is gone is refused, and
``expire_snapshots`` takes snapshots out of the table's metadata while their
files stay for as long as a kept catalog version reads them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError

from almanac import Catalog, ValidationError, VersionNotFoundError
from almanac.data import TableData, read_table, run_janitor
from almanac.node.soft_delete import expired_tables, purge_expired_tables
from tests.iceberg_rest.conftest import ADMIN_TOKEN, own_server, rest_catalog
from tests.iceberg_rest.tables import SCHEMA, arrow_rows, batch, scanned
from tests.server.support import Server
from tests.waiting import wait_for

A = [(1, "one", 1), (2, "two", 2)]
B = [(3, "three", 3)]


@pytest.fixture(scope="module")
def reserved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Catalog]]:
    """A server whose drops keep the table for an hour, and a node of its catalog."""
    with own_server(tmp_path_factory.mktemp("cleanup"), "--soft-delete-reserve", "3600") as placed:
        yield placed


def _files(cat: Catalog, namespace: str, name: str) -> tuple[TableData, int, list[Path]]:
    """The table's data, its id and the data files of its current snapshot."""
    cat.catch_up()
    table = cat.catalog().table(name, namespace)
    assert table is not None
    data = TableData.for_catalog(cat)
    current = data.current(table.id)
    assert current is not None
    return data, table.id, [Path(f.path) for f in current.files]


def test_every_table_is_served_with_gc_disabled(reserved: tuple[Server, Catalog]) -> None:
    client = rest_catalog(reserved[0])
    client.create_namespace("GC")
    table = client.create_table("GC.T", SCHEMA)
    assert table.properties["gc.enabled"] == "false"
    table.append(batch(A))
    assert table.properties["gc.enabled"] == "false"  # the commit's answer
    assert client.load_table("GC.T").properties["gc.enabled"] == "false"


def test_no_client_turns_gc_on(reserved: tuple[Server, Catalog]) -> None:
    client = rest_catalog(reserved[0])
    client.create_namespace("GCON")
    with pytest.raises(BadRequestError, match=r"'gc\.enabled' cannot be set to 'true'"):
        client.create_table("GCON.T", SCHEMA, properties={"gc.enabled": "true"})
    table = client.create_table("GCON.T", SCHEMA, properties={"owner": "ana"})
    table.append(batch(A))
    turn_on = pytest.raises(BadRequestError, match=r"'gc\.enabled' cannot be set to 'true'")
    with turn_on, table.transaction() as tx:
        tx.set_properties({"gc.enabled": "true"})
    remove = pytest.raises(BadRequestError, match=r"'gc\.enabled' cannot be removed")
    with remove, table.transaction() as tx:
        tx.remove_properties("gc.enabled")
    loaded = client.load_table("GCON.T")
    assert loaded.properties["gc.enabled"] == "false" and loaded.properties["owner"] == "ana"
    assert scanned(loaded) == A


def test_a_purge_is_a_soft_delete_that_recover_undoes(reserved: tuple[Server, Catalog]) -> None:
    server, cat = reserved
    client = rest_catalog(server)
    client.create_namespace("PUR")
    client.create_table("PUR.T", SCHEMA).append(batch(A))
    _, table_id, files = _files(cat, "PUR", "T")
    client.purge_table("PUR.T")
    assert not client.table_exists("PUR.T")
    cat.catch_up()
    assert [t.id for t in cat.catalog().soft_deleted_tables()] == [table_id]
    run_janitor(cat, grace_s=0)
    assert all(f.exists() for f in files), "the janitor deleted a soft-deleted table's files"
    cat.sql('RECOVER TABLE "PUR"."T"')
    wait_for(lambda: client.table_exists("PUR.T"), "the server to apply the RECOVER")
    assert scanned(client.load_table("PUR.T")) == A


@pytest.mark.parametrize("lost", ["data files", "table directory"])
def test_recover_is_refused_when_the_data_is_gone(
    reserved: tuple[Server, Catalog], lost: str
) -> None:
    server, cat = reserved
    client = rest_catalog(server)
    namespace = "LOST" + lost.split()[0].upper()
    client.create_namespace(namespace)
    client.create_table(f"{namespace}.T", SCHEMA).append(batch(A))
    data, table_id, files = _files(cat, namespace, "T")
    client.drop_table(f"{namespace}.T")
    if lost == "data files":  # an engine that ignored gc.enabled=false, say
        for f in files:
            f.unlink()
    else:
        shutil.rmtree(data.warehouse.table_dir(table_id))
    cat.catch_up()
    version = cat.latest_version
    with pytest.raises(
        ValidationError, match=f"Table '{namespace}.T' cannot be recovered: its data is gone"
    ) as caught:
        cat.sql(f'RECOVER TABLE "{namespace}"."T"')
    assert caught.value.context["rule"] == "data-gone"
    assert cat.latest_version == version
    assert [t.id for t in cat.catalog().soft_deleted_tables() if t.id == table_id] == [table_id]
    assert not client.table_exists(f"{namespace}.T")


def test_a_purge_goes_after_the_reserve_and_once_no_kept_version_holds_it(
    tmp_path: Path,
) -> None:
    with own_server(tmp_path, "--soft-delete-reserve", "1") as (server, cat):
        client = rest_catalog(server)
        client.create_namespace("P")
        client.create_table("P.T", SCHEMA).append(batch(A))
        data, table_id, files = _files(cat, "P", "T")
        before = cat.latest_version
        client.purge_table("P.T")
        cat.catch_up()
        report = run_janitor(cat, grace_s=0)
        assert table_id not in report.tables_purged
        assert all(f.exists() for f in files), "files went before the reserve ended"
        wait_for(lambda: bool(expired_tables(cat)), "the end of the reserve")
        assert [t.id for t in purge_expired_tables(cat)] == [table_id]
        report = run_janitor(cat, grace_s=0)
        assert table_id not in report.tables_purged
        assert arrow_rows(read_table(cat, "T", "P", version=before)) == A  # time travel
        cat.checkpoint_log()
        report = run_janitor(cat, grace_s=0)
        assert report.tables_purged == [table_id]
        assert not Path(data.warehouse.table_dir(table_id)).exists()


def _expire_fixture(server: Server, cat: Catalog) -> tuple[RestCatalog, int, int]:
    """Table E.T with rows A at catalog version ``first``, overwritten by B,
    and a catalog version after it; returns the client, ``first`` and the
    table's id."""
    client = rest_catalog(server)
    client.create_namespace("E")
    table = client.create_table("E.T", SCHEMA)
    table.append(batch(A))
    cat.catch_up()
    first = cat.latest_version
    client.create_table("E.X", SCHEMA)  # a catalog version between the two
    table = client.load_table("E.T")
    table.overwrite(batch(B))
    client.create_table("E.Y", SCHEMA)  # and one after the overwrite
    cat.catch_up()
    found = cat.catalog().table("T", "E")
    assert found is not None
    return client, first, found.id


def test_expire_snapshots_leaves_files_to_retention_and_the_janitor(tmp_path: Path) -> None:
    with own_server(tmp_path) as (server, cat):
        client, first, table_id = _expire_fixture(server, cat)
        data = TableData.for_catalog(cat)
        old_record = data.records(table_id)[0]
        old_files = [Path(f.path) for f in data.files_of(old_record)]
        table = client.load_table("E.T")
        current = table.metadata.current_snapshot_id
        older = [s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id != current]
        assert older, "the overwrite kept its parents in the metadata"
        table.maintenance.expire_snapshots().by_ids(older).commit()

        loaded = client.load_table("E.T")
        assert [s.snapshot_id for s in loaded.metadata.snapshots] == [current]
        assert scanned(loaded) == B
        assert arrow_rows(read_table(cat, "T", "E", version=first)) == A  # time travel
        run_janitor(cat, grace_s=0)
        assert all(f.exists() for f in old_files), "a kept catalog version still reads them"
        assert arrow_rows(read_table(cat, "T", "E", version=first)) == A
        at = old_record.commit_time
        assert arrow_rows(read_table(cat, "T", "E", timestamp=at)) == A

        cat.checkpoint_log()
        with pytest.raises(VersionNotFoundError):
            read_table(cat, "T", "E", version=first)
        report = run_janitor(cat, grace_s=0)
        assert not any(f.exists() for f in old_files), "no kept catalog version reads them"
        assert {str(f) for f in old_files} <= set(report.files_removed)
        assert [r.snapshot_id for r in data.records(table_id)] == [
            r.snapshot_id for r in data.records(table_id)[-1:]
        ]
        assert not Path(old_record.metadata).exists()
        assert scanned(client.load_table("E.T")) == B
        assert arrow_rows(read_table(cat, "T", "E")) == B


def test_snapshots_no_client_expired_go_with_the_versions_that_read_them(
    tmp_path: Path,
) -> None:
    """Every data commit is a catalog version, so the log's retention trims
    data snapshots too: once no available version reads one, the janitor
    removes it and the files only it needed, whether or not a client
    expired it, and the table's metadata stops offering it."""
    with own_server(tmp_path) as (server, cat):
        client, first, table_id = _expire_fixture(server, cat)
        data = TableData.for_catalog(cat)
        old_files = [Path(f.path) for f in data.files_of(data.records(table_id)[0])]
        run_janitor(cat, grace_s=0)
        assert all(f.exists() for f in old_files), "an available version reads them"
        assert arrow_rows(read_table(cat, "T", "E", version=first)) == A
        cat.checkpoint_log()
        run_janitor(cat, grace_s=0)
        assert not any(f.exists() for f in old_files)
        assert len(data.records(table_id)) == 1
        loaded = client.load_table("E.T")
        assert scanned(loaded) == B
        for snapshot in loaded.metadata.snapshots:
            loaded.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        assert arrow_rows(read_table(cat, "T", "E")) == B


def test_the_current_snapshot_cannot_be_expired(reserved: tuple[Server, Catalog]) -> None:
    server, _ = reserved
    client = rest_catalog(server)
    client.create_namespace("CUR")
    table = client.create_table("CUR.T", SCHEMA)
    table.append(batch(A))
    current = table.metadata.current_snapshot_id
    body = {
        "requirements": [],
        "updates": [{"action": "remove-snapshots", "snapshot-ids": [current]}],
    }
    with server.client(ADMIN_TOKEN) as http:
        answer = http.post("/iceberg/v1/namespaces/CUR/tables/T", json=body)
    assert answer.status_code == 400, answer.text
    assert f"its current snapshot {current} cannot be expired" in answer.json()["error"]["message"]
    assert scanned(client.load_table("CUR.T")) == A


def test_a_snapshot_no_data_snapshot_holds_leaves_the_metadata_too(
    reserved: tuple[Server, Catalog],
) -> None:
    """An overwrite commits a delete snapshot and then an append: only the
    append is a data snapshot, and expiring the delete alone still takes it
    out of the table's metadata."""
    client = rest_catalog(reserved[0])
    client.create_namespace("MID")
    table = client.create_table("MID.T", SCHEMA)
    table.append(batch(A))
    table.overwrite(batch(B))
    ids = [s.snapshot_id for s in table.metadata.snapshots]
    assert len(ids) == 3, "the overwrite's delete, then its append"
    table.maintenance.expire_snapshots().by_id(ids[1]).commit()
    loaded = client.load_table("MID.T")
    assert [s.snapshot_id for s in loaded.metadata.snapshots] == [ids[0], ids[2]]
    assert scanned(loaded) == B

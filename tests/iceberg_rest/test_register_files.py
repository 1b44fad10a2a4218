"""Almanac deletes only files inside its own warehouse, each below its own
table's directory: a registered table's files (another catalog's, here)
outlive its drop, its purge, the janitor and data expiry; register refuses
a table from the warehouse however the path is spelled."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import almanac
from almanac import Catalog, RetentionPolicy
from almanac.data import TableData, expire_data, read_table, run_janitor, write_table
from almanac.iceberg import metadata_location
from tests.iceberg_rest.conftest import ADMIN_TOKEN, own_server, rest_catalog
from tests.iceberg_rest.tables import SCHEMA, batch, scanned
from tests.server.support import Server


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Catalog, Path]]:
    """A server, a second node of its catalog that keeps one version (so a
    dropped table is purged at once), and a directory for other catalogs."""
    directory = tmp_path_factory.mktemp("register-files")
    with own_server(directory, retention=RetentionPolicy(keep_versions=1)) as (server, node):
        yield server, node, directory


def _other_table(directory: Path, name: str) -> tuple[str, set[Path]]:
    """Another catalog's table X.T with one row: its metadata location and
    every file of its warehouse."""
    with almanac.connect(str(directory / name)) as other:
        other.sql(
            "CREATE SCHEMA X; CREATE TABLE X.T (ID INT64 PRIMARY KEY, NAME STRING, QTY INT32)"
        )
        write_table(other, "T", batch([(7, "seven", 7)]), "X")
        location = metadata_location(other.target, "X.T")
    assert location is not None
    files = {p for p in (directory / name / "warehouse").rglob("*") if p.is_file()}
    return location, files


def _register(server: Server, namespace: str, name: str, location: str) -> httpx.Response:
    with server.client(ADMIN_TOKEN) as http:
        http.post("/iceberg/v1/namespaces", json={"namespace": [namespace]})
        return http.post(
            f"/iceberg/v1/namespaces/{namespace}/register",
            json={"name": name, "metadata-location": location, "overwrite": False},
        )


def _other_reads(directory: Path, name: str) -> list[int]:
    with almanac.connect(str(directory / name)) as other:
        return sorted(read_table(other, "T", "X").column("ID").to_pylist())


def test_drop_purge_and_janitor_keep_a_registered_tables_files(
    place: tuple[Server, Catalog, Path],
) -> None:
    server, cat, directory = place
    location, files = _other_table(directory, "dropped")
    assert _register(server, "REGD", "T", location).status_code == 200
    cat.catch_up()
    table = cat.catalog().table("T", "REGD")
    assert table is not None
    cat.sql("DROP TABLE REGD.T")
    cat.apply_retention()
    report = run_janitor(cat, grace_s=0)
    assert table.id in report.tables_purged
    assert all(p.exists() for p in files), "another catalog's files were deleted"
    assert _other_reads(directory, "dropped") == [7]
    own = TableData.for_catalog(cat).warehouse.table_dir(table.id)
    assert not Path(own).exists(), "the table's own directory goes"


def test_expire_data_keeps_a_registered_tables_files(place: tuple[Server, Catalog, Path]) -> None:
    server, cat, directory = place
    location, files = _other_table(directory, "expired")
    assert _register(server, "REGE", "T", location).status_code == 200
    client = rest_catalog(server)
    table = client.load_table(("REGE", "T"))
    table.overwrite(batch([(8, "eight", 8)]))
    cat.catch_up()
    removed = expire_data(cat, "T", "REGE", older_than=dt.datetime.now(dt.UTC))
    assert removed, "the registered snapshot is expired"
    assert all(p.exists() for p in files), "another catalog's files were deleted"
    assert _other_reads(directory, "expired") == [7]
    assert scanned(client.load_table(("REGE", "T"))) == [(8, "eight", 8)]


def test_register_refuses_the_warehouse_however_spelled(
    place: tuple[Server, Catalog, Path],
) -> None:
    server, cat, directory = place
    client = rest_catalog(server)
    client.create_namespace("OWN")
    own = client.create_table(("OWN", "T"), SCHEMA)
    own.append(batch([(1, "one", 1)]))
    inside = client.load_table(("OWN", "T")).metadata_location
    link = directory / "link-to-warehouse"
    os.symlink(Path(inside).parent, link)
    cat.catch_up()  # the append is a catalog version the server's node made
    version = cat.latest_version
    for spelled in (
        "/" + inside,
        f"file://{inside}",
        f"file:{inside}",
        f"{directory}/elsewhere/..{inside[len(str(directory)) :]}",
        str(link / Path(inside).name),
    ):
        answer = _register(server, "REGW", "T", spelled)
        assert answer.status_code == 400, (spelled, answer.text)
        assert "from outside the catalog's warehouse" in answer.text, spelled
    cat.catch_up()
    assert cat.catalog().table("T", "REGW") is None
    assert cat.latest_version <= version + 1  # at most the namespace

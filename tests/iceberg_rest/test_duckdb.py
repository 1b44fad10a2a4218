"""DuckDB's iceberg extension against a real ``almanac serve``: what its
users do (ATTACH, CREATE TABLE, CTAS, INSERT, DELETE, UPDATE, ALTER, DROP),
and after each step Almanac's own reader, on a second node of the catalog,
reads the same rows as DuckDB."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pytest

import almanac
from almanac.data import read_table, run_janitor, write_table
from almanac.data.commits import TableData
from almanac.iceberg import metadata_location
from almanac.node.catalog import Catalog
from tests.server.support import Server
from tests.waiting import wait_for

from .conftest import ADMIN_TOKEN, PREFIX, own_server, rest_catalog
from .duckdb_engine import attach
from .tables import Row, arrow_rows, ordered

NAMESPACE = "duck"


@pytest.fixture(scope="module")
def duck(server: Server) -> Iterator[Any]:
    con = attach(server.url + PREFIX, ADMIN_TOKEN)
    con.execute(f"CREATE SCHEMA c.{NAMESPACE}")
    yield con
    con.close()


def _rows(duck: Any, table: str) -> list[Row]:
    return ordered(duck.execute(f"SELECT * FROM c.{NAMESPACE}.{table}").fetchall())


def _same(duck: Any, cat: Catalog, table: str, expected: list[Row]) -> None:
    """DuckDB and Almanac read ``expected``, under the same column names."""
    assert _rows(duck, table) == ordered(expected)
    columns = [d[0] for d in duck.execute(f"SELECT * FROM c.{NAMESPACE}.{table}").description]
    cat.catch_up()
    ours = read_table(cat, table, NAMESPACE)
    assert ours.column_names == columns
    assert arrow_rows(ours) == ordered(expected)


def test_create_table_then_insert(duck: Any, cat: Catalog) -> None:
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.orders (id BIGINT, name VARCHAR, qty INTEGER)")
    _same(duck, cat, "orders", [])
    duck.execute(f"INSERT INTO c.{NAMESPACE}.orders VALUES (1, 'a', 10), (2, 'b', NULL)")
    _same(duck, cat, "orders", [(1, "a", 10), (2, "b", None)])
    duck.execute(f"INSERT INTO c.{NAMESPACE}.orders VALUES (3, NULL, 30)")
    _same(duck, cat, "orders", [(1, "a", 10), (2, "b", None), (3, None, 30)])


def test_insert_into_tables_the_catalog_created(duck: Any, cat: Catalog, server: Server) -> None:
    """Tables made by Almanac's own DDL, one with a primary key (bucketed by
    it into tablets): DuckDB's first commit writes below their locations."""
    cat.sql(
        f"CREATE TABLE {NAMESPACE}.keyed (id BIGINT PRIMARY KEY, name STRING);"
        f"CREATE TABLE {NAMESPACE}.loose (id BIGINT, name STRING)"
    )
    # The DDL ran on a second node: the server follows its log on its own.
    served = rest_catalog(server)
    wait_for(
        lambda: served.table_exists(f"{NAMESPACE}.loose"), "the server to apply the new tables"
    )
    for table in ("keyed", "loose"):
        duck.execute(f"INSERT INTO c.{NAMESPACE}.{table} VALUES (1, 'x'), (2, NULL)")
        _same(duck, cat, table, [(1, "x"), (2, None)])


def test_ctas_and_a_create_with_its_first_insert_in_one_transaction(
    duck: Any, cat: Catalog
) -> None:
    """Both stage the create and write manifests below the table's
    ``metadata/`` before the one commit that creates the table."""
    duck.execute(
        f"CREATE TABLE c.{NAMESPACE}.squares AS "
        "SELECT i::INTEGER AS n, (i * i)::BIGINT AS square FROM range(5) r(i)"
    )
    _same(duck, cat, "squares", [(i, i * i) for i in range(5)])

    duck.execute("BEGIN")
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.events (kind VARCHAR, day DATE)")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.events VALUES ('open', DATE '2026-01-02')")
    duck.execute("COMMIT")
    _same(duck, cat, "events", [("open", dt.date(2026, 1, 2))])


def test_alter_table(duck: Any, cat: Catalog) -> None:
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.items (id INTEGER, label VARCHAR)")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.items VALUES (1, 'one')")
    duck.execute(f"ALTER TABLE c.{NAMESPACE}.items ADD COLUMN price DOUBLE")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.items VALUES (2, 'two', 2.5)")
    _same(duck, cat, "items", [(1, "one", None), (2, "two", 2.5)])
    duck.execute(f"ALTER TABLE c.{NAMESPACE}.items RENAME COLUMN label TO title")
    _same(duck, cat, "items", [(1, "one", None), (2, "two", 2.5)])
    duck.execute(f"ALTER TABLE c.{NAMESPACE}.items ALTER COLUMN id TYPE BIGINT")
    duck.execute(f"ALTER TABLE c.{NAMESPACE}.items DROP COLUMN price")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.items VALUES (3, 'three')")
    _same(duck, cat, "items", [(1, "one"), (2, "two"), (3, "three")])
    cat.catch_up()
    table = cat.catalog().table("items", NAMESPACE)
    assert table is not None
    assert [(c.name, c.type.name) for c in table.columns] == [("id", "INT64"), ("title", "STRING")]


def test_delete(duck: Any, cat: Catalog) -> None:
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.gone (id INTEGER, note VARCHAR)")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.gone VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    duck.execute(f"DELETE FROM c.{NAMESPACE}.gone WHERE id = 2")
    _same(duck, cat, "gone", [(1, "a"), (3, "c")])


def test_update(duck: Any, cat: Catalog) -> None:
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.changed (id INTEGER, note VARCHAR)")
    duck.execute(f"INSERT INTO c.{NAMESPACE}.changed VALUES (1, 'a'), (2, 'b')")
    duck.execute(f"UPDATE c.{NAMESPACE}.changed SET note = 'B' WHERE id = 2")
    _same(duck, cat, "changed", [(1, "a"), (2, "B")])


def test_a_pinned_catalog_reads_two_tables_as_of_one_version(
    duck: Any, cat: Catalog, server: Server
) -> None:
    for table in ("pin_a", "pin_b"):
        duck.execute(f"CREATE TABLE c.{NAMESPACE}.{table} (id BIGINT)")
        duck.execute(f"INSERT INTO c.{NAMESPACE}.{table} VALUES (1)")
    cat.catch_up()
    pinned = attach(server.url + PREFIX, ADMIN_TOKEN, warehouse=f"@v{cat.latest_version}")
    try:
        for table in ("pin_a", "pin_b"):
            duck.execute(f"INSERT INTO c.{NAMESPACE}.{table} VALUES (2)")
            assert _rows(duck, table) == [(1,), (2,)]
            assert pinned.execute(f"SELECT * FROM c.{NAMESPACE}.{table}").fetchall() == [(1,)]
        with pytest.raises(duckdb.Error, match="read-only"):
            pinned.execute(f"INSERT INTO c.{NAMESPACE}.pin_a VALUES (3)")
    finally:
        pinned.close()
    assert _rows(duck, "pin_a") == [(1,), (2,)]


def test_drop_table(duck: Any, cat: Catalog) -> None:
    duck.execute(f"CREATE TABLE c.{NAMESPACE}.scratch AS SELECT 1 AS one")
    _same(duck, cat, "scratch", [(1,)])
    duck.execute(f"DROP TABLE c.{NAMESPACE}.scratch")
    cat.catch_up()
    assert cat.catalog().table("scratch", NAMESPACE) is None
    tables = duck.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'c' "
        "AND table_schema = ?",
        [NAMESPACE],
    ).fetchall()
    assert ("scratch",) not in tables


# -- a created table's metadata directory ------------------------------------


def _create(client: httpx.Client, name: str, *, staged: bool) -> str:
    body = {
        "name": name,
        "schema": {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "x", "type": "long", "required": False}],
        },
        "stage-create": staged,
    }
    response = client.post(f"/v1/namespaces/{NAMESPACE}/tables", json=body)
    assert response.status_code == 200, response.text
    location: str = response.json()["metadata"]["location"]
    return location


def test_a_create_makes_the_metadata_directory_at_once(
    duck: Any, http: Callable[[str | None], httpx.Client]
) -> None:
    """Engines open their first manifest below ``<location>/metadata/``
    without making the directory: a created table, and a staged one, have it
    before the client sees its location."""
    client = http(ADMIN_TOKEN)
    for name, staged in (("made", False), ("staged", True)):
        location = _create(client, name, staged=staged)
        assert os.path.isdir(f"{location}/metadata"), (name, os.listdir(location))


def test_insert_into_a_registered_table(
    duck: Any, cat: Catalog, tmp_path: Path, http: Callable[[str | None], httpx.Client]
) -> None:
    """A registered table's metadata lies outside the warehouse; its new
    files go below its location, whose ``metadata/`` the registration makes."""
    with almanac.connect(str(tmp_path / "other")) as other:
        other.sql("CREATE SCHEMA x; CREATE TABLE x.t (id BIGINT PRIMARY KEY, name STRING)")
        write_table(other, "t", pa.table({"id": [7], "name": ["seven"]}), "x")
        location = metadata_location(other.target, "x.t")
    response = http(ADMIN_TOKEN).post(
        f"/v1/namespaces/{NAMESPACE}/register",
        json={"name": "adopted", "metadata-location": location},
    )
    assert response.status_code == 200, response.text
    duck.execute(f"INSERT INTO c.{NAMESPACE}.adopted VALUES (8, 'eight')")
    _same(duck, cat, "adopted", [(7, "seven"), (8, "eight")])


def test_the_janitor_keeps_the_empty_metadata_directory_of_a_live_table(
    tmp_path: Path,
) -> None:
    with own_server(tmp_path) as (server, node):
        con = attach(server.url + PREFIX, ADMIN_TOKEN)
        try:
            con.execute(f"CREATE SCHEMA c.{NAMESPACE}")
            con.execute(f"CREATE TABLE c.{NAMESPACE}.fresh (id INTEGER)")
            node.catch_up()
            table = node.catalog().table("fresh", NAMESPACE)
            assert table is not None
            metadata = Path(TableData.for_catalog(node).warehouse.metadata_dir(table.id))
            run_janitor(node, grace_s=0)
            assert metadata.is_dir()
            con.execute(f"INSERT INTO c.{NAMESPACE}.fresh VALUES (1), (2)")
            assert arrow_rows(read_table(node, "fresh", NAMESPACE)) == [(1,), (2,)]
        finally:
            con.close()

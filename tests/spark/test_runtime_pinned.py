"""A Spark catalog pinned at a catalog version
(``almanac.spark.add_catalog(spark, name, target, version=V)``): plain
``spark.sql`` reads every table as of V, a consistent read across tables
while appends go on through the live catalog; every change through it is
refused, naming the pin; a local catalog's version is held while the
session uses it. Almanac's own reader at version V agrees.

The catalog is a Spark catalog of this module's own in the run's one
session (tests/spark/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import almanac
import almanac.spark
from almanac.data import TableData
from almanac.errors import NotFoundError, ValidationError, VersionNotFoundError
from almanac.node.catalog import Catalog
from tests.spark.test_runtime import _almanac_rows, _sql

CAT = "rtp"


def _ids(spark: Any, table: str) -> list[int]:
    return sorted(row[0] for row in _sql(spark, f"SELECT id FROM {table}"))


def _files(cat: Catalog, schema: str, name: str) -> set[Path]:
    """Every file below the table's location."""
    table = cat.catalog().table(name, schema)
    assert table is not None
    location = Path(TableData.for_catalog(cat).warehouse.table_dir(table.id))
    return {p for p in location.rglob("*") if p.is_file()}


def _version(cat: Catalog) -> int:
    cat.catch_up()
    return cat.latest_version


def test_a_pinned_catalog_reads_two_tables_as_of_one_version_while_appends_go_on(
    rt: Any, node: Catalog, catalog_dir: str
) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.two")
    for table in ("a", "b"):
        _sql(rt, f"CREATE TABLE {CAT}.two.{table} (id BIGINT) USING iceberg")
        _sql(rt, f"INSERT INTO {CAT}.two.{table} VALUES (1), (2)")
    _sql(rt, f"CREATE TABLE {CAT}.two.later_filled (id BIGINT) USING iceberg")
    v = _version(node)
    almanac.spark.add_catalog(rt, "rtp_pinned", catalog_dir, version=v)
    assert rt.conf.get("spark.sql.catalog.rtp_pinned.warehouse") == f"@v{v}"

    _sql(rt, f"INSERT INTO {CAT}.two.a VALUES (3)")
    _sql(rt, f"INSERT INTO {CAT}.two.b VALUES (30)")
    _sql(rt, f"INSERT INTO {CAT}.two.later_filled VALUES (7)")
    _sql(rt, f"CREATE TABLE {CAT}.two.c USING iceberg AS SELECT 1L AS id")
    assert _ids(rt, "rtp_pinned.two.a") == [1, 2]
    assert _ids(rt, "rtp_pinned.two.b") == [1, 2]
    _sql(rt, f"INSERT INTO {CAT}.two.a VALUES (4)")  # and on, between two pinned reads
    assert _sql(rt, "SELECT count(*) FROM rtp_pinned.two.a JOIN rtp_pinned.two.b USING (id)") == [
        (2,)
    ]
    assert _ids(rt, "rtp_pinned.two.later_filled") == []
    assert sorted(r[1] for r in _sql(rt, "SHOW TABLES IN rtp_pinned.two")) == [
        "a",
        "b",
        "later_filled",
    ]
    assert _ids(rt, f"{CAT}.two.a") == [1, 2, 3, 4]
    assert _ids(rt, f"{CAT}.two.b") == [1, 2, 30]
    # Almanac's own reader at V reads what the pinned catalog does.
    for table in ("a", "b"):
        assert [r["id"] for r in _almanac_rows(node, "two", table, version=v)] == [1, 2]


def test_every_change_through_a_pinned_catalog_is_refused(
    rt: Any, node: Catalog, catalog_dir: str
) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.ro")
    _sql(rt, f"CREATE TABLE {CAT}.ro.t USING iceberg AS SELECT 1L AS id")
    v = _version(node)
    almanac.spark.add_catalog(rt, "rtp_ro", catalog_dir, version=v)
    files = _files(node, "ro", "t")
    read_only = f"catalog pinned at version {v} is read-only"
    for statement in (
        "INSERT INTO rtp_ro.ro.t VALUES (2)",
        "DELETE FROM rtp_ro.ro.t WHERE id = 1",
        "CREATE TABLE rtp_ro.ro.u (id BIGINT) USING iceberg",
        "CREATE TABLE rtp_ro.ro.w USING iceberg AS SELECT 1L AS id",
        "ALTER TABLE rtp_ro.ro.t ADD COLUMN x STRING",
        "DROP TABLE rtp_ro.ro.t",
        "CREATE NAMESPACE rtp_ro.other",
    ):
        with pytest.raises(Exception, match=read_only):
            _sql(rt, statement)
    assert _version(node) == v  # nothing changed
    assert _ids(rt, f"{CAT}.ro.t") == [1]
    assert _files(node, "ro", "t") == files  # Iceberg removed what the refused writes wrote


def test_a_local_pinned_catalog_holds_its_version_against_checkpoints(
    rt: Any, node: Catalog, catalog_dir: str
) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.held")
    _sql(rt, f"CREATE TABLE {CAT}.held.t USING iceberg AS SELECT 1L AS id")
    v = _version(node)
    almanac.spark.add_catalog(rt, "rtp_held", catalog_dir, version=v)
    _sql(rt, f"INSERT INTO {CAT}.held.t VALUES (2)")
    assert node.checkpoint_log() <= v  # the session's pin stops it at V
    assert _ids(rt, "rtp_held.held.t") == [1]


def test_a_version_that_is_not_there_is_refused_when_added(
    rt: Any, node: Catalog, catalog_dir: str
) -> None:
    future = _version(node) + 1000
    with pytest.raises(VersionNotFoundError, match=f"Catalog version {future} does not exist"):
        almanac.spark.add_catalog(rt, "rtp_future", catalog_dir, version=future)
    with pytest.raises(ValidationError, match="'version'"):
        almanac.spark.add_catalog(rt, "rtp_negative", catalog_dir, version=-1)
    assert rt.conf.get("spark.sql.catalog.rtp_future", None) is None


def test_a_pinned_catalog_at_a_path_without_one_creates_nothing(rt: Any, tmp_path: Path) -> None:
    typo = tmp_path / "no-catalog-here"
    with pytest.raises(NotFoundError, match="No catalog at"):
        almanac.spark.add_catalog(rt, "rtp_typo", str(typo), version=1)
    assert not typo.exists()
    assert rt.conf.get("spark.sql.catalog.rtp_typo", None) is None


def test_a_pinned_catalog_on_a_server(rt: Any, tmp_path: Path) -> None:
    from tests.server.support import Server

    tokens = tmp_path / "tokens"
    tokens.write_text("admin pinned-admin-71c3e9\n", encoding="utf-8")
    target = str(tmp_path / "served")
    server = Server(target, "--tokens-file", str(tokens), log=tmp_path / "server.log")
    try:
        almanac.spark.add_catalog(rt, "rtp_http", server.url, token="pinned-admin-71c3e9")
        _sql(rt, "CREATE NAMESPACE rtp_http.s")
        _sql(rt, "CREATE TABLE rtp_http.s.t USING iceberg AS SELECT 5L AS id")
        with almanac.connect(target) as cat:
            v = cat.latest_version
        _sql(rt, "INSERT INTO rtp_http.s.t VALUES (6)")
        almanac.spark.add_catalog(
            rt, "rtp_http_pinned", server.url, token="pinned-admin-71c3e9", version=v
        )
        assert _ids(rt, "rtp_http_pinned.s.t") == [5]
        assert _ids(rt, "rtp_http.s.t") == [5, 6]
        with pytest.raises(Exception, match=f"catalog pinned at version {v} is read-only"):
            _sql(rt, "INSERT INTO rtp_http_pinned.s.t VALUES (7)")
    finally:
        assert server.stop() == 0, server.log_text()

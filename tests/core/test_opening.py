"""One way to open an existing catalog: every reader and every operation on
a catalog refuses a target that holds none, naming it and ``almanac init``,
and leaves nothing behind; only ``init`` and ``connect`` (``create=True``,
its default) make a catalog."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import almanac
from almanac import NotFoundError, ValidationError
from almanac.access.connection import open_catalog
from almanac.cli import main
from almanac.iceberg import load_table, metadata_location
from almanac.system_tables import system_table
from almanac.tserver.client import read_table

READERS: dict[str, Callable[[str], object]] = {
    "open_catalog": lambda t: open_catalog(t, create=False),
    "connect": lambda t: almanac.connect(t, create=False),
    "iceberg.load_table": lambda t: load_table(t, "S.T"),
    "iceberg.metadata_location": lambda t: metadata_location(t, "S.T"),
    "system_table": lambda t: system_table(t, "SYSTEM.TABLES"),
    "tserver.client.read_table": lambda t: read_table(t, "S.T"),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_a_reader_refuses_a_mistyped_path_and_creates_nothing(
    tmp_path: Path, reader: str, kind: str
) -> None:
    typo = tmp_path / "dta"
    target = str(typo) if kind == "directory" else f"sqlite:///{typo}/c.db"
    with pytest.raises(NotFoundError, match="No catalog at") as info:
        READERS[reader](target)
    assert f"almanac --store {target} init" in str(info.value)
    assert info.value.context["kind"] == "catalog"
    assert list(tmp_path.iterdir()) == [], "nothing was created"


def test_an_existing_catalog_opens_for_every_reader(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target) as cat:
        version = cat.sql("CREATE TABLE T (ID BIGINT)").version
    with open_catalog(target, create=False) as cat:
        assert cat.latest_version == version
    with almanac.connect(target, create=False) as cat:
        assert cat.catalog().table("T") is not None
    assert "T" in system_table(target, "SYSTEM.TABLES").column("NAME").to_pylist()


def test_a_sqlite_file_without_a_catalog_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).close()  # an empty database: some other program's file
    with pytest.raises(NotFoundError, match="no catalog keys in its metastore"):
        open_catalog(f"sqlite:///{path}", create=False)
    with almanac.connect(f"sqlite:///{path}") as cat:  # connect's default creates one
        assert cat.latest_version == 1


def test_memory_holds_no_catalog_to_open() -> None:
    with pytest.raises(NotFoundError, match="memory:// catalog exists only once"):
        open_catalog("memory://", create=False)
    with almanac.connect("memory://") as cat:
        assert cat.latest_version == 1


@pytest.mark.parametrize("create", ["yes", 1, None])
def test_create_must_be_a_bool(tmp_path: Path, create: Any) -> None:
    with pytest.raises(ValidationError, match="Parameter 'create' of connect"):
        almanac.connect(str(tmp_path / "d"), create=create)
    assert list(tmp_path.iterdir()) == []


def test_serve_refuses_a_missing_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing"
    assert main(["serve", "--store", str(missing), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: No catalog at {missing} (no metastore file")
    assert not missing.exists()

"""The library runs the janitor itself when asked to, at an interval."""

from __future__ import annotations

from pathlib import Path

import pytest

import almanac
from almanac.data import TableData, new_write_id
from tests.waiting import wait_for


def test_background_janitor_removes_an_expired_staging_dir(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "data"), delay_ms=0, janitor_interval_s=0.2) as cat:
        data = TableData.for_catalog(cat)
        write_id = new_write_id()
        write_dir = data.warehouse.write_dir(1, write_id)
        data.staging.stage(write_id, write_dir, ttl_s=0.5)
        staged = Path(write_dir)
        assert staged.exists()
        wait_for(lambda: not staged.exists(), "the periodic janitor to remove the write")
        assert not data.staging.is_committed(write_id)


def test_background_janitor_needs_a_warehouse() -> None:
    with pytest.raises(almanac.CatalogError, match="needs a warehouse"):
        almanac.connect("memory://", janitor_interval_s=1.0)
    with pytest.raises(almanac.CatalogError, match=r"janitor_interval_s.*positive"):
        almanac.connect("memory://", warehouse="/tmp/x", janitor_interval_s=0)

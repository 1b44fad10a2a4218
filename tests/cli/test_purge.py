"""``almanac purge``: soft-deleted tables whose reserve ended go in one version."""

from __future__ import annotations

import json
from pathlib import Path

import almanac
from almanac import DropTable

from .support import almanac as run


def test_purge_removes_only_what_expired(tmp_path: Path) -> None:
    store = str(tmp_path / "data")
    with almanac.connect(store) as cat:
        cat.sql(
            "CREATE TABLE OLD (ID BIGINT NOT NULL PRIMARY KEY);"
            "CREATE TABLE NEW (ID BIGINT NOT NULL PRIMARY KEY)"
        )
        cat.execute([DropTable("OLD", reserve_s=0.001), DropTable("NEW", reserve_s=3600)])
        old = cat.catalog().soft_deleted_table("OLD")
        assert old is not None and old.purge_at is not None
        assert cat.clock.wait_until(old.purge_at, timeout=60)  # the catalog's clock, not a sleep
    done = run("--store", store, "purge", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tables purged: 1 (catalog version ")
    assert lines[1].startswith(f"  PUBLIC.OLD (id {old.id}, reserved until ")
    with almanac.connect(store) as cat:
        version = cat.catalog()
        assert version.table_by_id(old.id) is None
        assert [t.name for t in version.soft_deleted_tables()] == ["NEW"]
    shown = run("--store", store, "show", "dropped", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)
    assert answer["columns"][:3] == ["SCHEMA", "NAME", "ID"]
    assert [row[:2] for row in answer["rows"]] == [["PUBLIC", "NEW"]]

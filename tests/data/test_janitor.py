"""The janitor, dropped tables and data retention."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from almanac import AddColumns, Catalog, ColumnDef, ColumnType, DropTable, NotFoundError
from almanac.cli import main
from almanac.data import (
    SnapshotExpiredError,
    TableData,
    conform,
    expire_data,
    new_write_id,
    read_table,
    run_janitor,
    write_files,
    write_table,
)
from almanac.model.entries import TableDataCommitted
from tests.data.support import append, create, data_keys, ids_of, own_files, rows, zone_tablets
from tests.waiting import wait_for


def _write(cat: Catalog, ids: list[int], *, ttl_s: float | None) -> tuple[str, str, list[str]]:
    """Write files for table T, staged with ``ttl_s`` (unstaged if None), uncommitted."""
    data = TableData.for_catalog(cat)
    table = cat.catalog().table("T")
    assert table is not None
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    if ttl_s is not None:
        data.staging.stage(write_id, write_dir, ttl_s=ttl_s)
    files = write_files(
        data.warehouse, table, zone_tablets(cat, table), conform(rows(ids), table), write_dir
    )
    return write_id, write_dir, [f.path for f in files]


def _wait_for_no_staging(cat: Catalog, write_id: str) -> None:
    wait_for(
        lambda: f"data.staging.{write_id}" not in data_keys(cat), "the staging lease to expire"
    )


def test_janitor_collects_only_dead_uncommitted_writes(cat: Catalog) -> None:
    create(cat)
    committed = append(cat, [1, 2])
    _, expired_dir, _ = _write(cat, [3], ttl_s=0.2)
    live_id, live_dir, _ = _write(cat, [4], ttl_s=60)
    _, unregistered_dir, _ = _write(cat, [5], ttl_s=None)
    _wait_for_no_staging(cat, Path(expired_dir).name)

    report = run_janitor(cat)
    assert report.staging_removed == [expired_dir]
    assert not Path(expired_dir).exists()
    assert Path(live_dir).is_dir() and Path(unregistered_dir).is_dir()
    assert all(Path(p).exists() for p in own_files(committed))
    assert ids_of(read_table(cat, "T")) == [1, 2]

    report = run_janitor(cat, grace_s=0)
    assert report.staging_removed == [unregistered_dir]
    assert Path(live_dir).is_dir(), "a live lease protects a write at any age"
    TableData.for_catalog(cat).staging.abort(live_id, live_dir)
    assert not Path(live_dir).exists()
    assert ids_of(read_table(cat, "T")) == [1, 2]


def test_janitor_removes_files_no_snapshot_references(cat: Catalog) -> None:
    table = create(cat)
    first = append(cat, [1])
    data = TableData.for_catalog(cat)
    write_dir = own_files(first)[0].split("/tablet=")[0]
    stray = Path(write_dir) / "tablet=0" / "part-retried-task.parquet"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"left by a failed task attempt")
    orphan = Path(data.warehouse.metadata_dir(table.id)) / "orphan-m0.avro"
    orphan.write_text("{}")

    report = run_janitor(cat)
    assert report.files_removed == [str(stray)], "young manifests may belong to a commit"
    assert orphan.exists()
    assert run_janitor(cat, grace_s=0).files_removed == [str(orphan)]
    assert ids_of(read_table(cat, "T")) == [1]
    assert run_janitor(cat, grace_s=0) == type(report)()


def test_dropped_table_data_outlives_every_version_that_has_it(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1])
    snapshot = append(cat, [2])
    v_with = cat.latest_version
    create(cat, "KEEP")
    kept = append(cat, [7], name="KEEP")
    cat.execute([DropTable("T")])
    files = [Path(f.path) for f in snapshot.files]

    assert run_janitor(cat, grace_s=0).tables_purged == []
    assert ids_of(read_table(cat, "T", version=v_with)) == [1, 2]
    with cat.pin(v_with):
        cat.checkpoint_log()
        assert cat.earliest_version == v_with
        assert run_janitor(cat, grace_s=0).tables_purged == []
    assert all(f.exists() for f in files)

    cat.checkpoint_log()
    report = run_janitor(cat, grace_s=0)
    assert report.tables_purged == [table.id]
    assert not any(f.exists() for f in files)
    assert not Path(snapshot.metadata).exists()
    assert not any(Path(f.path).parent.parent.exists() for f in snapshot.files)
    keys = data_keys(cat)
    assert not any(
        k.startswith((f"data.table.{table.id}", f"data.snapshot.{table.id}.")) for k in keys
    )
    assert not any(k.startswith("data.write.") and k.endswith(snapshot.write_id) for k in keys)
    assert ids_of(read_table(cat, "KEEP")) == [7]
    assert all(Path(f.path).exists() for f in kept.files)


def test_expire_data_keeps_what_pinned_versions_read(cat: Catalog) -> None:
    table = create(cat)
    snapshots = []
    versions = []
    for step, ids in enumerate(([1], [2], [3])):
        snapshots.append(append(cat, ids))
        versions.append(cat.latest_version)
        column = ColumnDef(name=f"C{step}", type=ColumnType.INT8)
        cat.execute([AddColumns(table="T", columns=(column,))])
    last = write_table(cat, "T", rows([9]), operation="overwrite")
    data = TableData.for_catalog(cat)

    with cat.pin(versions[1]):
        before = cat.latest_version
        removed = expire_data(cat, "T", older_than=cat.clock.now())
        assert [s.snapshot_id for s in removed] == [1]
        # A user's expiry is a catalog version of its own, naming the current
        # snapshot (unchanged) and its new metadata without snapshot 1.
        assert cat.latest_version == before + 1
        (entry,) = cat.history(before + 1)[0].update.entries
        assert isinstance(entry, TableDataCommitted)
        assert (entry.operation, entry.snapshot_id, entry.files_removed) == ("expire", 4, 1)
        assert entry.metadata == data.metadata_location(table.id)
        assert cat.catalog().data_snapshot(table.id) == 4
        assert ids_of(read_table(cat, "T", version=versions[1])) == [1, 2]
        assert all(Path(p).exists() for p in own_files(snapshots[0]))
        run_janitor(cat, grace_s=0)
        assert all(Path(p).exists() for p in own_files(snapshots[0])), "still referenced"
    with pytest.raises(SnapshotExpiredError, match="expired"):
        read_table(cat, "T", version=versions[0])

    removed = expire_data(cat, "T", older_than=cat.clock.now())
    assert [s.snapshot_id for s in removed] == [2, 3]
    assert [s.snapshot_id for s in data.history(table.id)] == [4]
    for snapshot in snapshots:
        assert not any(Path(p).exists() for p in own_files(snapshot))
        assert not Path(snapshot.metadata).exists()
        assert f"data.write.{snapshot.write_id}" not in data_keys(cat)
    assert ids_of(read_table(cat, "T")) == [9]
    assert all(Path(f.path).exists() for f in last.files)
    assert expire_data(cat, "T", older_than=cat.clock.now()) == []
    location = data.metadata_location(table.id)
    assert location is not None
    iceberg = StaticTable.from_metadata(location)
    assert [s.snapshot_id for s in iceberg.metadata.snapshots] == [
        iceberg.metadata.current_snapshot_id
    ], "the current metadata offers no expired snapshot"
    superseded = run_janitor(cat, grace_s=0).files_removed
    assert all(p.endswith(".metadata.json") and p != location for p in superseded)
    assert run_janitor(cat, grace_s=0).files_removed == []
    assert ids_of(read_table(cat, "T")) == [9]
    assert sorted(iceberg.scan().to_arrow().column("ID").to_pylist()) == [9]
    with pytest.raises(NotFoundError):
        expire_data(cat, "NOPE", older_than=0)


def test_expire_data_keeps_snapshots_current_after_the_cutoff(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1])
    cutoff = cat.clock.now()
    append(cat, [2])
    assert expire_data(cat, "T", older_than=cutoff) == []
    assert ids_of(read_table(cat, "T", timestamp=cutoff)) == [1]
    assert len(TableData.for_catalog(cat).history(table.id)) == 2


def test_cli_janitor(cat: Catalog, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    create(cat)
    _, expired_dir, _ = _write(cat, [3], ttl_s=0.2)
    _wait_for_no_staging(cat, Path(expired_dir).name)
    assert main(["janitor", cat.target]) == 0
    out = capsys.readouterr().out
    assert "staging directories removed: 1" in out and expired_dir in out
    assert main(["janitor", "ftp://nowhere"]) == 1
    assert "Unsupported catalog target" in capsys.readouterr().err

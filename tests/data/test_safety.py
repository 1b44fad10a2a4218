"""What the data plane must never do, found by attacking the earlier one:
publish files the janitor took, let a name escape the warehouse, collect
metadata a commit is about to publish, or let a reader see a schema the
catalog does not have."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo, Reference

from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    ColumnDef,
    ColumnType,
    DataError,
    ValidationError,
    WriteStateError,
)
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    conform,
    new_write_id,
    read_file,
    read_table,
    run_janitor,
    write_files,
    write_table,
)
from almanac.data.snapshots import DataSnapshot, encode_record, snapshot_key
from almanac.iceberg import load_table
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import ObjectIdsReserved, VersionedUpdate
from almanac.node.catalog_types import HookWork
from tests.data.support import append, create, data_keys, ids_of, rows, zone_tablets
from tests.waiting import wait_for


def _staged(
    cat: Catalog, ids: list[int], ttl_s: float
) -> tuple[TableData, str, str, list[DataFile]]:
    data = TableData.for_catalog(cat)
    table = cat.catalog().table("T")
    assert table is not None
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=ttl_s)
    files = write_files(
        data.warehouse, table, zone_tablets(cat, table), conform(rows(ids), table), write_dir
    )
    return data, write_id, write_dir, files


def test_a_stalled_writer_cannot_publish_what_the_janitor_took(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1])
    data, write_id, write_dir, files = _staged(cat, [2], ttl_s=0.2)
    wait_for(
        lambda: f"data.staging.{write_id}" not in data_keys(cat), "the staging lease to expire"
    )
    report = run_janitor(cat, grace_s=0)
    assert write_dir in report.staging_removed and not Path(write_dir).exists()
    with pytest.raises(WriteStateError, match="staging lease"):
        data.commit(CommitShape.of(cat.catalog(), table), write_id, files, operation="append")
    assert ids_of(read_table(cat, "T")) == [1], "nothing was published"
    append(cat, [3])
    assert ids_of(read_table(cat, "T")) == [1, 3]


def test_missing_staged_files_refuse_the_commit(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, _, files = _staged(cat, [1, 2, 3], ttl_s=60)
    Path(files[0].path).unlink()
    with pytest.raises(WriteStateError, match="missing"):
        data.commit(CommitShape.of(cat.catalog(), table), write_id, files, operation="append")
    assert data.current(table.id) is None


def test_janitor_with_zero_grace_spares_a_commit_in_flight(cat: Catalog) -> None:
    """The commit has written its metadata.json, manifest list and manifest
    but not yet swapped the pointer when a janitor with no grace runs."""
    table = create(cat)
    append(cat, [1])
    data, write_id, _, files = _staged(cat, [2], ttl_s=60)
    parent = data.current_record(table.id)
    made: list[DataSnapshot] = []

    def attach(_base: CatalogVersion, new: CatalogVersion) -> HookWork:
        work, snapshot = data.commit_ops(
            CommitShape.of(new, table), write_id, files, operation="append", parent=parent, at=new
        )
        made.append(snapshot)
        run_janitor(cat, grace_s=0)
        assert Path(snapshot.metadata).exists()
        return work

    assert cat.execute([], attach=attach).created
    assert ids_of(read_table(cat, "T")) == [1, 2]
    run_janitor(cat, grace_s=0)
    assert ids_of(read_table(cat, "T")) == [1, 2]
    append(cat, [3])
    assert ids_of(read_table(cat, "T")) == [1, 2, 3]


def test_one_broken_table_does_not_stop_cleaning_the_others(cat: Catalog) -> None:
    broken = create(cat)
    append(cat, [1])
    create(cat, "OK")
    append(cat, [5], name="OK")
    data = TableData.for_catalog(cat)
    record = data.current_record(broken.id)
    assert record is not None
    lost = dataclasses.replace(record, metadata=record.metadata + ".lost")
    data.store.put(snapshot_key(broken.id, record.snapshot_id), encode_record(lost))
    ok = cat.catalog().table("OK")
    assert ok is not None
    stray = Path(data.warehouse.metadata_dir(ok.id)) / "stray-m0.avro"
    stray.write_bytes(b"left by a failed commit")
    report = run_janitor(cat, grace_s=0)
    assert broken.id in report.errors and "missing" in report.errors[broken.id]
    assert str(stray) in report.files_removed
    assert ids_of(read_table(cat, "OK")) == [5]


@pytest.mark.parametrize("name", ["..", ".", "metadata", "_manifests", "a/b", "1"])
def test_names_never_become_paths(cat: Catalog, tmp_path: Path, name: str) -> None:
    create(cat, name)
    write_table(cat, name, rows([1, 2]))
    warehouse = Path(TableData.for_catalog(cat).warehouse.root)
    files = [p for p in tmp_path.rglob("*.parquet")]
    assert files and all(warehouse in p.parents for p in files)
    table = cat.catalog().table(name)
    assert table is not None
    assert all(p.relative_to(warehouse).parts[0] == str(table.id) for p in files)
    run_janitor(cat, grace_s=0)
    assert ids_of(read_table(cat, name)) == [1, 2]


def test_alter_moves_the_iceberg_schema_in_its_own_version(cat: Catalog, tmp_path: Path) -> None:
    table = create(cat)
    append(cat, [1])
    data = TableData.for_catalog(cat)
    before = data.metadata_location(table.id)
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="X", type=ColumnType.INT32),))])
    after = data.metadata_location(table.id)
    assert after is not None and after != before
    iceberg = load_table(str(tmp_path / "data"), "PUBLIC.T")
    assert [f.name for f in iceberg.schema().fields] == ["ID", "V", "X"]
    assert iceberg.scan().to_arrow().column("X").to_pylist() == [None]
    create(cat, "EMPTY")
    version = cat.latest_version
    cat.execute([AddColumns(table="EMPTY", columns=(ColumnDef(name="Y", type=ColumnType.INT32),))])
    assert cat.latest_version == version + 1
    assert not [k for k in data_keys(cat) if k.startswith("data.staging.")], "holds released"
    write_table(cat, "T", pa.table({"ID": [2], "V": ["b"], "X": [7]}))
    assert read_table(cat, "T").sort_by("ID").column("X").to_pylist() == [None, 7]


def _ahead(cat: Catalog) -> CatalogVersion:
    """Another node's version, applied here before it activates (ten seconds
    on): appended to the log as that node's commit does."""
    base = cat.catalog()
    update = VersionedUpdate(
        version=base.version + 1,
        commit_time=cat.clock.now(),
        delay_ms=10_000,
        entries=(ObjectIdsReserved(1),),
        node="other",
    )
    assert cat.log.append(update, extra_compares=[], extra_ops=[]) is not None
    cat.catch_up()
    return cat.catalog(update.version)


def test_a_commit_is_never_stamped_before_its_version_activates(cat: Catalog) -> None:
    """Written against a version that activates later (another node's DDL,
    applied here before its activation), the commit's time follows it, so a
    read by timestamp never pairs these rows with the older schema: the
    commit is a version of its own, which activates after every earlier one."""
    table = create(cat)
    data = TableData.for_catalog(cat)
    version = _ahead(cat)
    later = version.activation_time
    assert later > cat.clock.now()
    shape = CommitShape(table, zone_tablets(cat, table), version.version)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=60)
    files = write_files(
        data.warehouse, table, zone_tablets(cat, table), conform(rows([1]), table), write_dir
    )
    snapshot = data.commit(shape, write_id, files, operation="append")
    assert snapshot.commit_time > later
    assert snapshot.commit_time == cat.catalog(snapshot.catalog_version).activation_time
    assert read_table(cat, "T", timestamp=later).num_rows == 0
    assert ids_of(read_table(cat, "T", timestamp=snapshot.commit_time)) == [1]


def test_a_file_that_does_not_fit_an_older_schema_is_a_data_error(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="N", type=ColumnType.INT32),
        ],
    )
    before = cat.latest_version
    cat.execute([AlterColumn(table="T", column="N", type=ColumnType.INT64)])
    write_table(cat, "T", pa.table({"ID": [1], "N": [2**40]}))
    data = TableData.for_catalog(cat)
    table = cat.catalog().table("T")
    assert table is not None
    old_table = cat.catalog(before).table("T")
    assert old_table is not None
    current = data.current(table.id)
    assert current is not None
    with pytest.raises(DataError, match="does not fit its type int32"):
        list(read_file(old_table, current.files[0], data.warehouse))


def test_a_write_commits_only_the_files_in_its_own_directory(cat: Catalog, tmp_path: Path) -> None:
    """Publishing another write's files (gone when that write aborts), another
    table's (gone when it is purged) or a file outside the warehouse would
    leave a table that no read can open: WriteStateError, nothing published."""
    create(cat)
    create(cat, "U")
    append(cat, [1])
    data, a_id, a_dir, a_files = _staged(cat, [2], ttl_s=600)
    _, b_id, _, b_files = _staged(cat, [3], ttl_s=600)
    version = cat.catalog()
    t, u = version.table("T"), version.table("U")
    assert t is not None and u is not None
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(Path(b_files[0].path).read_bytes())
    moved = dataclasses.replace(b_files[0], path=str(outside))
    escaped = dataclasses.replace(b_files[0], path=f"{a_dir}/../{b_id}/x.parquet")
    before = data_keys(cat)
    for shape, files, fragment in [
        (CommitShape.of(version, t), a_files, "not in the directory of write"),
        (CommitShape.of(version, t), [moved], "not in the directory of write"),
        (CommitShape.of(version, t), [escaped], "not in the directory of write"),
        (CommitShape.of(version, u), b_files, "not in the directory of table"),
    ]:
        with pytest.raises(WriteStateError, match=fragment):
            data.commit(shape, b_id, files, operation="append")
    assert data_keys(cat) == before
    data.staging.abort(a_id, a_dir)
    assert ids_of(read_table(cat, "T")) == [1]
    data.commit(CommitShape.of(version, t), b_id, b_files, operation="append")
    assert ids_of(read_table(cat, "T")) == [1, 3]
    run_janitor(cat, grace_s=0)
    assert ids_of(read_table(cat, "T")) == [1, 3]


def test_a_commit_shape_must_match_its_catalog_version(cat: Catalog, tmp_path: Path) -> None:
    """Files bucketed for the zone's tablet count but declared under another
    ``bucket[N]`` would make an Iceberg reader's key filter skip the rows: a
    shape built by hand must be what ``CommitShape.of`` gives."""
    table = create(cat, colocation=("ID",))
    append(cat, [1])
    data, write_id, _, files = _staged(cat, [2], ttl_s=600)
    version = cat.catalog()
    right = CommitShape.of(version, table)
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="X", type=ColumnType.INT32),))])
    altered = cat.catalog().table("T")
    assert altered is not None
    for shape in [
        dataclasses.replace(right, partitions=right.partitions + 3),
        dataclasses.replace(right, table=altered),
    ]:
        with pytest.raises(ValidationError, match="does not match catalog version"):
            data.commit(shape, write_id, files, operation="append")
    wrong_id = new_write_id()
    wrong_dir = data.warehouse.write_dir(table.id, wrong_id)
    data.staging.stage(wrong_id, wrong_dir, ttl_s=600)
    keys = conform(rows(list(range(10, 30))), table)
    wrong = write_files(data.warehouse, table, right.partitions + 3, keys, wrong_dir)
    with pytest.raises(WriteStateError, match="written for another tablet count"):
        data.commit(right, wrong_id, wrong, operation="append")
    data.commit(right, write_id, files, operation="append")
    theirs = load_table(str(tmp_path / "data"), "T")
    for key in (1, 2):
        found = theirs.scan(row_filter=EqualTo(Reference("ID"), key)).to_arrow()  # type: ignore[call-arg,arg-type]
        assert found.column("ID").to_pylist() == [key]

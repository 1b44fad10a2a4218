"""``upgrade_warehouse`` turns a warehouse of the JSON-manifest format into
Iceberg tables that read exactly as before, through every version and
timestamp, for Almanac and for pyiceberg alone."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import multiprocessing
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.expressions import BooleanExpression, EqualTo, Reference
from pyiceberg.table import StaticTable

import almanac
from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    ColumnDef,
    ColumnType,
    CreateSchema,
    CreateTable,
    CreateZone,
    DropColumns,
    DropTable,
    NotFoundError,
    SnapshotExpiredError,
    WarehouseFormatError,
)
from almanac.data import (
    Predicate,
    TableData,
    arrow_schema,
    expire_data,
    read_table,
    run_janitor,
    write_table,
)
from almanac.data.plane import warehouse_of
from almanac.data.snapshots import decode_record, snapshot_prefix, write_key
from almanac.data.upgrade import UpgradeReport, convert_table, publish, upgrade_warehouse
from almanac.metastore import Delete
from almanac.model.descriptors import Table
from tests.data.legacy import OldWriter, Written, convert_then_die
from tests.data.legacy import decode_record as decode_old
from tests.data.support import create, own_files


@dataclass
class Chain:
    """An old-format table and what each of its snapshots holds."""

    name: str
    schema: str
    table_id: int
    writer: OldWriter
    written: list[Written] = field(default_factory=list)


def _build(cat: Catalog) -> tuple[Chain, Chain]:
    """Table T over four tablets: two appends, ADD COLUMN and a widen, an
    append, DROP COLUMN, an overwrite, an append; table U: one append."""
    cat.execute([CreateZone(name="Z", partitions=4)])
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="N", type=ColumnType.INT32),
            ColumnDef(name="V", type=ColumnType.STRING),
        ],
        zone="Z",
        colocation=("ID",),  # the layout every table of the old format had
    )
    other = create(cat, "U", colocation=("ID",))
    old = OldWriter(cat)
    t = Chain("T", "PUBLIC", table.id, old)
    u = Chain("U", "PUBLIC", other.id, old)

    def batch(ids: range, **extra: list[object]) -> pa.Table:
        columns: dict[str, list[object]] = {
            "ID": list(ids),
            "N": [i * 10 for i in ids],
            "V": [f"v{i}" for i in ids],
        }
        columns.update(extra)
        return pa.table(columns)

    t.written.append(old.write("T", batch(range(40))))
    u.written.append(old.write("U", pa.table({"ID": [1, 2, 3], "V": ["a", "b", "c"]})))
    t.written.append(old.write("T", batch(range(40, 60))))
    old.execute([AddColumns(table="T", columns=(ColumnDef(name="X", type=ColumnType.DOUBLE),))])
    old.execute([AlterColumn(table="T", column="N", type=ColumnType.INT64)])
    t.written.append(old.write("T", batch(range(60, 70), X=[i / 4 for i in range(60, 70)])))
    old.execute([DropColumns(table="T", columns=("V",))])
    overwrite = pa.table({"ID": list(range(100, 130)), "N": [2**40 + i for i in range(30)]})
    t.written.append(old.write("T", overwrite, operation="overwrite"))
    t.written.append(old.write("T", pa.table({"ID": [130, 131], "N": [1, 2], "X": [0.5, 1.5]})))
    assert len({f.split("/tablet=")[1][0] for f in t.written[0].files}) > 1, "several tablets"
    return t, u


def _expected(
    cat: Catalog, chain: Chain, *, version: int | None = None, timestamp: int | None = None
) -> list[dict[str, object]] | None:
    """The rows the old format read: the schema at the version (None if the
    table did not exist), the newest snapshot at or before it, by column id."""
    at = cat.catalog(version) if version is not None else cat.catalog_at(timestamp or 0)
    table = at.table(chain.name, chain.schema)
    if table is None:
        return None
    chosen = None
    for written in chain.written:
        bound = (
            written.record.catalog_version if version is not None else written.record.commit_time
        )
        if bound <= (version if version is not None else timestamp or 0):
            chosen = written
    rows = () if chosen is None else chosen.rows
    projected = [{c.name: row.get(c.id) for c in table.columns} for row in rows]
    return sorted(projected, key=lambda r: int(str(r["ID"])))


def _read(
    cat: Catalog, chain: Chain, *, version: int | None = None, timestamp: int | None = None
) -> list[dict[str, object]] | None:
    try:
        got = read_table(cat, chain.name, chain.schema, version=version, timestamp=timestamp)
    except NotFoundError:
        return None
    return sorted(got.to_pylist(), key=lambda r: int(str(r["ID"])))


def _check_every_read(cat: Catalog, chain: Chain) -> None:
    for version in range(max(cat.earliest_version, 1), cat.latest_version + 1):
        assert _read(cat, chain, version=version) == _expected(cat, chain, version=version)
    times = {cat.catalog(v).activation_time for v in range(1, cat.latest_version + 1)}
    for written in chain.written:
        times |= {written.record.commit_time - 1, written.record.commit_time}
    for ts in sorted(times):
        assert _read(cat, chain, timestamp=ts) == _expected(cat, chain, timestamp=ts), ts
    assert _read(cat, chain) == _expected(cat, chain, version=cat.latest_version)


def _raw_records(cat: Catalog, table_id: int) -> dict[str, bytes]:
    return {kv.key: kv.value for kv in cat.metastore.range(snapshot_prefix(table_id)).kvs}


def _metadata_files(cat: Catalog, table_id: int) -> set[str]:
    root = Path(TableData.for_catalog(cat).warehouse.table_dir(table_id), "metadata")
    return {str(p) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_reads_refuse_before_and_match_after(cat: Catalog) -> None:
    t, u = _build(cat)
    with pytest.raises(WarehouseFormatError, match=r"almanac upgrade-warehouse <catalog>"):
        read_table(cat, "T")
    with pytest.raises(WarehouseFormatError, match="upgrade-warehouse"):
        read_table(cat, "U", version=cat.latest_version)
    old = {**_raw_records(cat, t.table_id), **_raw_records(cat, u.table_id)}
    everything = {
        p for chain in (t, u) for w in chain.written for p in (*w.files, w.record.manifest)
    }
    # Before the upgrade the janitor may refuse or run; it deletes nothing old.
    with contextlib.suppress(WarehouseFormatError):
        run_janitor(cat, grace_s=0)
    assert all(os.path.exists(p) for p in everything)
    report = upgrade_warehouse(cat)
    assert report.converted == {t.table_id: 5, u.table_id: 1}
    assert report.purged == [] and report.relocated == {}
    for chain in (t, u):
        _check_every_read(cat, chain)
        for written in chain.written:
            record = decode_record(written.key, cat.metastore.get(written.key).value)  # type: ignore[union-attr]
            before = decode_old(old[written.key])
            assert (
                record.snapshot_id,
                record.parent_id,
                record.commit_time,
                record.catalog_version,
                record.operation,
                record.write_id,
                record.origin,
            ) == (
                before.snapshot_id,
                before.parent_id,
                before.commit_time,
                before.catalog_version,
                before.operation,
                before.write_id,
                before.origin,
            )
            assert record.metadata.startswith(f"{warehouse_of(cat)}/{chain.table_id}/metadata/")
            assert not os.path.exists(before.manifest), "old manifests go once records switched"
            assert not os.path.exists(os.path.dirname(before.manifest))
            assert set(written.files) == {
                f.path for f in TableData.for_catalog(cat).files_of(record)
            }
    assert sorted(report.manifests_removed) == sorted(decode_old(v).manifest for v in old.values())
    assert _leftovers(cat, t.table_id) == _leftovers(cat, u.table_id) == []


def _leftovers(cat: Catalog, table_id: int) -> list[str]:
    """Staging keys, and directories of the table other than its metadata."""
    keys = [kv.key for kv in cat.metastore.range("data.staging.").kvs]
    root = Path(TableData.for_catalog(cat).warehouse.table_dir(table_id))
    dirs = [str(p) for p in root.iterdir() if p.name != "metadata"] if root.exists() else []
    return keys + dirs


def test_files_stay_where_they_were_and_survive_the_janitor(cat: Catalog) -> None:
    t, u = _build(cat)
    upgrade_warehouse(cat)
    kept = {p for chain in (t, u) for w in chain.written for p in w.files}
    assert all("/PUBLIC/" in p for p in kept), "converted files keep their old-layout paths"
    report = run_janitor(cat, grace_s=0)
    assert kept.isdisjoint(report.files_removed)
    assert all(os.path.exists(p) for p in kept)
    _check_every_read(cat, t)
    _check_every_read(cat, u)


def _id_is(value: int) -> BooleanExpression:
    return EqualTo(Reference("ID"), value)  # type: ignore[call-arg,arg-type]


def test_pyiceberg_reads_the_converted_tables(cat: Catalog) -> None:
    t, u = _build(cat)
    upgrade_warehouse(cat)
    data = TableData.for_catalog(cat)
    for chain in (t, u):
        location = data.metadata_location(chain.table_id)
        assert location is not None
        table = StaticTable.from_metadata(location)
        got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: int(r["ID"]))
        assert got == _expected(cat, chain, version=cat.latest_version)
    # The old release placed rows by its own hash; a key filter must still
    # find every row (a file labelled with a wrong bucket would be pruned).
    table = StaticTable.from_metadata(data.metadata_location(t.table_id) or "")
    for key in range(100, 132):
        found = table.scan(row_filter=_id_is(key)).to_arrow()
        assert found.column("ID").to_pylist() == [key]


def test_a_second_upgrade_changes_nothing_and_writes_go_on(cat: Catalog) -> None:
    t, _ = _build(cat)
    upgrade_warehouse(cat)
    revision = cat.metastore.revision
    files = _metadata_files(cat, t.table_id)
    again = upgrade_warehouse(cat)
    assert (again.converted, again.purged, again.manifests_removed) == ({}, [], [])
    assert cat.metastore.revision == revision
    assert _metadata_files(cat, t.table_id) == files
    before = _read(cat, t)
    assert before is not None
    upgraded_at = cat.latest_version
    write_table(cat, "T", pa.table({"ID": [200], "N": [7], "X": [2.5]}))
    after = _read(cat, t)
    assert after == [*before, {"ID": 200, "N": 7, "X": 2.5}]
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="W", type=ColumnType.STRING),))])
    bucketed = own_files(write_table(cat, "T", pa.table({"ID": [201], "N": [8], "W": ["w"]})))
    location = TableData.for_catalog(cat).metadata_location(t.table_id)
    iceberg = StaticTable.from_metadata(location or "")
    theirs = iceberg.scan().to_arrow().to_pylist()
    ours = read_table(cat, "T").to_pylist()
    assert sorted(theirs, key=lambda r: r["ID"]) == sorted(ours, key=lambda r: r["ID"])
    assert len(ours) == len(before) + 2
    # Converted files are unpartitioned; a write after the ALTER is bucketed.
    assert [f.name for f in iceberg.spec().fields] == ["tablet"]
    planned = {task.file.file_path: task.file for task in iceberg.scan().plan_files()}
    assert bucketed and all(len(planned[p].partition) == 1 for p in bucketed)
    converted = [task.file for task in iceberg.scan(row_filter=_id_is(100)).plan_files()]
    assert converted and all(len(f.partition) == 0 for f in converted)
    write_table(cat, "T", pa.table({"ID": [300]}), operation="overwrite")
    assert read_table(cat, "T").column("ID").to_pylist() == [300]
    for version in range(1, upgraded_at):  # later writes left the history as it was
        assert _read(cat, t, version=version) == _expected(cat, t, version=version)


def test_expiry_after_the_upgrade_keeps_old_layout_files(cat: Catalog) -> None:
    """Files of the old layout lie outside the table's id directory: like a
    registered table's, they are never deleted (only the table's own are)."""
    t, _ = _build(cat)
    upgrade_warehouse(cat)
    before_overwrite = set(t.written[2].files)
    expire_data(cat, "T", older_than=t.written[4].record.commit_time)
    assert all(os.path.exists(p) for p in before_overwrite)
    assert all(os.path.exists(p) for p in t.written[4].files)
    assert _read(cat, t) == _expected(cat, t, version=cat.latest_version)


def test_an_old_warehouse_without_a_marker_is_adopted_by_its_catalog(cat: Catalog) -> None:
    """A warehouse from before markers (only old-layout records name its
    files) is proven by them: opening its catalog writes the marker."""
    t, _ = _build(cat)
    warehouse = TableData.for_catalog(cat).warehouse
    marker = Path(warehouse.marker)
    owner = marker.read_text(encoding="utf-8")
    marker.unlink()
    with almanac.connect(cat.target) as node:
        assert marker.read_text(encoding="utf-8") == owner
        assert t.table_id in upgrade_warehouse(node).converted
        _check_every_read(node, t)


def test_cli_upgrades_in_another_process(cat: Catalog, tmp_path: Path) -> None:
    t, u = _build(cat)
    target = str(tmp_path / "data")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-m", "almanac.cli", "upgrade-warehouse", target],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "tables converted: 2" in run.stdout
    assert f"table {t.table_id}: 5 snapshots" in run.stdout
    assert f"table {u.table_id}: 1 snapshots" in run.stdout
    assert "old manifests removed: 6" in run.stdout
    cat.catch_up()
    _check_every_read(cat, t)
    _check_every_read(cat, u)
    again = subprocess.run(
        [sys.executable, "-m", "almanac.cli", "upgrade-warehouse", target],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert again.returncode == 0 and "tables converted: 0" in again.stdout


def test_a_concurrent_old_commit_fails_the_switch_cleanly(cat: Catalog) -> None:
    t, _ = _build(cat)
    data = TableData.for_catalog(cat)
    conversion = convert_table(cat, data, t.table_id)
    assert conversion is not None and conversion.written
    # A process still running the old release commits meanwhile.
    t.written.append(t.writer.write("T", pa.table({"ID": [140], "N": [3]})))
    records = _raw_records(cat, t.table_id)
    assert not publish(data, conversion, report := UpgradeReport())
    assert report.converted == {}
    assert _raw_records(cat, t.table_id) == records
    assert not any(os.path.exists(p) for p in conversion.written)
    with pytest.raises(WarehouseFormatError):
        read_table(cat, "T")
    assert upgrade_warehouse(cat).converted[t.table_id] == 6
    _check_every_read(cat, t)


def test_a_run_killed_before_the_switch_leaves_the_old_records(
    cat: Catalog, tmp_path: Path
) -> None:
    t, u = _build(cat)
    records = _raw_records(cat, t.table_id)
    process = multiprocessing.get_context("spawn").Process(
        target=convert_then_die, args=(str(tmp_path / "data"), t.table_id)
    )
    process.start()
    process.join()
    assert process.exitcode == -signal.SIGKILL
    assert _raw_records(cat, t.table_id) == records
    orphans = _metadata_files(cat, t.table_id)
    assert orphans, "the killed run had written its metadata"
    with pytest.raises(WarehouseFormatError):
        read_table(cat, "T")
    upgrade_warehouse(cat)
    _check_every_read(cat, t)
    # Once the dead run's staging lease is gone, the janitor collects its files.
    store = cat.metastore
    for kv in store.range("data.staging.").kvs:
        store.revoke_lease(kv.lease)
    report = run_janitor(cat, grace_s=0)
    assert orphans <= set(report.files_removed)
    assert not any(os.path.exists(p) for p in orphans)
    _check_every_read(cat, t)
    _check_every_read(cat, u)


def test_files_under_a_digit_named_schema_move_out_of_the_janitors_way(cat: Catalog) -> None:
    doomed = create(cat, "D")
    schema = str(doomed.id)
    cat.execute([CreateSchema(schema)])
    table = create_in(cat, schema)
    old = OldWriter(cat)
    chain = Chain("T", schema, table.id, old)
    chain.written.append(old.write("T", pa.table({"ID": [1, 2, 3], "V": ["a", "b", "c"]}), schema))
    warehouse = TableData.for_catalog(cat).warehouse
    assert all(warehouse.table_of(p) == doomed.id for p in chain.written[0].files)
    report = upgrade_warehouse(cat)
    assert set(report.relocated) == set(chain.written[0].files)
    assert all(warehouse.table_of(p) == table.id for p in report.relocated.values())
    assert not any(os.path.exists(p) for p in report.relocated)
    write_table(cat, "D", pa.table({"ID": [9], "V": ["z"]}))
    cat.execute([DropTable("D")])
    cat.checkpoint_log()
    janitor = run_janitor(cat, grace_s=0)
    assert janitor.tables_purged == [doomed.id]
    assert read_table(cat, "T", schema).sort_by("ID").to_pylist() == [
        {"ID": 1, "V": "a"},
        {"ID": 2, "V": "b"},
        {"ID": 3, "V": "c"},
    ]


def create_in(cat: Catalog, schema: str) -> Table:
    cat.execute(
        [
            CreateTable(
                name="T",
                schema=schema,
                columns=(
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    ColumnDef(name="V", type=ColumnType.STRING),
                ),
                primary_key=("ID",),
            )
        ]
    )
    table = cat.catalog().table("T", schema)
    assert table is not None
    return table


def test_truncated_log_and_dropped_tables(cat: Catalog) -> None:
    t, u = _build(cat)
    cat.execute([DropTable("U")])
    earliest = cat.checkpoint_log()
    assert earliest > t.written[-1].record.catalog_version, "every record predates the log"
    u_files = [p for w in u.written for p in w.files]
    report = upgrade_warehouse(cat)
    assert report.converted == {t.table_id: 5}
    assert report.purged == [u.table_id]
    assert _raw_records(cat, u.table_id) == {}
    assert not any(os.path.exists(p) for p in u_files)
    assert _read(cat, t) == _expected(cat, t, version=cat.latest_version)
    assert run_janitor(cat, grace_s=0).errors == {}


def test_an_expired_prefix_and_empty_commits_convert(cat: Catalog) -> None:
    create(cat)
    old = OldWriter(cat)
    chain = Chain("T", "PUBLIC", cat.catalog().table("T").id, old)  # type: ignore[union-attr]
    empty = pa.table({"ID": pa.array([], pa.int64()), "V": pa.array([], pa.string())})
    chain.written.append(old.write("T", pa.table({"ID": [1, 2], "V": ["a", "b"]})))
    chain.written.append(old.write("T", empty))
    chain.written.append(old.write("T", pa.table({"ID": [3], "V": ["c"]}), operation="overwrite"))
    chain.written.append(old.write("T", empty))
    chain.written.append(old.write("T", empty, operation="overwrite"))
    chain.written.append(old.write("T", pa.table({"ID": [4], "V": ["d"]})))
    first = chain.written[0].record
    # What the old release's expiry did: drop the oldest records, then files.
    cat.metastore.txn(
        [],
        [
            Delete(chain.written[0].key),
            Delete(write_key(first.write_id)),
            Delete(chain.written[1].key),
            Delete(write_key(chain.written[1].record.write_id)),
        ],
    )
    del chain.written[:2]
    assert upgrade_warehouse(cat).converted == {chain.table_id: 4}
    with pytest.raises(SnapshotExpiredError):
        read_table(cat, "T", timestamp=first.commit_time)
    for written in chain.written:
        at = written.record.commit_time
        assert _read(cat, chain, timestamp=at) == _expected(cat, chain, timestamp=at)
    assert _read(cat, chain) == [{"ID": 4, "V": "d"}]
    location = TableData.for_catalog(cat).metadata_location(chain.table_id)
    assert StaticTable.from_metadata(location or "").scan().to_arrow().to_pylist() == [
        {"ID": 4, "V": "d"}
    ]


def test_a_broken_table_is_reported_and_the_others_converted(cat: Catalog, tmp_path: Path) -> None:
    t, u = _build(cat)
    records = _raw_records(cat, t.table_id)
    missing = t.written[2].record.manifest
    os.remove(missing)
    report = upgrade_warehouse(cat)
    assert report.converted == {u.table_id: 1}
    assert set(report.errors) == {t.table_id}
    assert missing in report.errors[t.table_id] and "missing" in report.errors[t.table_id]
    assert _raw_records(cat, t.table_id) == records
    assert _metadata_files(cat, t.table_id) == set(), "its first snapshots' metadata was deleted"
    assert _leftovers(cat, t.table_id) == []
    with pytest.raises(WarehouseFormatError):
        read_table(cat, "T")
    _check_every_read(cat, u)
    run = subprocess.run(
        [sys.executable, "-m", "almanac.cli", "upgrade-warehouse", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert run.returncode == 1
    assert f"table {t.table_id} was not converted" in run.stderr
    assert "tables converted: 0" in run.stdout


def test_statistics_of_every_type_still_prune_correctly(cat: Catalog) -> None:
    """The tagged bounds of the old manifests become Iceberg bounds: a key
    filter on any column, ours or pyiceberg's, still finds its row."""
    kinds = {
        "B": ColumnDef(name="B", type=ColumnType.BOOLEAN),
        "I8": ColumnDef(name="I8", type=ColumnType.INT8),
        "I16": ColumnDef(name="I16", type=ColumnType.INT16),
        "F": ColumnDef(name="F", type=ColumnType.FLOAT),
        "D": ColumnDef(name="D", type=ColumnType.DOUBLE),
        "DEC": ColumnDef(name="DEC", type=ColumnType.DECIMAL, precision=10, scale=2),
        "S": ColumnDef(name="S", type=ColumnType.STRING),
        "BIN": ColumnDef(name="BIN", type=ColumnType.BYTES),
        "DT": ColumnDef(name="DT", type=ColumnType.DATE),
        "TM": ColumnDef(name="TM", type=ColumnType.TIME),
        "TS": ColumnDef(name="TS", type=ColumnType.TIMESTAMP),
        "TZ": ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
    }
    cat.execute([CreateZone(name="TWO", partitions=2)])  # files of several rows
    table = create(
        cat,
        columns=[ColumnDef(name="ID", type=ColumnType.INT64, nullable=False), *kinds.values()],
        zone="TWO",
    )
    base = dt.datetime(2024, 5, 1, 12, 0)

    def row(i: int) -> dict[str, object]:
        return {
            "ID": i,
            "B": i % 2 == 0,
            "I8": i - 50,
            "I16": i * 100,
            "F": i + 0.5,
            "D": i * 1.25,
            "DEC": (decimal.Decimal(i) / 4).quantize(decimal.Decimal("0.01")),
            "S": f"s{i:03d}",
            "BIN": bytes([i, i + 1]),
            "DT": dt.date(2020, 1, 1) + dt.timedelta(days=i),
            "TM": dt.time(i % 24, i % 60, 0, i),
            "TS": base + dt.timedelta(hours=i),
            "TZ": (base + dt.timedelta(minutes=i)).replace(tzinfo=dt.UTC),
        }

    old = OldWriter(cat)
    schema = arrow_schema(table)
    for batch in (range(0, 10), range(10, 20), range(20, 30)):
        old.write("T", pa.Table.from_pylist([row(i) for i in batch], schema=schema))
    upgrade_warehouse(cat)
    location = TableData.for_catalog(cat).metadata_location(table.id)
    iceberg = StaticTable.from_metadata(location or "")
    for i in (0, 13, 29):
        wanted = row(i)
        for name in ("ID", *kinds):
            if name == "B":
                continue  # half the rows match
            got = read_table(cat, "T", filters=[Predicate(name, "=", wanted[name])])
            assert got.column("ID").to_pylist() == [i], name
        for name in ("ID", "I16", "S", "DT", "TS", "DEC"):
            theirs = iceberg.scan(row_filter=_equal(name, wanted[name])).to_arrow()
            assert theirs.column("ID").to_pylist() == [i], name


def _equal(name: str, value: object) -> BooleanExpression:
    return EqualTo(Reference(name), value)  # type: ignore[call-arg,arg-type]


def test_two_upgrades_at_once_convert_each_table_once(cat: Catalog) -> None:
    t, _ = _build(cat)
    data = TableData.for_catalog(cat)
    first = convert_table(cat, data, t.table_id)
    second = convert_table(cat, data, t.table_id)
    assert first is not None and second is not None
    assert publish(data, first, UpgradeReport())
    assert not publish(data, second, UpgradeReport())
    assert all(os.path.exists(p) for p in first.written)
    assert not any(os.path.exists(p) for p in second.written)
    assert convert_table(cat, data, t.table_id) is None
    _check_every_read(cat, t)

"""Merge-on-read deletes through the REST catalog: position delete files a
client commits (as DuckDB and Spark's merge-on-read DELETE write them) are
accepted, and every Almanac reader applies them: ``read_table``, a tablet
server's read of each tablet (from its local copies), the console's row
counts; Spark's native scan refuses them. Compaction folds them in, the
janitor keeps live ones and collects them once nothing needs them, a delete
landing during a compaction stops it, and deletes Almanac would not apply
(equality deletes, deletion vectors, files outside the table) are refused
with a 400 saying why.

pyiceberg 0.12's ``Table.delete`` writes copy-on-write, so the delete files
and their manifest are written here by hand, with pyiceberg's manifest code."""

from __future__ import annotations

import datetime as dt
import io
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import (
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import UpgradeFormatVersionUpdate
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record

from almanac import Catalog, RetentionPolicy
from almanac.console.routes import table_data
from almanac.data import (
    TableData,
    compact,
    expire_data,
    read_table,
    run_janitor,
    write_table,
)
from almanac.data.compaction import plan_compaction, run_compaction
from almanac.data.reading import Predicate
from almanac.data.tablets import table_partitions
from almanac.errors import CatalogError, ConflictError, CorruptDataError
from almanac.tserver.local import LocalTablet, LocalTablets
from almanac.tserver.reads import tablet_rows
from almanac.tserver.ticket import TabletTicket
from tests.iceberg_rest.conftest import ADMIN_TOKEN, own_server, rest_catalog
from tests.iceberg_rest.tables import SCHEMA, Row, arrow_rows, batch, scanned

FILE_PATH = 2147483546
POS = 2147483545
_DELETE_SCHEMA = pa.schema(
    [
        pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(FILE_PATH).encode()}),
        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(POS).encode()}),
    ]
)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RestCatalog, Catalog]]:
    """A server of its own (its janitor runs at grace 0 over the whole
    warehouse) whose second node keeps one version, so expiry reaches back."""
    directory = tmp_path_factory.mktemp("merge-on-read")
    with own_server(directory, retention=RetentionPolicy(keep_versions=1)) as (server, node):
        client = rest_catalog(server, ADMIN_TOKEN)
        client.create_namespace("MOR")
        yield client, node


class _DeleteManifest(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _AddDeletes(_FastAppendFiles):
    """A snapshot that adds delete files in a delete manifest of its own."""

    deletes: list[IcebergFile]

    def _process_manifests(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        spec = self._transaction.table_metadata.spec()
        with _DeleteManifest(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        ) as writer:
            for file in self.deletes:
                writer.add_entry(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=self._snapshot_id,
                        data_file=file,
                    )
                )
        return [*manifests, writer.to_manifest_file()]


def _delete_file(
    table: Table,
    deleted: list[tuple[str, int]],
    *,
    path: str | None = None,
    content: DataFileContent = DataFileContent.POSITION_DELETES,
    file_format: FileFormat = FileFormat.PARQUET,
    partition: Record | None = None,
) -> IcebergFile:
    """A position delete file of ``(file_path, pos)`` rows, written below the table."""
    rows = sorted(deleted)
    sink = io.BytesIO()
    columns = {"file_path": [p for p, _ in rows], "pos": [n for _, n in rows]}
    pq.write_table(pa.Table.from_pydict(columns, _DELETE_SCHEMA), sink)
    path = path or f"{table.location()}/data/deletes-{uuid.uuid4().hex}.parquet"
    with table.io.new_output(path).create() as out:
        out.write(sink.getvalue())
    file = IcebergFile.from_args(
        content=content,
        file_path=path,
        file_format=file_format,
        partition=partition or Record(),
        record_count=len(rows),
        file_size_in_bytes=len(sink.getvalue()),
        lower_bounds={FILE_PATH: rows[0][0].encode()},
        upper_bounds={FILE_PATH: rows[-1][0].encode()},
        equality_ids=[1] if content == DataFileContent.EQUALITY_DELETES else None,
    )
    file.spec_id = table.spec().spec_id
    return file


def _commit_deletes(table: Table, *files: IcebergFile) -> None:
    tx = table.transaction()
    producer = _AddDeletes(operation=Operation.DELETE, transaction=tx, io=table.io)
    producer.deletes = list(files)
    with producer:
        pass
    tx.commit_transaction()


def _places(table: Table) -> dict[int, tuple[str, int]]:
    """Where each row (by ID) is: its data file and its position there."""
    places: dict[int, tuple[str, int]] = {}
    for task in table.scan().plan_files():
        path = task.file.file_path
        with table.io.new_input(path).open() as stream:
            ids = pq.read_table(stream, columns=["ID"]).column("ID").to_pylist()
        for pos, key in enumerate(ids):
            places[key] = (path, pos)
    return places


def _table(client: RestCatalog, name: str, groups: list[list[Row]]) -> Table:
    """Table ``MOR.<name>`` with one data file per group of rows."""
    table = client.create_table(("MOR", name), SCHEMA)
    for rows in groups:
        table.append(batch(rows))
    loaded: Table = client.load_table(("MOR", name))
    return loaded


def _rows(first: int, last: int) -> list[Row]:
    return [(i, f"n{i}", i * 10) for i in range(first, last + 1)]


def _tablet_server_rows(cat: Catalog, name: str, tmp: Path) -> list[Row]:
    """Every tablet of the table as a tablet server streams it, each from
    its local copies of the tablet's files."""
    cat.catch_up()
    version = cat.catalog()
    table = version.table(name, "MOR")
    assert table is not None
    data = TableData.for_catalog(cat)
    current = data.current(table.id)
    assert current is not None
    local = LocalTablets(tmp, data.warehouse)
    batches: list[pa.RecordBatch] = []
    for partition in range(table_partitions(version, table)):
        files = tuple(f for f in current.files if f.partition == partition)
        tablet = LocalTablet(table.id, partition, partition, table.table_version, 0)
        local.sync(tablet, files)
        ticket = TabletTicket(table.id, partition, version.version)
        schema, read = tablet_rows(cat, data, local, ticket, partition, batch_rows=2)
        batches += list(read)
    return arrow_rows(pa.Table.from_batches(batches, schema=schema))


def test_position_deletes_across_files_read_the_same_everywhere(
    place: tuple[RestCatalog, Catalog], tmp_path: Path
) -> None:
    client, cat = place
    table = _table(client, "READS", [_rows(1, 4), _rows(5, 8), _rows(9, 12)])
    where = _places(table)
    # One delete file deleting rows of two data files, then two delete files at once.
    _commit_deletes(table, _delete_file(table, [where[2], where[6]]))
    table = client.load_table(("MOR", "READS"))
    _commit_deletes(
        table, _delete_file(table, [where[7]]), _delete_file(table, [where[11], where[12]])
    )
    expected = [r for r in _rows(1, 12) if r[0] not in (2, 6, 7, 11, 12)]

    table = client.load_table(("MOR", "READS"))
    assert scanned(table) == expected  # pyiceberg applies them itself: the oracle
    cat.catch_up()
    assert arrow_rows(read_table(cat, "READS", "MOR")) == expected
    assert arrow_rows(read_table(cat, "READS", "MOR", filters=[Predicate("ID", ">", 5)])) == [
        r for r in expected if r[0] > 5
    ]
    assert read_table(cat, "READS", "MOR", columns=[]).num_rows == len(expected)
    assert _tablet_server_rows(cat, "READS", tmp_path) == expected
    described = cat.catalog().table("READS", "MOR")
    assert described is not None
    shown = table_data(cat, described.id)
    assert shown.missing is None and shown.rows[-1].rows == len(expected)


def test_deletes_of_a_partitioned_table_apply_within_their_partition(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "QTY"))
    table = client.create_table(("MOR", "PARTED"), SCHEMA, partition_spec=spec)
    table.append(batch([(1, "a", 1), (2, "b", 1), (3, "c", 2), (4, "d", 2)]))
    table = client.load_table(("MOR", "PARTED"))
    where = _places(table)
    _commit_deletes(
        table,
        _delete_file(table, [where[2]], partition=Record(1)),
        _delete_file(table, [where[3]], partition=Record(2)),
    )
    expected = [(1, "a", 1), (4, "d", 2)]
    assert scanned(client.load_table(("MOR", "PARTED"))) == expected
    cat.catch_up()
    assert arrow_rows(read_table(cat, "PARTED", "MOR")) == expected
    assert arrow_rows(read_table(cat, "PARTED", "MOR", filters=[Predicate("QTY", "=", 2)])) == [
        (4, "d", 2)
    ]
    compact(cat, "PARTED", "MOR")
    assert arrow_rows(read_table(cat, "PARTED", "MOR")) == expected
    assert scanned(client.load_table(("MOR", "PARTED"))) == expected


def test_compaction_folds_deletes_in_and_the_janitor_keeps_them_until_unneeded(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    table = _table(client, "FOLD", [_rows(1, 3), _rows(4, 6), _rows(7, 9)])
    where = _places(table)
    deletes = [_delete_file(table, [where[1], where[5]]), _delete_file(table, [where[9]])]
    _commit_deletes(table, *deletes)
    expected = [r for r in _rows(1, 9) if r[0] not in (1, 5, 9)]
    paths = [Path(d.file_path.removeprefix("file:")) for d in deletes]

    run_janitor(cat, grace_s=0)
    assert all(p.exists() for p in paths), "the janitor deleted a live delete file"
    assert arrow_rows(read_table(cat, "FOLD", "MOR")) == expected

    assert compact(cat, "FOLD", "MOR") is not None
    assert arrow_rows(read_table(cat, "FOLD", "MOR")) == expected
    compacted = client.load_table(("MOR", "FOLD"))
    assert scanned(compacted) == expected
    assert all(not task.delete_files for task in compacted.scan().plan_files())
    current = compacted.current_snapshot()
    assert current is not None
    live = [
        m
        for m in current.manifests(compacted.io)
        if m.content == ManifestContent.DELETES and (m.has_added_files() or m.has_existing_files())
    ]
    assert not live, "the compacted snapshot still lists delete files"

    expire_data(cat, "FOLD", "MOR", older_than=dt.datetime.now(dt.UTC))
    run_janitor(cat, grace_s=0)
    assert not any(p.exists() for p in paths), "unreferenced delete files were kept"
    assert arrow_rows(read_table(cat, "FOLD", "MOR")) == expected


def test_compacting_one_tablet_keeps_the_delete_files_other_files_need(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    table = _table(client, "PART", [_rows(1, 2), _rows(3, 4), _rows(5, 6), _rows(7, 8)])
    where = _places(table)
    _commit_deletes(table, _delete_file(table, [where[k] for k in (1, 3, 5, 7)]))
    expected = [r for r in _rows(1, 8) if r[0] % 2 == 0]
    cat.catch_up()
    data = TableData.for_catalog(cat)
    described = cat.catalog().table("PART", "MOR")
    assert described is not None
    current = data.current(described.id)
    assert current is not None
    tablets = sorted({f.partition for f in current.files})
    for tablet in tablets:
        compact(cat, "PART", "MOR", tablet=tablet)
        assert arrow_rows(read_table(cat, "PART", "MOR")) == expected
        assert scanned(client.load_table(("MOR", "PART"))) == expected
    last = client.load_table(("MOR", "PART"))
    assert all(not task.delete_files for task in last.scan().plan_files())


def test_an_overwrite_drops_the_delete_files_and_an_append_keeps_them(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    table = _table(client, "OVER", [_rows(1, 3), _rows(4, 6)])
    where = _places(table)
    _commit_deletes(table, _delete_file(table, [where[2], where[5]]))
    cat.catch_up()
    write_table(cat, "OVER", batch(_rows(7, 8)), "MOR")
    expected = [r for r in _rows(1, 8) if r[0] not in (2, 5)]
    assert arrow_rows(read_table(cat, "OVER", "MOR")) == expected
    assert scanned(client.load_table(("MOR", "OVER"))) == expected

    write_table(cat, "OVER", batch(_rows(2, 3)), "MOR", operation="overwrite")
    assert arrow_rows(read_table(cat, "OVER", "MOR")) == _rows(2, 3)
    replaced = client.load_table(("MOR", "OVER"))
    assert scanned(replaced) == _rows(2, 3)
    assert all(not task.delete_files for task in replaced.scan().plan_files())
    current = replaced.current_snapshot()
    assert current is not None
    assert not [
        m
        for m in current.manifests(replaced.io)
        if m.content == ManifestContent.DELETES and (m.has_added_files() or m.has_existing_files())
    ]


def test_a_delete_landing_during_a_compaction_stops_it(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    table = _table(client, "RACE", [_rows(1, 3), _rows(4, 6)])
    where = _places(table)
    _commit_deletes(table, _delete_file(table, [where[1]]))
    cat.catch_up()
    data = TableData.for_catalog(cat)
    plan = plan_compaction(cat, data, "RACE", "MOR")
    assert [f.path for group in plan.groups for f in group] == [where[1][0]]
    table = client.load_table(("MOR", "RACE"))
    _commit_deletes(table, _delete_file(table, [where[2], where[4]]))
    with pytest.raises(ConflictError, match="deleted since it read them"):
        run_compaction(data, plan)
    expected = [r for r in _rows(1, 6) if r[0] not in (1, 2, 4)]
    assert arrow_rows(read_table(cat, "RACE", "MOR")) == expected
    assert scanned(client.load_table(("MOR", "RACE"))) == expected


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("equality", r"equality delete file .* Almanac applies position deletes only"),
        ("puffin", r"is PUFFIN; .* format version 2 .*deletion vectors"),
        ("outside", r"delete file .* is not where the table's files belong"),
    ],
)
def test_deletes_almanac_would_not_apply_are_refused_saying_why(
    place: tuple[RestCatalog, Catalog], tmp_path: Path, kind: str, reason: str
) -> None:
    client, cat = place
    name = f"NO_{kind.upper()}"
    table = _table(client, name, [_rows(1, 3)])
    where = _places(table)
    if kind == "equality":
        bad = _delete_file(table, [where[1]], content=DataFileContent.EQUALITY_DELETES)
    elif kind == "puffin":
        bad = _delete_file(table, [where[1]], file_format=FileFormat.PUFFIN)
    else:
        bad = _delete_file(table, [where[1]], path=str(tmp_path / "elsewhere.parquet"))
    with pytest.raises(BadRequestError, match=reason):
        _commit_deletes(table, bad)
    cat.catch_up()
    assert arrow_rows(read_table(cat, name, "MOR")) == _rows(1, 3)
    assert scanned(client.load_table(("MOR", name))) == _rows(1, 3)


def test_an_upgrade_to_format_version_3_is_refused_so_no_deletion_vector_arrives(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, _ = place
    table = _table(client, "V3", [_rows(1, 2)])
    with pytest.raises(BadRequestError, match=r"format version 2 .* deletion vectors"):
        client.commit_table(
            table, (), (UpgradeFormatVersionUpdate.model_validate({"format-version": 3}),)
        )
    assert client.load_table(("MOR", "V3")).metadata.format_version == 2


def test_a_missing_or_damaged_delete_file_is_an_error_naming_it_never_deleted_rows(
    place: tuple[RestCatalog, Catalog],
) -> None:
    client, cat = place
    table = _table(client, "DAMAGE", [_rows(1, 3)])
    where = _places(table)
    delete = _delete_file(table, [where[2]])
    _commit_deletes(table, delete)
    path = Path(delete.file_path.removeprefix("file:"))
    cat.catch_up()
    intact = path.read_bytes()
    path.write_bytes(intact + b"\0")
    with pytest.raises(CorruptDataError, match=f"Delete file '{delete.file_path}'.* damaged"):
        read_table(cat, "DAMAGE", "MOR")
    path.unlink()
    with pytest.raises(CatalogError, match=f"Delete file '{delete.file_path}'.* missing"):
        read_table(cat, "DAMAGE", "MOR")
    path.write_bytes(intact)
    assert arrow_rows(read_table(cat, "DAMAGE", "MOR")) == [(1, "n1", 10), (3, "n3", 30)]

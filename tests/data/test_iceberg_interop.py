"""Our tables are Iceberg tables: pyiceberg alone, with no Almanac code in
its read path, reads what our writers produced, through schema changes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import BooleanExpression, EqualTo, Reference
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import StaticTable

from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    ConstantDefault,
    CreateSchema,
    CreateTable,
    DataError,
    DropColumns,
    NotFoundError,
    RenameTable,
    ValidationError,
    WarehouseFormatError,
)
from almanac.data import TableData, read_table, write_table
from almanac.data.snapshots import snapshot_key
from almanac.iceberg import load_table, metadata_location
from tests.data.support import append, commit_plain_file, create

_ID = (ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),)


def _id_is(value: int) -> BooleanExpression:
    return EqualTo(Reference("ID"), value)  # type: ignore[call-arg,arg-type]


def _pyiceberg_rows(location: str) -> pa.Table:
    table = StaticTable.from_metadata(location)
    return table.scan().to_arrow().sort_by("ID")


def _ours(cat: Catalog) -> pa.Table:
    return read_table(cat, "T").sort_by("ID")


def test_pyiceberg_reads_every_state_after_schema_changes(cat: Catalog, tmp_path: Path) -> None:
    table = create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="N", type=ColumnType.INT32),
            ColumnDef(name="V", type=ColumnType.STRING),
        ],
    )
    data = TableData.for_catalog(cat)
    write_table(cat, "T", pa.table({"ID": [1, 2], "N": [10, 20], "V": ["a", "b"]}))

    def check() -> None:
        location = data.metadata_location(table.id)
        assert location is not None
        theirs = _pyiceberg_rows(location)
        ours = _ours(cat)
        assert theirs.column_names == ours.column_names
        assert theirs.to_pylist() == ours.to_pylist()

    check()
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="X", type=ColumnType.DOUBLE),))])
    write_table(cat, "T", pa.table({"ID": [3], "N": [30], "V": ["c"], "X": [1.5]}))
    check()
    cat.execute([RenameTable("T", "T2"), RenameTable("T2", "T")])
    write_table(cat, "T", pa.table({"ID": [4], "N": [40], "V": ["d"], "X": [2.5]}))
    check()
    cat.execute([AlterColumn(table="T", column="N", type=ColumnType.INT64)])
    write_table(cat, "T", pa.table({"ID": [5], "N": [2**40], "V": ["e"]}))
    check()
    cat.execute([DropColumns(table="T", columns=("X",))])
    write_table(cat, "T", pa.table({"ID": [6], "V": ["f"]}))
    check()
    write_table(cat, "T", pa.table({"ID": [7], "V": ["g"]}), operation="overwrite")
    check()
    assert _ours(cat).column("ID").to_pylist() == [7]


def test_load_table_and_bucket_pruning(cat: Catalog, tmp_path: Path) -> None:
    create(cat, colocation=("ID",))
    append(cat, list(range(200)))
    target = str(tmp_path / "data")
    table = load_table(target, "PUBLIC.T")
    assert sorted(table.scan().to_arrow().column("ID").to_pylist()) == list(range(200))
    planned = list(table.scan(row_filter=_id_is(42)).plan_files())
    everything = list(table.scan().plan_files())
    assert 1 <= len(planned) < len(everything), "a key filter prunes other buckets"
    assert 42 in table.scan(row_filter=_id_is(42)).to_arrow().column("ID").to_pylist()
    assert metadata_location(target, "T") == table.metadata_location
    with pytest.raises(NotFoundError):
        load_table(target, "PUBLIC.NOPE")
    create(cat, "EMPTY")
    with pytest.raises(CatalogError, match="no data yet"):
        load_table(target, "EMPTY")


def test_records_of_the_old_json_format_are_refused(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1])
    store = cat.log.store
    key = snapshot_key(table.id, 1)
    old = b'{"table":2,"id":1,"parent":null,"time":1,"version":1,"op":"append",'
    old += b'"write":"w","manifest":"/x/_manifests/2-1-a.json","origin":[1,1]}'
    store.put(key, old)
    with pytest.raises(WarehouseFormatError, match="upgrade-warehouse"):
        read_table(cat, "T")


def test_pyiceberg_reads_an_added_column_as_its_initial_default(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1])
    added = ColumnDef(name="X", type=ColumnType.INT32, default=ConstantDefault(7))
    cat.execute([AddColumns(table="T", columns=(added,))])
    cat.execute([AlterColumn(table="T", column="X", default=ConstantDefault(8))])
    write_table(cat, "T", pa.table({"ID": [2], "V": ["b"]}))
    location = TableData.for_catalog(cat).metadata_location(table.id)
    assert location is not None
    field = StaticTable.from_metadata(location).schema().find_field("X")
    assert (field.initial_default, field.write_default) == (7, 8)
    assert _ours(cat).column("X").to_pylist() == [7, 8]
    assert _pyiceberg_rows(location).column("X").to_pylist() == [7, 8]


def test_pyiceberg_reads_and_prunes_a_nanosecond_time_key(cat: Catalog, tmp_path: Path) -> None:
    """Iceberg's ``time`` is microseconds: a TIME(9) column is stored in
    microseconds too (a file of nanoseconds is one no Iceberg reader opens),
    and a value with a nanosecond remainder is refused, not truncated."""
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.TIME, precision=9, nullable=False),
            ColumnDef(name="V", type=ColumnType.INT32),
        ],
    )
    micros = [0, 1, 43_200_000_001, 86_399_999_999]
    write_table(cat, "T", pa.table({"ID": pa.array(micros, pa.time64("us")), "V": [1, 2, 3, 4]}))
    nanos = pa.array([5_000, 7_000_000], pa.time64("ns"))
    write_table(cat, "T", pa.table({"ID": nanos, "V": [5, 6]}))
    with pytest.raises(DataError, match="'ID'"):
        write_table(cat, "T", pa.table({"ID": pa.array([1], pa.time64("ns")), "V": [7]}))
    location = metadata_location(str(tmp_path / "data"), "T")
    theirs, ours = _pyiceberg_rows(location), _ours(cat)
    assert theirs.to_pylist() == ours.to_pylist()
    assert ours.num_rows == 6
    table = StaticTable.from_metadata(location)
    for value in theirs.column("ID").to_pylist():
        found = table.scan(row_filter=_id_is(value)).to_arrow()
        assert found.column("ID").to_pylist() == [value]


def test_load_table_finds_names_that_hold_dots(cat: Catalog, tmp_path: Path) -> None:
    """A schema or table name may hold a dot; "S.T" resolves to the one
    existing table it can name, an ambiguous name is a ValidationError, and
    ``schema=`` says which is meant."""
    target = str(tmp_path / "data")
    cat.execute([CreateSchema(name="S.X")])
    create(cat, "T")
    cat.execute([CreateTable(name="T", schema="S.X", columns=_ID, primary_key=("ID",))])
    create(cat, "a.b")
    create(cat, "..")
    write_table(cat, "T", pa.table({"ID": [1]}), "S.X")
    for name in ("a.b", ".."):
        write_table(cat, name, pa.table({"ID": [2]}))
    assert load_table(target, "S.X.T").scan().to_arrow().column("ID").to_pylist() == [1]
    assert load_table(target, "T", schema="S.X").scan().to_arrow().num_rows == 1
    for name in ("a.b", "..", "PUBLIC.a.b", "PUBLIC..."):
        assert load_table(target, name).scan().to_arrow().column("ID").to_pylist() == [2]
    cat.execute([CreateSchema(name="S")])
    cat.execute([CreateTable(name="X.T", schema="S", columns=_ID, primary_key=("ID",))])
    with pytest.raises(ValidationError, match="ambiguous"):
        metadata_location(target, "S.X.T")
    with pytest.raises(NotFoundError, match=r"'NOPE' of schema 'S\.X'"):
        metadata_location(target, "NOPE", schema="S.X")


def test_a_nanosecond_time_file_of_an_older_release_reads_floored(cat: Catalog) -> None:
    """Files written when TIME(9) was stored in nanoseconds read as the
    microseconds Iceberg keeps, floored (as Iceberg floors), not as a
    DataError."""
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="T", type=ColumnType.TIME, precision=9),
        ],
    )
    snapshot = write_table(
        cat, "T", pa.table({"ID": [1], "T": pa.array([1_000_002], pa.time64("us"))})
    )
    (only,) = snapshot.files
    old = pq.read_table(only.path)
    index = old.schema.get_field_index("T")
    field = old.schema.field(index).with_type(pa.time64("ns"))
    nanos = pa.array([1_000_002_999], pa.time64("ns"))
    commit_plain_file(cat, "T", old.set_column(index, field, nanos), only)
    assert read_table(cat, "T").column("T").to_pylist() == [dt.time(0, 0, 1, 2)]


def test_the_staging_writer_is_no_catalog_to_browse() -> None:
    from almanac.data.iceberg_write import _StagingWriter

    writer = _StagingWriter(PyArrowFileIO(), fresh=True)
    # pyiceberg reloads a table only to retry a commit: the refusal is one it
    # takes for "not committed", so it removes what it wrote for the commit.
    with pytest.raises(CommitFailedException, match="not reloaded"):
        writer.load_table(("a", "b"))
    with pytest.raises(CatalogError, match="only stages"):
        writer.list_namespaces()

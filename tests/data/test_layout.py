"""Table layouts: a new table is unpartitioned (one file per write, its
tablet a hash of its name); a colocated table is bucketed as before."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
from pyiceberg.table import StaticTable

from almanac import Catalog, ColumnDef, ColumnType, CreateTable, Table
from almanac.data import TableData, create_table_as, read_table, table_partitions, write_table
from almanac.data.compaction import compact
from almanac.data.iceberg_schema import partition_spec
from almanac.data.tablets import file_tablet
from almanac.serialization import decode

from .support import append, create, ids_of, rows


def _current_files(cat: Catalog, table_id: int) -> list[str]:
    current = TableData.for_catalog(cat).current(table_id)
    assert current is not None
    return [f.path for f in current.files]


def test_a_five_row_insert_into_a_new_table_writes_one_file(cat: Catalog) -> None:
    table = create(cat)
    assert not table.bucketed
    snapshot = append(cat, [1, 2, 3, 4, 5])
    (only,) = snapshot.files
    partitions = table_partitions(cat.catalog(), table)
    assert only.rows == 5
    assert only.partition == file_tablet(only.path, partitions)
    assert f"/tablet={only.partition}/" in only.path
    assert ids_of(read_table(cat, "T")) == [1, 2, 3, 4, 5]
    metadata = StaticTable.from_metadata(snapshot.metadata)
    assert not metadata.spec().fields  # unpartitioned for every Iceberg reader
    assert sorted(metadata.scan().to_arrow().column("ID").to_pylist()) == [1, 2, 3, 4, 5]


def test_a_200_row_ctas_and_a_200_row_write_into_a_new_table_each_write_one_file(
    cat: Catalog,
) -> None:
    """A write is one task here: at most one file each."""
    columns = (
        ColumnDef(name="ID", type=ColumnType.INT64),
        ColumnDef(name="V", type=ColumnType.STRING),
    )
    _, snapshot = create_table_as(
        cat, CreateTable(name="C", columns=columns), rows(list(range(200)))
    )
    assert snapshot is not None and len(snapshot.files) == 1
    cat.execute([CreateTable(name="W", columns=columns)])
    written = write_table(cat, "W", rows(list(range(200))))
    assert len(written.files) == 1
    for name in ("C", "W"):
        table = cat.catalog().table(name)
        assert table is not None and not table.bucketed
        assert ids_of(read_table(cat, name)) == list(range(200))


def test_sql_insert_into_a_keyless_table(cat: Catalog) -> None:
    cat.sql("CREATE TABLE K (ID BIGINT, V STRING)")
    table = cat.catalog().table("K")
    assert table is not None and table.primary_key == ()
    snapshot = write_table(cat, "K", rows([3, 1, 3]))  # no key: duplicates are fine
    assert len(snapshot.files) == 1
    assert ids_of(read_table(cat, "K")) == [1, 3, 3]


def test_a_colocated_table_keeps_the_bucketed_layout(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    assert table.bucketed
    snapshot = append(cat, list(range(100)))
    assert len(snapshot.files) > 1
    metadata = StaticTable.from_metadata(snapshot.metadata)
    assert [str(f.transform) for f in metadata.spec().fields] == [
        f"bucket[{table_partitions(cat.catalog(), table)}]"
    ]


def test_writes_spread_over_tablets_and_compaction_keeps_them(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64),
            ColumnDef(name="V", type=ColumnType.STRING),
        ],
        primary_key=(),
    )
    for i in range(60):
        write_table(cat, "T", pa.table({"ID": pa.array([i], pa.int64()), "V": [str(i)]}))
    table = cat.catalog().table("T")
    assert table is not None
    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None
    per_tablet = Counter(f.partition for f in current.files)
    assert len(per_tablet) > 1  # names hash over the tablets
    result = compact(cat, "T")
    assert result is not None
    merged = Counter(f.partition for f in result.files)
    assert set(merged) == set(per_tablet)  # merged files stay in their tablet
    assert all(merged[t] == 1 for t in merged)
    for f in result.files:
        assert f"/tablet={f.partition}/" in f.path
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == list(range(60))


def test_a_table_of_an_older_catalog_keeps_the_bucketed_layout() -> None:
    """Table v1 and v2 predate the layout flag: every table was bucketed."""
    golden = Path(__file__).parents[1] / "serialization" / "golden"
    for name in ("Table.v1.bin", "Table.v2.bin", "Table-soft_deleted.v2.bin"):
        table = decode((golden / name).read_bytes())
        assert isinstance(table, Table) and table.bucketed, name
        spec = partition_spec(table, 25)
        assert [str(f.transform) for f in spec.fields] == ["bucket[25]"], name

"""A catalog written before data commits became catalog versions (records
stamped with the DDL version many appends share, no data entries in the
log, a checkpoint in serializer v1) opens with the running code; every data
snapshot reads at each version and time as it read before, after the
janitor, after new commits and after a new checkpoint."""

from __future__ import annotations

from pathlib import Path

from almanac import AddColumns, Catalog, ColumnDef, ColumnType
from almanac.data import TableData, read_table, run_janitor, write_table
from almanac.model.entries import TableDataCommitted
from tests.data import before_versions as before
from tests.data.support import connect, create, ids_of, own_files, rows


def _add_column(cat: Catalog, name: str) -> int:
    column = ColumnDef(name=name, type=ColumnType.INT8)
    cat.execute([AddColumns(table="T", columns=(column,))])
    return cat.latest_version


def _reads(cat: Catalog, expected: dict[tuple[str, str, int], list[int]]) -> None:
    for (table, how, at), ids in expected.items():
        if how == "version":
            found = read_table(cat, table, version=at)
        else:
            found = read_table(cat, table, timestamp=at)
        assert ids_of(found) == ids, (table, how, at)


def test_a_catalog_from_before_data_versions_reads_as_it_did(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        c1 = cat.latest_version
        first = [before.append(cat, [1]), before.append(cat, [2])]
        c2 = _add_column(cat, "A")
        third = before.append(cat, [3])
        assert before.checkpoint(cat) == c2
        create(cat, "U")
        c3 = cat.latest_version
        fourth = before.append(cat, [4])
        before.append(cat, [10], name="U")
        c4 = _add_column(cat, "B")
        assert cat.latest_version == c4, "data commits made no version then"
        data = TableData.for_catalog(cat)
        stamps = [r.catalog_version for r in data.records(table.id)]
        assert stamps == [c1, c1, c2, c3], "appends shared the DDL version's stamp"
        c3_active = cat.catalog(c3).activation_time
        assert third.commit_time < c3_active < fourth.commit_time
        snapshots = [*first, third, fourth]
    # What that release read, by its rule: the newest record stamped at or
    # before the version (or committed at or before the time).
    expected = {
        ("T", "version", c2): [1, 2, 3],
        ("T", "version", c3): [1, 2, 3, 4],
        ("T", "version", c4): [1, 2, 3, 4],
        ("U", "version", c3): [10],
        ("T", "timestamp", third.commit_time): [1, 2, 3],
        ("T", "timestamp", c3_active): [1, 2, 3],
        ("T", "timestamp", fourth.commit_time): [1, 2, 3, 4],
    }

    with connect(target) as cat:
        assert cat.earliest_version == c2
        assert not cat.catalog(c2).table_data and not cat.catalog(c4).table_data
        _reads(cat, expected)
        assert run_janitor(cat, grace_s=0).errors == {}
        _reads(cat, expected)

        fifth = write_table(cat, "T", rows([5]))
        c5 = cat.latest_version
        assert c5 == c4 + 1
        assert cat.catalog(c5).data_snapshot(table.id) == fifth.snapshot_id
        update = cat.history(c5)[0].update
        assert [type(e) for e in update.entries] == [TableDataCommitted]
        expected[("T", "version", c5)] = [1, 2, 3, 4, 5]
        expected[("T", "timestamp", fifth.commit_time)] = [1, 2, 3, 4, 5]
        _reads(cat, expected)

        # A new checkpoint at c3: what c3 reads by version (the fourth
        # append) and by its activation time (the third) stay; only the
        # first two, which no available version reads, go.
        assert cat.checkpoint_log(c3) == c3
        assert run_janitor(cat, grace_s=0).errors == {}
        kept = [r.snapshot_id for r in TableData.for_catalog(cat).records(table.id)]
        assert kept == [third.snapshot_id, fourth.snapshot_id, fifth.snapshot_id]
        del expected[("T", "version", c2)], expected[("T", "timestamp", third.commit_time)]
        _reads(cat, expected)
        assert all(Path(p).exists() for s in [*snapshots, fifth] for p in own_files(s))

    with connect(target) as cat:
        _reads(cat, expected)

"""Table data of soft-deleted tables: hidden from reads and writes while
reserved, back on RECOVER, and gone after the purge by the janitor's rule
for dropped tables (once no kept catalog version holds the table)."""

from __future__ import annotations

from pathlib import Path

import pytest

import almanac
from almanac import Catalog, NotFoundError
from almanac.data import compact, read_table, run_janitor, write_table
from tests.waiting import wait_for

from .support import append, create, ids_of, rows


def test_reads_and_writes_do_not_see_a_soft_deleted_table(cat: Catalog) -> None:
    create(cat)
    append(cat, [1, 2, 3])
    before_drop = cat.latest_version
    cat.sql("DROP TABLE T WITH (RESERVE = '1h')")
    with pytest.raises(NotFoundError, match="does not exist"):
        read_table(cat, "T")
    with pytest.raises(NotFoundError, match="does not exist"):
        write_table(cat, "T", rows([4]))
    with pytest.raises(NotFoundError, match="does not exist"):
        compact(cat, "T")
    # Time travel to before the drop still reads it.
    assert ids_of(read_table(cat, "T", version=before_drop)) == [1, 2, 3]
    # The janitor leaves a reserved table's data alone.
    assert run_janitor(cat, grace_s=0).tables_purged == []
    cat.sql("RECOVER TABLE T AS T2")
    assert ids_of(read_table(cat, "T2")) == [1, 2, 3]
    write_table(cat, "T2", rows([4]))
    assert ids_of(read_table(cat, "T2")) == [1, 2, 3, 4]


def test_a_purged_tables_data_goes_once_no_version_holds_it(cat: Catalog) -> None:
    table = create(cat)
    append(cat, [1, 2])
    directory = Path(_table_dir(cat, table.id))
    assert any(directory.rglob("*.parquet"))
    cat.sql("DROP TABLE T WITH (RESERVE = '1h')")
    cat.sql("PURGE TABLE T")
    # Older versions still hold the table: its data stays readable there.
    assert run_janitor(cat, grace_s=0).tables_purged == []
    cat.checkpoint_log()
    report = run_janitor(cat, grace_s=0)
    assert report.tables_purged == [table.id]
    assert not directory.exists()


def test_the_periodic_janitor_purges_an_expired_table(tmp_path: Path) -> None:
    with almanac.connect(
        str(tmp_path / "data"),
        delay_ms=0,
        janitor_interval_s=0.1,
        soft_delete_reserve_s=0.05,
        retention=almanac.RetentionPolicy(keep_versions=1, check_every=1),
    ) as cat:
        table = create(cat)
        append(cat, [7])
        directory = Path(_table_dir(cat, table.id))
        cat.sql("DROP TABLE T")  # the node's default reserve: 50 ms
        assert cat.catalog().soft_deleted_table("T") is not None
        wait_for(
            lambda: table.id not in cat.catalog().tables_by_id and not directory.exists(),
            "the purge of the table and its data",
        )


def _table_dir(cat: Catalog, table_id: int) -> str:
    from almanac.data import TableData

    return TableData.for_catalog(cat).warehouse.table_dir(table_id)

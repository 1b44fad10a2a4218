"""``almanac.spark.write`` and a table's partition spec and sort order: a
sorted table's files come out sorted; a table partitioned by fields of its
own is refused before any job runs, naming the table and the fields."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow.parquet as pq
import pytest

import almanac.spark
from almanac import CatalogError, ColumnDef, ColumnType
from almanac.catalog import Catalog
from almanac.data import TableData, read_table
from tests.data.layouts import Layouts, layouts

__all__ = ["layouts"]

COLUMNS = (
    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
    ColumnDef(name="G", type=ColumnType.STRING),
    ColumnDef(name="D", type=ColumnType.DATE),
)
SCHEMA = "ID long, G string, D date"


def _frame(spark: Any, ids: range) -> Any:
    rows = [
        (i, None if i % 7 == 0 else f"g{i % 3}", dt.date(2024, 1, 1) + dt.timedelta(days=i % 5))
        for i in ids
    ]
    return spark.createDataFrame(rows, SCHEMA).repartition(3)


def test_each_file_is_sorted_by_the_default_sort_order(
    spark: Any, cat: Catalog, target: str, layouts: Layouts
) -> None:
    table = layouts.create(
        cat,
        "T",
        COLUMNS,
        sort=[("G", "identity", True, False), ("ID", "identity", False, True)],
        colocation=("ID",),
        primary_key=("ID",),
    )
    almanac.spark.write(_frame(spark, range(300)), target, "T", cluster=True)
    data = TableData.for_catalog(cat).current(table.id)
    assert data is not None and len(data.files) > 1
    for f in data.files:
        keys = [(r["G"], r["ID"]) for r in pq.read_table(f.path).to_pylist()]
        # G descending with NULLs last, then ID ascending.
        ranked = sorted(
            keys, key=lambda k: (k[0] is None, tuple(-ord(c) for c in k[0] or ""), k[1])
        )
        assert keys == ranked
        assert f.spec_id == table.default_spec_id
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == list(range(300))


@pytest.mark.parametrize(
    ("partition", "sort", "rule"),
    [
        ([("D", "day")], [], "partitioned by day\\(D\\)"),
        ([], [("D", "month", False, True)], "sorted by month\\(D\\)"),
    ],
)
def test_what_the_native_writer_cannot_honour_is_refused(
    spark: Any,
    cat: Catalog,
    target: str,
    layouts: Layouts,
    partition: list[tuple[str, str]],
    sort: list[tuple[str, str, bool, bool]],
    rule: str,
) -> None:
    table = layouts.create(cat, "T", COLUMNS, partition=partition, sort=sort)
    with pytest.raises(CatalogError, match=f"Table 'PUBLIC.T' is {rule}"):
        almanac.spark.write(_frame(spark, range(10)), target, "T")
    assert TableData.for_catalog(cat).current(table.id) is None

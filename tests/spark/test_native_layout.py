"""``almanac.spark.write`` and a table's partition spec and sort order:
rows split into files by Iceberg's transforms of the default spec, each
file recording its partition values, sorted by the default sort order; a
sort order this writer cannot follow is refused before any job runs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo, Reference
from pyiceberg.table import StaticTable
from pyiceberg.transforms import parse_transform
from pyiceberg.types import DateType, LongType, StringType

import almanac.spark
from almanac import CatalogError, ColumnDef, ColumnType, CreateZone
from almanac.catalog import Catalog
from almanac.data import Predicate, TableData, plan_scan, read_table
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


def test_what_the_native_writer_cannot_sort_by_is_refused(
    spark: Any, cat: Catalog, target: str, layouts: Layouts
) -> None:
    table = layouts.create(cat, "T", COLUMNS, sort=[("D", "month", False, True)])
    with pytest.raises(CatalogError, match=r"Table 'PUBLIC.T' is sorted by month\(D\)"):
        almanac.spark.write(_frame(spark, range(10)), target, "T")
    assert TableData.for_catalog(cat).current(table.id) is None


def _value(transform: str, column: ColumnDef, value: object) -> object:
    kind = {ColumnType.INT64: LongType(), ColumnType.STRING: StringType()}.get(
        column.type, DateType()
    )
    if isinstance(value, dt.date):
        value = (value - dt.date(1970, 1, 1)).days
    return parse_transform(transform).transform(kind)(value)


@pytest.mark.parametrize("bucketed", [False, True])
def test_a_partitioned_table_gets_one_partition_per_file(
    spark: Any, cat: Catalog, target: str, layouts: Layouts, bucketed: bool
) -> None:
    cat.execute([CreateZone(name="Z4", partitions=4)])
    partition = [("D", "day"), ("ID", "bucket[3]"), ("G", "truncate[1]")]
    if not bucketed:
        partition.append(("ID", "bucket[4]"))  # the zone's partitions: the tablet
    table = layouts.create(
        cat,
        "T",
        COLUMNS,
        partition=partition,
        sort=[("ID", "identity", False, True)],
        primary_key=("ID",),
        zone="Z4",
        **({"colocation": ("ID",)} if bucketed else {}),
    )
    result = almanac.spark.write(_frame(spark, range(200)), target, "T")
    files = TableData.for_catalog(cat).current(table.id)
    assert files is not None and len(files.files) == result.files
    by_name = {c.name: c for c in COLUMNS}
    for f in files.files:
        rows = pq.read_table(f.path).to_pylist()
        assert [r["ID"] for r in rows] == sorted(r["ID"] for r in rows)
        own = f.partition[1:] if bucketed else f.partition
        for at, (name, transform) in enumerate(partition):
            assert {_value(transform, by_name[name], r[name]) for r in rows} == {own[at]}
        if bucketed:
            assert f.partition[0] == f.tablet
        else:
            assert f.partition[-1] == f.tablet
        assert f"/tablet={f.tablet}/" in f.path
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == list(range(200))
    location = TableData.for_catalog(cat).metadata_location(table.id)
    assert location is not None
    iceberg = StaticTable.from_metadata(location)
    assert len(iceberg.scan().to_arrow()) == 200
    one_day = EqualTo(Reference("D"), "2024-01-03")  # type: ignore[call-arg,arg-type]
    assert 0 < len(list(iceberg.scan(row_filter=one_day).plan_files())) < len(files.files)
    plan = plan_scan(
        cat, TableData.for_catalog(cat), "T", filters=[Predicate("D", "=", dt.date(2024, 1, 3))]
    )
    assert {f.path for f in plan.files} == {
        f.path for f in files.files if (f.partition[1] if bucketed else f.partition[0]) == 19725
    }

"""pyiceberg's ``RestCatalog`` creates tables with any partition spec and
sort order, evolves both, and loads back what it asked for; the catalog
holds the same specs and orders, as SQL's DDL would have made them."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table as IcebergTable
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    TruncateTransform,
)
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

from almanac.errors import ValidationError
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType(), required=False),
    NestedField(3, "data", StringType(), required=False),
)


def _terms(table: IcebergTable) -> list[tuple[str, str, str]]:
    schema = table.schema()
    return [
        (schema.find_column_name(f.source_id) or "?", str(f.transform), f.name)
        for f in table.spec().fields
    ]


def _order(table: IcebergTable) -> list[tuple[str, str, SortDirection, NullOrder]]:
    schema = table.schema()
    return [
        (schema.find_column_name(f.source_id) or "?", str(f.transform), f.direction, f.null_order)
        for f in table.sort_order().fields
    ]


def _ours(cat: Catalog, namespace: str, name: str) -> Table:
    cat.catch_up()
    table = cat.catalog().table(name, namespace)
    assert table is not None
    return table


def _catalog_terms(table: Table) -> list[tuple[str, str, str]]:
    names = {c.id: c.name for c in table.columns}
    return [(names[f.source_id], f.transform, f.name) for f in table.partition_spec.fields]


def test_create_with_a_spec_and_order_loads_back_equal(admin: RestCatalog, cat: Catalog) -> None:
    admin.create_namespace("PSPEC_CREATE")
    spec = PartitionSpec(
        PartitionField(2, 1000, DayTransform(), "ts_day"),
        PartitionField(1, 1001, BucketTransform(16), "id_bucket"),
    )
    order = SortOrder(
        SortField(2, DayTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
        SortField(1, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
    )
    created = admin.create_table(
        ("PSPEC_CREATE", "events"), SCHEMA, partition_spec=spec, sort_order=order
    )
    asked = [("ts", "day", "ts_day"), ("id", "bucket[16]", "id_bucket")]
    sorted_by = [
        ("ts", "day", SortDirection.DESC, NullOrder.NULLS_LAST),
        ("id", "identity", SortDirection.ASC, NullOrder.NULLS_FIRST),
    ]
    loaded = admin.load_table(("PSPEC_CREATE", "events"))
    for table in (created, loaded):
        assert _terms(table) == asked
        assert [f.field_id for f in table.spec().fields] == [1000, 1001]  # as the client gave
        assert _order(table) == sorted_by
    ours = _ours(cat, "PSPEC_CREATE", "events")
    assert not ours.bucketed
    assert _catalog_terms(ours) == asked
    assert ours.default_sort_order_id == 1 and len(ours.sort_order.fields) == 2


def test_spec_and_order_evolution_by_pyiceberg(admin: RestCatalog, cat: Catalog) -> None:
    admin.create_namespace("PSPEC_EVOLVE")
    table = admin.create_table(("PSPEC_EVOLVE", "events"), SCHEMA)
    assert not table.spec().fields

    with table.update_spec() as update:
        update.add_field("ts", DayTransform(), "ts_day")
        update.add_field("data", TruncateTransform(4), "prefix")
    loaded = admin.load_table(("PSPEC_EVOLVE", "events"))
    assert _terms(loaded) == [("ts", "day", "ts_day"), ("data", "truncate[4]", "prefix")]
    assert loaded.spec().spec_id == 1 and len(loaded.specs()) == 2

    with loaded.update_spec() as update:
        update.remove_field("ts_day")
        update.add_field("ts", HourTransform(), "ts_hour")
    loaded = admin.load_table(("PSPEC_EVOLVE", "events"))
    assert _terms(loaded) == [("data", "truncate[4]", "prefix"), ("ts", "hour", "ts_hour")]
    assert sorted(loaded.specs()) == [0, 1, 2]
    # The field that kept its source and transform kept its id.
    assert loaded.specs()[1].fields[1].field_id == loaded.spec().fields[0].field_id

    loaded.update_sort_order().desc("ts", IdentityTransform()).asc(
        "id", BucketTransform(4), NullOrder.NULLS_FIRST
    ).commit()
    loaded = admin.load_table(("PSPEC_EVOLVE", "events"))
    assert _order(loaded) == [
        ("ts", "identity", SortDirection.DESC, NullOrder.NULLS_LAST),
        ("id", "bucket[4]", SortDirection.ASC, NullOrder.NULLS_FIRST),
    ]

    ours = _ours(cat, "PSPEC_EVOLVE", "events")
    assert _catalog_terms(ours) == [("data", "truncate[4]", "prefix"), ("ts", "hour", "ts_hour")]
    assert [s.spec_id for s in ours.partition_specs] == [0, 1, 2]
    assert ours.sort_order.order_id == 1

    # Unsorted again is order 0; a column the spec reads cannot be dropped.
    loaded.update_sort_order().commit()
    assert admin.load_table(("PSPEC_EVOLVE", "events")).sort_order().order_id == 0
    with pytest.raises(ValidationError, match="partition field 'prefix'"):
        cat.sql('ALTER TABLE PSPEC_EVOLVE."events" DROP COLUMN "data"')


def test_a_single_bucket_on_the_key_of_the_zones_count_stays_colocation(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("PSPEC_TABLET")
    keyed = Schema(*SCHEMA.fields, identifier_field_ids=[1])
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(25), "tablet"))
    table = admin.create_table(("PSPEC_TABLET", "t"), keyed, partition_spec=spec)
    ours = _ours(cat, "PSPEC_TABLET", "t")
    assert ours.bucketed and ours.colocation == ("id",) and not ours.partition_spec.fields
    # Evolving it keeps the hidden tablet field first in every spec.
    with table.update_spec() as update:
        update.add_field("ts", DayTransform(), "ts_day")
    loaded = admin.load_table(("PSPEC_TABLET", "t"))
    assert _terms(loaded) == [("id", "bucket[25]", "tablet"), ("ts", "day", "ts_day")]
    assert _catalog_terms(_ours(cat, "PSPEC_TABLET", "t")) == [("ts", "day", "ts_day")]
    update = loaded.update_spec().remove_field("tablet")
    with pytest.raises(BadRequestError, match="bucketing of a table cannot be removed"):
        update.commit()


def test_a_staged_create_with_data_under_its_spec(admin: RestCatalog, cat: Catalog) -> None:
    admin.create_namespace("PSPEC_STAGED")
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"))
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array(
                [dt.datetime(2026, 1, 1, 5), dt.datetime(2026, 1, 2, 6), None], pa.timestamp("us")
            ),
            "data": ["a", "b", "c"],
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("ts", pa.timestamp("us")),
                pa.field("data", pa.string()),
            ]
        ),
    )
    tx = admin.create_table_transaction(("PSPEC_STAGED", "t"), SCHEMA, partition_spec=spec)
    tx.append(rows)
    tx.commit_transaction()
    loaded = admin.load_table(("PSPEC_STAGED", "t"))
    assert _terms(loaded) == [("ts", "day", "ts_day")]
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert loaded.inspect.files().num_rows == 3  # one file per day, one for the null
    ours = _ours(cat, "PSPEC_STAGED", "t")
    assert _catalog_terms(ours) == [("ts", "day", "ts_day")]
    assert ours.partition_spec.fields[0].field_id == 1000


def test_pyiceberg_and_almanac_write_and_read_one_partitioned_table(
    admin: RestCatalog, cat: Catalog
) -> None:
    """Both writers file rows under the spec in force, across an evolution;
    each reads every row of the other, and Almanac's planner prunes the
    files of both by their partition values."""
    from almanac.data import Predicate, TableData, plan_scan, read_table, write_table

    admin.create_namespace("PSPEC_BOTH")
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"))
    table = admin.create_table(("PSPEC_BOTH", "t"), SCHEMA, partition_spec=spec)
    arrow_schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("ts", pa.timestamp("us")),
            pa.field("data", pa.string()),
        ]
    )

    def rows(ids: range) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(list(ids), pa.int64()),
                "ts": pa.array([dt.datetime(2026, 3, 1 + i % 3, i % 24) for i in ids]),
                "data": [f"d{i}" for i in ids],
            },
            schema=arrow_schema,
        )

    table.append(rows(range(0, 6)))  # pyiceberg, under spec 0
    with table.update_spec() as update:
        update.add_field("id", BucketTransform(4), "id_bucket")
    table = admin.load_table(("PSPEC_BOTH", "t"))
    table.append(rows(range(6, 12)))  # pyiceberg, under spec 1
    cat.catch_up()
    write_table(cat, "t", rows(range(12, 18)), "PSPEC_BOTH")  # Almanac, under spec 1

    everything = admin.load_table(("PSPEC_BOTH", "t")).scan().to_arrow()
    assert sorted(everything.column("id").to_pylist()) == list(range(18))
    ours = read_table(cat, "t", "PSPEC_BOTH")
    assert sorted(ours.column("id").to_pylist()) == list(range(18))

    data = TableData.for_catalog(cat)
    every = plan_scan(cat, data, "t", "PSPEC_BOTH").files
    assert {f.spec_id for f in every} == {0, 1}
    one_day = Predicate("ts", "<", dt.datetime(2026, 3, 2))
    pruned = plan_scan(cat, data, "t", "PSPEC_BOTH", filters=[one_day]).files
    assert 0 < len(pruned) < len(every)
    assert all(
        f.partition_values[0] == (dt.date(2026, 3, 1) - dt.date(1970, 1, 1)).days for f in pruned
    )
    day_one = read_table(cat, "t", "PSPEC_BOTH", filters=[one_day])
    assert sorted(day_one.column("id").to_pylist()) == [i for i in range(18) if i % 3 == 0]

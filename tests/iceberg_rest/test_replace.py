"""``CREATE OR REPLACE TABLE ... AS SELECT`` on an existing table: its
schema, partition spec, sort order and properties are replaced, with its
rows, in one catalog version.

pyiceberg 0.12 has no replace transaction, so the commit is the one
Iceberg's own replace sends (``TableMetadata.buildReplacement``: main
removed, the new schema, spec and order made current, the properties set,
then the new rows' snapshot made main), built from pyiceberg's update
models, its data files written by pyiceberg's own transaction, and sent by
its ``RestCatalog``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
    RemoveSnapshotRefUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
    update_table_metadata,
)
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType

from almanac.data import TableData, read_table
from almanac.node.catalog import Catalog

from .test_every_update import check_equal

NAMESPACE = "REPLACE"
OLD = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "NAME", StringType(), required=False),
    NestedField(3, "QTY", IntegerType(), required=False),
)
OLD_ARROW = pa.schema(
    [pa.field("ID", pa.int64(), nullable=False), pa.field("NAME", pa.string()), ("QTY", pa.int32())]
)
NEW_ARROW = pa.schema(
    [pa.field("ID", pa.int64(), nullable=False), ("LABEL", pa.string()), ("AMOUNT", pa.float64())]
)


@pytest.fixture(scope="module")
def namespace(admin: RestCatalog) -> str:
    admin.create_namespace(NAMESPACE)
    return NAMESPACE


def _old_table(admin: RestCatalog, name: str) -> Table:
    """A partitioned, sorted table with properties and two snapshots."""
    table: Table = admin.create_table(
        (NAMESPACE, name),
        OLD,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "NAME")),
        sort_order=SortOrder(SortField(source_id=1, transform=IdentityTransform())),
        properties={"owner": "ops", "kept": "old"},
    )
    for ids in ([1, 2], [3]):
        rows = {"ID": ids, "NAME": [f"n{i}" for i in ids], "QTY": ids}
        table.append(pa.table(rows, OLD_ARROW))
    table.refresh()
    return table


def _replacement(table: Table) -> list[TableUpdate]:
    """Iceberg's replace: ``ID`` keeps its field id (same name), the other
    fields are new; a new spec and order; properties set over the old ones."""
    metadata = table.metadata
    last = metadata.last_column_id
    schema = Schema(
        NestedField(metadata.schema().find_field("ID").field_id, "ID", LongType(), required=True),
        NestedField(last + 1, "LABEL", StringType(), required=False),
        NestedField(last + 2, "AMOUNT", DoubleType(), required=False),
        schema_id=max(s.schema_id for s in metadata.schemas) + 1,
    )
    partition_id = metadata.last_partition_id or 999
    spec = PartitionSpec(
        PartitionField(last + 1, partition_id + 1, IdentityTransform(), "LABEL"),
        spec_id=max(s.spec_id for s in metadata.partition_specs) + 1,
    )
    order = SortOrder(
        SortField(
            source_id=last + 2,
            transform=IdentityTransform(),
            direction=SortDirection.DESC,
            null_order=NullOrder.NULLS_LAST,
        ),
        order_id=max(o.order_id for o in metadata.sort_orders) + 1,
    )
    return [
        RemoveSnapshotRefUpdate.model_validate({"ref-name": "main"}),
        AddSchemaUpdate(schema=schema),
        SetCurrentSchemaUpdate.model_validate({"schema-id": -1}),
        AddPartitionSpecUpdate(spec=spec),
        SetDefaultSpecUpdate.model_validate({"spec-id": -1}),
        AddSortOrderUpdate.model_validate({"sort-order": order}),
        SetDefaultSortOrderUpdate.model_validate({"sort-order-id": -1}),
        SetPropertiesUpdate(updates={"kept": "new", "added": "yes"}),
    ]


def _requirements(table: Table) -> list[TableRequirement]:
    """What Iceberg's ``UpdateRequirements.forReplaceTable`` asks."""
    metadata = table.metadata
    return [
        AssertTableUUID(uuid=metadata.table_uuid),
        AssertLastAssignedFieldId.model_validate(
            {"last-assigned-field-id": metadata.last_column_id}
        ),
        AssertLastAssignedPartitionId.model_validate(
            {"last-assigned-partition-id": metadata.last_partition_id}
        ),
    ]


def test_replace_as_select_replaces_the_table_in_one_version(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _old_table(admin, "rtas")
    tx = table.transaction()
    tx._apply(tuple(_replacement(table)))
    rows = {"ID": [10, 11, 12], "LABEL": ["a", "b", "a"], "AMOUNT": [1.5, 2.5, None]}
    tx.append(pa.table(rows, NEW_ARROW))
    updates: list[Any] = list(tx._updates)
    assert [u.action for u in updates][-2:] == ["add-snapshot", "set-snapshot-ref"]
    expected = update_table_metadata(table.metadata, tuple(updates))
    cat.catch_up()
    before = cat.latest_version

    admin.commit_table(table, tuple(_requirements(table)), tuple(updates))

    cat.catch_up()
    assert cat.latest_version == before + 1
    loaded = admin.load_table((NAMESPACE, "rtas"))
    check_equal(loaded.metadata, expected)
    assert [f.name for f in loaded.schema().fields] == ["ID", "LABEL", "AMOUNT"]
    assert [(f.name, str(f.transform)) for f in loaded.spec().fields] == [("LABEL", "identity")]
    assert [(f.source_id, f.direction) for f in loaded.sort_order().fields] == [
        (loaded.schema().find_field("AMOUNT").field_id, SortDirection.DESC)
    ]
    assert {k: v for k, v in loaded.properties.items() if not k.startswith("almanac.")} == {
        "owner": "ops",
        "kept": "new",
        "added": "yes",
        "gc.enabled": "false",  # every table's: cleanup is the catalog's
        "write.parquet.compression-codec": "zstd",  # the create's, which a replace keeps
    }
    assert sorted(loaded.scan().to_arrow().column("ID").to_pylist()) == [10, 11, 12]
    made = cat.catalog().table("rtas", NAMESPACE)
    assert made is not None
    current = TableData.for_catalog(cat).current(made.id)
    assert current is not None and current.operation == "overwrite"
    assert [c.name for c in made.columns] == ["ID", "LABEL", "AMOUNT"]
    ours = read_table(cat, "rtas", NAMESPACE)
    assert sorted(ours.column("ID").to_pylist()) == [10, 11, 12]
    assert ours.column_names == ["ID", "LABEL", "AMOUNT"]


def test_replace_with_the_same_layout_replaces_only_rows_and_properties(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    """Iceberg's replace reuses a schema, spec and order the table has: only
    main's removal, the properties and the new snapshot are sent."""
    table = _old_table(admin, "same")
    tx = table.transaction()
    tx._apply(
        (
            RemoveSnapshotRefUpdate.model_validate({"ref-name": "main"}),
            SetPropertiesUpdate(updates={"kept": "new"}),
        )
    )
    tx.append(pa.table({"ID": [7], "NAME": ["n7"], "QTY": [7]}, OLD_ARROW))
    updates: list[Any] = list(tx._updates)
    expected = update_table_metadata(table.metadata, tuple(updates))
    cat.catch_up()
    before = cat.latest_version

    admin.commit_table(table, (AssertTableUUID(uuid=table.metadata.table_uuid),), tuple(updates))

    cat.catch_up()
    assert cat.latest_version == before + 1  # no catalog command: a data commit's version
    (made,) = cat.history(before + 1)
    assert [type(e).__name__ for e in made.update.entries] == ["TableDataCommitted"]
    loaded = admin.load_table((NAMESPACE, "same"))
    check_equal(loaded.metadata, expected)
    assert loaded.scan().to_arrow().column("ID").to_pylist() == [7]
    assert read_table(cat, "same", NAMESPACE).column("ID").to_pylist() == [7]

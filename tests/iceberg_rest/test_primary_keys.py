"""pyiceberg's ``RestCatalog`` creates plain tables (no identifier fields),
appends to them and reads them back through Almanac; identifier fields set,
change and drop the primary key, and a key the layout depends on stays."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import LongType, NestedField, StringType

from almanac.data import TableData, read_table, table_partitions
from almanac.data.tablets import file_tablet
from almanac.node.catalog import Catalog

PLAIN = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("data", pa.string())])


def test_a_table_without_identifier_fields_is_a_plain_unpartitioned_table(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("PKPLAIN")
    table = admin.create_table(("PKPLAIN", "events"), PLAIN)
    assert table.schema().identifier_field_ids == []
    assert not table.spec().fields
    table.append(pa.table({"id": [1, 2, 2, 3, 4], "data": ["a", "b", "b", None, "d"]}, PLAIN))
    cat.catch_up()
    made = cat.catalog().table("events", "PKPLAIN")
    assert made is not None
    assert made.primary_key == () and made.primary_key_index_id is None and not made.bucketed
    ours = read_table(cat, "events", "PKPLAIN")
    assert sorted(ours.column("id").to_pylist()) == [1, 2, 2, 3, 4]
    theirs = admin.load_table(("PKPLAIN", "events")).scan().to_arrow()
    assert sorted(theirs.column("id").to_pylist()) == [1, 2, 2, 3, 4]
    files = admin.load_table(("PKPLAIN", "events")).inspect.files()
    assert files.num_rows == 1  # one file for one append
    for i in range(5):
        table.append(pa.table({"id": [10 + i], "data": ["x"]}, PLAIN))
    cat.catch_up()
    current = TableData.for_catalog(cat).current(made.id)
    assert current is not None and len(current.files) == 6
    partitions = table_partitions(cat.catalog(), made)
    # A client's files have no tablet directory: their names place them.
    assert [f.partition for f in current.files] == [
        file_tablet(f.path, partitions) for f in current.files
    ]
    assert len({f.partition for f in current.files}) > 1


def test_identifier_fields_set_change_and_drop_the_primary_key(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("PKSET")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType(), required=True),
        NestedField(3, "data", StringType(), required=False),
    )
    table = admin.create_table(("PKSET", "t"), schema)
    steps: list[tuple[list[str], tuple[str, ...]]] = [
        (["id"], ("id",)),
        (["region", "id"], ("id", "region")),
        ([], ()),
    ]
    for fields, key in steps:
        cat.catch_up()
        before = cat.latest_version
        with table.update_schema() as update:
            update.set_identifier_fields(*fields)
        cat.catch_up()
        assert cat.latest_version == before + 1
        made = cat.catalog().table("t", "PKSET")
        assert made is not None and tuple(sorted(made.primary_key)) == tuple(sorted(key))
        has_index = cat.catalog().index("t_PK", "PKSET") is not None
        assert has_index == bool(key)
        loaded = admin.load_table(("PKSET", "t")).schema()
        assert sorted(loaded.identifier_field_names()) == sorted(key)


def test_a_key_a_bucketed_layout_depends_on_cannot_be_dropped(
    admin: RestCatalog, cat: Catalog
) -> None:
    admin.create_namespace("PKBUCKET")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "data", StringType(), required=False),
        identifier_field_ids=[1],
    )
    cat.catch_up()
    zone = cat.catalog().default_zone
    partitions = 25 if zone is None else zone.partitions
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(partitions), "tablet"))
    table = admin.create_table(("PKBUCKET", "t"), schema, partition_spec=spec)
    cat.catch_up()
    before = cat.latest_version
    update = table.update_schema()
    update.set_identifier_fields()
    with pytest.raises(BadRequestError, match="bucketed on its colocation columns"):
        update.commit()
    cat.catch_up()
    assert cat.latest_version == before
    made = cat.catalog().table("t", "PKBUCKET")
    assert made is not None and made.primary_key == ("id",) and made.bucketed

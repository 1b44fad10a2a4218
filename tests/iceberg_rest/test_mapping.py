"""The Iceberg <-> catalog mapping, as pure functions: what a client asks for
becomes the commands the equivalent DDL runs, and the table they make reads
back, as Iceberg, exactly as asked; what the catalog cannot express is a
``ValidationError`` naming the rule."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, HourTransform, IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    GeometryType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UnknownType,
)

import almanac
from almanac import CreateSchema, SetPrimaryKey, ValidationError
from almanac.commands import (
    Command,
    PartitionFieldDef,
    SetPartitionSpec,
    SetSortOrder,
    SortFieldDef,
    preview,
)
from almanac.data.iceberg_schema import iceberg_layout, iceberg_schema
from almanac.iceberg_rest.mapping import (
    check_expressed,
    check_layout,
    create_command,
    layout_commands,
    schema_commands,
)
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Table

EXPRESSIBLE: tuple[IcebergType, ...] = (
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(12, 2),
    StringType(),
    BinaryType(),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
)
WIDER: dict[IcebergType, IcebergType] = {
    IntegerType(): LongType(),
    FloatType(): DoubleType(),
    DecimalType(12, 2): DecimalType(20, 2),
}


@functools.cache
def _version() -> CatalogVersion:
    """An empty catalog version (immutable, so shared)."""
    with almanac.connect("memory://") as cat:
        return cat.catalog()


def _apply(version: CatalogVersion, commands: list[Command]) -> CatalogVersion:
    return preview(version, commands).catalog


def _schema(types: list[tuple[IcebergType, bool]], first_id: int = 1) -> Schema:
    fields = [NestedField(first_id, "k", LongType(), required=True)]
    fields += [
        NestedField(first_id + 1 + i, f"c{i}", kind, required=required)
        for i, (kind, required) in enumerate(types)
    ]
    return Schema(*fields, identifier_field_ids=[first_id])


def _created(version: CatalogVersion, schema: Schema, spec: PartitionSpec | None = None) -> Table:
    create = create_command("ns", "t", schema, spec, None, 25)
    made = _apply(version, [CreateSchema("ns"), create]).table("t", "ns")
    assert made is not None
    return made


columns = st.lists(st.tuples(st.sampled_from(EXPRESSIBLE), st.booleans()), max_size=8)


@settings(max_examples=60, deadline=None)
@given(types=columns, first_id=st.integers(0, 50))
def test_a_created_table_reads_back_as_asked(
    types: list[tuple[IcebergType, bool]], first_id: int
) -> None:
    """Whatever ids the client chose, the catalog gives its own (0, 1, ... in
    order) and the table is otherwise exactly the schema asked for."""
    version = _version()
    schema = _schema(types, first_id)
    made = _created(version, schema)
    check_expressed("ns.t", made, schema, same_ids=False)
    ours = iceberg_schema(made)
    assert [(f.name, f.field_type, f.required) for f in ours.fields] == [
        (f.name, f.field_type, f.required) for f in schema.fields
    ]
    assert made.primary_key == ("k",)


evolutions = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(EXPRESSIBLE)),
        st.tuples(st.just("drop"), st.integers(0, 20)),
        st.tuples(st.just("widen"), st.integers(0, 20)),
        st.tuples(st.just("optional"), st.integers(0, 20)),
        st.tuples(st.just("rename"), st.integers(0, 20)),
        st.tuples(st.just("swap"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(types=columns, steps=evolutions)
def test_a_schema_change_is_the_alter_it_amounts_to(
    types: list[tuple[IcebergType, bool]], steps: list[tuple[str, object]]
) -> None:
    """A client's evolved schema (ids from ``last-column-id``, as pyiceberg
    assigns them) becomes ALTER commands whose table is exactly that schema."""
    version = _version()
    schema = _schema(types)
    made = _created(version, schema)
    version = _apply(
        version, [CreateSchema("ns"), create_command("ns", "t", schema, None, None, 25)]
    )
    table = version.table("t", "ns")
    assert table is not None
    old = iceberg_schema(table)
    fields = list(old.fields)
    last = table.next_column_id - 1
    original = {f.field_id for f in old.fields if f.name != "k"}
    for number, (step, arg) in enumerate(steps):
        # What a client drops or changes is a column the table has: the
        # catalog gives added columns the next ids, so an id added and
        # dropped again in one commit could not be expressed.
        others = [i for i, f in enumerate(fields) if f.field_id in original]
        if step == "add":
            last += 1
            assert isinstance(arg, IcebergType)
            fields.append(NestedField(last, f"n{last}", arg, required=False))
        elif others and isinstance(arg, int):
            i = others[arg % len(others)]
            field = fields[i]
            if step == "drop":
                del fields[i]
            elif step == "widen" and field.field_type in WIDER:
                fields[i] = field.model_copy(update={"field_type": WIDER[field.field_type]})
            elif step == "optional":
                fields[i] = field.model_copy(update={"required": False})
            elif step == "rename":
                fields[i] = field.model_copy(update={"name": f"renamed{number}"})
            elif step == "swap" and len(others) > 1:
                j = others[(arg + 1) % len(others)]
                a, b = fields[i], fields[j]
                fields[i] = a.model_copy(update={"name": b.name})
                fields[j] = b.model_copy(update={"name": a.name})
    wanted = Schema(*fields, identifier_field_ids=[0])
    commands = schema_commands("ns", table, old, wanted)
    after = _apply(version, commands).table("t", "ns") if commands else table
    assert after is not None and after.id == made.id
    check_expressed("ns.t", after, wanted)
    assert iceberg_schema(after).fields == wanted.fields


def test_a_swap_of_names_goes_through_a_free_name() -> None:
    made = _created(_version(), _schema([(StringType(), False), (LongType(), False)]))
    old = iceberg_schema(made)
    k, a, b = old.fields
    swapped = Schema(
        k,
        a.model_copy(update={"name": b.name}),
        b.model_copy(update={"name": a.name}),
        identifier_field_ids=[0],
    )
    commands = schema_commands("ns", made, old, swapped)
    assert [(c.column, c.new_name) for c in commands] == [  # type: ignore[attr-defined]
        ("c0", "c0_0"),
        ("c1", "c0"),
        ("c0_0", "c1"),
    ]
    version = _apply(
        _version(),
        [
            CreateSchema("ns"),
            create_command(
                "ns", "t", _schema([(StringType(), False), (LongType(), False)]), None, None, 25
            ),
        ],
    )
    after = _apply(version, commands).table("t", "ns")
    assert after is not None
    check_expressed("ns.t", after, swapped)


def test_the_key_keeps_its_name() -> None:
    made = _created(_version(), _schema([]))
    old = iceberg_schema(made)
    renamed = Schema(old.fields[0].model_copy(update={"name": "key"}), identifier_field_ids=[0])
    version = _apply(
        _version(), [CreateSchema("ns"), create_command("ns", "t", _schema([]), None, None, 25)]
    )
    with pytest.raises(ValidationError, match="primary key"):
        _apply(version, schema_commands("ns", made, old, renamed))


@pytest.mark.parametrize(
    "kind",
    [UnknownType(), GeometryType()],
    ids=str,
)
def test_a_type_the_catalog_lacks_is_refused(kind: IcebergType) -> None:
    with pytest.raises(ValidationError, match="has Iceberg type") as caught:
        create_command("ns", "t", _schema([(kind, False)]), None, None, 25)
    assert caught.value.context == {
        "table": "ns.t",
        "column": "c0",
        "rule": "iceberg-type",
    }


def test_no_identifier_fields_make_a_plain_unpartitioned_table() -> None:
    schema = Schema(NestedField(1, "k", LongType(), required=False))
    create = create_command("ns", "t", schema, None, None, 25)
    assert (create.primary_key, create.colocation) == ((), None)
    made = _created(_version(), schema)
    assert made.primary_key == () and not made.bucketed
    assert iceberg_schema(made).identifier_field_ids == []


def test_a_bucket_on_any_column_of_a_keyless_table_is_its_colocation() -> None:
    schema = Schema(NestedField(1, "k", LongType(), required=False))
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(25), "b"))
    assert create_command("ns", "t", schema, spec, None, 25).colocation == ("k",)


def test_changed_identifier_fields_set_the_primary_key() -> None:
    version = _version()
    old = _schema([(StringType(), False)])
    table = _created(version, old)
    new = Schema(*old.fields, identifier_field_ids=[])
    (command,) = schema_commands("ns", table, old, new)
    assert command == SetPrimaryKey(name=table.name, primary_key=(), schema="ns")
    commands: list[Command] = [CreateSchema("ns"), create_command("ns", "t", old, None, None, 25)]
    dropped = _apply(version, [*commands, command]).table("t", "ns")
    assert dropped is not None and dropped.primary_key == ()
    check_expressed("ns.t", dropped, new, same_ids=False)


def test_a_bucket_on_the_key_is_the_colocation() -> None:
    schema = _schema([(StringType(), False)])
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(25), "b"))
    assert create_command("ns", "t", schema, spec, None, 25).colocation == ("k",)


def test_other_partitionings_are_the_tables_own_spec() -> None:
    schema = _schema([(StringType(), False), (LongType(), False)])
    spec = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "k"),
        PartitionField(2, 1001, BucketTransform(4), "b"),
    )
    create = create_command("ns", "t", schema, spec, None, 25)
    assert create.colocation is None
    assert create.partitioned_by == (
        PartitionFieldDef("k", "identity", "k"),
        PartitionFieldDef("c0", "bucket[4]", "b"),
    )
    # A bucket on the key of another count than the zone's is a spec, too.
    other = PartitionSpec(PartitionField(1, 1000, BucketTransform(7), "b"))
    assert create_command("ns", "t", schema, other, None, 25).partitioned_by == (
        PartitionFieldDef("k", "bucket[7]", "b"),
    )
    with pytest.raises(ValidationError, match="field id 99"):
        wrong = PartitionSpec(PartitionField(99, 1000, BucketTransform(4), "b"))
        create_command("ns", "t", schema, wrong, None, 25)


def test_a_sort_order_is_the_tables_own() -> None:
    order = SortOrder(
        SortField(source_id=1, transform=IdentityTransform()),
        SortField(
            source_id=1,
            transform=BucketTransform(3),
            direction=SortDirection.DESC,
            null_order=NullOrder.NULLS_LAST,
        ),
    )
    create = create_command("ns", "t", _schema([]), None, order, 25)
    assert create.ordered_by == (
        SortFieldDef("k", "identity", descending=False, nulls_first=True),
        SortFieldDef("k", "bucket[3]", descending=True, nulls_first=False),
    )


def test_a_default_is_refused_not_dropped_and_a_doc_kept() -> None:
    schema = Schema(
        NestedField(1, "k", LongType(), required=True, doc="the key", write_default=7),
        identifier_field_ids=[1],
    )
    with pytest.raises(ValidationError, match="has a default"):
        create_command("ns", "t", schema, None, None, 25)
    documented = Schema(
        NestedField(1, "k", LongType(), required=True, doc="the key"), identifier_field_ids=[1]
    )
    (column,) = create_command("ns", "t", documented, None, None, 25).columns
    assert column.doc == "the key"


def test_a_spec_must_be_what_the_catalog_makes() -> None:
    made = _created(_version(), _schema([(StringType(), False)]))
    ours = iceberg_schema(made)
    metadata = TableMetadataV2.model_validate(
        {
            "location": "file:///t",
            "last-column-id": 1,
            "schemas": [ours],
            "partition-specs": [PartitionSpec(PartitionField(0, 1000, BucketTransform(7), "x"))],
            "default-spec-id": 0,
            "last-partition-id": 1000,
        }
    )
    with pytest.raises(ValidationError, match="bucket\\[7\\]"):
        check_layout("ns.t", made, 25, metadata)
    unpartitioned = metadata.model_copy(
        update={"partition_specs": [PartitionSpec()], "last_partition_id": 999}
    )
    check_layout("ns.t", made, 25, unpartitioned)


def test_a_changed_key_is_refused() -> None:
    made = _created(_version(), _schema([(LongType(), True)]))
    ours = iceberg_schema(made)
    with pytest.raises(ValidationError, match="primary key"):
        check_expressed("ns.t", made, Schema(*ours.fields, identifier_field_ids=[1]))


def test_set_default_spec_and_order_to_earlier_ones_are_set_commands() -> None:
    version = _version()
    schema = _schema([(TimestampType(), False)])
    create = create_command(
        "ns",
        "t",
        schema,
        PartitionSpec(PartitionField(2, 1000, DayTransform(), "d")),
        None,
        25,
    )
    version = _apply(version, [CreateSchema("ns"), create])
    table = version.table("t", "ns")
    assert table is not None
    ours = iceberg_schema(table)
    base = TableMetadataV2.model_validate(
        {
            "location": "file:///t",
            "last-column-id": 1,
            "schemas": [ours],
            **iceberg_layout(table, 25),
        }
    )
    evolved = base.model_copy(
        update={
            "partition_specs": [
                *base.partition_specs,
                PartitionSpec(PartitionField(1, 1002, HourTransform(), "h"), spec_id=1),
            ],
            "default_spec_id": 1,
            "sort_orders": [
                *base.sort_orders,
                SortOrder(SortField(source_id=0, transform=IdentityTransform()), order_id=1),
            ],
            "default_sort_order_id": 1,
        }
    )
    commands = layout_commands("ns", table, None, base, evolved)
    assert commands == [
        SetPartitionSpec(name="t", schema="ns", fields=(PartitionFieldDef("c0", "hour", "h"),)),
        SetSortOrder(
            name="t",
            schema="ns",
            fields=(SortFieldDef("k", "identity", descending=False, nulls_first=True),),
        ),
    ]
    after = _apply(version, commands).table("t", "ns")
    assert after is not None and after.default_spec_id == 1 and after.default_sort_order_id == 1
    # Back to spec 0 and the unsorted order: the earlier ones, by their ids.
    back = evolved.model_copy(update={"default_spec_id": 0, "default_sort_order_id": 0})
    served = TableMetadataV2.model_validate(
        {
            "location": "file:///t",
            "last-column-id": 1,
            "schemas": [ours],
            **iceberg_layout(after, 25),
        }
    )
    again = _apply(version, [*commands, *layout_commands("ns", after, None, served, back)])
    table_again = again.table("t", "ns")
    assert table_again is not None
    assert (table_again.default_spec_id, table_again.default_sort_order_id) == (0, 0)
    assert len(table_again.partition_specs) == 2 and len(table_again.sort_orders) == 2

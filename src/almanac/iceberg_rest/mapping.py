"""Iceberg schemas, specs and sort orders as catalog commands, and back.

Pure functions. A namespace is a catalog schema, an Iceberg table a catalog
table, an Iceberg field id a column id; the identifier fields are the
primary key, partition specs and sort orders are the table's own (one
``bucket[N]`` spec on a key column names the colocation column). What an
Iceberg client asks for is turned into the commands the equivalent DDL
would run, and then checked the other way: the table those commands make,
seen as Iceberg (``iceberg_schema``), must be exactly what the client asked
for. Anything else (a type the catalog lacks, a default) is refused with a
message naming it, so nothing a client sends is silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pyiceberg.catalog.rest import CreateTableRequest
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.sorting import NullOrder, SortDirection, SortOrder
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from almanac.commands import (
    AddColumns,
    AlterColumn,
    ColumnDef,
    Command,
    CreateTable,
    DropColumns,
    EvolveColumn,
    PartitionFieldDef,
    RenameColumn,
    SetPartitionSpec,
    SetPrimaryKey,
    SetSortOrder,
    SortFieldDef,
)
from almanac.commands.zones import DEFAULT_PARTITIONS, DEFAULT_ZONE_NAME
from almanac.data.iceberg_schema import TABLET_FIELD, iceberg_layout, iceberg_schema
from almanac.iceberg_rest.errors import refused
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptor_sql import source_path
from almanac.model.descriptors import Column, Table
from almanac.model.nested import walk

__all__ = [
    "check_expressed",
    "check_layout",
    "column_def",
    "column_of",
    "column_type",
    "create_command",
    "in_order",
    "layout_commands",
    "order_fields",
    "schema_commands",
    "spec_fields",
    "zone_partitions",
]

_TYPES: tuple[tuple[type[IcebergType], ColumnType], ...] = (
    (BooleanType, ColumnType.BOOLEAN),
    (IntegerType, ColumnType.INT32),
    (LongType, ColumnType.INT64),
    (FloatType, ColumnType.FLOAT),
    (DoubleType, ColumnType.DOUBLE),
    (StringType, ColumnType.STRING),
    (BinaryType, ColumnType.BYTES),
    (DateType, ColumnType.DATE),
    (TimeType, ColumnType.TIME),
    (TimestampType, ColumnType.TIMESTAMP),
    (TimestamptzType, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
    (TimestampNanoType, ColumnType.TIMESTAMP_NS),
    (TimestamptzNanoType, ColumnType.TIMESTAMPTZ_NS),
    (StructType, ColumnType.STRUCT),
    (ListType, ColumnType.LIST),
    (MapType, ColumnType.MAP),
    (UUIDType, ColumnType.ICEBERG_UUID),
)


def column_type(
    field: NestedField, table: str
) -> tuple[ColumnType, int | None, int | None, int | None]:
    """(type, precision, scale, length) of the column an Iceberg field
    becomes (``uuid`` is ICEBERG_UUID); a 400 for a type the catalog has no
    column type for (Iceberg v3's variant, geometry and the like)."""
    kind = field.field_type
    if isinstance(kind, DecimalType):
        return ColumnType.DECIMAL, kind.precision, kind.scale, None
    if isinstance(kind, FixedType):
        return ColumnType.FIXED, None, None, len(kind)
    for iceberg, ours in _TYPES:
        if type(kind) is iceberg:
            return ours, None, None, None
    raise refused(
        f"Field '{field.name}' of table '{table}' has Iceberg type {kind}, which the catalog "
        "has no column type for (it holds boolean, int, long, float, double, decimal, string, "
        "uuid, binary, fixed, date, time, timestamp, timestamptz, timestamp_ns, "
        "timestamptz_ns, struct, list and map)",
        table=table,
        column=field.name,
        rule="iceberg-type",
    )


def _nested_fields(field: NestedField) -> list[NestedField]:
    """A nested type's fields as Iceberg fields: a struct's own, a list's
    ``element``, a map's ``key`` and ``value``."""
    kind = field.field_type
    if isinstance(kind, StructType):
        return list(kind.fields)
    if isinstance(kind, ListType):
        return [kind.element_field]
    if isinstance(kind, MapType):
        return [kind.key_field, kind.value_field]
    return []


def column_def(field: NestedField, table: str) -> ColumnDef:
    """The column an Iceberg field becomes, nested fields and docs included."""
    kind, precision, scale, length = column_type(field, table)
    return ColumnDef(
        name=field.name,
        type=kind,
        nullable=not field.required,
        precision=precision,
        scale=scale,
        length=length,
        doc=field.doc,
        fields=tuple(column_def(f, table) for f in _nested_fields(field)),
    )


def column_of(field: NestedField, table: str) -> Column:
    """The column an Iceberg field is, its ids (nested ones too) kept: what an
    evolved column should become. Defaults are not sent this way."""
    definition = column_def(field, table)
    return _numbered(definition, field)


def _numbered(definition: ColumnDef, field: NestedField) -> Column:
    column = definition.to_flat_column(field.field_id)
    nested = _nested_fields(field)
    fields = tuple(_numbered(d, f) for d, f in zip(definition.fields, nested, strict=True))
    return replace(column, fields=fields)


def _with_defaults(column: Column, table: Table) -> Column:
    """``column`` with the defaults its fields have in ``table``: Iceberg
    clients send them back unchanged, and ``check_expressed`` compares."""
    kept = {c.id: c for _, c in walk(table.columns)}

    def keep(c: Column) -> Column:
        was = kept.get(c.id)
        fields = tuple(keep(f) for f in c.fields)
        if was is None:
            return replace(c, fields=fields)
        return replace(c, default=was.default, initial_default=was.initial_default, fields=fields)

    return keep(column)


def _evolves(was: NestedField, field: NestedField) -> bool:
    """Whether a kept field changed in what only ``EvolveColumn`` changes: a
    nested type's fields, or a doc."""
    nested = not was.field_type.is_primitive or not field.field_type.is_primitive
    return was.doc != field.doc or (nested and was.field_type != field.field_type)


def _name_of(schema: Schema, field_id: int, table: str, what: str) -> str:
    """The top-level field ``field_id`` names; a 400 when there is none."""
    for field in schema.fields:
        if field.field_id == field_id:
            return field.name
    raise refused(
        f"The {what} of table '{table}' names field id {field_id}, which is not a column "
        "of its schema",
        table=table,
        rule="field-id",
    )


def create_command(
    namespace: str,
    name: str,
    schema: Schema,
    spec: PartitionSpec | None,
    order: SortOrder | None,
    partitions: int,
) -> CreateTable:
    """The CREATE TABLE of an Iceberg create request: its identifier fields are
    the primary key (none: a plain table), and its partition spec and sort
    order are the table's. One spec keeps its old meaning: a single
    ``bucket[N]`` on a key column (any column of a table without one), N
    being ``partitions`` (its zone's partition count), buckets the table
    on that column (``COLOCATE BY``), as the tablet field of Almanac's own
    tables does."""
    full = f"{namespace}.{name}"
    for field in schema.fields:
        if field.initial_default is not None or field.write_default is not None:
            raise refused(
                f"Field '{field.name}' of table '{full}' has a default; create the "
                "table without them (the catalog keeps defaults through ALTER TABLE)",
                table=full,
                column=field.name,
                rule="iceberg-field",
            )
    key = tuple(_name_of(schema, i, full, "identifier fields") for i in schema.identifier_field_ids)
    colocation = None
    partitioned_by: tuple[PartitionFieldDef, ...] = ()
    if spec is not None and spec.fields:
        bucket = spec.fields[0]
        if (
            len(spec.fields) == 1
            and isinstance(bucket.transform, BucketTransform)
            and bucket.transform.num_buckets == partitions
            and any(f.field_id == bucket.source_id for f in schema.fields)
            and (not key or _name_of(schema, bucket.source_id, full, "partition spec") in key)
        ):
            colocation = (_name_of(schema, bucket.source_id, full, "partition spec"),)
        else:
            partitioned_by = spec_fields(full, schema, spec)
    return CreateTable(
        name=name,
        columns=tuple(column_def(f, full) for f in schema.fields),
        primary_key=key,
        schema=namespace,
        colocation=colocation,
        partitioned_by=partitioned_by,
        ordered_by=() if order is None else order_fields(full, schema, order),
    )


def _path(full: str, schema: Schema, source_id: int, what: str) -> str:
    """The dotted name of the field ``source_id`` of ``schema``; a 400 when none."""
    path = schema.find_column_name(source_id)
    if path is None:
        raise refused(
            f"The {what} of table '{full}' names field id {source_id}, which is not a field "
            "of its schema",
            table=full,
            rule="field-id",
        )
    return path


def spec_fields(
    full: str, schema: Schema, spec: PartitionSpec, skip: int | None = None
) -> tuple[PartitionFieldDef, ...]:
    """An Iceberg spec's fields as the catalog's, each source by its name in
    ``schema`` (field ids follow from the catalog's rules); ``skip`` is the
    hidden tablet field's id, left out."""
    out = []
    for field in spec.fields:
        if field.field_id == skip:
            continue
        path = _path(full, schema, field.source_id, "partition spec")
        out.append(PartitionFieldDef(path, str(field.transform), field.name))
    return tuple(out)


def order_fields(full: str, schema: Schema, order: SortOrder) -> tuple[SortFieldDef, ...]:
    """An Iceberg sort order's fields as the catalog's, sources by name."""
    out = []
    for field in order.fields:
        path = _path(full, schema, field.source_id, "sort order")
        out.append(
            SortFieldDef(
                path,
                str(field.transform),
                descending=field.direction == SortDirection.DESC,
                nulls_first=field.null_order == NullOrder.NULLS_FIRST,
            )
        )
    return tuple(out)


def zone_partitions(version: CatalogVersion) -> int:
    """The partition count of the zone a table created now goes to: the
    default zone's (the ``Default`` zone CREATE TABLE would make, if none)."""
    zone = version.default_zone or version.zone(DEFAULT_ZONE_NAME)
    return DEFAULT_PARTITIONS if zone is None else zone.partitions


def check_layout(
    full: str, made: Table, partitions: int, wanted: TableMetadata | CreateTableRequest
) -> None:
    """A 400 unless the table the catalog made partitions and sorts as
    ``wanted`` asks, partition field ids too (a staged create's data files
    carry them; the catalog numbers fields as Iceberg does), the tablet
    field's name aside (it is the catalog's)."""
    layout = iceberg_layout(made, partitions)
    spec: PartitionSpec = next(
        s for s in layout["partition-specs"] if s.spec_id == layout["default-spec-id"]
    )
    order: SortOrder = next(
        o for o in layout["sort-orders"] if o.order_id == layout["default-sort-order-id"]
    )
    if isinstance(wanted, CreateTableRequest):
        schema = wanted.table_schema
        wanted_spec = wanted.partition_spec or PartitionSpec()
        wanted_order = wanted.write_order or SortOrder()
    else:
        schema, wanted_spec, wanted_order = wanted.schema(), wanted.spec(), wanted.sort_order()

    def terms(named: Callable[[int], str | None], fields: Sequence[Any]) -> list[tuple[Any, ...]]:
        return [
            (
                named(f.source_id),
                str(f.transform),
                f.field_id,
                None if made.bucketed and i == 0 else f.name,
            )
            for i, f in enumerate(fields)
        ]

    def ours(source_id: int) -> str:
        return source_path(made, source_id)

    if terms(ours, spec.fields) != terms(schema.find_column_name, wanted_spec.fields):
        raise refused(
            f"Table '{full}' cannot be partitioned by {wanted_spec}: the catalog makes it {spec}",
            table=full,
            rule="partition-spec",
        )
    if [(ours(f.source_id), str(f.transform), f.direction, f.null_order) for f in order.fields] != [
        (schema.find_column_name(f.source_id), str(f.transform), f.direction, f.null_order)
        for f in wanted_order.fields
    ]:
        raise refused(
            f"Table '{full}' cannot be sorted by {wanted_order}: the catalog makes it {order}",
            table=full,
            rule="sort-order",
        )


def layout_commands(
    namespace: str, table: Table, tablet: int | None, base: TableMetadata, wanted: TableMetadata
) -> list[Command]:
    """The commands that give the table the partition specs and sort orders
    ``wanted`` adds or makes the default (Iceberg's ``add-spec``,
    ``set-default-spec``, ``add-sort-order``, ``set-default-sort-order``).
    ``tablet`` is the id of a bucketed table's hidden tablet field, which
    every one of its specs must keep."""
    full = f"{namespace}.{table.name}"
    schema = wanted.schema()
    commands: list[Command] = []
    known = {s.spec_id for s in base.partition_specs}
    for spec in wanted.partition_specs:
        changed = spec.spec_id == wanted.default_spec_id != base.default_spec_id
        if spec.spec_id in known and not changed:
            continue
        if tablet is not None and all(f.field_id != tablet for f in spec.fields):
            raise refused(
                f"Table '{full}' is bucketed on its colocation column by its partition field "
                f"'{TABLET_FIELD}' (id {tablet}), which every spec keeps: the bucketing of a "
                "table cannot be removed",
                table=full,
                field=TABLET_FIELD,
                rule="partition-spec",
            )
        commands.append(
            SetPartitionSpec(
                name=table.name,
                schema=namespace,
                fields=spec_fields(full, schema, spec, tablet),
                default=spec.spec_id == wanted.default_spec_id,
            )
        )
    orders = {o.order_id for o in base.sort_orders}
    for order in wanted.sort_orders:
        changed = order.order_id == wanted.default_sort_order_id != base.default_sort_order_id
        if order.order_id in orders and not changed:
            continue
        commands.append(
            SetSortOrder(
                name=table.name,
                schema=namespace,
                fields=order_fields(full, schema, order),
                default=order.order_id == wanted.default_sort_order_id,
            )
        )
    return commands


def in_order(
    schema: Sequence[Command], layout: Sequence[Command], base: TableMetadata
) -> tuple[Command, ...]:
    """The schema commands, then the layout commands, except that a column
    the table's current spec or sort order reads is dropped only after the
    new layout replaced them (a replace swaps columns and layout at once)."""
    held = {f.source_id for f in base.spec().fields} | {
        f.source_id for f in base.sort_order().fields
    }
    late = {
        f.name
        for f in base.schema().fields
        if f.field_id in held or held & set(index_by_id(f.field_type))
    }
    first: list[Command] = []
    last: list[Command] = []
    for command in schema:
        if layout and isinstance(command, DropColumns) and late & set(command.columns):
            now = tuple(c for c in command.columns if c not in late)
            if now:
                first.append(replace(command, columns=now))
            last.append(replace(command, columns=tuple(c for c in command.columns if c in late)))
        else:
            first.append(command)
    return (*first, *layout, *last)


def schema_commands(namespace: str, table: Table, old: Schema, new: Schema) -> list[Command]:
    """The ALTER TABLE commands that take ``old`` (the table as Iceberg sees
    it) to ``new``: drops, renames, type widenings and DROP NOT NULL, then
    nested changes and additions (``_growth``). ``check_expressed`` refuses
    what they cannot make."""
    full = f"{namespace}.{table.name}"
    before = {f.field_id: f for f in old.fields}
    after = {f.field_id: f for f in new.fields}
    commands: list[Command] = []
    dropped = tuple(f.name for i, f in before.items() if i not in after)
    if dropped:
        commands.append(DropColumns(table=table.name, columns=dropped, schema=namespace))
    renames = {
        before[i].name: f.name for i, f in after.items() if i in before and before[i].name != f.name
    }
    commands += [
        RenameColumn(table=table.name, column=a, new_name=b, schema=namespace)
        for a, b in _rename_order(renames, {f.name for f in after.values()})
    ]
    evolved: list[NestedField] = []
    for field_id, field in after.items():
        was = before.get(field_id)
        if was is None:
            continue
        if _evolves(was, field):
            evolved.append(field)
            continue
        if was.field_type != field.field_type:
            kind, precision, scale, _ = column_type(field, full)
            commands.append(
                AlterColumn(
                    table=table.name,
                    column=field.name,
                    schema=namespace,
                    type=kind,
                    precision=precision,
                    scale=scale,
                )
            )
        if was.required != field.required:
            commands.append(
                AlterColumn(
                    table=table.name, column=field.name, schema=namespace, not_null=field.required
                )
            )
    commands += _growth(namespace, table, old, new, evolved)
    if sorted(old.identifier_field_ids) != sorted(new.identifier_field_ids):
        key = tuple(_name_of(new, i, full, "identifier fields") for i in new.identifier_field_ids)
        commands.append(SetPrimaryKey(name=table.name, primary_key=key, schema=namespace))
    return commands


def _growth(
    namespace: str, table: Table, old: Schema, new: Schema, evolved: Sequence[NestedField]
) -> list[Command]:
    """The EvolveColumn and AddColumns commands that make the ``evolved``
    columns and the new ones, in the order of the ids the client gave the
    new fields. A client numbers new fields from the table's last column id
    in the order it adds them, across columns (a field of ``B``, then one
    of ``A``); each command takes the next ids of the table's counter. So a
    column whose new fields interleave with another's grows in several
    steps, each adding one run of consecutive ids."""
    full = f"{namespace}.{table.name}"
    known = set(_all_ids(old.fields))
    tops = {f.field_id: f for f in new.fields}
    owner = {i: top for top in tops for i in _all_ids([tops[top]]) if i not in known}
    runs: list[tuple[int, int | None]] = []  # (column's id, last id of its run)
    for i in sorted(owner):
        if runs and runs[-1][0] == owner[i]:
            runs[-1] = (owner[i], i)
        else:
            runs.append((owner[i], i))
    growing = set(owner.values())
    steps = [(f.field_id, None) for f in evolved if f.field_id not in growing] + runs
    present = {f.field_id for f in old.fields}
    commands: list[Command] = []
    for top, last in steps:
        field = tops[top]
        if last is not None:
            field = _pruned(field, {i for i in owner if i > last})
        if top in present:
            column = _with_defaults(column_of(field, full), table)
            commands.append(
                EvolveColumn(table=table.name, column=field.name, new=column, schema=namespace)
            )
        else:
            present.add(top)
            columns = (column_def(field, full),)
            commands.append(AddColumns(table=table.name, columns=columns, schema=namespace))
    return commands


def _pruned(field: NestedField, later: set[int]) -> NestedField:
    """``field`` without the struct fields (at any depth) whose ids are in
    ``later``. A list's or map's fields are kept: a client adds them with
    their list or map, so they never come in a later run."""
    kind = field.field_type
    if isinstance(kind, StructType):
        kind = StructType(*(_pruned(f, later) for f in kind.fields if f.field_id not in later))
    elif isinstance(kind, ListType):
        element = _pruned(kind.element_field, later)
        kind = ListType(element.field_id, element.field_type, element.required)
    elif isinstance(kind, MapType):
        value = _pruned(kind.value_field, later)
        kind = MapType(kind.key_id, kind.key_type, value.field_id, value.field_type, value.required)
    return field.model_copy(update={"field_type": kind})


def _rename_order(renames: dict[str, str], taken: set[str]) -> list[tuple[str, str]]:
    """The renames one after the other, so that none takes a name another
    column still holds; a cycle (a swap) goes through a free name."""
    pending = dict(renames)
    order: list[tuple[str, str]] = []
    while pending:
        holders = set(pending)
        ready = [a for a, b in pending.items() if b not in holders]
        if ready:
            for a in sorted(ready):
                order.append((a, pending.pop(a)))
            continue
        first = sorted(pending)[0]  # every target is held: a cycle
        spare = next(
            name
            for n in range(len(taken) + len(renames) + 1)
            if (name := f"{first}_{n}") not in taken and name not in holders
        )
        order.append((first, spare))
        pending[spare] = pending.pop(first)
    return order


def _shown(field: NestedField) -> str:
    return str(field)


def check_expressed(full: str, made: Table, wanted: Schema, *, same_ids: bool = True) -> None:
    """A 400 unless ``made`` (the catalog table the commands produce) is, as an
    Iceberg schema, exactly ``wanted`` (field ids too, unless ``same_ids`` is
    off, as for a create, where the catalog assigns them), with the same
    identifier fields (its primary key)."""
    ours = iceberg_schema(made)
    mine: Sequence[NestedField] = ours.fields
    theirs: Sequence[NestedField] = wanted.fields
    if not same_ids:
        by_position = dict(zip(_all_ids(theirs), _all_ids(mine), strict=False))
        theirs = [_with_ids(f, by_position) for f in theirs]
        keys = sorted(by_position.get(i, -1) for i in wanted.identifier_field_ids)
    else:
        keys = sorted(wanted.identifier_field_ids)
    if len(mine) != len(theirs) or any(a != b for a, b in zip(mine, theirs, strict=False)):
        diff = [
            f"{_shown(b)} would be {_shown(a)}"
            for a, b in zip(mine, theirs, strict=False)
            if a != b
        ]
        what = "; ".join(diff[:3]) or f"{len(theirs)} fields would be {len(mine)}"
        raise refused(
            f"Table '{full}': the catalog cannot express this schema ({what})",
            table=full,
            rule="iceberg-schema",
        )
    if keys != sorted(ours.identifier_field_ids):
        raise refused(
            f"Table '{full}': the identifier fields are its primary key "
            f"({', '.join(made.primary_key) or 'none'}), not the fields with ids {keys}",
            table=full,
            rule="primary-key",
        )


def _all_ids(fields: Sequence[NestedField]) -> list[int]:
    """Every field id, depth first in the order ``assign_ids`` numbers them:
    a struct's fields, then each one's nested fields."""
    ids = [f.field_id for f in fields]
    for field in fields:
        ids += _all_ids(_nested_fields(field))
    return ids


def _with_ids(field: NestedField, ids: dict[int, int]) -> NestedField:
    """``field`` with its ids at every depth renumbered by ``ids``."""
    kind = field.field_type
    if isinstance(kind, StructType):
        kind = StructType(*(_with_ids(f, ids) for f in kind.fields))
    elif isinstance(kind, ListType):
        element = _with_ids(kind.element_field, ids)
        kind = ListType(element.field_id, element.field_type, element.required)
    elif isinstance(kind, MapType):
        key = _with_ids(kind.key_field, ids)
        value = _with_ids(kind.value_field, ids)
        kind = MapType(
            key.field_id, key.field_type, value.field_id, value.field_type, value.required
        )
    return field.model_copy(update={"field_id": ids.get(field.field_id, -1), "field_type": kind})

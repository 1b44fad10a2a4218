"""A table's partition specs and sort orders: setting and evolving them.

Evolution follows Iceberg's rules (format v2), so what an engine sends
through the Iceberg REST API and what SQL's ``ADD/DROP/REPLACE PARTITION
FIELD`` and ``WRITE ORDERED BY`` say end in the same entries:

- a spec identical to one the table had (same sources, transforms and
  names) gets that spec's id back; any other gets the next id. Old specs
  stay: files written under them keep their spec id;
- a field with the same source and transform as a field of any earlier spec
  keeps that field's id; a new one gets ``last_partition_id + 1`` (1000
  for the first field of a table that is not bucketed, as in Iceberg);
- a field's name is unique in its spec and is no column's name, unless it
  is the identity of that column;
- its transform must be defined on its source (``transform_accepts``), a
  primitive column or a field nested in structs (not in a list or map);
- sort orders likewise: an identical order keeps its id, order 0 is the
  unsorted order.

A column that the current spec or sort order uses cannot be dropped
(``check_drop``). Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from almanac import _check as check
from almanac.commands.base import DEFAULT_SCHEMA, Command, find_table, qualified
from almanac.errors import NotFoundError, ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptor_sql import partition_field_sql, sort_field_sql, source_path
from almanac.model.descriptors import Column, Table
from almanac.model.entries import (
    DefaultPartitionSpecSet,
    DefaultSortOrderSet,
    PartitionSpecAdded,
    SortOrderAdded,
    UpdateEntry,
)
from almanac.model.names import name_key
from almanac.model.nested import walk
from almanac.model.partitioning import (
    FIRST_FIELD_ID,
    PartitionField,
    PartitionSpec,
    SortField,
    SortOrder,
    default_field_name,
    parse_transform,
    transform_accepts,
    transform_name,
)

__all__ = [
    "EvolvePartitionSpec",
    "PartitionFieldDef",
    "SetPartitionSpec",
    "SetSortOrder",
    "SortFieldDef",
    "check_drop",
    "new_table_layout",
    "tablet_field",
]

_TIME_TRANSFORMS = frozenset({"year", "month", "day", "hour"})


@dataclass(frozen=True, slots=True)
class PartitionFieldDef:
    """``transform`` of ``column`` (a column, or a field nested in structs by
    its dotted path), stored as partition field ``name`` (by default
    Iceberg's: the column for identity, else ``<column>_<transform>``).
    Transforms are spelled as Iceberg does (``bucket[16]``, ``day``) or as
    Spark does (``days``)."""

    column: str
    transform: str = "identity"
    name: str | None = None

    def __post_init__(self) -> None:
        check.check_fields(self)


@dataclass(frozen=True, slots=True)
class SortFieldDef:
    """One sort key; ``nulls_first`` None takes Iceberg's default (first when
    ascending, last when descending)."""

    column: str
    transform: str = "identity"
    descending: bool = False
    nulls_first: bool | None = None

    def __post_init__(self) -> None:
        check.check_fields(self)


# -- sources -----------------------------------------------------------------------


def _source(table: Table, full: str, given: str, what: str) -> tuple[str, Column]:
    """The column or struct field ``given`` names, with its path as defined."""
    column = table.column(given)
    if column is not None:
        path, found = column.name, column
    else:
        parts = given.split(".")
        found_or_none = table.column(parts[0])
        path = parts[0] if found_or_none is None else found_or_none.name
        for part in parts[1:]:
            if found_or_none is None:
                break
            if found_or_none.type is not ColumnType.STRUCT:
                raise ValidationError(
                    f"The {what} of table '{full}' names '{given}', inside "
                    f"{found_or_none.type.sql_name} '{path}': a source must be a column or a "
                    "field of a struct, not inside a list or map",
                    table=full,
                    column=given,
                    rule="partition-source",
                )
            found_or_none = next(
                (f for f in found_or_none.fields if name_key(f.name) == name_key(part)), None
            )
            if found_or_none is not None:
                path = f"{path}.{found_or_none.name}"
        if found_or_none is None:
            raise NotFoundError(
                f"Column '{given}' of the {what} of table '{full}' does not exist",
                kind="column",
                name=given,
                table=full,
            )
        found = found_or_none
    if found.type.nested:
        raise ValidationError(
            f"The {what} of table '{full}' names {found.type.sql_name} column '{path}': a "
            "source must be a primitive column",
            table=full,
            column=path,
            rule="partition-source",
        )
    return path, found


def _transform(full: str, path: str, column: Column, text: str, what: str) -> str:
    try:
        transform = parse_transform(text, "transform")
    except ValidationError as exc:
        raise ValidationError(
            f"The {what} of table '{full}', on column '{path}': {exc}",
            table=full,
            column=path,
            transform=text,
            rule="partition-transform",
        ) from None
    if not transform_accepts(transform, column.type):
        raise ValidationError(
            f"The {what} of table '{full}' cannot apply {transform} to column '{path}' of "
            f"type {column.type.sql_name}",
            table=full,
            column=path,
            transform=transform,
            rule="partition-transform",
        )
    return transform


# -- partition specs --------------------------------------------------------------


_UNBUCKETABLE = frozenset({ColumnType.BOOLEAN, ColumnType.FLOAT, ColumnType.DOUBLE})
"""Types the tablet bucketing skips (``almanac.data.tablets.UNBUCKETABLE``)."""


def tablet_field(table: Table, partitions: int) -> PartitionField | None:
    """A bucketed table's hidden ``tablet`` field (bucket on its first
    bucketable colocation column into its zone's ``partitions``), which
    Iceberg clients see first in every spec; None for other tables."""
    if not table.bucketed:
        return None
    for name in table.colocation:
        column = table.column(name)
        if column is not None and column.type not in _UNBUCKETABLE:
            return PartitionField(column.id, FIRST_FIELD_ID, "tablet", f"bucket[{partitions}]")
    return None


def _tablet(version: CatalogVersion, table: Table) -> PartitionField | None:
    zone = version.zones_by_id.get(table.zone_id)
    return None if zone is None else tablet_field(table, zone.partitions)


def _spec_fields(
    table: Table,
    full: str,
    defs: Sequence[PartitionFieldDef],
    tablet: PartitionField | None = None,
) -> list[PartitionField]:
    """The fields ``defs`` make in ``table``, with ids by Iceberg's rules;
    ``tablet`` is the hidden field that comes before them."""
    known: dict[tuple[int, str], int] = {}
    for spec in table.partition_specs:
        for f in spec.fields:
            known.setdefault((f.source_id, f.transform), f.field_id)
    columns = {name_key(path): column.id for path, column in walk(table.columns)}
    # Iceberg numbers from 1000; a bucketed table's hidden field holds it.
    fresh = not table.bucketed and all(not s.fields for s in table.partition_specs)
    next_id = FIRST_FIELD_ID if fresh else table.last_partition_id + 1
    fields: list[PartitionField] = []
    names: dict[str, str] = {}
    if tablet is not None:
        names[name_key(tablet.name)] = tablet.name
    for d in defs:
        path, column = _source(table, full, d.column, "partition spec")
        transform = _transform(full, path, column, d.transform, "partition spec")
        for other in ([] if tablet is None else [tablet]) + fields:
            if other.source_id != column.id:
                continue
            same = other.transform == transform
            times = {transform_name(transform), transform_name(other.transform)}
            if same or times <= _TIME_TRANSFORMS:
                raise ValidationError(
                    f"The partition spec of table '{full}' has {transform} of '{path}' next to "
                    f"field '{other.name}' ({other.transform} of it): the two are redundant",
                    table=full,
                    field=other.name,
                    rule="partition-redundant",
                )
        name = default_field_name(path, transform) if d.name is None else d.name
        check.string(name, f"Partition field name of table '{full}'", nonblank=True)
        key = name_key(name)
        if key in names:
            raise ValidationError(
                f"The partition spec of table '{full}' has two fields named '{name}'"
                + (
                    " (the hidden one holds the tablet)"
                    if tablet and key == name_key(tablet.name)
                    else ""
                ),
                table=full,
                field=name,
                rule="partition-field-name",
            )
        owner = columns.get(key)
        if owner is not None and not (owner == column.id and transform == "identity"):
            raise ValidationError(
                f"Partition field '{name}' of table '{full}' has the name of a column; only "
                "the identity of that column may (name the field with AS)",
                table=full,
                field=name,
                rule="partition-field-name",
            )
        names[key] = name
        field_id = known.get((column.id, transform))
        if field_id is None:
            field_id = known[(column.id, transform)] = next_id
            next_id += 1
        fields.append(PartitionField(column.id, field_id, name, transform))
    return fields


def _same_fields(a: Iterable[PartitionField], b: Iterable[PartitionField]) -> bool:
    return [(f.source_id, f.transform, f.name) for f in a] == [
        (f.source_id, f.transform, f.name) for f in b
    ]


def _spec_entries(
    table: Table, fields: Sequence[PartitionField], default: bool
) -> list[UpdateEntry]:
    same = next((s for s in table.partition_specs if _same_fields(s.fields, fields)), None)
    entries: list[UpdateEntry] = []
    if same is None:
        spec_id = max(s.spec_id for s in table.partition_specs) + 1
        same = PartitionSpec(spec_id, tuple(fields))
        entries.append(PartitionSpecAdded(table.id, same))
    if default and same.spec_id != table.default_spec_id:
        entries.append(DefaultPartitionSpecSet(table.id, same.spec_id))
    return entries


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPartitionSpec(Command):
    """Gives the table the spec ``fields`` make (none: unpartitioned), as a
    new spec or the identical one it had; ``default`` off only adds it
    (Iceberg's ``add-spec`` without ``set-default-spec``)."""

    name: str
    fields: tuple[PartitionFieldDef, ...]
    schema: str = DEFAULT_SCHEMA
    default: bool = True
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        fields = _spec_fields(table, full, self.fields, _tablet(version, table))
        return _spec_entries(table, fields, self.default)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolvePartitionSpec(Command):
    """Drops fields from the current spec, then adds fields to it (ALTER
    TABLE … ADD, DROP and REPLACE PARTITION FIELD). A field to drop is named
    by its name (a ``str``) or by its source and transform."""

    name: str
    add: tuple[PartitionFieldDef, ...] = ()
    drop: tuple[str | PartitionFieldDef, ...] = ()
    schema: str = DEFAULT_SCHEMA
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        current = list(table.partition_spec.fields)
        for ref in self.drop:
            found = _find_field(table, full, current, ref)
            current.remove(found)
        kept = [
            PartitionFieldDef(source_path(table, f.source_id), f.transform, f.name) for f in current
        ]
        added = _spec_fields(table, full, [*kept, *self.add], _tablet(version, table))[len(kept) :]
        return _spec_entries(table, [*current, *added], True)


def _find_field(
    table: Table, full: str, fields: list[PartitionField], ref: str | PartitionFieldDef
) -> PartitionField:
    if isinstance(ref, str):
        found = next((f for f in fields if name_key(f.name) == name_key(ref)), None)
        column = table.column(ref)
        if found is None and column is not None:  # a bare column: its identity field
            found = next(
                (f for f in fields if (f.source_id, f.transform) == (column.id, "identity")), None
            )
        shown = f"'{ref}'"
    else:
        path, column = _source(table, full, ref.column, "partition spec")
        transform = _transform(full, path, column, ref.transform, "partition spec")
        found = next(
            (f for f in fields if (f.source_id, f.transform) == (column.id, transform)), None
        )
        shown = f"{transform} of '{path}'"
    if found is None:
        raise NotFoundError(
            f"Table '{full}' has no partition field {shown} in its current spec"
            + (f" ({', '.join(f.name for f in fields)})" if fields else " (it is unpartitioned)"),
            kind="partition field",
            name=shown,
            table=full,
        )
    return found


# -- sort orders ------------------------------------------------------------------


def _order_fields(table: Table, full: str, defs: Sequence[SortFieldDef]) -> list[SortField]:
    fields: list[SortField] = []
    for d in defs:
        path, column = _source(table, full, d.column, "sort order")
        transform = _transform(full, path, column, d.transform, "sort order")
        if any((f.source_id, f.transform) == (column.id, transform) for f in fields):
            raise ValidationError(
                f"The sort order of table '{full}' sorts by {transform} of '{path}' twice",
                table=full,
                column=path,
                rule="sort-order",
            )
        nulls_first = not d.descending if d.nulls_first is None else d.nulls_first
        fields.append(SortField(column.id, transform, d.descending, nulls_first))
    return fields


@dataclass(frozen=True, slots=True, kw_only=True)
class SetSortOrder(Command):
    """Gives the table the sort order ``fields`` make (none: unsorted, order
    0), as a new order or the identical one it had; ``default`` off only
    adds it."""

    name: str
    fields: tuple[SortFieldDef, ...]
    schema: str = DEFAULT_SCHEMA
    default: bool = True
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        table = find_table(version, self.schema, self.name, missing_ok=self.if_exists)
        if table is None:
            return []
        full = qualified(self.schema, table.name)
        fields = tuple(_order_fields(table, full, self.fields))
        same = next((o for o in table.sort_orders if o.fields == fields), None)
        entries: list[UpdateEntry] = []
        if same is None:
            same = SortOrder(max(o.order_id for o in table.sort_orders) + 1, fields)
            entries.append(SortOrderAdded(table.id, same))
        if self.default and same.order_id != table.default_sort_order_id:
            entries.append(DefaultSortOrderSet(table.id, same.order_id))
        return entries


# -- CREATE TABLE and DROP COLUMN ---------------------------------------------------


def new_table_layout(
    full: str,
    table: Table,
    partitions: int,
    partitioned_by: Sequence[PartitionFieldDef],
    ordered_by: Sequence[SortFieldDef],
) -> Table:
    """A new table (in a zone of ``partitions``) with its first spec (id 0)
    and sort order (id 1, unless unsorted)."""
    tablet = tablet_field(table, partitions)
    fields = tuple(_spec_fields(table, full, partitioned_by, tablet))
    order = tuple(_order_fields(table, full, ordered_by))
    return table.evolve(
        partition_specs=(PartitionSpec(0, fields),),
        last_partition_id=max([table.last_partition_id, *(f.field_id for f in fields)]),
        sort_orders=(table.sort_orders[0], SortOrder(1, order)) if order else table.sort_orders,
        default_sort_order_id=1 if order else 0,
    )


def check_drop(full: str, table: Table, column: Column, kept: Column | None = None) -> None:
    """Refuses to drop ``column`` (with its nested fields; with ``kept``, the
    nested fields it no longer has) while the current partition spec or sort
    order reads it, naming the field, as Iceberg does."""
    ids = {c.id for _, c in walk((column,))}
    if kept is not None:
        ids -= {c.id for _, c in walk((kept,))}
    for f in table.partition_spec.fields:
        if f.source_id in ids:
            raise ValidationError(
                f"Column '{column.name}' of table '{full}' is the source of partition field "
                f"'{f.name}' ({partition_field_sql(table, f)}) of its current spec and cannot "
                f"be dropped; drop the partition field first",
                table=full,
                column=column.name,
                field=f.name,
                rule="partition-source",
            )
    for s in table.sort_order.fields:
        if s.source_id in ids:
            raise ValidationError(
                f"Column '{column.name}' of table '{full}' is in its sort order "
                f"({', '.join(sort_field_sql(table, o) for o in table.sort_order.fields)}) "
                "and cannot be dropped; change the order first (ALTER TABLE … WRITE …)",
                table=full,
                column=column.name,
                rule="sort-source",
            )

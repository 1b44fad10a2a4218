"""Tables with Iceberg partition specs and sort orders for the data-plane
tests, made through the catalog: the ``layouts`` fixture creates a table
and gives it specs and orders in the next catalog version, and changes them
in later ones.

The catalog's own commands for specs and orders (``PARTITIONED BY``,
``ALTER TABLE … PARTITION FIELD``, ``WRITE ORDERED BY``) and their log
entries are not on this branch, so each change rides on a real
``TablePropertiesSet`` entry whose application (also when the catalog
replays its log) installs the layout for the catalog version it makes; the
version then holds exactly the Table value those commands make.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from almanac import Catalog, ColumnDef, CreateTable, Table
from almanac.catalog_version import CatalogVersion
from almanac.commands.base import Command
from almanac.entries import TablePropertiesSet, UpdateEntry
from almanac.partitioning import (
    FIRST_FIELD_ID,
    PartitionField,
    PartitionSpec,
    SortField,
    SortOrder,
    default_field_name,
)

Fields = Sequence[tuple[str, str]]
"""``(column, transform)`` pairs, as ``PARTITIONED BY`` lists them."""
Sorts = Sequence[tuple[str, str, bool, bool]]
"""``(column, transform, descending, nulls_first)`` keys of a sort order."""


def spec(table: Table, spec_id: int, fields: Fields, first_id: int) -> PartitionSpec:
    """A spec of ``fields``, field ids counting from ``first_id``."""
    out: list[PartitionField] = []
    for i, (name, transform) in enumerate(fields):
        column = table.column(name)
        assert column is not None, name
        field_name = default_field_name(column.name, transform)
        if any(f.name == field_name for f in out):  # a second bucket of the column, say
            field_name = f"{field_name}_{i}"
        out.append(PartitionField(column.id, first_id + i, field_name, transform))
    return PartitionSpec(spec_id, tuple(out))


def order(table: Table, order_id: int, keys: Sorts) -> SortOrder:
    out = []
    for name, transform, descending, nulls_first in keys:
        column = table.column(name)
        assert column is not None, name
        out.append(SortField(column.id, transform, descending, nulls_first))
    return SortOrder(order_id, tuple(out))


def laid_out(table: Table, partition: Fields, sort: Sorts) -> Table:
    """The new table with one spec and (when ``sort``) one sort order."""
    first = spec(table, 0, partition, FIRST_FIELD_ID + 1)
    changes: dict[str, Any] = {
        "partition_specs": (first,),
        "last_partition_id": max([FIRST_FIELD_ID, *(f.field_id for f in first.fields)]),
    }
    if sort:
        changes["sort_orders"] = (*table.sort_orders, order(table, 1, sort))
        changes["default_sort_order_id"] = 1
    return table.evolve(**changes)


@dataclass(frozen=True, slots=True)
class _Touch(Command):
    table: Table

    def validate(self, cat: CatalogVersion) -> list[UpdateEntry]:
        return [TablePropertiesSet(self.table.id, self.table.properties)]


@dataclass
class Layouts:
    """Layout changes: ``apply(cat, name, **changes)`` commits a catalog
    version in which table ``name`` is ``table.evolve(**changes)``."""

    pending: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)

    def create(
        self,
        cat: Catalog,
        name: str,
        columns: Sequence[ColumnDef],
        *,
        partition: Fields = (),
        sort: Sorts = (),
        **create: Any,
    ) -> Table:
        """Create table ``name`` partitioned by ``partition`` and sorted by ``sort``."""
        cat.execute([CreateTable(name=name, columns=tuple(columns), **create)])
        table = cat.catalog().table(name)
        assert table is not None
        wanted = laid_out(table, partition, sort)
        changes = {
            k: getattr(wanted, k)
            for k in (
                "partition_specs",
                "last_partition_id",
                "sort_orders",
                "default_sort_order_id",
            )
        }
        return self.apply(cat, name, **changes)

    def apply(self, cat: Catalog, name: str, **changes: Any) -> Table:
        table = cat.catalog().table(name)
        assert table is not None
        self.pending[(table.id, cat.catalog().version + 1)] = changes
        cat.execute([_Touch(table)])
        new = cat.catalog().table(name)
        assert new is not None
        assert all(getattr(new, k) == v for k, v in changes.items()), "layout not installed"
        return new

    def evolve_spec(self, cat: Catalog, name: str, fields: Fields) -> Table:
        """Add a spec of ``fields`` and make it the default, as ``ALTER TABLE
        … REPLACE PARTITION FIELD`` does; field ids continue the table's."""
        table = cat.catalog().table(name)
        assert table is not None
        spec_id = max(s.spec_id for s in table.partition_specs) + 1
        new = spec(table, spec_id, fields, table.last_partition_id + 1)
        return self.apply(
            cat,
            name,
            partition_specs=(*table.partition_specs, new),
            default_spec_id=spec_id,
            last_partition_id=max([table.last_partition_id, *(f.field_id for f in new.fields)]),
        )


@pytest.fixture
def layouts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Layouts]:
    changes = Layouts()
    original = TablePropertiesSet.apply

    def apply(entry: TablePropertiesSet, cat: CatalogVersion) -> CatalogVersion:
        new = original(entry, cat)
        wanted = changes.pending.get((entry.table_id, cat.version))
        if wanted is None:
            return new
        table = new.tables_by_id[entry.table_id].evolve(**wanted)
        return new.evolve(tables_by_id=new.tables_by_id.set(table.id, table))

    monkeypatch.setattr(TablePropertiesSet, "apply", apply)
    yield changes

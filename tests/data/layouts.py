"""Tables with Iceberg partition specs and sort orders for the data-plane
tests, made through the catalog's own commands: ``CreateTable`` with
``partitioned_by``/``ordered_by``, then ``SetPartitionSpec`` and
``SetSortOrder`` for later changes, each a catalog version.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from almanac import Catalog, ColumnDef, CreateTable, Table
from almanac.commands.partitions import (
    PartitionFieldDef,
    SetPartitionSpec,
    SetSortOrder,
    SortFieldDef,
)
from almanac.model.partitioning import SortField, SortOrder, default_field_name

Fields = Sequence[tuple[str, str]]
"""``(column, transform)`` pairs, as ``PARTITIONED BY`` lists them."""
Sorts = Sequence[tuple[str, str, bool, bool]]
"""``(column, transform, descending, nulls_first)`` keys of a sort order."""


def field_defs(fields: Fields) -> tuple[PartitionFieldDef, ...]:
    """``PARTITIONED BY`` fields; a second field that would take an earlier
    one's default name (a second bucket of a column, say) is named apart."""
    out: list[PartitionFieldDef] = []
    taken: set[str] = set()
    for i, (column, transform) in enumerate(fields):
        name = default_field_name(column, transform)
        given = f"{name}_{i}" if name in taken else None
        taken.add(given or name)
        out.append(PartitionFieldDef(column, transform, name=given))
    return tuple(out)


def sort_defs(keys: Sorts) -> tuple[SortFieldDef, ...]:
    return tuple(SortFieldDef(c, t, descending=d, nulls_first=n) for c, t, d, n in keys)


def order(table: Table, order_id: int, keys: Sorts) -> SortOrder:
    out = []
    for name, transform, descending, nulls_first in keys:
        column = table.column(name)
        assert column is not None, name
        out.append(SortField(column.id, transform, descending, nulls_first))
    return SortOrder(order_id, tuple(out))


@dataclass
class Layouts:
    """Tables laid out through the catalog's commands, one version each."""

    def create(
        self,
        cat: Catalog,
        name: str,
        columns: Sequence[ColumnDef],
        *,
        partition: Fields = (),
        sort: Sorts = (),
        **create: object,
    ) -> Table:
        """Create table ``name`` partitioned by ``partition`` and sorted by ``sort``."""
        command = CreateTable(
            name=name,
            columns=tuple(columns),
            partitioned_by=field_defs(partition),
            ordered_by=sort_defs(sort),
            **create,  # type: ignore[arg-type]
        )
        cat.execute([command])
        return self._table(cat, name)

    def evolve_spec(self, cat: Catalog, name: str, fields: Fields) -> Table:
        """Make a spec of ``fields`` the default, as ``ALTER TABLE … REPLACE
        PARTITION FIELD`` does; field ids continue the table's."""
        cat.execute([SetPartitionSpec(name=name, fields=field_defs(fields))])
        return self._table(cat, name)

    def set_spec(self, cat: Catalog, name: str, fields: Sequence[PartitionFieldDef]) -> Table:
        cat.execute([SetPartitionSpec(name=name, fields=tuple(fields))])
        return self._table(cat, name)

    def set_order(self, cat: Catalog, name: str, keys: Sorts) -> Table:
        cat.execute([SetSortOrder(name=name, fields=sort_defs(keys))])
        return self._table(cat, name)

    @staticmethod
    def _table(cat: Catalog, name: str) -> Table:
        table = cat.catalog().table(name)
        assert table is not None
        return table


@pytest.fixture
def layouts() -> Iterator[Layouts]:
    yield Layouts()

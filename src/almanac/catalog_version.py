"""One immutable version of the whole catalog.

Every map is an ``immutables.Map`` (a hash array mapped trie), so a new
version shares every node it did not change: a version costs memory in
proportion to what changed, not to the size of the catalog.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from immutables import Map

from almanac.descriptors import Index, Schema, Table, Zone

__all__ = ["DEFAULT_SCHEMA", "CatalogVersion"]

DEFAULT_SCHEMA = "PUBLIC"

_K = TypeVar("_K")
_V = TypeVar("_V")


def _sorted_by_id(items: Iterable[_V]) -> list[_V]:
    return sorted(items, key=lambda o: o.id)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class CatalogVersion:
    """The catalog as of ``version``; equal versions compare equal field by field.

    Name maps are keyed by ``(schema_id, name)`` for objects that live in a
    schema. ``index_names`` holds only alive indexes: a STOPPING index keeps
    its name but frees it for reuse.

    A soft-deleted table (``Table.soft_deleted``) keeps its entries in every
    map, so its name and its indexes' names stay taken and ``tables_by_id``
    still holds it; the lookups by name and the listings below leave it and
    its indexes out, as if it were gone.
    """

    version: int
    activation_time: int
    object_id_gen: int
    default_zone_id: int | None
    schemas_by_id: Map[int, Schema]
    schema_names: Map[str, int]
    tables_by_id: Map[int, Table]
    table_names: Map[tuple[int, str], int]
    indexes_by_id: Map[int, Index]
    index_names: Map[tuple[int, str], int]
    table_indexes: Map[int, tuple[int, ...]]
    zones_by_id: Map[int, Zone]
    zone_names: Map[str, int]

    @staticmethod
    def empty() -> CatalogVersion:
        """Version 0: nothing at all, not even the PUBLIC schema."""
        return CatalogVersion(
            version=0,
            activation_time=0,
            object_id_gen=0,
            default_zone_id=None,
            schemas_by_id=Map(),
            schema_names=Map(),
            tables_by_id=Map(),
            table_names=Map(),
            indexes_by_id=Map(),
            index_names=Map(),
            table_indexes=Map(),
            zones_by_id=Map(),
            zone_names=Map(),
        )

    def evolve(self, **changes: Any) -> CatalogVersion:
        """``dataclasses.replace``, at a third less of its cost: every entry
        applied, and so every version made, calls it."""
        values = list(_FIELD_VALUES(self))
        for name, value in changes.items():
            index = _FIELD_INDEX.get(name)
            if index is None:
                raise TypeError(f"CatalogVersion has no field {name!r}")
            values[index] = value
        return CatalogVersion(*values)

    # -- schemas -------------------------------------------------------------

    def schema(self, name: str) -> Schema | None:
        sid = self.schema_names.get(name)
        return None if sid is None else self.schemas_by_id[sid]

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return self.schemas_by_id.get(schema_id)

    def schemas(self) -> list[Schema]:
        return _sorted_by_id(self.schemas_by_id.values())

    # -- tables --------------------------------------------------------------

    def table(self, name: str, schema: str = DEFAULT_SCHEMA) -> Table | None:
        sid = self.schema_names.get(schema)
        if sid is None:
            return None
        tid = self.table_names.get((sid, name))
        if tid is None:
            return None
        table = self.tables_by_id[tid]
        return None if table.dropped_at is not None else table

    def table_by_id(self, table_id: int) -> Table | None:
        """The table with this id, soft-deleted or not."""
        return self.tables_by_id.get(table_id)

    def tables(self, schema: str | None = None) -> list[Table]:
        """The tables (of one schema), soft-deleted ones left out."""
        return [t for t in self._tables(schema) if t.dropped_at is None]

    def soft_deleted_table(self, name: str, schema: str = DEFAULT_SCHEMA) -> Table | None:
        """The soft-deleted table holding this name, if any."""
        sid = self.schema_names.get(schema)
        tid = None if sid is None else self.table_names.get((sid, name))
        table = None if tid is None else self.tables_by_id[tid]
        return table if table is not None and table.dropped_at is not None else None

    def soft_deleted_tables(self, schema: str | None = None) -> list[Table]:
        return [t for t in self._tables(schema) if t.dropped_at is not None]

    def _tables(self, schema: str | None) -> list[Table]:
        if schema is None:
            return _sorted_by_id(self.tables_by_id.values())
        sid = self.schema_names.get(schema)
        if sid is None:
            return []
        return _sorted_by_id(t for t in self.tables_by_id.values() if t.schema_id == sid)

    # -- indexes -------------------------------------------------------------

    def index(self, name: str, schema: str = DEFAULT_SCHEMA) -> Index | None:
        sid = self.schema_names.get(schema)
        if sid is None:
            return None
        iid = self.index_names.get((sid, name))
        if iid is None:
            return None
        index = self.indexes_by_id[iid]
        return None if self._table_soft_deleted(index.table_id) else index

    def index_by_id(self, index_id: int) -> Index | None:
        return self.indexes_by_id.get(index_id)

    def indexes(self, table_id: int | None = None) -> list[Index]:
        """All indexes (STOPPING included) but those of soft-deleted tables,
        or every index of one table when ``table_id`` is given."""
        if table_id is None:
            return _sorted_by_id(
                i for i in self.indexes_by_id.values() if not self._table_soft_deleted(i.table_id)
            )
        return [self.indexes_by_id[i] for i in self.table_indexes.get(table_id, ())]

    def _table_soft_deleted(self, table_id: int) -> bool:
        table = self.tables_by_id.get(table_id)
        return table is not None and table.dropped_at is not None

    # -- zones ---------------------------------------------------------------

    def zone(self, name: str) -> Zone | None:
        zid = self.zone_names.get(name)
        return None if zid is None else self.zones_by_id[zid]

    def zone_by_id(self, zone_id: int) -> Zone | None:
        return self.zones_by_id.get(zone_id)

    def zones(self) -> list[Zone]:
        return _sorted_by_id(self.zones_by_id.values())

    @property
    def default_zone(self) -> Zone | None:
        return None if self.default_zone_id is None else self.zones_by_id.get(self.default_zone_id)


_FIELD_NAMES = tuple(field.name for field in dataclasses.fields(CatalogVersion))
_FIELD_INDEX = {name: i for i, name in enumerate(_FIELD_NAMES)}
_FIELD_VALUES = operator.attrgetter(*_FIELD_NAMES)
